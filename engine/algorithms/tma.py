"""TMA, the Top-k Monitoring Algorithm (Mouratidis, Bakiras, Papadias, SIGMOD 2006)."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ..base import Algorithm
from ..memory import Footprint, Layout, deep_size
from ..ranking import Answer, score
from ..registry import register
from ..stream import Batch
from ..grid import Grid
from ..skyband import ANSWER_ROW_BYTES, fixed_bytes
from ..jsondata import ints_in, saved_capacity
from ..kernels import tma as kernel

_EMPTY_F = np.empty(0, np.float64)

RESULT = Layout("tma result", {"object": {"pointer": 1, "score": 1, "seq": 1}})
"""A result object: its grid position, with its score and seq beside it for the k-th test."""

RESULT_BYTES = RESULT.bytes(object=1)
"""``RESULT``'s price of one result object."""


COUNTERS = ("rescans", "arrivals", "region_arrivals", "entered")
"""TMA's own counters; the grid's are kept in the same dict (``engine.grid.COUNTERS``)."""

INITIAL_RESULT = 1024
"""Rows of the result's columns at first (at most ``k``); they grow up to ``k`` when needed."""


class Result:
    """TMA's result ``R``: positions, scores and seq of the top objects, best first, in columns
    of fixed capacity (the first ``size`` rows); layout ``RESULT``.  ``measured`` (the columns at
    capacity and the object, in bytes) is kept as the columns are allocated."""

    def __init__(self, capacity: int) -> None:
        self.size = 0
        self._overhead = 0
        self._allocate(capacity)
        self._overhead = deep_size(self, exclude=(self.pos, self.score, self.seq)) + 2 * deep_size(2 ** 40)
        self.measured += self._overhead

    def _allocate(self, capacity: int) -> None:
        fresh = np.empty(capacity, np.int64), np.empty(capacity, np.float64), np.empty(capacity, np.int64)
        for column, old in zip(fresh, (getattr(self, "pos", None), getattr(self, "score", None),
                                       getattr(self, "seq", None))):
            if old is not None:
                column[:self.size] = old[:self.size]
        self.pos, self.score, self.seq = fresh
        self.measured = self._overhead + sum(sys.getsizeof(column) for column in fresh)

    def reserve(self, rows: int) -> None:
        """Make room for ``rows`` objects (``O(rows)`` when it grows)."""
        if rows > len(self.pos):
            self._allocate(max(rows, 2 * len(self.pos)))

    def set(self, pos: np.ndarray, scores: np.ndarray, seq: np.ndarray) -> None:
        """Replace the result by objects given best first (``O(len(pos))``)."""
        m = len(pos)
        self.size = 0
        self.reserve(m)
        self.pos[:m], self.score[:m], self.seq[:m] = pos, scores, seq
        self.size = m

    def footprint(self) -> Footprint:
        """Modelled and measured memory (``O(1)``)."""
        return Footprint(RESULT, {"object": self.size}, self.measured, 0, (self,))


