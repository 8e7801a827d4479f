"""PreTopK (the MinTopK paper's baseline): one independent predicted top-k set per window."""

from __future__ import annotations

import sys
from heapq import heapify, heappush, heapreplace
from typing import Any

import numpy as np

from ..base import Algorithm
from ..memory import OBJECT_FIELDS, PY_FLOAT, PY_INT, Footprint, Layout, python_bytes
from ..ranking import Answer, score, top_indices
from ..registry import register
from ..stream import Batch

LAYOUT = Layout("predicted top-k sets", {
    "object": {**OBJECT_FIELDS, "score": 1, "reference count": 1, "table slot": 1},
    "membership": {"pointer": 1},
    "window": {"set": 1}})
"""A distinct object: id, seq, t, score, the number of sets holding it and its slot in the seq
table (6 words); a membership: one pointer in a window's set; a window: its set."""

OBJECT_BYTES = python_bytes([None] * 3, (0.5, 10 ** 6)) + PY_FLOAT + 3 * PY_INT
"""Measured once: an object's ``[id, t, references]`` list, its key tuple, score and three ints."""

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
    of each slide, as in MinTopK.

    Complexity: ``O(C_nw log k)`` per offered object (a comparison with each window's lowest
    key, a heap replacement where it enters, an ``O(1)`` reference count update per eviction);
    ``O(k)`` per slide to drop the answered window; ``topk`` ``O(k log k)``, cached per slide;
    ``stats`` ``O(C_nw)``.  Counters: ``offered`` objects and their ``entries`` (windows
    entered; on i.i.d. scores about ``(k / s) (1 + ln(C_nw s / k))`` per object for ``k <= n``,
    so the heap work per object grows with ``k / s``).  It is the paper's baseline: unlike MinTopK it keeps one copy of a
    key per window and visits every window.

    Memory (layout ``LAYOUT``): 6 words per distinct object (id, seq, t, score, reference
    count, table slot) plus one pointer per window membership and one per window.

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
        self._windows = self.q.windows_per_object
        self._sets: list[list[tuple]] = [[] for _ in range(self._windows)]
        self._objects: dict[int, list] = {}
        self._current: int | None = None
        self._answer = Answer.empty()
        self._counters = {"offered": 0, "entries": 0}

    def process(self, batch: Batch) -> None:
        slide = batch.end // self.q.slide
        if self._current is None:
            self._current = slide
        elif slide <= self._current:
            raise ValueError(f"slide {slide} arrives after slide {self._current}")
        while self._current < slide:
            self._drop_current_window()
        if len(batch):
            scores = score(batch.x, self.q.weights)
            order = top_indices(scores, batch.seq, self.q.k) if self.params["prefilter"] else range(len(batch))
            ids, seqs, ts, scores = batch.ids.tolist(), batch.seq.tolist(), batch.t.tolist(), scores.tolist()
            entries = 0
            for i in order:
                entries += self._offer((scores[i], seqs[i]), ids[i], ts[i])
            self._counters["offered"] += len(order)
            self._counters["entries"] += entries
        self._answer = None

    def _offer(self, key: tuple, oid: int, t: int) -> int:
        """Offer one object to every window: ``O(C_nw log k)``; returns the windows it entered."""
        k, objects = self.q.k, self._objects
        references = 0
        for members in self._sets:
            if len(members) < k:
                heappush(members, key)
            elif members[0] < key:
                evicted = heapreplace(members, key)[1]
                record = objects[evicted]
                record[2] -= 1
                if not record[2]:
                    del objects[evicted]
            else:
                continue
            references += 1
        if references:
            objects[key[1]] = [oid, t, references]
        return references

    def _drop_current_window(self) -> None:
        """Release the answered window's set (``O(k)``) and reuse its slot for the newest."""
        slot = self._current % self._windows
        objects = self._objects
        for _, seq in self._sets[slot]:
            record = objects[seq]
            record[2] -= 1
            if not record[2]:
                del objects[seq]
        self._sets[slot] = []
        self._current += 1

    def topk(self) -> Answer:
        """The current window's set, best first: ``O(k log k)``, cached per slide."""
        if self._answer is None:
            current = sorted(self._sets[self._current % self._windows], reverse=True)
            self._answer = Answer(np.array([self._objects[s][0] for _, s in current], np.int64),
                                  np.array([v for v, _ in current], np.float64),
                                  np.array([s for _, s in current], np.int64))
        return self._answer

    def candidates(self) -> np.ndarray:
        return np.fromiter(self._objects, np.int64, len(self._objects))

    def _stats(self) -> dict[str, Any]:
        distinct = len(self._objects)
        return {"candidates": distinct, "retained": distinct,
                "memberships": sum(len(members) for members in self._sets), "windows": self._windows,
                **self._counters}

    def footprints(self) -> list[Footprint]:
        """``O(C_nw)``: one ``getsizeof`` per window set."""
        distinct = len(self._objects)
        memberships = sum(len(members) for members in self._sets)
        measured = distinct * OBJECT_BYTES + sys.getsizeof(self._objects) + sys.getsizeof(self._sets) \
            + sum(sys.getsizeof(members) for members in self._sets)
        counts = {"object": distinct, "membership": memberships, "window": self._windows}
        return [Footprint(LAYOUT, counts, measured, 0, (self._objects, self._sets))]

    def dump_state(self) -> dict[str, Any]:
        sets = []
        if self._current is not None:
            sets = [[list(key) for key in sorted(self._sets[w % self._windows])]
                    for w in range(self._current, self._current + self._windows)]
        return {"current": self._current, "sets": sets, "counters": dict(self._counters),
                "objects": [[seq, oid, t] for seq, (oid, t, _) in self._objects.items()]}

    def load_state(self, data: dict[str, Any]) -> None:
        self._current = data["current"]
        references: dict[int, int] = {}
        if self._current is not None:
            if len(data["sets"]) != self._windows:
                raise ValueError(f"expected {self._windows} windows, got {len(data['sets'])}")
            for offset, members in enumerate(data["sets"]):
                keys = [(float(v), int(s)) for v, s in members]
                heapify(keys)
                self._sets[(self._current + offset) % self._windows] = keys
                for _, seq in keys:
                    references[seq] = references.get(seq, 0) + 1
        self._objects = {int(seq): [int(oid), int(t), references.get(int(seq), 0)] for seq, oid, t in data["objects"]}
        self._answer = None if self._current is not None else Answer.empty()
        self._counters.update({name: int(data.get("counters", {}).get(name, 0)) for name in self._counters})

    def check(self) -> None:
        references: dict[int, int] = {}
        for members in self._sets:
            assert len(members) <= self.q.k, "window set larger than k"
            assert all(members[(i - 1) // 2] <= members[i] for i in range(1, len(members))), "window set is not a heap"
            assert len({seq for _, seq in members}) == len(members), "object twice in one window"
            for _, seq in members:
                references[seq] = references.get(seq, 0) + 1
        assert set(references) == set(self._objects), "object table differs from the window sets"
        for seq, (_, _, count) in self._objects.items():
            assert count == references[seq], f"object {seq}: reference count {count}, held by {references[seq]} sets"
