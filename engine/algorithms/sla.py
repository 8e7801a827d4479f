"""SLA, the sorted-list algorithm of Haghani, Michel, Aberer (CIKM 2009), Section 3.1."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..attributes import AttributeAlgorithm, attribute_sum, combine
from ..jsondata import ints_in, saved_capacity
from ..kernels import incomplete as table
from ..kernels import sla as kernel
from ..kernels.sla import (COUNTERS, FREE, HEAD, ID, IN_VIEW, KEY, NEXT, OBJECT_SEQ, OBJECTS, SEQ, SLOT, STREAM,
                           TAIL, TUPLES, VIEW)
from ..memory import Footprint, Layout, attribute_bytes, owned_bytes
from ..ranking import Answer
from ..registry import register
from ..stream import Batch

FIFO = Layout("sla tuples", {"tuple": {"id": 1, "stream": 1, "value": 1, "t": 1, "seq": 1}})
"""A valid tuple in the FIFO (``TUPLE_WORDS``)."""

OBJECTS_LAYOUT = Layout("sla objects", {"object": {"id": 1, "score": 1, "seq": 1, "attributes": "d"}})
"""A valid object: id, score, the seq of its newest tuple and its ``d`` attribute sums."""

LISTS = Layout("sla sorted lists", {"entry": {"value": 1, "pointer": 1}})
"""An entry of a per-stream sorted list: the attribute and a pointer to its object."""

VIEW_LAYOUT = Layout("sla view", {"entry": {"score": 1, "pointer": 1}})
"""An entry of the top-``k_max`` view: the score and a pointer to its object."""

STRUCTURES = ((FIFO, "tuple"), (OBJECTS_LAYOUT, "object"), (LISTS, "entry"), (VIEW_LAYOUT, "entry"))
"""Each structure's layout and record kind, in the order of ``SLA._sizes``."""

FIRST_CAPACITY = 16

LARGEST = np.iinfo(np.int64).max
"""``k_max`` only bounds the view, which never outgrows the valid objects: a default ``2k``
beyond it (for a huge ``k``) is clamped to what the kernels' int64 can hold (a given ``k_max``
must fit in int64, as every integer parameter)."""


