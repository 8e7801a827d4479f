"""EAA, the early aggregation algorithm of Haghani, Michel, Aberer (CIKM 2009), Section 3.2."""

from __future__ import annotations

import sys
from collections import OrderedDict
from itertools import islice
from typing import Any

import numpy as np
from sortedcontainers import SortedList

from ..attributes import AttributeAlgorithm, combine
from ..base import WORD
from ..jsondata import floats_in, ints_in
from ..memory import PY_FLOAT, PY_INT, deep_size, grown_set_bytes, python_bytes, sorted_list_bytes
from ..ranking import Answer
from ..registry import register
from ..stream import Batch

INSTANCE_WORDS = 7
"""Words per instance besides its ``2d`` per-stream sums and counts: id, t (expiry key), seq,
currentscore, bestscore, dc and the time-list pointer."""

RECORD_WORDS = 2
"""Words per object in the validity table besides its ``d`` occurrence counts: id, newest seq."""

ENTRY_WORDS = 2
"""Words per entry of ``csorted`` / ``bsorted``: a score and a pointer."""

INFINITY = float("inf")

ENTRY_BYTES = python_bytes((0.5, 0)) + 8
"""Measured bytes of a ``csorted`` / ``bsorted`` entry: the pair and its slot in a sublist (the
score and the id are the instance's)."""

ANSWER_ROW_BYTES = 3 * WORD

SET_TABLE = 64
"""Dominator-set sizes tabled at first (``min(k, SET_TABLE)``); the table doubles when a set
outgrows it, so a large ``k`` costs nothing until sets grow that large."""
"""The data of one row of the cached answer: id, score and seq."""

SCOPES = ("validity", "window")
"""What the ``occurrences`` bound ``m`` counts: an object's tuples in one stream while it stays
valid (the paper's "at most once" for ``m = 1``), or within any one window."""


class Instance:
    """One aggregated instance ``p^j`` of an object (Section 3.2.1).

    ``key`` is its time ``p^j.t`` (the expiry key of the tuple that created it: ``seq`` for
    count windows, ``t`` for time windows); ``sums[i]`` and ``counts[i]`` cover the object's
    tuples in stream ``i`` with key ``>= p^j.t``.  ``dc`` counts the distinct objects in
    ``dominators`` that dominate it.
    """

    __slots__ = ("uid", "oid", "key", "seq", "sums", "counts", "current", "best", "dc", "dominators")

    def __init__(self, uid: int, oid: int, key: int, seq: int, d: int) -> None:
        self.uid, self.oid, self.key, self.seq = uid, oid, key, seq
        self.sums = [0.0] * d
        self.counts = [0] * d
        self.current = 0.0
        self.best = 0.0
        self.dc = 0
        self.dominators: set[int] = set()


class Record:
    """An object's entry in the validity table: occurrences per stream since the entry was
    made, the ``seq`` of its newest tuple and its live instances, oldest first."""

    __slots__ = ("counts", "seq", "instances")

    def __init__(self, d: int) -> None:
        self.counts = [0] * d
        self.seq = -1
        self.instances: list[Instance] = []


def instance_bytes(d: int) -> int:
    """Measured bytes of an instance with ``d`` streams, its dominator set aside: the object,
    its two lists, ``d`` sums, two scores and four non-cached ints (uid, oid, key, seq; the
    counts are cached small ints)."""
    sample = Instance(0, 0, 0, 0, d)
    return python_bytes(sample, sample.sums, sample.counts) + (d + 2) * PY_FLOAT + 4 * PY_INT


def record_bytes(d: int) -> int:
    """Measured bytes of a validity-table entry with ``d`` streams: the object, its counts, its
    instance list after a first append, its seq and its key in the table."""
    sample = Record(d)
    sample.instances.append(None)
    return python_bytes(sample, sample.counts, sample.instances) + 2 * PY_INT


