"""PreTopK (the MinTopK paper's baseline): one independent predicted top-k set per window."""

from __future__ import annotations

from bisect import insort
from typing import Any

import numpy as np

from ..base import WORD, Algorithm
from ..ranking import Answer, score, top_indices
from ..registry import register
from ..stream import Batch


@register
class PreTopK(Algorithm):
    """Continuous top-k keeping the predicted top-k set of each of the ``C_nw`` windows.

    Each window ``W_i`` (named by its last slide) holds the top ``k`` of the objects that
    arrived so far and take part in it, as a list sorted by ``(score, seq)``.  An arriving
    object is offered to every maintained window: ``O(C_nw log k)`` per object.  After slide
    ``j`` the answer is the set of ``W_j``, which is then dropped and an empty ``W_{j+C_nw}``
    created.  ``prefilter=True`` first keeps the top ``k`` of each slide, as in MinTopK.

    Memory (``bytes``): 4 words per distinct object (id, seq, t, score) plus one pointer per
    window membership.

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
        self._objects: dict[int, tuple[int, int]] = {}
        self._current: int | None = None
        self._answer = Answer.empty()

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
            for i in order:
                self._offer((scores[i], seqs[i]), ids[i], ts[i])
        self._answer = None

    def _offer(self, key: tuple, oid: int, t: int) -> None:
        k = self.q.k
        entered = False
        for members in self._sets:
            if len(members) < k:
                insort(members, key)
                entered = True
            elif members[0] < key:
                evicted = members.pop(0)
                insort(members, key)
                self._forget_if_unused(evicted)
                entered = True
        if entered:
            self._objects[key[1]] = (oid, t)

    def _forget_if_unused(self, key: tuple) -> None:
        if not any(key in members for members in self._sets):
            del self._objects[key[1]]

    def _drop_current_window(self) -> None:
        slot = self._current % self._windows
        dropped, self._sets[slot] = self._sets[slot], []
        for key in dropped:
            self._forget_if_unused(key)
        self._current += 1

    def topk(self) -> Answer:
        """The current window's set, best first: ``O(k)``, cached per slide."""
        if self._answer is None:
            current = self._sets[self._current % self._windows][::-1]
            self._answer = Answer(np.array([self._objects[s][0] for _, s in current], np.int64),
                                  np.array([v for v, _ in current], np.float64),
                                  np.array([s for _, s in current], np.int64))
        return self._answer

    def candidates(self) -> np.ndarray:
        return np.fromiter(self._objects, np.int64, len(self._objects))

    def _stats(self) -> dict[str, Any]:
        memberships = sum(len(members) for members in self._sets)
        distinct = len(self._objects)
        return {"candidates": distinct, "retained": distinct, "bytes": WORD * (4 * distinct + memberships),
                "memberships": memberships, "windows": self._windows}

    def dump_state(self) -> dict[str, Any]:
        sets = []
        if self._current is not None:
            sets = [[list(key) for key in self._sets[w % self._windows]]
                    for w in range(self._current, self._current + self._windows)]
        return {"current": self._current, "sets": sets,
                "objects": [[seq, oid, t] for seq, (oid, t) in self._objects.items()]}

    def load_state(self, data: dict[str, Any]) -> None:
        self._current = data["current"]
        if self._current is not None:
            if len(data["sets"]) != self._windows:
                raise ValueError(f"expected {self._windows} windows, got {len(data['sets'])}")
            for offset, members in enumerate(data["sets"]):
                self._sets[(self._current + offset) % self._windows] = sorted((float(v), int(s)) for v, s in members)
        self._objects = {int(seq): (int(oid), int(t)) for seq, oid, t in data["objects"]}
        self._answer = None if self._current is not None else Answer.empty()

    def check(self) -> None:
        used = set()
        for members in self._sets:
            assert len(members) <= self.q.k, "window set larger than k"
            assert members == sorted(members), "window set out of order"
            used.update(seq for _, seq in members)
        assert used == set(self._objects), "object table differs from the window sets"
