"""Shared execution of a workload of continuous top-k queries over one stream (MTopS).

After MTopList (Shastri, Yang, Rundensteiner, Ward, *MTopS: Scalable Processing of Continuous
Top-k Multi-Query Workloads*, CIKM 2011), which generalises MinTopK (Yang, Shastri,
Rundensteiner, Ward, EDBT 2011) to many queries: queries with the same weights share one
super-top-k list; each distinct ``(kind, window, slide)`` among them is a *window family*
with its own window marks on the shared records and its own ring of windows (``tkc``,
``lbp``), kept at the largest ``k`` of its queries; every query answers with a prefix of its
family's answer.  Design and its justification: ``docs/algorithms/multi.md``.
"""

from __future__ import annotations

import math
import numbers
import sys
from typing import Any, Iterable, NamedTuple

import numpy as np

from .jsondata import FORMAT_VERSION, StateError, floats_in, floats_out, pack, pack_text
from .kernels import multi as kernel
from .kernels.multi import (ABOVE, ACTIVE, CAREERS, COUNT_KIND, COUNTER_NAMES, CURRENT, E_FAMILY, E_LENGTH,
                            E_OFFSET, E_POSITION, E_WINDOW, EMITS, FREE_TOP, HEAD, K, KIND, LEVEL, LEVELS,
                            LIVE, NEVER, NEXT_SEQ, NONE, OFFSET, OID, OUTS, RELEASED, SEQ, SINCE, SLIDE, SPAN,
                            TIME, TIME_KIND, UNSET, WINDOW)
from .memory import OBJECT_FIELDS, WORD, array_bytes, deep_size
from .query import Query, check_windows_per_object
from .ranking import Answer, score
from .state import SHARED_EXECUTOR
from .stream import (MAX_SLIDES, as_object_stream, check_scores, int64_argument, int64_column, time_margin,
                     time_range_problem)

NAME = SHARED_EXECUTOR
"""The ``algorithm`` of a shared executor's state document."""

RECORD_WORDS = sum(OBJECT_FIELDS.values()) + 5
"""Words of a record before its marks: id, seq, t, score, the link up, its height, its career
count and (on average, ``p = 1/2``) two forward links; see ``stats``."""

_KINDS = {"count": COUNT_KIND, "time": TIME_KIND}
_INITIAL_NODES = 256
_INITIAL_FAMILIES = 4
_EMIT_ROOM = 1 << 14


