"""SLA, the sorted-list algorithm of Haghani, Michel, Aberer (CIKM 2009), Section 3.1."""

from __future__ import annotations

import heapq
from collections import deque
from typing import Any

import numpy as np
from sortedcontainers import SortedList

import sys

from ..attributes import AttributeAlgorithm, attribute_sum, combine
from ..jsondata import ints_in
from ..memory import PY_FLOAT, PY_INT, Footprint, Layout, deep_size, python_bytes, sorted_list_bytes
from ..ranking import Answer
from ..registry import register
from ..stream import Batch

FIFO = Layout("sla tuples", {"tuple": {"id": 1, "stream": 1, "value": 1, "t": 1, "seq": 1}})
"""A valid tuple in the FIFO (``TUPLE_WORDS``)."""

OBJECTS = Layout("sla objects", {"object": {"id": 1, "score": 1, "seq": 1, "attributes": "d"}})
"""A valid object: id, score, the seq of its newest tuple and its ``d`` attribute sums."""

LISTS = Layout("sla sorted lists", {"entry": {"value": 1, "pointer": 1}})
"""An entry of a per-stream sorted list: the attribute and a pointer to its object."""

VIEW = Layout("sla view", {"entry": {"score": 1, "pointer": 1}})
"""An entry of the top-``k_max`` view: the score and a pointer to its object."""

STRUCTURES = ((FIFO, "tuple"), (OBJECTS, "object"), (LISTS, "entry"), (VIEW, "entry"))
"""Each structure's layout and record kind, in the order of ``SLA._sizes``."""

TUPLE_BYTES = python_bytes((0, 0, 0, 0, 0)) + 3 * PY_INT + PY_FLOAT
"""Measured bytes of a FIFO row: the 5-tuple, its key, seq and id and its value (shared with
its object's deque); the stream number is a cached small int."""

LIST_ENTRY_BYTES = python_bytes((0.5, 0)) + PY_FLOAT + 8
"""A sorted-list entry: the pair, the attribute sum it holds and its slot in a sublist."""

VIEW_ENTRY_BYTES = python_bytes((0.5, 0, 0)) + 8
"""A view entry: the triple (score, seq and id are the object's and a row's) and its slot."""


class _Object:
    """A valid object: its valid tuples' values per stream (arrival order) and their sums."""

    __slots__ = ("values", "sums", "score", "seq", "tuples")

    def __init__(self, d: int) -> None:
        self.values = [deque() for _ in range(d)]
        self.sums = [0.0] * d
        self.score = 0.0
        self.seq = -1
        self.tuples = 0


def _object_bytes(d: int) -> int:
    """Measured bytes of a valid object with ``d`` streams: the instance, its lists, its ``d``
    deques (one block each) and its score."""
    sample = _Object(d)
    return python_bytes(sample, sample.values, sample.sums, *sample.values) + PY_FLOAT


