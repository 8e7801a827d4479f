"""SMA, the Skyband Monitoring Algorithm (Mouratidis, Bakiras, Papadias, SIGMOD 2006)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..base import Algorithm
from ..memory import Footprint, Layout
from ..ranking import Answer, score
from ..registry import register
from ..stream import Batch
from ..grid import Grid
from ..skyband import ANSWER_ROW_BYTES, MEMBER_BYTES, DominanceSet, dominance_counts, fixed_bytes
from ..jsondata import floats_in, floats_out, ints_in, saved_capacity

_EMPTY_F = np.empty(0, np.float64)

COUNTERS = ("rescans", "anchors", "arrivals", "qualified")
"""SMA's own counters; the grid's are kept in the same dict (``engine.grid.COUNTERS``)."""

THETA = Layout("sma theta", {"theta": {"score": 1, "seq": 1}})
"""The k-th object of the last computation: its score and seq."""

THETA_BYTES = THETA.bytes(theta=1)
"""``THETA``'s price when ``theta`` is set."""


@register
class SMA(Algorithm):
    """Continuous top-k over a grid of the window plus a k-skyband that defers recomputation.

    Besides the :class:`~engine.grid.Grid` holding the window, SMA keeps ``S``, the
    k-skyband (with dominance counters, best first) of the window's objects that rank at
    least as high as ``theta``, the k-th object found by the last computation from the grid.
    An arrival ranks above ``theta`` iff its score is at least ``theta``'s score (it is newer);
    such arrivals enter ``S`` one by one, raising the counters of the members they dominate
    and dropping those that reach ``k``.  Others are only stored in the grid.  While ``S``
    holds ``k`` objects its top ``k`` is the answer (every object ranking below ``theta`` has
    ``k`` better ones in ``S``); when expiry leaves fewer than ``k`` at the end of a slide, the
    top-k is recomputed from the grid (a ``rescan``), ``S`` becomes that top-k with counters
    and ``theta`` its k-th object.

    **Start.**  The paper registers a query on a full window.  Here, while the first window
    is still filling (nothing has expired yet), and whenever the window holds fewer than ``k``
    objects, there is no ``theta``: ``S`` is the k-skyband of the whole window.  At the end of
    the first slide whose window is complete and whenever ``theta`` is missing later, ``theta``
    is taken as the k-th object of ``S`` and ``S`` cut to its top ``k`` (an ``anchor``: the same
    state a computation from the grid would produce, as ``S`` holds the window's top-k, with
    no grid access).

    Parameters: ``cells_per_dim`` (0: automatic, see ``Grid``).

    Complexity, all compiled (:mod:`engine.kernels.grid`, :mod:`engine.kernels.skyband`):
    ``process`` is ``O(d)`` per arrival and per expiry for the grid, ``O(|S|)`` for the
    skyband's expiry, ``O(s + Q (log Q + k) + |S|)`` per slide for the ``Q`` qualifying
    arrivals entering the skyband, and on a rescan ``O(v log k)`` for the ``v`` objects of
    the visited cells plus ``O(k^2)`` vectorised for the counters; ``topk`` is ``O(k)``;
    ``stats`` ``O(1)``.

    Memory: the grid's layout (``engine.grid.LAYOUT``: ``d + 6`` words per object, 6 per cell,
    the edges), the dominance skyband's (``engine.skyband.LAYOUT``: 5 words per member, the
    same as in ``kskyband``: its id, seq, t and score are copies of the grid's, kept so the
    answer needs no grid access) and two words for ``theta``.  ``candidates`` is ``|S|``;
    ``retained`` is the window.

    Examples
    --------
    >>> import numpy as np, engine
    >>> q = engine.Query(weights=[1.0], k=2, window=6, slide=2)
    >>> alg = engine.create("sma", q)
    >>> for batch in engine.slides((np.arange(8), np.arange(8), [9., 1., 5., 7., 2., 3., 4., 0.]), q):
    ...     alg.process(batch)
    >>> alg.topk().ids.tolist(), alg.stats()["rescans"]
    ([3, 2], 1)
    """

    name = "sma"
    summary = "SMA: grid index plus a k-skyband above the last k-th score; rescans when it runs short"
    defaults = {"cells_per_dim": 0}

    def _reset(self) -> None:
        self._counters = dict.fromkeys(COUNTERS, 0)
        self._grid = Grid(self.q, self.params["cells_per_dim"], self._counters)
        self._band = DominanceSet(self.q.k, self.q.expiry_key)
        self._theta: tuple[float, int] | None = None
        self._origin: int | None = None
        self._end: int | None = None
        self._answer: Answer | None = Answer.empty()
        self._answer_bytes = 0
        self._fixed_bytes = fixed_bytes(self, (self._grid, self._band))

    def last_end(self) -> int | None:
        return self._end

    def process(self, batch: Batch) -> None:
        grid, band, k = self._grid, self._band, self.q.k
        start = batch.window_start(self.q)
        if self._origin is None:
            self._origin = batch.end - self.q.slide
        values = score(batch.x, self.q.weights) if len(batch) else _EMPTY_F
        grid.expire(start)
        band.expire(start)
        grid.insert(batch, values)
        grid.maintain()
        self._counters["arrivals"] += len(batch)
        if len(batch):
            floor = -math.inf if self._theta is None else self._theta[0]
            self._counters["qualified"] += band.add(values, batch.seq, batch.ids, batch.t, floor)
        if self._theta is not None:
            if len(band) < k:
                self._rescan()
        elif len(band) >= k and start >= self._origin:
            values, seq, _, _ = band.members(k)
            self._theta = (float(values[-1]), int(seq[-1]))
            band.truncate(k)
            self._counters["anchors"] += 1
        self._end = batch.end
        self._answer = None
        self._answer_bytes = 0

    def _rescan(self) -> None:
        grid, k = self._grid, self.q.k
        self._counters["rescans"] += 1
        pos, values, seq = grid.top(k)
        self._band.load(values, seq, grid.column("ids", pos), grid.column("t", pos), dominance_counts(seq))
        self._theta = (float(values[-1]), int(seq[-1])) if len(pos) == k else None

    def topk(self) -> Answer:
        if self._answer is None:
            values, seq, ids, _ = self._band.members(self.q.k)
            self._answer = Answer(ids, values, seq)
            self._answer_bytes = ANSWER_ROW_BYTES * len(ids)
        return self._answer

    def candidates(self) -> np.ndarray:
        return self._band.members()[1]

    def _stats(self) -> dict[str, Any]:
        grid, band, out = self._grid, self._band, self._counters.copy()
        out["candidates"] = band.size
        out["retained"] = grid.live
        out["dropped"] = band.dropped
        out["cells"] = grid.cells
        return out

    def footprints(self) -> list[Footprint]:
        theta = Footprint(THETA, {"theta": int(self._theta is not None)}, 0)
        return [self._grid.footprint(), self._band.footprint(), theta]

    def memory(self) -> tuple[int, int]:
        """Both figures from the structures' counts and kept sizes: ``O(1)``."""
        grid, band = self._grid, self._band
        theta = THETA_BYTES if self._theta is not None else 0
        return (grid.modelled_bytes() + MEMBER_BYTES * band.size + theta,
                grid.measured + band.measured + self._fixed_bytes + self._answer_bytes)

    def dump_state(self) -> dict[str, Any]:
        seq = self._band.members()[1]
        theta = None if self._theta is None else [floats_out([self._theta[0]])[0], self._theta[1]]
        return {"end": self._end, "origin": self._origin, "grid": self._grid.dump(), "theta": theta,
                "skyband": seq.tolist(),
                "counts": self._band.counts().tolist(), "dropped": self._band.dropped,
                "counters": {name: self._counters[name] for name in COUNTERS},
                "capacity": {"skyband": self._band.capacity}}

    def load_state(self, data: dict[str, Any]) -> None:
        """Read :meth:`dump_state` data; ``capacity`` (absent from states saved before it) sizes
        the skyband's columns as they were (the grid's ring: its own ``capacity``)."""
        grid = self._grid
        grid.load(data["grid"])
        seq, counts = ints_in(data["skyband"], "skyband"), ints_in(data["counts"], "counts")
        if len(seq) != len(counts):
            raise ValueError("skyband columns have different lengths")
        order = np.argsort(seq)
        pos = np.empty(len(seq), np.int64)
        pos[order] = grid.positions_of(seq[order])
        capacity = saved_capacity(data["capacity"], "skyband") if "capacity" in data else None
        self._band.load(grid.column("score", pos), seq, grid.column("ids", pos), grid.column("t", pos), counts, capacity)
        self._band.dropped = int(data["dropped"])
        theta = data["theta"]
        self._theta = None if theta is None else (float(floats_in([theta[0]])[0]), int(ints_in([theta[1]], "theta")[0]))
        self._end = data["end"] if data["end"] is None else int(data["end"])
        self._origin = data["origin"] if data["origin"] is None else int(data["origin"])
        self._counters.update({name: int(data["counters"][name]) for name in COUNTERS})
        self._answer = None
        self._answer_bytes = 0

    def check(self) -> None:
        grid, band, k = self._grid, self._band, self.q.k
        grid.check(self._end)
        band.check(None if self._end is None else self._end - self.q.window)
        everything = grid.top_all(grid.live)
        values, seq = grid.column("score", everything), grid.column("seq", everything)
        if self._theta is not None:
            above = (values > self._theta[0]) | ((values == self._theta[0]) & (seq >= self._theta[1]))
            values, seq = values[above], seq[above]
        elif self._end is not None and self._end - self.q.window >= self._origin:
            assert len(band) < k, "no theta although the window is complete and the skyband holds k objects"
        expected = dominance_counts(seq) < k
        band_values, band_seq, _, _ = band.members()
        assert np.array_equal(band_seq, seq[expected]), "skyband differs from the k-skyband above theta"
        assert np.array_equal(band_values, values[expected]), "skyband scores are stale"
        if self._theta is not None:
            assert len(band) >= k, "skyband below k objects after a slide"
        top = grid.top_all(k)
        assert np.array_equal(band.members(k)[1], grid.column("seq", top)), "answer is not the top-k"
