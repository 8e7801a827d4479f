"""Brute force: the whole window, top-k selected afresh at every slide."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base import Algorithm, check_answer_size
from ..memory import OBJECT_FIELDS, WORD, Footprint, Layout, owned_bytes
from ..ranking import Answer, finite_score, score, top_indices
from ..registry import register
from ..stream import Batch
from ..window import WindowBuffer

WINDOW = Layout("oracle window", {"object": {**OBJECT_FIELDS, "x": "d", "score": 1}})


@register
class Oracle(Algorithm):
    """The exact reference: every object of the window in a buffer, ``argpartition`` per slide.

    Keeps each object's id, seq, t, its ``d`` features and its score (layout ``WINDOW``:
    ``bytes`` is ``8 (d + 4)`` per object in the window; ``measured_bytes`` the buffer's
    columns at their capacity, up to about twice the window).  ``process`` is ``O(s)``
    amortised, ``topk`` ``O(n + k log k)``; ``query(weights, k)`` answers any other weights in
    ``O(n d)``; ``stats`` is ``O(1)``.

    Examples
    --------
    >>> import numpy as np, engine
    >>> q = engine.Query(weights=[1.0], k=2, window=4, slide=2)
    >>> alg = engine.create("oracle", q)
    >>> for batch in engine.slides((np.arange(6), np.arange(6), [5.0, 1.0, 4.0, 2.0, 3.0, 0.0]), q):
    ...     alg.process(batch)
    >>> alg.topk().ids.tolist()
    [2, 4]
    >>> alg.query([-1.0], 1).ids.tolist()
    [5]
    """

    name = "oracle"
    summary = "brute force over the whole window (exact reference; answers any weights)"

    def _reset(self) -> None:
        d = self.q.dimensions
        self._window = WindowBuffer({"ids": np.int64, "seq": np.int64, "t": np.int64,
                                     "x": (np.float64, (d,)), "score": np.float64})
        self._answer: Answer | None = Answer.empty()
        self._end: int | None = None

    def last_end(self) -> int | None:
        return self._end

    def process(self, batch: Batch) -> None:
        self._window.append(ids=batch.ids, seq=batch.seq, t=batch.t, x=batch.x,
                            score=score(batch.x, self.q.weights))
        self._window.expire_before(self.q.expiry_key, batch.window_start(self.q))
        self._end = batch.end
        self._answer = None

    def topk(self) -> Answer:
        if self._answer is None:
            self._answer = self._ranked(self._window.view("score"), self.q.k)
        return self._answer

    def query(self, weights, k: int) -> Answer:
        """The top ``k`` of the current window under any ``weights`` (``O(n d)``)."""
        weights = self.q.with_weights(weights).weights
        if len(weights) != self.q.dimensions:
            raise ValueError(f"weights must hold one weight per feature ({self.q.dimensions}), got {len(weights)}")
        check_answer_size(k)
        return self._ranked(finite_score(self._window.view("x"), weights), k)

    def _ranked(self, scores: np.ndarray, k: int) -> Answer:
        seq = self._window.view("seq")
        top = top_indices(scores, seq, k)
        return Answer(self._window.view("ids")[top], scores[top], seq[top])

    def candidates(self) -> np.ndarray:
        return self._window.view("seq").copy()

    def _stats(self) -> dict[str, Any]:
        n = len(self._window)
        return {"candidates": n, "retained": n}

    def memory(self) -> tuple[int, int]:
        """``bytes`` from the window's length, ``measured_bytes`` from its columns' capacity and
        the answer's arrays: ``O(columns)``, no walk."""
        window = self._window
        modelled = WORD * WINDOW.words("object", self.q.dimensions) * len(window)
        answer = 0 if self._answer is None else owned_bytes(self._answer.ids, self._answer.scores, self._answer.seq)
        return modelled, window.measured_bytes() + answer

    def footprints(self) -> list[Footprint]:
        window = self._window
        return [Footprint(WINDOW, {"object": len(window)}, window.measured_bytes(), self.q.dimensions, (window,))]

    def dump_state(self) -> dict[str, Any]:
        w = self._window
        return {"end": self._end, "ids": w.view("ids").tolist(), "seq": w.view("seq").tolist(),
                "t": w.view("t").tolist(), "x": w.view("x").tolist(), "buffer": w.placement()}

    def load_state(self, data: dict[str, Any]) -> None:
        """Read :meth:`dump_state` data; ``buffer`` (absent before the buffer's placement was
        saved) places the window where it was."""
        x = np.asarray(data["x"], np.float64).reshape(-1, self.q.dimensions)
        if "buffer" in data:
            self._window.place(**data["buffer"])
        self._window.append(ids=data["ids"], seq=data["seq"], t=data["t"], x=x,
                            score=score(x, self.q.weights))
        self._end = data["end"]
        self._answer = None

    def check(self) -> None:
        seq = self._window.view("seq")
        assert np.all(np.diff(seq) > 0), "window seq must increase"
        assert np.all(np.diff(self._window.view("t")) >= 0) or self.q.kind == "count", "t must not decrease"
        if self._end is not None and len(seq):
            keys = self._window.view(self.q.expiry_key)
            assert keys[0] >= self._end - self.q.window and keys[-1] < self._end, "object outside the window"