@register
class SLA(AttributeAlgorithm):
    """Sorted lists plus the Threshold Algorithm over a materialised top-``k_max`` view.

    Structures: a FIFO of the valid tuples (expiry from the front); per valid object its
    attribute sums (repeats add up); one list per stream of ``(attribute, id)`` sorted by
    value; and the view, the exact top ``k'`` objects by ``(score, seq)`` with
    ``k <= k' <= k_max`` (``k_max = 0`` means ``2k``).  An arrival raises one object's score
    (random access, ``O(d + log)``), an expiry lowers it; the view follows (Yi et al.: a
    rising outsider enters when it beats the view's last entry, evicting beyond ``k_max``; a
    falling member leaves unless it still beats the rest).  When the view holds fewer than
    ``k`` objects while others are valid, TA recomputes the top ``k_max``: sorted access down
    the lists of the positive-weight streams, stopping once the ``k_max``-th score exceeds the
    threshold ``Σ w_i · (last value seen in list i)``; objects that only zero-weight streams
    reported (score 0) compete, newest first, from the FIFO.

    ``retained`` counts tuples (the paper's measure), ``candidates`` valid objects.
    ``bytes``: ``TUPLE_WORDS`` per tuple (layout ``FIFO``), ``3 + d`` per object
    (``OBJECTS``), 2 per list entry (``LISTS``) and per view entry (``VIEW``).
    ``measured_bytes``: the containers' sizes plus per-record sizes measured once at import
    (``TUPLE_BYTES``, ``_object_bytes``, ``LIST_ENTRY_BYTES``, ``VIEW_ENTRY_BYTES``);
    ``stats`` is ``O(d)``.

    Examples
    --------
    >>> import numpy as np, engine
    >>> q = engine.Query(weights=[1.0, 1.0], k=2, window=4, slide=2)
    >>> alg = engine.create("sla", q)
    >>> data = ([1, 2, 1, 3, 2, 3], [0, 0, 1, 1, 1, 0], [0.5, 0.9, 0.5, 0.2, 0.3, 0.4], range(6))
    >>> for batch in engine.slides(data, q):
    ...     alg.process(batch)
    >>> alg.topk().ids.tolist(), alg.stats()["retained"]
    ([3, 1], 4)
    """

    name = "sla"
    summary = "SLA: tuple FIFO, per-stream sorted lists, Threshold Algorithm, top-k_max view (CIKM 2009)"
    defaults = {"k_max": 0}

    def _reset(self) -> None:
        d = self.q.dimensions
        self._k_max = self.params["k_max"] or 2 * self.q.k
        if self._k_max < self.q.k:
            raise ValueError(f"k_max must be 0 (meaning 2k) or >= k ({self.q.k}), got {self._k_max}")
        self._object_bytes = _object_bytes(d)
        self._prices = tuple(layout.bytes(d, **{kind: 1}) for layout, kind in STRUCTURES)
        self._fifo: deque = deque()
        self._objects: dict[int, _Object] = {}
        self._lists = [SortedList() for _ in range(d)]
        self._view = SortedList()
        self._end: int | None = None
        self._counters = {"arrivals": 0, "expirations": 0, "recomputations": 0, "sorted_accesses": 0}
        self._fixed_bytes = deep_size(self.__dict__, exclude=(self.q, self.params, self._fifo, self._objects,
                                                              self._lists, self._view))

    # ------------------------------------------------------------------ maintenance

    def process(self, batch: Batch) -> None:
        ids, stream, value, keys, seq = self._tuples(batch)
        start = batch.window_start(self.q)
        fifo = self._fifo
        while fifo and fifo[0][0] < start:
            self._expire(fifo.popleft())
        for row in zip(keys.tolist(), seq.tolist(), ids.tolist(), stream.tolist(), value.tolist()):
            fifo.append(row)
            self._arrive(row)
        self._end = batch.end
        if len(self._view) < min(self.q.k, len(self._objects)):
            self._recompute()

    def _arrive(self, row: tuple) -> None:
        """One tuple: its object's attribute rises (``O(d + log n)``)."""
        _, seq, oid, stream, value = row
        self._counters["arrivals"] += 1
        obj = self._objects.get(oid)
        if obj is None:
            obj = self._objects[oid] = _Object(self.q.dimensions)
        else:
            self._leave_view(oid, obj)
        obj.values[stream].append(value)
        obj.tuples += 1
        obj.seq = seq
        self._set_attribute(oid, obj, stream)
        self._offer(oid, obj)

    def _expire(self, row: tuple) -> None:
        """One tuple leaves the window: its object's attribute falls, or the object goes."""
        _, _, oid, stream, _ = row
        self._counters["expirations"] += 1
        obj = self._objects[oid]
        in_view = self._leave_view(oid, obj)
        obj.values[stream].popleft()
        obj.tuples -= 1
        self._set_attribute(oid, obj, stream)
        if not obj.tuples:
            del self._objects[oid]
        elif in_view:
            self._offer(oid, obj)

    def _set_attribute(self, oid: int, obj: _Object, stream: int) -> None:
        """Recompute one attribute (arrival order), its list entry and the object's score."""
        entries = self._lists[stream]
        entries.discard((obj.sums[stream], oid))
        obj.sums[stream] = attribute_sum(obj.values[stream])
        if obj.values[stream]:
            entries.add((obj.sums[stream], oid))
        obj.score = combine(obj.sums, self.q.weights)

    def _leave_view(self, oid: int, obj: _Object) -> bool:
        """Take ``oid`` out of the view if it is there (before its score changes)."""
        key = (obj.score, obj.seq, oid)
        if key in self._view:
            self._view.remove(key)
            return True
        return False

    def _offer(self, oid: int, obj: _Object) -> None:
        """``oid`` is outside the view: let it in if it beats the view's last entry or if no
        other object is outside; keep at most ``k_max`` entries."""
        view = self._view
        key = (obj.score, obj.seq, oid)
        if len(self._objects) - len(view) == 1 or (view and key > view[0]):
            view.add(key)
            if len(view) > self._k_max:
                del view[0]

    def _recompute(self) -> None:
        """The Threshold Algorithm: the exact top ``k_max`` into the view."""
        self._counters["recomputations"] += 1
        need = min(self._k_max, len(self._objects))
        weights = self.q.weights
        best: list = []
        seen: set = set()
        active = [i for i, w in enumerate(weights) if w > 0]
        cursors = {i: reversed(self._lists[i]) for i in active}
        depth = [0.0] * len(weights)
        while cursors:
            for i in list(cursors):
                entry = next(cursors[i], None)
                if entry is None:
                    del cursors[i]
                    depth[i] = 0.0
                    continue
                self._counters["sorted_accesses"] += 1
                depth[i], oid = entry
                if oid not in seen:
                    seen.add(oid)
                    obj = self._objects[oid]
                    self._keep(best, (obj.score, obj.seq, oid), need)
            if len(best) == need and best[0][0] > combine(depth, weights):
                break
        if len(best) < need or best[0][0] <= 0.0:
            # the lists are exhausted: every object not seen scores 0, newest tuple first
            for _, seq, oid, _, _ in reversed(self._fifo):
                if oid not in seen and self._objects[oid].seq == seq:
                    seen.add(oid)
                    if len(best) == need and (0.0, seq, oid) < best[0]:
                        break
                    self._keep(best, (self._objects[oid].score, seq, oid), need)
        self._view = SortedList(best)

    @staticmethod
    def _keep(best: list, key: tuple, need: int) -> None:
        if len(best) < need:
            heapq.heappush(best, key)
        elif key > best[0]:
            heapq.heapreplace(best, key)

    # ------------------------------------------------------------------ answers and state

    def topk(self) -> Answer:
        top = list(reversed(self._view[-self.q.k:])) if self._view else []
        return Answer(np.asarray([key[2] for key in top], np.int64), np.asarray([key[0] for key in top], np.float64),
                      np.asarray([key[1] for key in top], np.int64))

    def candidates(self) -> np.ndarray:
        return np.fromiter((obj.seq for obj in self._objects.values()), np.int64, len(self._objects))

    def _stats(self) -> dict[str, Any]:
        return {"candidates": len(self._objects), "retained": len(self._fifo), "view": len(self._view),
                **self._counters}

    def _sizes(self) -> tuple[tuple[int, int], ...]:
        """Records and measured bytes of the FIFO, the objects, the sorted lists and the view
        (``O(d)``): the containers' sizes plus the per-record sizes measured once."""
        fifo, objects, lists, view = self._fifo, self._objects, self._lists, self._view
        entries = sum(map(len, lists))
        return ((len(fifo), sys.getsizeof(fifo) + TUPLE_BYTES * len(fifo)),
                (len(objects), sys.getsizeof(objects) + self._object_bytes * len(objects)),
                (entries, sys.getsizeof(lists) + LIST_ENTRY_BYTES * entries + sum(map(sorted_list_bytes, lists))),
                (len(view), sorted_list_bytes(view) + VIEW_ENTRY_BYTES * len(view)))

    def memory(self) -> tuple[int, int]:
        """Both figures from the structures' sizes and the per-record prices: ``O(d)``, no
        footprint built."""
        sizes = self._sizes()
        return (sum(price * records for price, (records, _) in zip(self._prices, sizes)),
                sum(measured for _, measured in sizes) + self._fixed_bytes)

    def footprints(self) -> list[Footprint]:
        owners = (self._fifo, self._objects, self._lists, self._view)
        return [Footprint(layout, {kind: records}, measured, self.q.dimensions, (owner,))
                for (layout, kind), (records, measured), owner in zip(STRUCTURES, self._sizes(), owners)]

    def dump_state(self) -> dict[str, Any]:
        columns = list(zip(*self._fifo)) if self._fifo else [[]] * 5
        return {"end": self._end, "key": list(columns[0]), "seq": list(columns[1]), "ids": list(columns[2]),
                "stream": list(columns[3]), "value": list(columns[4]),
                "view": [key[2] for key in self._view], "counters": dict(self._counters)}

    def load_state(self, data: dict[str, Any]) -> None:
        columns = [ints_in(data[name], name).tolist() for name in ("key", "seq", "ids", "stream")]
        values = [float(v) for v in data["value"]]
        if len({len(c) for c in columns} | {len(values)}) > 1:
            raise ValueError("state columns have different lengths")
        for row in zip(*columns, values):
            if not 0 <= row[3] < self.q.dimensions or not 0.0 <= row[4] <= 1.0:
                raise ValueError(f"invalid tuple {row}")
            self._fifo.append(row)
            self._arrive(row)
        view_ids = ints_in(data["view"], "view").tolist()
        self._view = SortedList((self._objects[oid].score, self._objects[oid].seq, oid) for oid in view_ids)
        if len(self._view) != len(view_ids):
            raise ValueError("view lists an object twice")
        self._counters = {key: int(data["counters"][key]) for key in self._counters}
        self._end = data["end"]

    def check(self) -> None:
        d, weights = self.q.dimensions, self.q.weights
        keys = [row[0] for row in self._fifo]
        assert all(a <= b for a, b in zip(keys, keys[1:])), "FIFO out of order"
        if self._end is not None and keys:
            assert keys[0] >= self._end - self.q.window and keys[-1] < self._end, "tuple outside the window"
        rebuilt: dict[int, list] = {}
        for _, seq, oid, stream, value in self._fifo:
            per_stream, _ = rebuilt.setdefault(oid, ([[] for _ in range(d)], None))
            per_stream[stream].append(value)
            rebuilt[oid] = (per_stream, seq)
        assert rebuilt.keys() == self._objects.keys(), "objects differ from the FIFO's"
        for oid, (per_stream, seq) in rebuilt.items():
            obj = self._objects[oid]
            assert [list(v) for v in obj.values] == per_stream and obj.seq == seq, f"object {oid} is stale"
            assert obj.sums == [attribute_sum(v) for v in per_stream], f"object {oid}: attribute sums"
            assert obj.score == combine(obj.sums, weights) and obj.tuples == sum(map(len, per_stream))
        for stream, entries in enumerate(self._lists):
            expected = sorted((obj.sums[stream], oid) for oid, obj in self._objects.items() if obj.values[stream])
            assert list(entries) == expected, f"sorted list of stream {stream} is stale"
        every = sorted(((obj.score, obj.seq, oid) for oid, obj in self._objects.items()), reverse=True)
        assert len(self._view) <= self._k_max, "view above k_max"
        assert list(reversed(self._view)) == every[:len(self._view)], "view is not the exact top"
        assert len(self._view) >= min(self.q.k, len(self._objects)), "view below k"