@register
class SLA(AttributeAlgorithm):
    """Sorted lists plus the Threshold Algorithm over a materialised top-``k_max`` view.

    Structures: a FIFO of the valid tuples (expiry from the front); per valid object its
    attribute sums (repeats add up); one list per stream of ``(attribute, object)`` sorted
    by value; and the view, the exact top ``k'`` objects by ``(score, seq)`` with
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
    (``OBJECTS_LAYOUT``), 2 per list entry (``LISTS``) and per view entry (``VIEW_LAYOUT``).
    The structures are numpy arrays and the paper's steps compiled kernels
    (:mod:`engine.kernels.sla`): a slide is one kernel call.  ``measured_bytes`` is the arrays'
    sizes (kept as they grow) plus the other attributes measured once; ``stats`` is ``O(d)``.

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
        k_max = self.params["k_max"] or 2 * self.q.k
        if k_max < self.q.k:
            raise ValueError(f"k_max must be 0 (meaning 2k) or >= k ({self.q.k}), got {k_max}")
        self._k_max = min(k_max, LARGEST)
        self._weights = np.asarray(self.q.weights, np.float64)
        self._prices = tuple(layout.bytes(d, **{kind: 1}) for layout, kind in STRUCTURES)
        self._tuples_, self._values = kernel.empty_fifo(FIRST_CAPACITY)
        self._object_arrays = kernel.empty_objects(FIRST_CAPACITY, d)
        self._keys, self._slots = table.empty_table(table.table_capacity(FIRST_CAPACITY))
        self._links = kernel.grown_links(np.zeros((d, 0, 3), np.int64), FIRST_CAPACITY)
        self._roots = np.full(d, -1, np.int64)
        self._sizes_ = np.zeros(d, np.int64)
        self._view = kernel.empty_view(self._view_capacity())
        self._meta = np.zeros(6, np.int64)
        self._meta[FREE] = 0
        self._counters = np.zeros(len(COUNTERS), np.int64)
        self._end: int | None = None
        self._measure()
        self._fixed_bytes = attribute_bytes(self, exclude=(self.q, self.params,
                                                           *(a for arrays in self._structures() for a in arrays)))

    def _structures(self) -> tuple[tuple, ...]:
        """The arrays of the FIFO, the object table (with its id table), the lists and the view
        (the view's array also holds ``meta`` and ``counters``)."""
        return ((self._tuples_, self._values), (*self._object_arrays, self._keys, self._slots),
                (self._links, self._roots, self._sizes_), (*self._view, self._meta, self._counters))

    def _measure(self) -> None:
        """Each structure's measured bytes, redone when an array grows (``O(1)``)."""
        self._measured = tuple(owned_bytes(*arrays) for arrays in self._structures())
        self._measured_total = sum(self._measured)

    def _view_capacity(self) -> int:
        """Entries the view may hold: one beyond ``k_max`` (an entrant before the last leaves),
        and never more than the object table's rows, as it lists distinct valid objects."""
        return min(self._k_max + 1, len(self._object_arrays[0]))

    def _reserve(self, arrivals: int) -> None:
        """Room for ``arrivals`` more tuples and objects, the view following the object table
        (capacities doubled: ``O(1)`` amortised)."""
        meta = self._meta
        head, tail, objects, _, _, _ = meta.tolist()
        tuples, objects = tail - head + arrivals, objects + arrivals
        grown = False
        if tuples > len(self._values):
            capacity = table.table_capacity(tuples)
            self._tuples_, self._values = kernel.grown_fifo(self._tuples_, self._values, meta, capacity)
            grown = True
        if objects > len(self._object_arrays[0]):
            capacity = max(2 * len(self._object_arrays[0]), objects)
            self._object_arrays = kernel.grown_objects(self._object_arrays, meta, capacity)
            self._links = kernel.grown_links(self._links, capacity)
            if len(self._view[0]) < self._view_capacity():
                self._view = kernel.grown_view(self._view, self._view_capacity())
            grown = True
        if 2 * objects > len(self._keys):
            self._keys, self._slots = table.rehashed(self._keys, self._slots, table.table_capacity(objects))
            grown = True
        if grown:
            self._measure()

    def _capacities(self) -> dict[str, int]:
        """Rows of the FIFO and of the object table, positions of the id table: saved in the
        state, so that a restored copy holds (and measures) the arrays the saved one held and
        grows them alike (the lists and the view follow the object table)."""
        return {"fifo": len(self._values), "objects": len(self._object_arrays[0]), "table": len(self._keys)}

    def _allocate(self, capacity: dict[str, int], tuples: int, objects: int) -> None:
        """Empty arrays of the :meth:`_capacities` saved, refused (``ValueError``) when they cannot
        hold the state's ``tuples`` and ``objects`` (``O(capacity)``; right after reset)."""
        fifo, rows, positions = (saved_capacity(capacity, name) for name in ("fifo", "objects", "table"))
        if fifo & (fifo - 1) or positions & (positions - 1) or fifo < tuples or rows < objects \
                or positions < table.table_capacity(objects):
            raise ValueError(f"capacity: a FIFO of {fifo} rows, {rows} objects and an id table of {positions} "
                             f"positions (powers of two) cannot hold the state's {tuples} tuples of {objects} objects")
        d = self.q.dimensions
        self._tuples_, self._values = kernel.empty_fifo(fifo)
        self._object_arrays = kernel.empty_objects(rows, d)
        self._keys, self._slots = table.empty_table(positions)
        self._links = kernel.grown_links(np.zeros((d, 0, 3), np.int64), rows)
        self._view = kernel.empty_view(self._view_capacity())
        self._measure()

    def _arguments(self) -> tuple:
        return (self._tuples_, self._values, *self._object_arrays, self._links, self._roots,
                self._sizes_, *self._view, self._keys, self._slots, self._meta, self._counters, self._weights)

    # ------------------------------------------------------------------ maintenance

    def last_end(self) -> int | None:
        return self._end

    def process(self, batch: Batch) -> None:
        """Expiries, then the slide's tuples (arrival: the object's attribute rises, its list
        entry and the view follow; expiry: re-summed or gone), then TA if the view is short:
        one kernel call, ``O(s (d + log n + k_max))`` plus list shifts and TA's accesses."""
        ids, stream, value, keys, seq = self._tuples(batch)
        self._reserve(len(ids))
        kernel.slide(*self._arguments(), self.q.k, self._k_max, batch.window_start(self.q), ids,
                     np.asarray(stream, np.int64), np.asarray(value, np.float64), keys, seq)
        self._end = batch.end

    # ------------------------------------------------------------------ answers and state

    def topk(self) -> Answer:
        """The view's best ``k``: ``O(k)``."""
        scores, seqs, rows = self._view
        size = int(self._meta[VIEW])
        top = slice(max(size - self.q.k, 0), size)
        return Answer(self._object_arrays[0][rows[top][::-1], ID], scores[top][::-1].copy(), seqs[top][::-1].copy())

    def candidates(self) -> np.ndarray:
        """The newest seq of every valid object (``O(rows)``)."""
        objects = self._object_arrays[0]
        return objects[objects[:, OBJECT_SEQ] != -1, OBJECT_SEQ]

    def _stats(self) -> dict[str, Any]:
        head, tail, objects, _, view, _ = self._meta.tolist()
        arrivals, expirations, recomputations, sorted_accesses = self._counters.tolist()
        return {"candidates": objects, "retained": tail - head, "view": view, "arrivals": arrivals,
                "expirations": expirations, "recomputations": recomputations, "sorted_accesses": sorted_accesses}

    def _records(self) -> tuple[int, int, int, int]:
        """Tuples, objects, list entries and view entries (``O(d)``)."""
        head, tail, objects, _, view, _ = self._meta.tolist()
        return tail - head, objects, sum(self._sizes_.tolist()), view

    def memory(self) -> tuple[int, int]:
        """Both figures from the record counts, the per-record prices and the arrays' kept
        sizes: ``O(d)``."""
        tuples, objects, entries, view = self._records()
        per_tuple, per_object, per_entry, per_view_entry = self._prices
        return (per_tuple * tuples + per_object * objects + per_entry * entries + per_view_entry * view,
                self._measured_total + self._fixed_bytes)

    def footprints(self) -> list[Footprint]:
        return [Footprint(layout, {kind: records}, measured, self.q.dimensions, arrays)
                for (layout, kind), records, measured, arrays in
                zip(STRUCTURES, self._records(), self._measured, self._structures())]

    def _fifo_columns(self) -> tuple[np.ndarray, ...]:
        """The FIFO's rows oldest first: key, seq, id, stream, value (``O(n)``)."""
        positions = np.arange(self._meta[HEAD], self._meta[TAIL]) & (len(self._values) - 1)
        rows = self._tuples_[positions]
        return (rows[:, KEY], rows[:, SEQ], self._object_arrays[0][rows[:, SLOT], ID], rows[:, STREAM],
                self._values[positions])

    def dump_state(self) -> dict[str, Any]:
        """The FIFO's tuples, the view's ids and the counters (``O(n)``)."""
        key, seq, ids, stream, value = self._fifo_columns()
        rows = self._view[2][:int(self._meta[VIEW])]
        return {"end": self._end, "key": key.tolist(), "seq": seq.tolist(), "ids": ids.tolist(),
                "stream": stream.tolist(), "value": value.tolist(),
                "view": self._object_arrays[0][rows, ID].tolist(), "counters": dict(zip(COUNTERS, self._counters.tolist())),
                "capacity": self._capacities()}

    def load_state(self, data: dict[str, Any]) -> None:
        """Read :meth:`dump_state` data (the layout is unchanged since format 1): the FIFO's
        tuples arrive again, then the view is set to the stored objects.  ``capacity`` (absent
        from states saved before it) sizes the arrays as they were."""
        key, seq, ids, stream = (ints_in(data[name], name) for name in ("key", "seq", "ids", "stream"))
        value = np.asarray([float(v) for v in data["value"]], np.float64)
        if len({len(key), len(seq), len(ids), len(stream), len(value)}) > 1:
            raise ValueError("state columns have different lengths")
        bad = (stream < 0) | (stream >= self.q.dimensions) | ~((value >= 0.0) & (value <= 1.0))
        if bad.any():
            row = int(np.argmax(bad))
            raise ValueError(f"invalid tuple {(int(key[row]), int(seq[row]), int(ids[row]), int(stream[row]), float(value[row]))}")
        if "capacity" in data:
            self._allocate(data["capacity"], len(key), len(np.unique(ids)))
        else:
            self._reserve(len(key))
        kernel.arrivals(*self._arguments(), self._k_max, ids, stream, value, key, seq)
        view_ids = ints_in(data["view"], "view").tolist()
        if len(set(view_ids)) != len(view_ids):
            raise ValueError("view lists an object twice")
        if len(view_ids) > self._k_max:
            raise ValueError(f"view holds {len(view_ids)} objects, more than k_max = {self._k_max}")
        scores, seqs, rows = self._view
        objects = self._object_arrays[0]
        objects[:, IN_VIEW] = 0
        entries = []
        for oid in view_ids:
            row = table.find(self._keys, self._slots, oid)
            if row == -1:
                raise ValueError(f"view lists object {oid}, which is not valid")
            entries.append((self._object_arrays[4][row], objects[row, OBJECT_SEQ], row))
        for at, (score, newest, row) in enumerate(sorted(entries)):
            scores[at], seqs[at], rows[at] = score, newest, row
            objects[row, IN_VIEW] = 1
        self._meta[VIEW] = len(entries)
        self._counters[:] = ints_in([data["counters"][name] for name in COUNTERS], "counters")
        self._end = data["end"]

    def _listed(self, stream: int) -> list[tuple[float, int]]:
        """The sorted list of ``stream`` in order, walked from its lowest node (``O(n)``)."""
        sums = self._object_arrays[3][:, stream]
        node = table.tree_first_from(self._links[stream], self._roots, stream, sums, -np.inf)
        entries = []
        while node != -1:
            entries.append((float(sums[node]), int(node)))
            node = table.tree_next(self._links[stream], node)
        assert len(entries) == self._sizes_[stream], f"list of stream {stream}: entry count"
        return entries

    def check(self) -> None:
        """Everything rebuilt from the FIFO: objects, sums (arrival order), lists, the id table
        and the view as the exact top ``k'`` (``O(n log n)``)."""
        d, weights = self.q.dimensions, self.q.weights
        meta = self._meta
        objects, first, last, sums, scores = self._object_arrays
        key, seq, ids, stream, value = (column.tolist() for column in self._fifo_columns())
        assert all(a <= b for a, b in zip(key, key[1:])), "FIFO out of order"
        if self._end is not None and key:
            assert key[0] >= self._end - self.q.window and key[-1] < self._end, "tuple outside the window"
        rebuilt: dict[int, tuple] = {}
        for oid, newest, i, v in zip(ids, seq, stream, value):
            per_stream = rebuilt.get(oid, ([[] for _ in range(d)], None))[0]
            per_stream[i].append(v)
            rebuilt[oid] = (per_stream, newest)
        assert meta[OBJECTS] == len(rebuilt), "object count"
        mask = len(self._values) - 1
        expected_lists = [[] for _ in range(d)]
        every = []
        for oid, (per_stream, newest) in rebuilt.items():
            row = table.find(self._keys, self._slots, oid)
            assert row != -1 and objects[row, ID] == oid, f"object {oid} not in the id table"
            assert objects[row, OBJECT_SEQ] == newest and objects[row, TUPLES] == sum(map(len, per_stream))
            for i in range(d):
                chain, p = [], first[row, i]
                while p != -1:
                    chain.append(float(self._values[p & mask]))
                    end = p
                    p = self._tuples_[p & mask, NEXT]
                assert chain == per_stream[i], f"object {oid}: chain of stream {i}"
                assert last[row, i] == (end if chain else -1), f"object {oid}: chain end of stream {i}"
                assert sums[row, i] == attribute_sum(per_stream[i]), f"object {oid}: attribute sums"
                if chain:
                    expected_lists[i].append((sums[row, i], row))
            assert scores[row] == combine(sums[row].tolist(), weights), f"object {oid}: score"
            every.append((scores[row], newest, row))
        assert (objects[:, OBJECT_SEQ] != -1).sum() == len(rebuilt), "a free row holds an object"
        for i in range(d):
            assert self._listed(i) == sorted(expected_lists[i]), f"sorted list of stream {i} is stale"
        view_scores, view_seqs, view_rows = (array[:meta[VIEW]].tolist() for array in self._view)
        view = list(zip(view_scores, view_seqs, view_rows))
        every.sort(reverse=True)
        assert meta[VIEW] <= self._k_max, "view above k_max"
        assert view[::-1] == every[:len(view)], "view is not the exact top"
        assert meta[VIEW] >= min(self.q.k, len(rebuilt)), "view below k"
        assert objects[:, IN_VIEW].sum() == meta[VIEW] and all(objects[row, IN_VIEW] for row in view_rows)