@register
class TMA(Algorithm):
    """Continuous top-k over a grid holding the whole window, recomputed when a result expires.

    The window lives in a :class:`~engine.grid.Grid`.  The result ``R`` (the top
    ``min(k, n)`` objects) is computed by visiting cells in descending order of their score
    bound until the next cell cannot beat the k-th score; the cells whose bound reaches the
    k-th score are the query's *influence region*.  Per slide: expired objects leave the grid;
    if one of them was in ``R``, ``R`` is recomputed from the grid after the slide's arrivals
    are stored (a ``rescan``).  Otherwise an arrival outside the influence region is only
    stored; one inside it that beats the k-th object (equal score: the newer wins, so an
    arrival beats it iff its score is at least the k-th score) enters ``R``, pushing out the
    k-th.  ``R`` is exact at every slide.

    Parameters: ``cells_per_dim`` (0: automatic, see ``Grid``).

    Complexity, all compiled (:mod:`engine.kernels.grid`, :mod:`engine.kernels.tma`):
    ``process`` is ``O(d)`` per arrival and per expiry for the grid, ``O(k)`` per arrival
    entering ``R``, and on a rescan ``O(v log k)`` for the ``v`` objects of the visited
    cells; ``topk`` is ``O(k)``; ``stats`` ``O(1)``.

    Memory: the grid's layout (``engine.grid.LAYOUT``: ``d + 6`` words per object, 6 per cell,
    the edges) plus ``RESULT``, 3 words per result object (grid position, score, seq).
    ``candidates`` is ``|R|``; ``retained`` is the window.

    Examples
    --------
    >>> import numpy as np, engine
    >>> q = engine.Query(weights=[1.0, -1.0], k=2, window=6, slide=2)
    >>> alg = engine.create("tma", q)
    >>> x = np.array([[9, 0], [1, 0], [5, 1], [7, 0], [2, 0], [3, -2], [4, 0], [0, 0]], float)
    >>> for batch in engine.slides((np.arange(8), np.arange(8), x), q):
    ...     alg.process(batch)
    >>> alg.topk().ids.tolist(), alg.topk().scores.tolist()
    ([3, 5], [7.0, 5.0])
    """

    name = "tma"
    summary = "TMA: grid index over the window, top-k recomputed when a result expires (SIGMOD 2006)"
    defaults = {"cells_per_dim": 0}

    def _reset(self) -> None:
        self._counters = dict.fromkeys(COUNTERS, 0)
        self._grid = Grid(self.q, self.params["cells_per_dim"], self._counters)
        self._result = Result(min(self.q.k, INITIAL_RESULT))
        self._end: int | None = None
        self._answer: Answer | None = Answer.empty()
        self._answer_bytes = 0
        self._fixed_bytes = fixed_bytes(self, (self._grid, self._result))

    def last_end(self) -> int | None:
        return self._end

    def process(self, batch: Batch) -> None:
        grid, result, k, m = self._grid, self._result, self.q.k, len(batch)
        values = score(batch.x, self.q.weights) if m else _EMPTY_F
        grid.expire(batch.window_start(self.q))
        pos = grid.insert(batch, values)
        grid.maintain()
        self._counters["arrivals"] += m
        if result.size and result.pos[:result.size].min() < grid.first_pos:
            self._recompute()
        elif m:
            result.reserve(min(k, result.size + m))
            result.size, region, entered = kernel.enter_result(
                result.pos, result.score, result.seq, result.size, k, int(pos[0]), m, *grid.kernel_columns())
            self._counters["region_arrivals"] += region
            self._counters["entered"] += entered
        self._end = batch.end
        self._answer = None
        self._answer_bytes = 0

    def _recompute(self) -> None:
        self._counters["rescans"] += 1
        self._result.set(*self._grid.top(self.q.k))

    def topk(self) -> Answer:
        if self._answer is None:
            result = self._result
            size = result.size
            self._answer = Answer(self._grid.column("ids", result.pos[:size]), result.score[:size].copy(),
                                  result.seq[:size].copy())
            self._answer_bytes = ANSWER_ROW_BYTES * size
        return self._answer

    def candidates(self) -> np.ndarray:
        return self._result.seq[:self._result.size].copy()

    def _stats(self) -> dict[str, Any]:
        grid, out = self._grid, self._counters.copy()
        out["candidates"] = self._result.size
        out["retained"] = grid.live
        out["cells"] = grid.cells
        return out

    def footprints(self) -> list[Footprint]:
        return [self._grid.footprint(), self._result.footprint()]

    def memory(self) -> tuple[int, int]:
        """Both figures from the structures' counts and kept sizes: ``O(1)``."""
        grid, result = self._grid, self._result
        return (grid.modelled_bytes() + RESULT_BYTES * result.size,
                grid.measured + result.measured + self._fixed_bytes + self._answer_bytes)

    def dump_state(self) -> dict[str, Any]:
        result = self._result
        return {"end": self._end, "grid": self._grid.dump(), "result": result.seq[:result.size].tolist(),
                "counters": {name: self._counters[name] for name in COUNTERS},
                "capacity": {"result": len(result.pos)}}

    def load_state(self, data: dict[str, Any]) -> None:
        """Read :meth:`dump_state` data; ``capacity`` (absent from states saved before it) sizes
        the result's columns as they were (the grid's ring: its own ``capacity``)."""
        grid = self._grid
        grid.load(data["grid"])
        if "capacity" in data:
            self._result.reserve(saved_capacity(data["capacity"], "result"))
        pos = grid.positions_of(ints_in(data["result"], "result"))
        self._result.set(pos, grid.column("score", pos), grid.column("seq", pos))
        self._end = data["end"] if data["end"] is None else int(data["end"])
        self._counters.update({name: int(data["counters"][name]) for name in COUNTERS})
        self._answer = None
        self._answer_bytes = 0

    def check(self) -> None:
        grid = self._grid
        grid.check(self._end)
        result = self._result
        pos = result.pos[:result.size]
        assert result.size <= min(self.q.k, len(result.pos)), "result larger than k"
        assert np.array_equal(pos, grid.top_all(self.q.k)), "result is not the top-k of the window"
        assert np.array_equal(result.score[:result.size], grid.column("score", pos)), "result scores are stale"
        assert np.array_equal(result.seq[:result.size], grid.column("seq", pos)), "result seq are stale"
