"""PreTopK (the MinTopK paper's baseline): one independent predicted top-k set per window."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base import Algorithm
from ..jsondata import ints_in, saved_capacity
from ..kernels import pretopk as kernel
from ..kernels.pretopk import COUNTERS, DISTINCT, ID, MEMBERSHIPS, NONE, REFS, SEQ, T
from ..memory import OBJECT_FIELDS, WORD, Footprint, Layout, attribute_bytes, owned_bytes
from ..query import check_windows_per_object
from ..ranking import Answer, score
from ..registry import register
from ..stream import Batch

LAYOUT = Layout("predicted top-k sets", {
    "object": {**OBJECT_FIELDS, "score": 1, "reference count": 1, "free link": 1},
    "membership": {"pointer": 1},
    "window": {"set size": 1}})
"""A distinct object: id, seq, t, score, the number of sets holding it and its link in the
chain of free rows (6 words); a membership: one pointer in a window's set; a window: its size."""

OBJECT_BYTES = WORD * LAYOUT.words("object")
MEMBERSHIP_BYTES = WORD * LAYOUT.words("membership")
WINDOW_BYTES = WORD * LAYOUT.words("window")
ANSWER_BYTES = 3 * WORD
"""An answered object: id, score and seq."""
FIRST_CAPACITY = 64


