"""MinTopK (Yang, Shastri, Rundensteiner, Ward, EDBT 2011): the super-top-k list."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base import Algorithm, OnePassStats
from ..jsondata import ints_in, saved_capacity
from ..kernels import mintopk as kernel
from ..kernels.mintopk import ABOVE, BELOW, COUNTERS, END, ID, LEFT, NONE, PARENT, RIGHT, SEQ, SIZE, START, T, TOP
from ..memory import ARRAY_HEADERS, OBJECT_FIELDS, WORD, Footprint, Layout, attribute_bytes, owned_bytes
from ..query import check_windows_per_object
from ..ranking import Answer
from ..registry import register
from ..stream import Batch

LAYOUT = Layout("super-top-k list", {
    "record": {**OBJECT_FIELDS, "score": 1, "start_w": 1, "end_w": 1, "above": 1, "below": 1,
               "index left": 1, "index right": 1, "index parent": 1},
    "window": {"tkc": 1, "lbp": 1}})
"""A record: id, seq, t, score, its two window marks, two list links and three links of the
position index (11 words); a window: its counter and lower-bound pointer."""

RECORD_BYTES = WORD * LAYOUT.words("record")
WINDOW_BYTES = WORD * LAYOUT.words("window")
ANSWER_BYTES = 3 * WORD
"""An answered object: id, score and seq."""
FIRST_CAPACITY = 64


@register
class MinTopK(OnePassStats, Algorithm):
    """Continuous top-k with one super-top-k list shared by all ``C_nw = n / s`` windows.

    The list holds the MTK set: every object predicted to be in the top-k of the current
    window or of a future window it will take part in, sorted by the total order
    ``(score, seq)``.  Each object carries a starting and an ending window mark (its top-k
    career is a contiguous run of windows, Lemma 4.3); each window ``W_i`` carries a top-k
    counter ``tkc`` and a lower-bound pointer ``lbp`` to its lowest predicted top-k object.
    Windows are named by the number of their last slide (``end // s``).  The structures are
    numpy arrays and the steps compiled kernels (``engine.kernels.mintopk``): an array-backed
    doubly linked list with a treap as its position index.

    Per slide, ``PurgeExpiredWindow`` for each window answered since the last slide:
    ``O(k log MTK)``.  Per arriving object (Figure 6, ``UpdateSuperTopk``): ``O(1)`` discard
    when it ranks below the newest window's full top k; otherwise ``O(log MTK)`` expected to
    position it plus ``O(1)`` per window it enters (a suffix of the windows, scanned back from
    the newest), each full one losing its ``lbp`` object (``start_w += 1``) and moving ``lbp``
    one position up the list (Lemma 4.5).  With ``prefilter=True`` only the top ``k`` of each
    slide reach the loop (``O(s log k)``): objects of one slide expire together, so the others
    can never be in the MTK set.  ``topk`` ``O(k)``, cached per slide and kept while no member
    expired and no arrival entered the window's top k (the kernel reports it); ``stats``
    ``O(1)``.

    Memory (layout ``LAYOUT``): 11 words per MTK record (id, seq, t, score, two window marks,
    two list links, three index links) plus 2 words (``tkc``, ``lbp``) per window.  No raw
    window is kept.  ``measured_bytes``: the arrays at their capacity (doubled when full), the
    answer's three arrays at the most they can hold (``min(k, capacity)`` objects, so a huge
    ``k`` over a time window is not charged for answers it cannot give) plus the algorithm
    object's other attributes, measured once (``O(1)``).

    Examples
    --------
    >>> import numpy as np, engine
    >>> q = engine.Query(weights=[1.0], k=2, window=6, slide=2)
    >>> alg = engine.create("mintopk", q)
    >>> for batch in engine.slides((np.arange(8), np.arange(8), [9., 1., 5., 7., 2., 3., 4., 0.]), q):
    ...     alg.process(batch)
    >>> alg.topk().ids.tolist(), alg.stats()["candidates"]
    ([3, 2], 5)
    """

    name = "mintopk"
    summary = "MinTopK: one super-top-k list with window marks (EDBT 2011), per-slide prefilter"
    defaults = {"prefilter": True}

    def _reset(self) -> None:
        check_windows_per_object(self.q, self.name)
        self._windows = self.q.windows_per_object
        self._window_bytes = WINDOW_BYTES * self._windows
        self._k = self.q.k
        self._slide = self.q.slide
        self._prefilter = self.params["prefilter"]
        self._weights = np.array(self.q.weights, np.float64)
        self._records, self._scores, self._table, self._meta, self._counters = \
            kernel.empty_arrays(FIRST_CAPACITY, self._windows)
        self._current: int | None = None
        self._answer: Answer | None = Answer.empty()
        arrays = (self._records, self._scores, self._table, self._meta, self._counters)
        self._fixed_bytes = attribute_bytes(self, exclude=(self.q, self.params, *arrays))
        """The other attributes, measured once."""
        self._resized()

    def _reserve(self, arrivals: int) -> None:
        """Room for ``arrivals`` more records (capacity doubled when short: ``O(1)`` amortised)."""
        needed = self._meta.item(SIZE) + arrivals
        if needed > len(self._records):
            capacity = max(2 * len(self._records), needed)
            self._records, self._scores = kernel.grown(self._records, self._scores, self._meta, capacity)
            self._resized()

    def _resized(self) -> None:
        """The measured bytes, which change with the capacity: the arrays', the other attributes' and
        the answer's at the most it can hold, ``min(k, capacity)`` objects (``O(1)``)."""
        counters_view = ARRAY_HEADERS[1]                                     # its buffer is meta's
        self._array_bytes = owned_bytes(self._records, self._scores, self._table, self._meta) + counters_view
        self._measured_bytes = self._array_bytes + self._fixed_bytes + ANSWER_BYTES * min(self._k, len(self._records))

    def process(self, batch: Batch) -> None:
        """``PurgeExpiredWindow`` for the answered windows, then ``UpdateSuperTopk`` per arrival."""
        slide = batch.end // self._slide
        current = slide if self._current is None else self._current
        seqs = batch.seq
        arrivals = min(len(seqs), self._k) if self._prefilter else len(seqs)
        if self._meta.item(SIZE) + arrivals > len(self._records):
            self._reserve(arrivals)
        stands = kernel.slide(self._records, self._scores, self._table, self._meta, self._k, current, slide,
                              batch.x, self._weights, seqs, batch.ids, batch.t, self._prefilter)
        self._current = slide
        if not stands:
            self._answer = None

    def last_end(self) -> int | None:
        return None if self._current is None else self._current * self._slide

    def topk(self) -> Answer:
        """The first ``tkc`` records of the list (Lemma 4.4): ``O(k)``, cached per slide and kept
        while it stands (``docs/algorithms/mintopk.md``, "The kept answer")."""
        if self._answer is None:
            self._answer = Answer(*kernel.answer(self._records, self._scores, self._table, self._meta, self._current))
        return self._answer

    def candidates(self) -> np.ndarray:
        return self._records[kernel.ranked(self._records, self._meta), SEQ]

    def stats(self) -> dict[str, Any]:
        """``candidates``, ``retained``, the counters (:data:`COUNTERS`), ``bytes`` (from the record
        count) and ``measured_bytes`` (from the arrays' sizes), spelled out in one dict literal (no
        method calls, one ``tolist()`` of ``meta``, which holds the counters): ``O(1)``; :meth:`memory` reads
        them from here."""
        _, _, size, _, arrivals, prefiltered, discarded, inserted, evictions, lbp_skips = self._meta.tolist()
        return {"candidates": size, "retained": size, "arrivals": arrivals,
                "prefiltered": prefiltered, "discarded": discarded, "inserted": inserted, "evictions": evictions,
                "lbp_skips": lbp_skips, "bytes": RECORD_BYTES * size + self._window_bytes,
                "measured_bytes": self._measured_bytes}

    def footprints(self) -> list[Footprint]:
        arrays = (self._records, self._scores, self._table, self._meta, self._counters)
        return [Footprint(LAYOUT, {"record": int(self._meta[SIZE]), "window": self._windows},
                          self._array_bytes, 0, arrays)]

    def dump_state(self) -> dict[str, Any]:
        windows = []
        if self._current is not None:
            for window in range(self._current, self._current + self._windows):
                count, lowest = self._table[window % self._windows].tolist()
                windows.append([count, None if lowest == NONE else int(self._records[lowest, SEQ])])
        rows = kernel.ranked(self._records, self._meta)
        fields = self._records[rows][:, [SEQ, START, END, ID, T]].tolist()
        objects = [[value, *rest] for value, rest in zip(self._scores[rows].tolist(), fields)]
        return {"current": self._current, "objects": objects, "windows": windows,
                "counters": dict(zip(COUNTERS, self._counters.tolist())), "capacity": {"records": len(self._records)}}

    def load_state(self, data: dict[str, Any]) -> None:
        """Read :meth:`dump_state` data (the layout is unchanged since format 1); ``capacity``
        (absent from states saved before it) gives the record arrays' rows as they were, so the
        restored arrays grow (and measure) alike."""
        self._current = None if data["current"] is None else int(ints_in([data["current"]], "current")[0])
        objects = data["objects"]
        if "capacity" in data:
            capacity = saved_capacity(data["capacity"], "records", len(objects))
            self._records, self._scores, self._table, self._meta, self._counters = \
                kernel.empty_arrays(capacity, self._windows)
            self._resized()
        else:
            self._reserve(len(objects))
        row_of = {}
        for value, seq, start, end, oid, t in reversed(objects):
            row = kernel.position(self._records, self._scores, self._meta, float(value), int(seq), int(oid),
                                  int(t), int(end))
            self._records[row, START] = int(start)
            row_of[int(seq)] = row
        if self._current is not None:
            if len(data["windows"]) != self._windows:
                raise ValueError(f"expected {self._windows} windows, got {len(data['windows'])}")
            for offset, (count, lowest) in enumerate(data["windows"]):
                slot = (self._current + offset) % self._windows
                self._table[slot] = (int(count), NONE if lowest is None else row_of[lowest])
        self._answer = None if self._current is not None else Answer.empty()
        for name, value in data["counters"].items():
            self._counters[COUNTERS.index(name)] = int(value)

    def check(self) -> None:
        """The list, the index and every window's ``tkc`` and ``lbp`` (``O(MTK log MTK)`` for the
        list, ``O(C_nw MTK)`` vectorised for the windows)."""
        records, scores, meta = self._records, self._scores, self._meta
        rows = kernel.ranked(records, meta).tolist()
        assert len(set(rows)) == len(rows) == meta[SIZE], "the list does not hold SIZE distinct records"
        assert records[rows[-1], BELOW] == NONE if rows else meta[TOP] == NONE, "the list does not end"
        keys = list(zip(scores[rows].tolist(), records[rows, SEQ].tolist()))
        assert all(a > b for a, b in zip(keys, keys[1:])), "the list is not sorted best first"
        for above, below in zip(rows, rows[1:]):
            assert records[below, ABOVE] == above, "broken upward link"
        self._check_index(rows, keys)
        if self._current is None:
            assert not rows
            return
        oldest, newest = self._current, self._current + self._windows - 1
        starts, ends = records[rows, START], records[rows, END]
        assert np.all((oldest <= starts) & (starts <= ends) & (ends <= newest)), f"window marks outside {oldest}..{newest}"
        for window in range(oldest, newest + 1):
            count, lowest = self._table[window % self._windows].tolist()
            alive = np.flatnonzero(ends >= window)
            members = alive[starts[alive] <= window]
            assert len(members) == count <= self.q.k, f"window {window}: tkc {count}"
            assert lowest == (rows[members[-1]] if count else NONE), f"window {window}: lbp"
            assert np.array_equal(alive[:count], members), f"window {window}: predicted top-k is not the top"

    def _check_index(self, rows: list[int], keys: list[tuple]) -> None:
        """The treap holds exactly the list's records, in order, with heap-ordered priorities."""
        records, in_order, stack, node = self._records, [], [], int(self._meta[kernel.ROOT])
        while stack or node != NONE:
            while node != NONE:
                stack.append(node)
                node = int(records[node, LEFT])
            node = stack.pop()
            in_order.append(node)
            assert len(in_order) <= len(rows), "the index holds more records than the list"
            for child in (records[node, LEFT], records[node, RIGHT]):
                if child != NONE:
                    assert records[child, PARENT] == node, "broken index parent link"
                    assert kernel.priority(int(records[child, SEQ])) <= kernel.priority(int(records[node, SEQ])), \
                        "index priorities are not a heap"
            node = int(records[node, RIGHT])
        assert in_order == rows, "the index order differs from the list"