@register
class EAA(AttributeAlgorithm):
    """Early aggregation with interval dominance: exact, keeps the ``k`` dominance set.

    Every tuple of object ``p`` updates each live instance of ``p`` (Algorithm 2) and creates
    the instance ``p^{r+1}`` (Algorithm 1; in time windows a tuple whose ``t`` equals that of
    ``p``'s newest instance only updates it).  ``currentscore`` aggregates the instance's sums;
    ``bestscore`` adds, per stream ``i``, ``m - n_i`` (``m`` = the ``occurrences`` parameter,
    ``n_i`` = ``p``'s occurrences in stream ``i`` so far), values being at most 1: with
    ``m = 1`` a stream seen at any time adds nothing more and an unseen one adds 1, as in the
    paper.  ``p^i`` dominates ``q^j`` iff ``p^i.t > q^j.t`` and
    ``p^i.currentscore > q^j.bestscore``; an instance dominated by ``k`` distinct objects is
    dropped (``dc`` plus the set of dominating ids).  The scans are ranges of the two sorted
    lists: a rising ``currentscore`` (old ``c``, new ``c'``) visits ``bsorted`` in
    ``[c, c')``, a falling ``bestscore`` (``b`` to ``b'``) visits ``csorted`` in ``(b', b]``.
    Instances expire from the front of the time list.  The answer scans ``csorted``
    downwards until ``k`` distinct objects (and every tie of the ``k``-th).

    Exact when no object occurs more than ``occurrences`` times in one stream while it stays
    valid (``m = 1``: the paper's "at most once"); an entry that sees more raises
    ``ValueError``.  With ``occurrences_per="window"`` the promise is per window instead (for
    objects that stay valid indefinitely, like World Cup clients): instance ``p^j``'s bound
    adds ``m - c_i`` with ``c_i`` its own tuples in stream ``i``, since every tuple it covers
    lies in the one window starting at ``p^j.t``; ``m`` = the count window's length is always
    sound.  Costs per tuple: ``O(r (d + log N))`` for ``r`` live instances of the
    object plus one step per scanned entry.

    ``retained`` counts instances, ``candidates`` objects with a live instance.  ``bytes``:
    ``INSTANCE_WORDS + 2d`` per instance, one word per dominating id, ``2 ENTRY_WORDS`` per
    instance for the score lists and ``RECORD_WORDS + d`` per object.  ``measured_bytes``: the
    containers' sizes, per-record sizes measured once (``instance_bytes``, ``record_bytes``,
    ``ENTRY_BYTES``) and the dominator sets' sizes, kept as ids are added and sets dropped
    (a set that only grows has the size its member count gives, ``grown_set_bytes``).
    ``stats`` is ``O(1)``: every figure is a count kept as the structures change.

    Examples
    --------
    >>> import numpy as np, engine
    >>> q = engine.Query(weights=[1.0, 1.0], k=1, window=4, slide=2)
    >>> alg = engine.create("eaa", q)
    >>> data = ([1, 2, 1, 3, 2, 3], [0, 0, 1, 1, 1, 0], [0.5, 0.9, 0.5, 0.2, 0.3, 0.4], range(6))
    >>> for batch in engine.slides(data, q):
    ...     alg.process(batch)
    >>> alg.topk().ids.tolist(), alg.stats()["retained"]
    ([3], 3)
    """

    name = "eaa"
    summary = "EAA: aggregated instances, interval dominance, k dominance set (CIKM 2009)"
    defaults = {"occurrences": 1, "occurrences_per": "validity"}
    _per_window = False

    def _reset(self) -> None:
        self._reset_bounds()
        self._records: dict[int, Record] = {}
        self._timeline: OrderedDict[int, Instance] = OrderedDict()
        self._csorted = SortedList()
        self._bsorted = SortedList()
        self._next_uid = 0
        self._end: int | None = None
        self._answer: Answer | None = Answer.empty()
        self._answer_bytes = 0
        self._counters = {"arrivals": 0, "instances_created": 0, "pruned": 0, "expired": 0,
                          "dominations": 0, "entries_scanned": 0}
        self._links = 0
        self._set_bytes = grown_set_bytes(min(self.q.k, SET_TABLE))
        self._dominator_bytes = 0
        self._instance_bytes = instance_bytes(self.q.dimensions)
        self._record_bytes = record_bytes(self.q.dimensions)
        self._fixed_bytes = deep_size(self.__dict__, exclude=(self.q, self.params, *self._tallied()))

    def _tallied(self) -> tuple:
        """The structures ``memory`` sizes from kept counts, not from the walk made at reset."""
        return self._records, self._timeline, self._csorted, self._bsorted

    # ------------------------------------------------------------------ bounds

    def _reset_bounds(self) -> None:
        self._occurrences = self.params["occurrences"]
        if self._occurrences < 1:
            raise ValueError(f"occurrences must be >= 1, got {self._occurrences}")
        if self.params["occurrences_per"] not in SCOPES:
            raise ValueError(f"occurrences_per must be one of {', '.join(SCOPES)}, "
                             f"got {self.params['occurrences_per']!r}")
        self._per_window = self.params["occurrences_per"] == "window"

    def _bound(self, instance: Instance, record: Record) -> float:
        """The highest score ``instance`` can reach while it lives (``O(d)``).

        Per validity period, the object's occurrences ``n_i`` since its entry was made count;
        per window, the instance's own: every tuple it will ever cover lies in the one window
        that starts at its time, so at most ``m`` per stream.
        """
        m = self._occurrences
        counts = instance.counts if self._per_window else record.counts
        return combine([s + (m - n) for s, n in zip(instance.sums, counts)], self.q.weights)

    def _count_occurrence(self, oid: int, stream: int, record: Record) -> None:
        record.counts[stream] += 1
        if not self._per_window and record.counts[stream] > self._occurrences:
            raise ValueError(f"{self.name}: object {oid} occurred {record.counts[stream]} times in stream {stream} "
                             f"while valid, more than occurrences={self._occurrences}; raise the parameter")

    def _check_window_occurrences(self, instance: Instance, stream: int) -> None:
        """Per window: an instance covers one window, so more than ``m`` tuples break the promise."""
        if self._per_window and instance.counts[stream] > self._occurrences:
            raise ValueError(f"{self.name}: object {instance.oid} occurred {instance.counts[stream]} times in "
                             f"stream {stream} within one window, more than occurrences={self._occurrences}; "
                             "raise the parameter")

    def _begin(self, batch: Batch) -> None:
        """Hook run once per slide before its tuples (the approximate algorithm's sketches)."""

    # ------------------------------------------------------------------ maintenance

    def process(self, batch: Batch) -> None:
        ids, stream, value, keys, seq = self._tuples(batch)
        start = batch.window_start(self.q)
        timeline = self._timeline
        while timeline:
            oldest = next(iter(timeline.values()))
            if oldest.key >= start:
                break
            self._counters["expired"] += 1
            self._drop(oldest)
        self._begin(batch)
        for row in zip(ids.tolist(), stream.tolist(), value.tolist(), keys.tolist(), seq.tolist()):
            self._arrive(*row)
        self._end = batch.end
        self._answer = None
        self._answer_bytes = 0

    def _arrive(self, oid: int, stream: int, value: float, key: int, seq: int) -> None:
        """Algorithm 1: update ``oid``'s instances with the new attribute, add ``p^{r+1}``."""
        self._counters["arrivals"] += 1
        record = self._records.get(oid)
        if record is None:
            record = self._records[oid] = Record(self.q.dimensions)
        self._count_occurrence(oid, stream, record)
        record.seq = seq
        newest_key = record.instances[-1].key if record.instances else None
        for instance in list(record.instances):
            if instance.uid in self._timeline:
                self._update(instance, record, stream, value)
        if newest_key == key:
            return
        instance = Instance(self._next_uid, oid, key, seq, self.q.dimensions)
        self._next_uid += 1
        self._counters["instances_created"] += 1
        instance.sums[stream] += value
        instance.counts[stream] += 1
        instance.current = combine(instance.sums, self.q.weights)
        instance.best = max(instance.current, self._bound(instance, record))
        record.instances.append(instance)
        self._records[oid] = record
        self._timeline[instance.uid] = instance
        self._dominator_bytes += self._set_bytes[0]
        self._csorted.add((instance.current, instance.uid))
        self._bsorted.add((instance.best, instance.uid))
        below = self._bsorted.bisect_left((instance.current, -1))
        self._dominate_range(instance, list(islice(self._bsorted, 0, below)))

    def _update(self, instance: Instance, record: Record, stream: int, value: float) -> None:
        """Algorithm 2: one more attribute for ``instance``; new dominations both ways."""
        old_current, old_best = instance.current, instance.best
        instance.sums[stream] += value
        instance.counts[stream] += 1
        self._check_window_occurrences(instance, stream)
        instance.current = combine(instance.sums, self.q.weights)
        instance.best = max(instance.current, min(old_best, self._bound(instance, record)))
        self._csorted.remove((old_current, instance.uid))
        self._csorted.add((instance.current, instance.uid))
        self._bsorted.remove((old_best, instance.uid))
        self._bsorted.add((instance.best, instance.uid))
        if instance.current > old_current:
            self._dominate_range(instance, list(self._bsorted.irange(
                (old_current, -1), (instance.current, -1), inclusive=(True, False))))
        if instance.best < old_best:
            self._dominated_by_range(instance, list(self._csorted.irange(
                (instance.best, INFINITY), (old_best, INFINITY))))

    def _dominate_range(self, dominant: Instance, entries: list) -> None:
        """``dominant`` now beats the ``bestscore`` of ``entries``: count it where older."""
        self._counters["entries_scanned"] += len(entries)
        for _, uid in entries:
            other = self._timeline.get(uid)
            if (other is not None and other.key < dominant.key and other.oid != dominant.oid
                    and dominant.oid not in other.dominators):
                self._add_dominator(other, dominant.oid)

    def _dominated_by_range(self, instance: Instance, entries: list) -> None:
        """The ``currentscore`` of ``entries`` now beats ``instance``'s ``bestscore``."""
        self._counters["entries_scanned"] += len(entries)
        for _, uid in entries:
            other = self._timeline.get(uid)
            if (other is not None and other.key > instance.key and other.oid != instance.oid
                    and other.oid not in instance.dominators):
                self._add_dominator(instance, other.oid)
                if instance.uid not in self._timeline:
                    return

    def _add_dominator(self, instance: Instance, oid: int) -> None:
        self._counters["dominations"] += 1
        instance.dc += 1
        instance.dominators.add(oid)
        self._links += 1
        if instance.dc >= len(self._set_bytes):
            self._set_bytes = grown_set_bytes(2 * instance.dc)
        self._dominator_bytes += self._set_bytes[instance.dc] - self._set_bytes[instance.dc - 1]
        if instance.dc >= self.q.k:
            self._counters["pruned"] += 1
            self._drop(instance)

    def _drop(self, instance: Instance) -> None:
        """Remove an expired or dominated instance, and its object's entry with the last one."""
        del self._timeline[instance.uid]
        self._links -= instance.dc
        self._dominator_bytes -= self._set_bytes[instance.dc]
        self._csorted.remove((instance.current, instance.uid))
        self._bsorted.remove((instance.best, instance.uid))
        record = self._records[instance.oid]
        record.instances.remove(instance)
        if not record.instances:
            del self._records[instance.oid]

    # ------------------------------------------------------------------ answers and state

    def topk(self) -> Answer:
        """Scan ``csorted`` downwards to ``k`` distinct objects and every tie of the last."""
        if self._answer is None:
            k = self.q.k
            found: dict[int, float] = {}
            kth = None
            for current, uid in reversed(self._csorted):
                if kth is not None and current < kth:
                    break
                oid = self._timeline[uid].oid
                if oid not in found:
                    found[oid] = current
                    if len(found) == k:
                        kth = current
            ids = list(found)
            self._answer = Answer.ranked(ids, [found[oid] for oid in ids],
                                         [self._records[oid].seq for oid in ids], k)
            self._answer_bytes = ANSWER_ROW_BYTES * len(self._answer)
        return self._answer

    def candidates(self) -> np.ndarray:
        return np.fromiter((record.seq for record in self._records.values()), np.int64, len(self._records))

    def _stats(self) -> dict[str, Any]:
        out = self._counters.copy()
        out["candidates"] = len(self._records)
        out["retained"] = len(self._timeline)
        return out

    def memory(self) -> tuple[int, int]:
        """Both figures from the kept counts and the containers' sizes: ``O(1)``."""
        d, instances, records = self.q.dimensions, len(self._timeline), len(self._records)
        modelled = WORD * ((INSTANCE_WORDS + 2 * d + 2 * ENTRY_WORDS) * instances + self._links
                           + (RECORD_WORDS + d) * records)
        measured = (self._fixed_bytes + self._answer_bytes + self._dominator_bytes
                    + (self._instance_bytes + 2 * ENTRY_BYTES) * instances + self._record_bytes * records
                    + sys.getsizeof(self._records) + sys.getsizeof(self._timeline)
                    + sorted_list_bytes(self._csorted) + sorted_list_bytes(self._bsorted))
        return modelled, measured

    def dump_state(self) -> dict[str, Any]:
        records = []
        for oid, record in self._records.items():
            instances = [[i.uid, i.key, i.seq, i.sums, i.counts, i.best, sorted(i.dominators)]
                         for i in record.instances]
            records.append([oid, record.seq, record.counts, instances])
        return {"end": self._end, "next_uid": self._next_uid, "records": records,
                "instances": len(self._timeline), "counters": dict(self._counters)}

    def load_state(self, data: dict[str, Any]) -> None:
        d = self.q.dimensions
        instances = []
        for oid, seq, counts, stored in data["records"]:
            record = self._records[int(oid)] = Record(d)
            record.seq = int(seq)
            record.counts = ints_in(counts, "counts").tolist()
            for uid, key, created, sums, instance_counts, best, dominators in stored:
                instance = Instance(int(uid), int(oid), int(key), int(created), d)
                instance.sums = floats_in(sums).tolist()
                instance.counts = ints_in(instance_counts, "counts").tolist()
                instance.current = combine(instance.sums, self.q.weights)
                instance.best = float(floats_in([best])[0])
                instance.dominators = set(ints_in(dominators, "dominators").tolist())
                instance.dc = len(instance.dominators)
                if instance.dc >= len(self._set_bytes):
                    self._set_bytes = grown_set_bytes(2 * instance.dc)
                self._links += instance.dc
                self._dominator_bytes += self._set_bytes[instance.dc]
                record.instances.append(instance)
                instances.append(instance)
        if len(instances) != data["instances"]:
            raise ValueError(f"state lists {len(instances)} instances, expected {data['instances']}")
        for instance in sorted(instances, key=lambda i: i.uid):
            self._timeline[instance.uid] = instance
        self._csorted.update((i.current, i.uid) for i in instances)
        self._bsorted.update((i.best, i.uid) for i in instances)
        self._next_uid = int(data["next_uid"])
        self._counters = {key: int(data["counters"][key]) for key in self._counters}
        self._end = data["end"]
        self._answer = None
        self._answer_bytes = 0

    def check(self) -> None:
        d = self.q.dimensions
        keys = [instance.key for instance in self._timeline.values()]
        assert all(a <= b for a, b in zip(keys, keys[1:])), "time list out of order"
        if self._end is not None and keys:
            assert keys[0] >= self._end - self.q.window and keys[-1] < self._end, "instance outside the window"
        assert len(self._csorted) == len(self._bsorted) == len(self._timeline), "score lists and time list differ"
        assert all(uid < self._next_uid for uid in self._timeline), "instance id from the future"
        listed = 0
        for oid, record in self._records.items():
            assert record.instances, f"object {oid} has no instance"
            assert len(record.counts) == d and all(n >= 0 for n in record.counts)
            previous = None
            for instance in record.instances:
                listed += 1
                assert self._timeline.get(instance.uid) is instance, f"instance {instance.uid} not in the time list"
                assert instance.oid == oid and (previous is None or instance.key > previous), "instances out of order"
                previous = instance.key
                assert instance.seq <= record.seq, "instance newer than its object"
                assert all(0 <= c <= n for c, n in zip(instance.counts, record.counts)), "instance counts"
                assert all(s >= 0.0 for s in instance.sums) and all(
                    (s > 0.0) <= (c > 0) for s, c in zip(instance.sums, instance.counts)), "instance sums"
                assert instance.current == combine(instance.sums, self.q.weights), "stale currentscore"
                assert instance.current <= instance.best, "bestscore below currentscore"
                self._check_bound(instance, record)
                assert instance.dc == len(instance.dominators) < self.q.k, "dominance counter"
                assert oid not in instance.dominators, "an object dominates itself"
                assert (instance.current, instance.uid) in self._csorted, "csorted entry missing"
                assert (instance.best, instance.uid) in self._bsorted, "bsorted entry missing"
        assert listed == len(self._timeline), "time list holds instances of no object"
        sets = [instance.dominators for instance in self._timeline.values()]
        assert self._links == sum(map(len, sets)), "kept dominator count"
        assert self._dominator_bytes == sum(self._set_bytes[len(ids)] for ids in sets), "kept dominator set sizes"

    def _check_bound(self, instance: Instance, record: Record) -> None:
        assert instance.best <= max(instance.current, self._bound(instance, record)), "bestscore above the bound"