@register
class PreTopK(Algorithm):
    """Continuous top-k keeping the predicted top-k set of each of the ``C_nw`` windows.

    Each window ``W_i`` (named by its last slide) holds the top ``k`` of the objects that
    arrived so far and take part in it, as a min-heap of ``(score, seq)`` keys.  An arriving
    object is offered to every maintained window: it enters a window that holds fewer than
    ``k`` objects, or replaces the window's lowest object if it ranks above it.  Every object
    carries a reference count (the number of sets holding it); it leaves the object table when
    the count reaches zero.  After slide ``j`` the answer is the set of ``W_j``, which is then
    dropped and an empty ``W_{j+C_nw}`` created.  ``prefilter=True`` first keeps the top ``k``
    of each slide, as in MinTopK.  The sets and the object table are numpy arrays, the steps
    compiled kernels (``engine.kernels.pretopk``).

    Complexity: ``O(C_nw log k)`` per offered object (a comparison with each window's lowest
    key, a heap replacement where it enters, an ``O(1)`` reference count update per eviction);
    ``O(k)`` per slide to drop the answered window; ``topk`` ``O(k log k)``, cached per slide;
    ``stats`` ``O(1)``.  Counters: ``offered`` objects and their ``entries`` (windows
    entered; on i.i.d. scores about ``(k / s) (1 + ln(C_nw s / k))`` per object for ``k <= n``,
    so the heap work per object grows with ``k / s``).  It is the paper's baseline: unlike
    MinTopK it keeps one copy of a key per window and visits every window.

    Memory (layout ``LAYOUT``): ``bytes`` prices what is held, 6 words per distinct object (id,
    seq, t, score, reference count, free link) plus one pointer per window membership and one
    word (its size) per window.  ``measured_bytes``: the arrays at their allocated capacity
    plus the other attributes measured once, and the answer's three arrays at the sets' width
    (the most it can hold).  The sets are ``C_nw x width``: a set never holds more than
    ``min(k, objects held)``, so before each slide the width grows (doubled, capped at ``k``)
    to at least ``min(k, objects held + the slide's arrivals)``, an ``O(1)`` test.  A huge
    ``k`` over a time window thus allocates only what the windows hold; a count window
    (``k <= n``) reaches width ``k`` as soon as a set holds ``k`` objects.  The object table
    doubles when full.

    Examples
    --------
    >>> import numpy as np, engine
    >>> q = engine.Query(weights=[1.0], k=2, window=6, slide=2)
    >>> alg = engine.create("pretopk", q)
    >>> for batch in engine.slides((np.arange(8), np.arange(8), [9., 1., 5., 7., 2., 3., 4., 0.]), q):
    ...     alg.process(batch)
    >>> alg.topk().ids.tolist()
    [3, 2]
    """

    name = "pretopk"
    summary = "PreTopK: an independent predicted top-k set per future window (MinTopK's baseline)"
    defaults = {"prefilter": True}

    def _reset(self) -> None:
        check_windows_per_object(self.q, self.name)
        self._windows = self.q.windows_per_object
        self._k = self.q.k
        self._objects, self._scores, self._sets, self._sizes, self._meta, self._counters = \
            kernel.empty_arrays(FIRST_CAPACITY, self._windows, 0)
        self._current: int | None = None
        self._answer: Answer | None = Answer.empty()
        self._fixed_bytes = attribute_bytes(self, exclude=(self.q, self.params, *self._arrays()))
        """The other attributes, measured once."""
        self._resized()

    def _arrays(self) -> tuple[np.ndarray, ...]:
        return self._objects, self._scores, self._sets, self._sizes, self._meta, self._counters

    def _reserve(self, arrivals: int) -> None:
        """Room for ``arrivals`` more objects in the table and in every set: the capacity
        doubled when short (``O(1)`` amortised per object), the width too but capped at ``k``
        (``O(C_nw width)`` each time, the cost of allocating the final sets at most twice)."""
        needed = int(self._meta[DISTINCT]) + arrivals
        if needed > len(self._objects):
            capacity = max(2 * len(self._objects), needed)
            self._objects, self._scores = kernel.grown(self._objects, self._scores, self._meta, capacity)
            self._resized()
        width = self._sets.shape[1]
        if min(self._k, needed) > width:
            self._sets = kernel.widened(self._sets, min(self._k, max(2 * width, needed)))
            self._resized()

    def _resized(self) -> None:
        """The measured bytes that change with the capacity and the width: the arrays', and the
        rest with the answer at the sets' width, the most it can hold (``O(1)``)."""
        self._array_bytes = owned_bytes(*self._arrays())
        self._rest_bytes = self._fixed_bytes + ANSWER_BYTES * self._sets.shape[1]

    def process(self, batch: Batch) -> None:
        """Drop the answered windows' sets, then offer each arrival to every window."""
        slide = batch.end // self.q.slide
        if self._current is None:
            self._current = slide
        prefilter = self.params["prefilter"]
        self._reserve(min(len(batch), self._k) if prefilter else len(batch))
        kernel.slide(self._objects, self._scores, self._sets, self._sizes, self._meta, self._counters, self._k,
                     self._current, slide, score(batch.x, self.q.weights), batch.seq, batch.ids, batch.t, prefilter)
        self._current = slide
        self._answer = None

    def last_end(self) -> int | None:
        return None if self._current is None else self._current * self.q.slide

    def topk(self) -> Answer:
        """The current window's set, best first: ``O(k log k)``, cached per slide."""
        if self._answer is None:
            self._answer = Answer(*kernel.answer(self._objects, self._scores, self._sets, self._sizes, self._current))
        return self._answer

    def _held(self) -> np.ndarray:
        """Rows of the objects held (``O(capacity)``)."""
        return np.flatnonzero(self._objects[:, REFS] > 0)

    def candidates(self) -> np.ndarray:
        return self._objects[self._held(), SEQ]

    def _stats(self) -> dict[str, Any]:
        distinct = self._meta.item(DISTINCT)
        offered, entries = self._counters.tolist()
        return {"candidates": distinct, "retained": distinct, "memberships": self._meta.item(MEMBERSHIPS),
                "offered": offered, "entries": entries}

    def memory(self) -> tuple[int, int]:
        """Both figures from the counts and the arrays' sizes: ``O(1)``."""
        distinct, memberships = self._meta.item(DISTINCT), self._meta.item(MEMBERSHIPS)
        return (OBJECT_BYTES * distinct + MEMBERSHIP_BYTES * memberships + WINDOW_BYTES * self._windows,
                self._array_bytes + self._rest_bytes)

    def footprints(self) -> list[Footprint]:
        counts = {"object": int(self._meta[DISTINCT]), "membership": int(self._meta[MEMBERSHIPS]),
                  "window": self._windows}
        return [Footprint(LAYOUT, counts, self._array_bytes, 0, self._arrays())]

    def dump_state(self) -> dict[str, Any]:
        sets = []
        if self._current is not None:
            for window in range(self._current, self._current + self._windows):
                rows = kernel.members(self._objects, self._scores, self._sets, self._sizes, window)[::-1]
                sets.append([[value, seq] for value, seq in zip(self._scores[rows].tolist(),
                                                                  self._objects[rows, SEQ].tolist())])
        held = self._held()
        return {"current": self._current, "sets": sets, "counters": dict(zip(COUNTERS, self._counters.tolist())),
                "objects": self._objects[held][:, [SEQ, ID, T]].tolist(),
                "capacity": {"objects": len(self._objects), "width": self._sets.shape[1]}}

    def load_state(self, data: dict[str, Any]) -> None:
        """Read :meth:`dump_state` data (the layout is unchanged since format 1: each set's
        members, whatever the width of the arrays that held them).  ``capacity`` (absent from
        states saved before it) gives the table's rows and the sets' width as they were, so the
        restored arrays grow (and measure) alike."""
        self._current = None if data["current"] is None else int(ints_in([data["current"]], "current")[0])
        if "capacity" in data:
            capacity, width = saved_capacity(data["capacity"], "objects"), saved_capacity(data["capacity"], "width", 0)
            if capacity < len(data["objects"]) or width > self._k:
                raise ValueError(f"capacity: {capacity} rows cannot hold {len(data['objects'])} objects, "
                                 f"or width {width} exceeds k = {self._k}")
            self._objects, self._scores, self._sets, self._sizes, self._meta, self._counters = \
                kernel.empty_arrays(capacity, self._windows, width)
            self._resized()
        else:
            self._reserve(len(data["objects"]))
        row_of = {}
        for seq, oid, t in data["objects"]:
            row_of[int(seq)] = kernel.new_object(self._objects, self._scores, self._meta, 0.0, int(seq), int(oid),
                                                 int(t))
        if self._current is not None:
            if len(data["sets"]) != self._windows:
                raise ValueError(f"expected {self._windows} windows, got {len(data['sets'])}")
            for offset, members in enumerate(data["sets"]):
                if len(members) > self._k:
                    raise ValueError(f"window {self._current + offset} holds {len(members)} objects, k is {self._k}")
                slot = (self._current + offset) % self._windows
                for i, (value, seq) in enumerate(sorted((float(v), int(s)) for v, s in members)):
                    row = row_of[seq]
                    self._scores[row] = value
                    self._objects[row, REFS] += 1
                    self._sets[slot, i] = row
                self._sizes[slot] = len(members)
                self._meta[MEMBERSHIPS] += len(members)
        for seq, row in row_of.items():
            if self._objects[row, REFS] == 0:
                raise ValueError(f"object {seq} is in no window's set")
        self._answer = None if self._current is not None else Answer.empty()
        for position, name in enumerate(COUNTERS):
            self._counters[position] = int(data.get("counters", {}).get(name, 0))

    def check(self) -> None:
        """The heaps, the reference counts, and every member inside its window: window ``j``
        (of the slide ending at ``j * s``) holds objects with keys (``seq`` or ``t``) in
        ``[j * s - n, j * s)``, none past the last slide processed (``O(memberships)``)."""
        objects, scores, references = self._objects, self._scores, {}
        assert self._sets.shape[1] <= self.q.k, "sets wider than k"
        key = SEQ if self.q.kind == "count" else T
        for w in range(self._windows):
            size = int(self._sizes[w])
            assert 0 <= size <= self._sets.shape[1], "window set larger than k or its row"
            if size:
                assert self._current is not None, "a window set holds objects before any slide"
                window = self._current + (w - self._current) % self._windows
                keys_in = objects[self._sets[w, :size], key]
                lowest, end = window * self.q.slide - self.q.window, self._current * self.q.slide
                assert np.all((lowest <= keys_in) & (keys_in < end)), \
                    f"window {window} holds an object outside [{lowest}, {end}) (current slide {self._current})"
            heap = self._sets[w, :size].tolist()
            keys = [(float(scores[r]), int(objects[r, SEQ])) for r in heap]
            assert all(keys[(i - 1) // 2] < keys[i] for i in range(1, size)), "window set is not a heap"
            assert len(set(heap)) == size, "object twice in one window"
            assert all(r == NONE for r in self._sets[w, size:].tolist()), "stale rows past the set's size"
            for row in heap:
                references[row] = references.get(row, 0) + 1
        held = self._held().tolist()
        assert set(references) == set(held), "object table differs from the window sets"
        assert len(held) == self._meta[DISTINCT], "DISTINCT disagrees with the table"
        assert sum(references.values()) == self._meta[MEMBERSHIPS], "MEMBERSHIPS disagrees with the sets"
        for row in held:
            assert objects[row, REFS] == references[row], f"row {row}: reference count {objects[row, REFS]}"
