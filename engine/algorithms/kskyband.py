"""One-pass k-skyband with dominance counters (the SAP paper's one-pass competitor, its [19])."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base import Algorithm
from ..memory import Footprint
from ..ranking import Answer, score
from ..registry import register
from ..stream import Batch
from ..skyband import ANSWER_ROW_BYTES, MEMBER_BYTES, DominanceSet, fixed_bytes
from ..jsondata import floats_in, floats_out, ints_in, saved_capacity


@register
class KSkyband(Algorithm):
    """Continuous top-k over the k-skyband of the window, maintained slide by slide.

    Every arrival enters the candidate set with dominance counter 0; it dominates every
    candidate that ranks below it by ``(score, seq)`` (it is newer, so it expires no
    earlier): those are the candidates scoring at most its score.  Their counters rise by one
    and candidates reaching ``k`` are dropped: ``k`` newer, better objects outlive them, so
    they can never be in an answer.  Expired candidates leave at each slide.  The answer is
    the top ``k`` candidates.  The set is kept sorted best first, so the dominated candidates
    are a suffix and the answer a prefix.

    Arrivals are added one at a time in arrival order by a compiled kernel
    (:func:`engine.kernels.skyband.insert_arrivals`); expiry is one compiled pass over the
    candidates per slide (:func:`engine.kernels.skyband.expire`).

    Complexity: ``process`` is ``O(log C + D)`` per arrival (``C`` candidates, ``D`` of them
    dominated by the arrival) plus ``O(C)`` per slide for expiry, all compiled; ``topk`` is
    ``O(k)``; ``stats`` ``O(1)``.

    Memory: the dominance skyband's layout (``engine.skyband.LAYOUT``: 5 words per candidate,
    id, seq, t, score, dominance counter).  No window buffer is kept: ``retained ==
    candidates``.

    Examples
    --------
    >>> import numpy as np, engine
    >>> q = engine.Query(weights=[1.0], k=2, window=6, slide=2)
    >>> alg = engine.create("kskyband", q)
    >>> for batch in engine.slides((np.arange(8), np.arange(8), [9., 1., 5., 7., 2., 3., 4., 0.]), q):
    ...     alg.process(batch)
    >>> alg.topk().ids.tolist(), alg.stats()["candidates"]
    ([3, 2], 5)
    """

    name = "kskyband"
    summary = "one-pass k-skyband with dominance counters (SAP paper's competitor)"

    def _reset(self) -> None:
        self._band = DominanceSet(self.q.k, self.q.expiry_key)
        self._end: int | None = None
        self._answer = Answer.empty()
        self._answer_bytes = 0
        self._counters = {"arrivals": 0, "expired": 0}
        self._fixed_bytes = fixed_bytes(self, (self._band,))

    def last_end(self) -> int | None:
        return self._end

    def process(self, batch: Batch) -> None:
        band = self._band
        self._counters["expired"] += band.expire(batch.window_start(self.q))
        if len(batch):
            self._counters["arrivals"] += len(batch)
            band.add(score(batch.x, self.q.weights), batch.seq, batch.ids, batch.t)
        self._end = batch.end
        self._answer = None
        self._answer_bytes = 0

    def topk(self) -> Answer:
        if self._answer is None:
            scores, seq, ids, _ = self._band.members(self.q.k)
            self._answer = Answer(ids, scores, seq)
            self._answer_bytes = ANSWER_ROW_BYTES * len(ids)
        return self._answer

    def candidates(self) -> np.ndarray:
        return self._band.members()[1]

    def _stats(self) -> dict[str, Any]:
        band, out = self._band, self._counters.copy()
        out["candidates"] = out["retained"] = band.size
        out["dropped"] = band.dropped
        return out

    def footprints(self) -> list[Footprint]:
        return [self._band.footprint()]

    def memory(self) -> tuple[int, int]:
        """Both figures from the member count and the kept sizes: ``O(1)``."""
        band = self._band
        return MEMBER_BYTES * band.size, band.measured + self._fixed_bytes + self._answer_bytes

    def dump_state(self) -> dict[str, Any]:
        scores, seq, ids, t = self._band.members()
        return {"end": self._end, "scores": floats_out(scores), "seq": seq.tolist(),
                "ids": ids.tolist(), "t": t.tolist(), "counts": self._band.counts().tolist(),
                "dropped": self._band.dropped, "counters": dict(self._counters),
                "capacity": {"skyband": self._band.capacity}}

    def load_state(self, data: dict[str, Any]) -> None:
        """Read :meth:`dump_state` data; ``capacity`` (absent from states saved before it) sizes
        the skyband's columns as they were."""
        scores = floats_in(data["scores"])
        seq, ids, t = ints_in(data["seq"], "seq"), ints_in(data["ids"], "ids"), ints_in(data["t"], "t")
        counts = ints_in(data["counts"], "counts")
        capacity = saved_capacity(data["capacity"], "skyband") if "capacity" in data else None
        self._band.load(scores, seq, ids, t, counts, capacity)
        self._band.dropped = int(data["dropped"])
        self._end = data["end"] if data["end"] is None else int(data["end"])
        self._counters.update({name: int(data["counters"][name]) for name in self._counters})
        self._answer = None
        self._answer_bytes = 0

    def check(self) -> None:
        start = None if self._end is None else self._end - self.q.window
        self._band.check(start)
        if self._end is not None and len(self._band):
            keys = self._band.members()[1 if self.q.kind == "count" else 3]
            assert keys.max() < self._end, "candidate from the future"