def crowded_gap(t: np.ndarray, slides: list[int], limit: int) -> tuple[int, int, int, int] | None:
    """The first gap of the non-decreasing times ``t`` across which time queries of ``slides``
    pass more than ``limit`` slide boundaries together, as ``(i, t[i], t[i + 1], boundaries)``;
    else ``None``.  ``O(rows)``, plus ``O(len(slides))`` per gap that could pass that many.

    >>> crowded_gap(np.array([0, 1, 10**9]), [1, 2], 10**6)
    (1, 1, 1000000000, 1499999999)
    """
    if not slides or len(t) < 2:
        return None
    gaps = np.diff(t).view(np.uint64).astype(np.float64)  # t non-decreasing: exact below 2**64
    for gap in np.flatnonzero(gaps * float(np.sum(1.0 / np.array(slides, np.float64))) + len(slides) > limit).tolist():
        earlier, later = int(t[gap]), int(t[gap + 1])
        passed = sum(later // slide - earlier // slide for slide in slides)
        if passed > limit:
            return gap, earlier, later, passed
    return None


def group_key(weights: tuple[float, ...]) -> tuple[int, ...]:
    """The key of a weights group: the weights' bits (``O(d)``).

    Weights equal as numbers but for the sign of a zero (``[1, 0]`` and ``[1, -0.0]``) rank
    every object alike but score some ``0.0`` against ``-0.0``, so they are two groups: every
    query's scores are those of its own weights, bit for bit.

    >>> group_key((1.0, 0.0)) == group_key((1, 0)), group_key((1.0, 0.0)) == group_key((1.0, -0.0))
    (True, False)
    """
    return tuple(np.asarray(weights, np.float64).view(np.int64).tolist())


class Result(NamedTuple):
    """One answer of one query: after slide ``slide`` (0-based, per query), boundary ``end``.

    ``position`` is the number of arrivals the stream had when the boundary was passed (the
    stream order in which :meth:`SharedTopK.process` returns results).
    """

    query: int
    slide: int
    end: int
    position: int
    answer: Answer


class Answers(NamedTuple):
    """Every answer of one :meth:`SharedTopK.answers` call as columns, in stream order, then by
    query: answer ``i`` is query ``query[i]``'s slide ``slide[i]`` (boundary ``end[i]``, passed
    after ``position[i]`` arrivals), the records ``ids[lo:hi]``, ``scores[lo:hi]``,
    ``seq[lo:hi]`` with ``lo = offset[i]``, ``hi = lo + length[i]``, best first.  Queries of one
    family answer with prefixes of the same records, which are stored once.
    """

    query: np.ndarray
    slide: np.ndarray
    end: np.ndarray
    position: np.ndarray
    offset: np.ndarray
    length: np.ndarray
    ids: np.ndarray
    scores: np.ndarray
    seq: np.ndarray

    def result(self, i: int) -> Result:
        """Answer ``i`` as a :class:`Result` (``O(k)``)."""
        lo = int(self.offset[i])
        part = slice(lo, lo + int(self.length[i]))
        return Result(int(self.query[i]), int(self.slide[i]), int(self.end[i]), int(self.position[i]),
                      Answer(self.ids[part], self.scores[part], self.seq[part]))

    def results(self) -> list[Result]:
        """Every answer as a :class:`Result`, in order (``O(answers)`` Python objects)."""
        ids, scores, seq = self.ids, self.scores, self.seq
        return [Result(q, j, e, p, Answer(ids[lo:lo + n], scores[lo:lo + n], seq[lo:lo + n]))
                for q, j, e, p, lo, n in zip(self.query.tolist(), self.slide.tolist(), self.end.tolist(),
                                             self.position.tolist(), self.offset.tolist(), self.length.tolist())]


class _Records:
    """The answers' records of one :meth:`SharedTopK.answers` call (ids, scores, seq), every
    group's kernel writing after the last: grown by doubling, so no group's records are copied
    to be joined with the others' (amortised ``O(1)`` per record)."""

    def __init__(self) -> None:
        self.ids = np.empty(0, np.int64)
        self.scores = np.empty(0)
        self.seq = np.empty(0, np.int64)
        self.used = 0

    def reserve(self, room: int) -> None:
        """Make room for ``room`` more records after the ``used`` ones."""
        if self.used + room <= len(self.ids):
            return
        size = max(2 * len(self.ids), self.used + room)
        for name in ("ids", "scores", "seq"):
            old = getattr(self, name)
            grown = np.empty(size, old.dtype)
            grown[:self.used] = old[:self.used]
            setattr(self, name, grown)

    def columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.ids[:self.used], self.scores[:self.used], self.seq[:self.used]


class _Group:
    """The arrays of one weights group: its super-top-k list and its window families."""

    def __init__(self, weights: tuple[float, ...], next_seq: int) -> None:
        self.weights = weights
        self.key = group_key(weights)
        self.scores = np.zeros(_INITIAL_NODES)
        self.nodes = np.zeros((_INITIAL_NODES, kernel.NODE_COLUMNS), np.int64)
        self.forward = np.full((_INITIAL_NODES, LEVELS), NONE, np.int64)
        self.start = np.zeros((_INITIAL_NODES, _INITIAL_FAMILIES), np.int64)
        self.end = np.full((_INITIAL_NODES, _INITIAL_FAMILIES), NEVER, np.int64)
        self.end[HEAD] = kernel.ALWAYS
        self.free = np.arange(_INITIAL_NODES - 1, 0, -1, dtype=np.int64)
        self.free = np.concatenate([self.free, np.zeros(1, np.int64)])
        self.meta = np.zeros(kernel.META_COLUMNS, np.int64)
        self.meta[FREE_TOP] = _INITIAL_NODES - 1
        self.meta[NEXT_SEQ] = next_seq
        self.fam = np.zeros((_INITIAL_FAMILIES, kernel.FAMILY_COLUMNS), np.int64)
        self.tkc = np.zeros(0, np.int64)
        self.lbp = np.zeros(0, np.int64)
        self.counters = np.zeros(len(COUNTER_NAMES), np.int64)
        self.members: dict[int, list[int]] = {}
        """family -> handles of its queries, ascending."""

    # ---- growing the arrays (the kernel stops, consistent, when they are full)

    def grow_nodes(self, needed: int) -> None:
        """Make room for ``needed`` more records (amortised ``O(1)`` per record)."""
        capacity = len(self.scores)
        if self.meta[FREE_TOP] >= needed:
            return
        fresh = max(2 * capacity, capacity + needed)
        extra = fresh - capacity
        self.scores = np.concatenate([self.scores, np.zeros(extra)])
        self.nodes = np.concatenate([self.nodes, np.zeros((extra, kernel.NODE_COLUMNS), np.int64)])
        self.forward = np.concatenate([self.forward, np.full((extra, LEVELS), NONE, np.int64)])
        self.start = np.concatenate([self.start, np.zeros((extra, self.start.shape[1]), np.int64)])
        self.end = np.concatenate([self.end, np.full((extra, self.end.shape[1]), NEVER, np.int64)])
        top = self.meta[FREE_TOP]
        self.free = np.concatenate([self.free[:top], np.arange(fresh - 1, capacity - 1, -1, dtype=np.int64),
                                    np.zeros(capacity - top, np.int64)])
        self.meta[FREE_TOP] = top + extra

    def new_family(self, kind: str, window: int, slide: int, k: int, since: int, t_last: int | None) -> int:
        """A family slot with empty windows; every record is marked never alive in it."""
        slots = np.flatnonzero(self.fam[:, ACTIVE] == 0)
        if len(slots) == 0:
            width = self.fam.shape[0]
            self.fam = np.concatenate([self.fam, np.zeros((width, kernel.FAMILY_COLUMNS), np.int64)])
            self.start = np.concatenate([self.start, np.zeros((len(self.scores), width), np.int64)], axis=1)
            self.end = np.concatenate([self.end, np.full((len(self.scores), width), NEVER, np.int64)], axis=1)
            self.end[HEAD] = kernel.ALWAYS
            slots = [width]
        family = int(slots[0])
        span = window // slide
        if kind == "count":
            current = since // slide + 1
        else:
            current = UNSET if t_last is None else t_last // slide + 1
        self.fam[family] = 0
        self.fam[family, [ACTIVE, KIND, WINDOW, SLIDE, SPAN, K, SINCE, CURRENT, OFFSET]] = \
            [1, _KINDS[kind], window, slide, span, k, since, current, len(self.tkc)]
        self.tkc = np.concatenate([self.tkc, np.zeros(span, np.int64)])
        self.lbp = np.concatenate([self.lbp, np.full(span, NONE, np.int64)])
        self.start[:, family] = 0
        self.end[:, family] = NEVER
        self.end[HEAD, family] = kernel.ALWAYS
        self.members[family] = []
        return family

    def drop_family(self, family: int) -> None:
        """Remove a family, move the later families down one slot and compact the window rings:
        ``O(MTK log MTK + capacity F + windows)``.

        The active families stay in slots ``0..F-1`` in the order they were created, the order a
        restored state rebuilds them in: the kernel visits families by slot, so a restored
        executor answers and evicts in the same order and its counters continue exactly.
        """
        kernel.drop_family(self.scores, self.nodes, self.forward, self.free, self.meta, self.start, self.end,
                           self.fam, family)
        del self.members[family]
        tkc, lbp, offset = [], [], 0
        for other in self.families():
            lo, span = self.fam[other, OFFSET], self.fam[other, SPAN]
            tkc.append(self.tkc[lo:lo + span])
            lbp.append(self.lbp[lo:lo + span])
            self.fam[other, OFFSET] = offset
            offset += span
        self.tkc = np.concatenate(tkc) if tkc else np.zeros(0, np.int64)
        self.lbp = np.concatenate(lbp) if lbp else np.zeros(0, np.int64)
        self.fam[family:-1] = self.fam[family + 1:]
        self.fam[-1] = 0
        self.start[:, family:-1] = self.start[:, family + 1:]
        self.start[:, -1] = 0
        self.end[:, family:-1] = self.end[:, family + 1:]
        self.end[:, -1] = NEVER
        self.end[HEAD, -1] = kernel.ALWAYS
        self.members = {other - (other > family): handles for other, handles in self.members.items()}

    def families(self) -> list[int]:
        return [int(f) for f in np.flatnonzero(self.fam[:, ACTIVE] == 1)]

    # ---- running

    def process(self, values: np.ndarray, seqs: np.ndarray, ids: np.ndarray, ts: np.ndarray, stream_end: int,
                time_now: int, records: "_Records") -> np.ndarray:
        """Run the kernel over one chunk: the windows answered, in stream order, as rows
        ``(family, window, position, offset, length)``, their records appended to ``records``
        (``offset`` is where a window's records start there)."""
        emitted = []
        first, done = 0, False
        widest = max(int(self.fam[f, K]) for f in self.families())
        expected = sum(max(len(values), stream_end - int(self.meta[NEXT_SEQ])) // int(self.fam[f, SLIDE]) + 2
                       for f in self.families())
        emit_room = min(expected, _EMIT_ROOM)
        out_room = 0
        while not done:
            self.grow_nodes(min(len(values) - first, widest) + 1)
            longest = min(widest, len(self.scores))  # an answer holds at most every record (the kernel's bound)
            out_room = max(out_room, min(expected, _EMIT_ROOM) * longest)
            records.reserve(out_room)
            emits = np.empty((emit_room, kernel.EMIT_COLUMNS), np.int64)
            cursor = np.array([0, records.used], np.int64)
            first, done = kernel.process_arrivals(
                self.scores, self.nodes, self.forward, self.free, self.meta, self.start, self.end, self.fam,
                self.tkc, self.lbp, self.counters, values, seqs, ids, ts, first, stream_end, time_now, emits,
                records.ids, records.scores, records.seq, cursor)
            emitted.append(emits[:cursor[EMITS]])
            records.used = int(cursor[OUTS])
            if cursor[EMITS] >= emit_room - 1:
                emit_room *= 2
            if records.used + longest > len(records.ids):
                out_room = 2 * out_room + longest
        return emitted[0] if len(emitted) == 1 else np.concatenate(emitted)

    # ---- plain data

    def ranked_nodes(self) -> list[int]:
        """Every record's slot, best first (``O(MTK)``)."""
        ranked, node = [], int(self.forward[HEAD, 0])
        while node != NONE:
            ranked.append(node)
            node = int(self.forward[node, 0])
        return ranked

    def arrays(self) -> list[np.ndarray]:
        return [self.scores, self.nodes, self.forward, self.start, self.end, self.free, self.meta, self.fam,
                self.tkc, self.lbp, self.counters]


class SharedTopK:
    """Many continuous top-k queries over one stream, sharing their candidate structures.

    Queries with equal weights (bit for bit, :func:`group_key`) form a *group*: one super-top-k
    list (a skip list, ranked by ``(score, seq)``) holds every record any of them may still
    answer with.  Within a group, the queries with the same ``(kind, window, slide)`` form a
    *family*, kept at their largest ``k``: per record, the family's window marks
    ``start <= end`` (MinTopK's career, Lemma 4.3); per window of the family, ``tkc`` and
    ``lbp``.  A query answers with the first
    ``min(k, tkc)`` records of its family's answer.  Every answer is exact.

    Costs (``MTK`` records in a group, ``F`` families, ``C_f = window / slide``): an arrival
    is prefiltered with its piece (the arrivals between two boundaries of any family, which
    share every window: only their best ``max k`` can matter) and costs ``O(F)`` to discard,
    else ``O(log MTK)`` to position once plus, per family it enters, ``O(1)`` per window
    joined (and the records its ``lbp`` steps over).  Answering a window costs ``O(k log MTK)``
    plus the records of other families skipped on the way down.

    **Queries added mid-stream** start answering at their first slide boundary after they were
    added.  A query joining a family that exists (same weights, kind, window and slide, and
    ``k`` at most the family's) answers over the whole window at once.  Otherwise it starts a
    new family whose windows hold only what arrives from then on (:meth:`since`): the records
    discarded before cannot be recovered exactly.  Its answers are the whole stream's from its
    slide ``window / slide`` on, at the latest.  Removing a query never disturbs the others.

    Parameters
    ----------
    queries
        The initial workload; handles ``0, 1, ...`` in this order.

    Examples
    --------
    >>> import numpy as np, engine
    >>> from engine.multi import SharedTopK
    >>> workload = SharedTopK([engine.Query([1.0], k=1, window=4, slide=2),
    ...                        engine.Query([1.0], k=2, window=4, slide=2),
    ...                        engine.Query([-1.0], k=1, window=2, slide=1)])
    >>> results = workload.process(np.arange(6), np.arange(6), [5.0, 1.0, 4.0, 2.0, 3.0, 0.0])
    >>> [(r.query, r.end, r.answer.ids.tolist()) for r in results if r.end == 6]
    [(0, 6, [2]), (1, 6, [2, 4]), (2, 6, [5])]
    >>> workload.stats()["candidates"], workload.stats()["families"]
    (4, 2)
    >>> workload.check()
    """

    name = NAME

    def __init__(self, queries: Iterable[Query] = ()) -> None:
        self._groups: dict[tuple[int, ...], _Group] = {}
        """:func:`group_key` of the weights -> the group."""
        self._queries: dict[int, Query] = {}
        self._placement: dict[int, tuple[tuple[int, ...], int]] = {}
        """handle -> (its group's key, its family's slot)."""
        self._answered: dict[int, int] = {}
        self._last: dict[int, Result] = {}
        self._last_bytes = 0
        """Bytes of the latest answers' arrays (kept as they change, for ``stats``)."""
        self._next_handle = 0
        self._next_seq = 0
        self._t_last: int | None = None
        self._arrivals = 0
        """Rows taken by :meth:`answers` (each group counts them again as ``scored``)."""
        self._dimensions: int | None = None
        for query in queries:
            self.add(query)

    # ------------------------------------------------------------------ the workload

    def add(self, query: Query) -> int:
        """Add a query; returns its handle.  ``O(1)``, or ``O(MTK + windows)`` for a new family.

        It answers from its first slide boundary after now; see the class notes for its window.
        """
        if not isinstance(query, Query):
            raise ValueError(f"query must be an engine.Query, got {type(query).__name__}")
        check_windows_per_object(query, "the shared executor")
        if self._dimensions is not None and query.dimensions != self._dimensions:
            raise ValueError(f"the workload has {self._dimensions} feature(s) but the query has "
                             f"{query.dimensions} weight(s)")
        self._dimensions = query.dimensions
        key = group_key(query.weights)
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = _Group(query.weights, self._next_seq)
        family = self._family_for(group, query)
        handle = self._next_handle
        self._next_handle += 1
        self._queries[handle] = query
        self._placement[handle] = (group.key, family)
        self._answered[handle] = 0
        group.members[family].append(handle)
        return handle

    def _known(self, handle: Any) -> int:
        """``handle`` as an int, refused unless it is one of the workload's handles: a bool
        (``True == 1``) or anything unhashable too (``O(1)``)."""
        if isinstance(handle, bool) or not isinstance(handle, numbers.Integral) or handle not in self._queries:
            raise ValueError(f"no query with handle {handle!r}")
        return int(handle)

    def _family_for(self, group: _Group, query: Query) -> int:
        """The family a query joins: the oldest matching one with enough ``k`` (exact over
        its whole window), one that has seen nothing yet (its ``k`` raised), or a new one."""
        matching = [f for f in group.families() if tuple(group.fam[f, [KIND, WINDOW, SLIDE]])
                    == (_KINDS[query.kind], query.window, query.slide)]
        matching.sort(key=lambda f: group.fam[f, SINCE])
        for family in matching:
            if group.fam[family, K] >= query.k:
                return family
        for family in matching:
            if group.fam[family, SINCE] == self._next_seq:
                group.fam[family, K] = query.k
                return family
        return group.new_family(query.kind, query.window, query.slide, query.k, self._next_seq, self._t_last)

    def remove(self, handle: int) -> None:
        """Remove a query; its family goes when its last query does (``O(MTK log MTK)``, and
        ``O(capacity F + queries)`` to move the later families down a slot)."""
        handle = self._known(handle)
        key, family = self._placement.pop(handle)
        del self._queries[handle], self._answered[handle]
        self._drop_last(handle)
        group = self._groups[key]
        group.members[family].remove(handle)
        if not group.members[family]:
            group.drop_family(family)
            for later, handles in group.members.items():
                if later >= family:
                    self._placement.update((h, (key, later)) for h in handles)
            if not group.members:
                del self._groups[key]

    @property
    def queries(self) -> dict[int, Query]:
        """Handle -> query, for every query of the workload (a copy, ``O(queries)``)."""
        return dict(self._queries)

    def since(self, handle: int) -> int:
        """The first arrival (its ``seq``) the query's windows can hold: 0 unless it started a
        new family mid-stream (``O(1)``)."""
        handle = self._known(handle)
        key, family = self._placement[handle]
        return int(self._groups[key].fam[family, SINCE])

    # ------------------------------------------------------------------ the stream

    def process(self, ids, t, x, *, seq=None, stream_end: int | None = None,
                time_now: int | None = None, max_slides: int | None = MAX_SLIDES) -> list[Result]:
        """Take the next arrivals (any number) and return every answer their boundaries pass.

        ``ids`` and ``t`` are integers, ``x`` an ``(m, d)`` (or, for ``d = 1``, ``(m,)``) array
        of finite features.  Count boundaries are passed once their last object has arrived, time
        boundaries ``T`` once an object with ``t >= T`` has.  Results come in stream order
        (``position``: the arrivals the stream had when the boundary was passed), then by query
        handle.  ``O(m d)`` scoring per group plus the costs of the class notes, plus one Python
        object per answer (:meth:`answers` gives them as columns instead).

        A shard of a stream (a Spark task keeping some of the rows) passes its rows' global,
        increasing ``seq``, the number of rows the whole stream has had (``stream_end``, default
        ``seq[-1] + 1``) and its latest time (``time_now``): windows are then those of the whole
        stream, restricted to the shard's rows.  By default ``seq`` continues from the last call.

        A row (or ``time_now``) after which the time queries together pass more than
        ``max_slides`` slide boundaries at once (a gap in ``t``; default :data:`engine.stream.MAX_SLIDES`,
        ``None``: no limit) is refused before anything changes, as ``run-many --max-slides`` refuses it:
        every one of them is an answer held until the call returns.
        """
        return self.answers(ids, t, x, seq=seq, stream_end=stream_end, time_now=time_now,
                            max_slides=max_slides).results()

    def answers(self, ids, t, x, *, seq=None, stream_end: int | None = None,
                time_now: int | None = None, max_slides: int | None = MAX_SLIDES) -> Answers:
        """:meth:`process`, its answers as numpy columns (:class:`Answers`): ``O(queries + F)``
        Python steps per call and per group, whatever the number of answers."""
        ids, t, x = as_object_stream(ids, t, x, self._dimensions)
        m = len(ids)
        seq = np.arange(self._next_seq, self._next_seq + m, dtype=np.int64) if seq is None \
            else int64_column("seq", seq)
        stream_end = None if stream_end is None else int64_argument("stream_end", stream_end)
        time_now = None if time_now is None else int64_argument("time_now", time_now)
        if len(seq) != m:
            raise ValueError(f"seq has {len(seq)} values for {m} rows")
        if m and (seq[0] < self._next_seq or np.any(seq[1:] <= seq[:-1])):
            raise ValueError(f"seq must increase from {self._next_seq} on")
        stream_end = (int(seq[-1]) + 1 if m else self._next_seq) if stream_end is None else int(stream_end)
        if stream_end < (int(seq[-1]) + 1 if m else self._next_seq):
            raise ValueError(f"stream_end {stream_end} is before the rows given")
        max_slides = None if max_slides is None else int64_argument("max_slides", max_slides)
        if any(q.kind == "time" for q in self._queries.values()):
            self._check_time_order(t, time_now)
            if max_slides is not None:
                self._check_gaps(t, time_now, max_slides)
        latest = int(t[-1]) if m else self._t_last
        if time_now is not None:
            latest = int(time_now) if latest is None else max(latest, int(time_now))
        columns: list[tuple[np.ndarray, ...]] = []
        records = _Records()
        with np.errstate(over="ignore", invalid="ignore"):
            group_values = [score(x, group.weights) for group in self._groups.values()]
        for values in group_values:
            check_scores(values)
        for group, values in zip(self._groups.values(), group_values):
            emits = group.process(values, seq, ids, t, stream_end, kernel.UNSET if time_now is None else int(time_now),
                                  records)
            of_family = emits[:, E_FAMILY]
            for family, handles in group.members.items():
                rows = emits[of_family == family]
                n = len(rows)
                if n == 0:
                    continue
                end = rows[:, E_WINDOW] * group.fam[family, SLIDE]
                offset = rows[:, E_OFFSET]
                for handle in handles:
                    first = self._answered[handle]
                    columns.append((np.full(n, handle, np.int64), np.arange(first, first + n, dtype=np.int64), end,
                                    rows[:, E_POSITION], offset,
                                    np.minimum(rows[:, E_LENGTH], self._queries[handle].k)))
                    self._answered[handle] = first + n
        self._next_seq = stream_end
        self._arrivals += m
        self._t_last = latest
        if not columns:
            empty = np.zeros(0, np.int64)
            return Answers(empty, empty, empty, empty, empty, empty, empty, np.zeros(0), empty)
        query, slide, end, position, offset, length = (np.concatenate(column) for column in zip(*columns))
        order = np.lexsort((slide, query, position))
        answers = Answers(query[order], slide[order], end[order], position[order], offset[order], length[order],
                          *records.columns())
        handles, from_last = np.unique(answers.query[::-1], return_index=True)
        for handle, i in zip(handles.tolist(), (len(order) - 1 - from_last).tolist()):
            self._keep_last(handle, answers.result(i))
        return answers

    def _keep_last(self, handle: int, result: Result) -> None:
        """Keep ``result`` as the query's latest answer, in arrays of its own (a view would keep
        the whole call's answers alive, for as long as the query does not answer again): ``O(k)``."""
        answer = result.answer
        kept = Answer(answer.ids.copy(), answer.scores.copy(), answer.seq.copy())
        self._drop_last(handle)
        self._last[handle] = result._replace(answer=kept)
        self._last_bytes += array_bytes([kept.ids, kept.scores, kept.seq])

    def _drop_last(self, handle: int) -> None:
        old = self._last.pop(handle, None)
        if old is not None:
            self._last_bytes -= array_bytes([old.answer.ids, old.answer.scores, old.answer.seq])

    def _check_time_order(self, t: np.ndarray, time_now: int | None) -> None:
        if len(t) and time_now is not None and t[-1] > time_now:
            raise ValueError(f"time_now {time_now} is before the rows given (t up to {int(t[-1])})")
        if len(t) and self._t_last is not None and t[0] < self._t_last:
            raise ValueError(f"row 0: t decreases ({self._t_last} then {int(t[0])}) in a time window")
        decreasing = np.flatnonzero(t[1:] < t[:-1])
        if len(decreasing):
            row = int(decreasing[0]) + 1
            raise ValueError(f"row {row}: t decreases ({int(t[row - 1])} then {int(t[row])}) in a time window")
        margin = time_margin(self._queries.values())
        problem = time_range_problem(t, margin)
        if problem is not None:
            raise ValueError(f"row {problem[0]}: {problem[1]}")
        problem = None if time_now is None else time_range_problem(np.array([time_now]), margin)
        if problem is not None:
            raise ValueError(f"time_now: {problem[1]}")

    def _check_gaps(self, t: np.ndarray, time_now: int | None, limit: int) -> None:
        """Refuse a row (or ``time_now``) after which the time queries pass more than ``limit``
        slide boundaries at once (:func:`crowded_gap`)."""
        times = t if time_now is None else np.append(t, np.int64(time_now))
        before = times if self._t_last is None else np.concatenate([np.array([self._t_last], np.int64), times])
        slides = [q.slide for q in self._queries.values() if q.kind == "time"]
        crowded = crowded_gap(before, slides, limit)
        if crowded is not None:
            gap, earlier, later, passed = crowded
            row = gap + (self._t_last is None)
            where = "time_now" if row == len(t) else f"row {row}"
            raise ValueError(f"{where}: t jumps from {earlier} to {later}: the {len(slides)} time queries would pass "
                             f"{passed:,} slide boundaries at once, more than max_slides ({limit:,}), each an answer "
                             "held until the call returns; use larger slides or raise max_slides")

    def topk(self, handle: int) -> Result | None:
        """The query's latest answer, or ``None`` before its first boundary (``O(1)``)."""
        handle = self._known(handle)
        return self._last.get(handle)

    # ------------------------------------------------------------------ figures

    def candidates(self) -> np.ndarray:
        """``seq`` of every record of every group (int64, ``O(MTK)``; a record in two groups twice)."""
        parts = [group.nodes[group.ranked_nodes(), SEQ] for group in self._groups.values()]
        return np.concatenate(parts) if parts else np.empty(0, np.int64)

    def stats(self) -> dict[str, Any]:
        """Records, families, windows, modelled and measured bytes and counters (``O(groups + families + d)``).

        ``candidates`` (and ``retained``) are the records of the list plus those only the latest
        answers hold: the members of a family's latest answer that left the list with it (alive
        in no later window), as MinTopK holds its answered window until the next slide.  A
        query whose slide is its window answers every window with a list of nothing else: it
        held ``k`` candidates (MinTopK's count), not 0.

        ``bytes`` models every record at ``RECORD_WORDS`` plus two marks per family of its group,
        and two words (``tkc``, ``lbp``) per window; ``measured_bytes`` is the arrays' allocated
        size, the latest answers' arrays (kept up to date as they change) and the workload's
        Python objects (priced on one query: ``O(d)``).  ``arrivals`` counts the rows taken; the
        work counters are summed over the groups present, each of which takes every row:
        ``scored`` (rows taken by each group, summed) ``= prefiltered + discarded + inserted``;
        ``answers`` counts the windows answered, once per family whatever its queries.
        """
        out = {"queries": len(self._queries), "groups": len(self._groups), "families": 0, "windows": 0,
               "candidates": 0, "retained": 0, "bytes": 0, "measured_bytes": 0}
        counters = np.zeros(len(COUNTER_NAMES), np.int64)
        for group in self._groups.values():
            live = int(group.meta[LIVE])
            families = len(group.members)
            out["families"] += families
            out["windows"] += len(group.tkc)
            out["candidates"] += live + int(group.fam[:families, RELEASED].sum())
            out["bytes"] += WORD * (live * (RECORD_WORDS + 2 * families) + 2 * len(group.tkc))
            out["measured_bytes"] += array_bytes(group.arrays())
            counters += group.counters
        out["retained"] = out["candidates"]
        out["measured_bytes"] += self._last_bytes + self._python_bytes()
        out.update(zip(COUNTER_NAMES, counters.tolist()))
        out["scored"], out["arrivals"] = out["arrivals"], self._arrivals
        return out

    def _python_bytes(self) -> int:
        """The workload's Python objects, ``O(d)``: the tables by handle at their size, and per
        query its :class:`Query`, placement and place in its family's list, per latest answer
        its ``Result`` and ``Answer`` (their arrays apart), each priced on one of them."""
        tables = (self._queries, self._placement, self._answered, self._last)
        total = sum(sys.getsizeof(table) for table in tables)
        if self._queries:
            query = next(iter(self._queries.values()))
            total += len(self._queries) * (deep_size(query) + sys.getsizeof((0, 0)) + WORD)
        if self._last:
            result = next(iter(self._last.values()))
            arrays = (result.answer.ids, result.answer.scores, result.answer.seq)
            total += len(self._last) * deep_size(result, exclude=arrays)
        return total

    # ------------------------------------------------------------------ invariants

    def check(self) -> None:
        """Assert every invariant: list order and links, skip levels, marks, ``tkc`` and ``lbp``
        of every window of every family, careers, each query in a family of its weights, kind,
        window and slide, the stream position every family has answered up to, the handles and
        answer counts (``O(MTK (levels + families + windows) + queries)``)."""
        assert set(self._placement) == set(self._queries) == set(self._answered), "handles"
        assert all(h < self._next_handle for h in self._queries), "a handle at or above the next one"
        assert set(self._last) <= set(self._queries), "a latest answer of no query"
        for h, n in self._answered.items():
            assert n >= 0 and (self._last[h].slide == n - 1 if n else h not in self._last), f"query {h}: answers"
        assert all(q.dimensions == self._dimensions for q in self._queries.values()), "dimensions"
        for key, group in self._groups.items():
            assert group_key(group.weights) == key, "group key"
            _check_group(group, self._next_seq, self._t_last)
            assert group.members, "a group without queries"
            for family, members in group.members.items():
                assert all(a < b for a, b in zip(members, members[1:])), "members out of order or twice"
                row = group.fam[family]
                for h in members:
                    q = self._queries[h]
                    assert self._placement[h] == (key, family), f"query {h}: placement"
                    assert q.weights == group.weights, f"query {h} is in the group of other weights"
                    assert (_KINDS[q.kind], q.window, q.slide) == (row[KIND], row[WINDOW], row[SLIDE]), \
                        f"query {h} is in a family of another kind, window or slide"
                    assert q.k <= row[K], f"query {h}: k above its family's"

    # ------------------------------------------------------------------ state

    def dump_state(self) -> dict[str, Any]:
        """The working state as plain JSON data (``O(MTK F + windows)``)."""
        groups = []
        for group in self._groups.values():
            families = group.families()
            ranked = group.ranked_nodes()
            objects = [[float(group.scores[n]), *group.nodes[n, [SEQ, OID, TIME]].tolist(),
                        [[int(group.start[n, f]), None if group.end[n, f] == NEVER else int(group.end[n, f])]
                         for f in families]] for n in ranked]
            rank = {node: position for position, node in enumerate(ranked)}
            described = []
            for f in families:
                row = group.fam[f]
                windows = []
                if row[CURRENT] != UNSET:
                    for window in range(row[CURRENT], row[CURRENT] + row[SPAN]):
                        slot = row[OFFSET] + window % row[SPAN]
                        lowest = int(group.lbp[slot])
                        windows.append([int(group.tkc[slot]), None if lowest == NONE else rank[lowest]])
                described.append({"kind": "count" if row[KIND] == COUNT_KIND else "time",
                                  "window": int(row[WINDOW]), "slide": int(row[SLIDE]), "k": int(row[K]),
                                  "since": int(row[SINCE]), "current": None if row[CURRENT] == UNSET else int(row[CURRENT]),
                                  "windows": windows, "queries": list(group.members[f]),
                                  "released": int(row[RELEASED])})
            groups.append({"weights": list(group.weights), "families": described,
                           "scores": floats_out([o[0] for o in objects]),
                           "objects": [o[1:] for o in objects],
                           "counters": dict(zip(COUNTER_NAMES, group.counters.tolist()))})
        last = {str(h): {"slide": r.slide, "end": r.end, "position": r.position, "ids": r.answer.ids.tolist(),
                         "scores": floats_out(r.answer.scores), "seq": r.answer.seq.tolist()}
                for h, r in self._last.items()}
        return {"next_seq": self._next_seq, "t_last": self._t_last, "arrivals": self._arrivals,
                "next_handle": self._next_handle, "dimensions": self._dimensions,
                "answered": {str(h): n for h, n in self._answered.items()}, "last": last, "groups": groups}

    def _workload(self) -> dict[str, Any]:
        return {"queries": [{"handle": h, **q.to_dict()} for h, q in self._queries.items()]}

    def to_state(self) -> dict[str, Any]:
        """A JSON-serialisable snapshot (the algorithms' envelope); :meth:`restore` continues it.
        ``O(MTK F + windows)``."""
        return pack(NAME, self._workload(), {}, self.dump_state())

    def to_state_text(self) -> tuple[str, str]:
        """:meth:`to_state` as JSON text, and its checksum."""
        return pack_text(NAME, self._workload(), {}, self.dump_state())

    @classmethod
    def restore(cls, state: Any) -> "SharedTopK":
        """Rebuild an executor from :meth:`to_state`; anything wrong raises ``StateError``.
        ``O(MTK (log MTK + F))`` plus :meth:`check`."""
        if not isinstance(state, dict):
            raise StateError(f"state must be a JSON object, got {type(state).__name__}")
        if state.get("format_version") != FORMAT_VERSION:
            raise StateError(f"state format version {state.get('format_version')!r} is not supported "
                             f"(this engine reads {FORMAT_VERSION})")
        missing = [key for key in ("algorithm", "query", "params", "data", "checksum") if key not in state]
        if missing:
            raise StateError(f"state is missing {', '.join(missing)}")
        if state["algorithm"] != NAME:
            raise StateError(f"state is of {state['algorithm']!r}, not of the shared executor ({NAME!r})")
        try:
            valid = pack(NAME, state["query"], state["params"], state["data"])["checksum"] == state["checksum"]
        except (TypeError, ValueError):
            valid = False
        if not valid:
            raise StateError("state is corrupt: its checksum does not match its data")
        try:
            assert state["params"] == {}, "the shared executor takes no parameters"
            executor = cls()
            executor._load(state["query"], state["data"])
            executor.check()
        except (AssertionError, KeyError, IndexError, TypeError, ValueError, AttributeError, OverflowError) as error:
            raise StateError(f"state of the shared executor is corrupt: {type(error).__name__}: {error}") from None
        return executor

    def _load(self, workload: dict[str, Any], data: dict[str, Any]) -> None:
        for entry in workload["queries"]:
            fields = {key: value for key, value in entry.items() if key != "handle"}
            handle = int(entry["handle"])
            assert handle not in self._queries, f"query {handle} is listed twice"
            self._queries[handle] = Query.from_dict(fields)
            check_windows_per_object(self._queries[handle], "the shared executor")
        self._next_seq = int(data["next_seq"])
        self._arrivals = int(data["arrivals"]) if "arrivals" in data else max(  # states written before it was kept
            (int(group["counters"]["arrivals"]) for group in data["groups"]), default=0)
        assert self._arrivals >= 0, "a negative number of arrivals"
        self._t_last = None if data["t_last"] is None else int(data["t_last"])
        self._next_handle = int(data["next_handle"])
        self._dimensions = None if data["dimensions"] is None else int(data["dimensions"])
        self._answered = {int(h): int(n) for h, n in data["answered"].items()}
        for h, r in data["last"].items():
            answer = Answer(np.asarray(r["ids"], np.int64), floats_in(r["scores"]), np.asarray(r["seq"], np.int64))
            assert len(answer.ids) == len(answer.scores) == len(answer.seq), f"query {h}: latest answer"
            self._keep_last(int(h), Result(int(h), int(r["slide"]), int(r["end"]), int(r["position"]), answer))
        for described in data["groups"]:
            weights = tuple(float(w) for w in described["weights"])
            group = _Group(weights, self._next_seq)
            key = group.key
            assert key not in self._groups, f"two groups of weights {list(weights)}"
            self._groups[key] = group
            families = []
            for row in described["families"]:
                members = [int(h) for h in row["queries"]]
                assert members and all(h in self._queries for h in members), "a family of no or unknown queries"
                first = self._queries[members[0]]
                assert (row["kind"], row["window"], row["slide"]) == (first.kind, first.window, first.slide), \
                    f"a family of query {members[0]} with another kind, window or slide"
                assert 0 <= row["since"] <= self._next_seq, \
                    f"a family of query {members[0]} since arrival {row['since']}, outside 0..{self._next_seq}"
                family = group.new_family(first.kind, first.window, first.slide, int(row["k"]), int(row["since"]),
                                          None)
                group.fam[family, CURRENT] = UNSET if row["current"] is None else int(row["current"])
                group.fam[family, RELEASED] = int(row.get("released", 0))  # absent from states written before
                group.members[family] = members
                for h in members:
                    self._placement[h] = (key, family)
                families.append(family)
            objects = described["objects"]
            values = floats_in(described["scores"])
            assert len(values) == len(objects), "scores and objects differ in number"
            group.grow_nodes(len(objects) + 1)
            columns = np.asarray([o[:3] for o in objects], np.int64).reshape(-1, 3)
            slots = kernel.append_ranked(group.scores, group.nodes, group.forward, group.free, group.meta, values,
                                         columns[:, 0].copy(), columns[:, 1].copy(), columns[:, 2].copy())
            for slot, o in zip(slots.tolist(), objects):
                marks = o[3]
                assert len(marks) == len(families), "marks do not match the families"
                for family, (first, last) in zip(families, marks):
                    if last is None or (last == -1 and o[0] < group.fam[family, SINCE]):
                        last = NEVER  # not alive in the family (-1 in states written before NEVER moved)
                    group.start[slot, family] = int(first)
                    group.end[slot, family] = int(last)
                group.nodes[slot, CAREERS] = sum(1 for family in families
                                                 if group.start[slot, family] <= group.end[slot, family])
            for family, row in zip(families, described["families"]):
                current, span, offset = group.fam[family, CURRENT], group.fam[family, SPAN], group.fam[family, OFFSET]
                assert len(row["windows"]) == (0 if current == UNSET else span), "wrong number of windows"
                for position, (count, lowest) in enumerate(row["windows"]):
                    assert lowest is None or 0 <= lowest < len(slots), "a window's lowest record is not in the list"
                    slot = offset + (current + position) % span
                    group.tkc[slot] = int(count)
                    group.lbp[slot] = NONE if lowest is None else int(slots[int(lowest)])
            group.counters[:] = [int(described["counters"][name]) for name in COUNTER_NAMES]


def _check_group(group: _Group, next_seq: int, t_last: int | None) -> None:
    """The invariants of one group (see :meth:`SharedTopK.check`)."""
    assert group.meta[NEXT_SEQ] == next_seq, "group and stream disagree on seq"
    ranked = group.ranked_nodes()
    assert len(ranked) == group.meta[LIVE], "live count"
    assert group.meta[FREE_TOP] + len(ranked) + 1 == len(group.scores), "free slots"
    keys = [(float(group.scores[n]), int(group.nodes[n, SEQ])) for n in ranked]
    assert all(a > b for a, b in zip(keys, keys[1:])), "list not ranked by (score, seq)"
    assert all(math.isfinite(value) and 0 <= seq < next_seq for value, seq in keys), "a score or seq out of range"
    above = HEAD
    for node in ranked:
        assert group.nodes[node, ABOVE] == above, "broken link up"
        assert group.nodes[node, LEVEL] == kernel.node_level(int(group.nodes[node, SEQ])), "skip level"
        above = node
    for level in range(LEVELS):
        chain, node = [], int(group.forward[HEAD, level])
        while node != NONE:
            chain.append(node)
            node = int(group.forward[node, level])
        assert chain == [n for n in ranked if group.nodes[n, LEVEL] > level], f"skip level {level} chain"
    families = group.families()
    assert sorted(group.members) == families == list(range(len(families))), \
        "families without queries, queries without family, or families not in slots 0..F-1"
    for f in families:
        row = group.fam[f]
        assert 0 <= row[SINCE] <= next_seq and row[SPAN] * row[SLIDE] == row[WINDOW], f"family {f}: since or span"
        assert 0 <= row[RELEASED] <= row[K], f"family {f}: its latest answer released more records than k"
        if row[KIND] == COUNT_KIND:
            assert row[CURRENT] == next_seq // row[SLIDE] + 1, f"family {f}: a count boundary left unanswered"
        else:
            assert row[CURRENT] == UNSET or (t_last is not None and row[CURRENT] == t_last // row[SLIDE] + 1), \
                f"family {f}: a time boundary left unanswered"
    for node in ranked:
        careers = 0
        for f in range(group.fam.shape[0]):
            first, last = int(group.start[node, f]), int(group.end[node, f])
            if f not in families or group.nodes[node, SEQ] < group.fam[f, SINCE]:
                assert last == NEVER and first > last, "marks in a family the record is not alive in"
                continue
            row = group.fam[f]
            assert row[CURRENT] != UNSET, "record alive in a family with no windows"
            slide_key = group.nodes[node, SEQ] if row[KIND] == COUNT_KIND else group.nodes[node, TIME]
            assert last == slide_key // row[SLIDE] + row[SPAN], "end mark is not the record's last window"
            if first <= last:
                careers += 1
                assert row[CURRENT] <= first, "career starts before the oldest window"
            else:
                assert first == last + 1, "empty career"
        assert careers == group.nodes[node, CAREERS] and careers > 0, "career count"
    for f in families:
        row = group.fam[f]
        if row[CURRENT] == UNSET:
            continue
        for window in range(row[CURRENT], row[CURRENT] + row[SPAN]):
            slot = row[OFFSET] + window % row[SPAN]
            alive = [n for n in ranked if group.end[n, f] >= window]
            members = [n for n in alive if group.start[n, f] <= window]
            assert len(members) == group.tkc[slot] <= row[K], f"family {f} window {window}: tkc"
            assert group.lbp[slot] == (members[-1] if members else NONE), f"family {f} window {window}: lbp"
            assert alive[:len(members)] == members, f"family {f} window {window}: members are not the top"
            assert len(members) == row[K] or len(members) == len(alive), f"family {f} window {window}: not full"


__all__ = ["Answers", "Result", "SharedTopK", "NAME", "group_key"]
