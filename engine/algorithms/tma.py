"""TMA, the Top-k Monitoring Algorithm (Mouratidis, Bakiras, Papadias, SIGMOD 2006)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base import Algorithm
from ..memory import Footprint, Layout, array_bytes
from ..ranking import Answer, score, top_indices
from ..registry import register
from ..stream import Batch
from ..grid import Grid
from ..jsondata import ints_in

_EMPTY_I = np.empty(0, np.int64)
_EMPTY_F = np.empty(0, np.float64)

RESULT = Layout("tma result", {"object": {"pointer": 1, "score": 1, "seq": 1}})
"""A result object: its grid position, with its score and seq beside it for the k-th test."""


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

    Complexity: ``process`` is ``O(s log s)`` vectorised for the grid updates plus, on a
    rescan, ``O(c^d)`` vectorised and ``O(v + k log k)`` per visited cell; ``topk`` is
    ``O(k)``; ``stats`` ``O(1)``.

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
        self._grid = Grid(self.q, self.params["cells_per_dim"])
        self._pos = _EMPTY_I
        self._scores = _EMPTY_F
        self._seq = _EMPTY_I
        self._end: int | None = None
        self._answer: Answer | None = Answer.empty()
        self._counters = {"rescans": 0, "arrivals": 0, "region_arrivals": 0, "entered": 0}

    def process(self, batch: Batch) -> None:
        grid, k = self._grid, self.q.k
        values = score(batch.x, self.q.weights) if len(batch) else _EMPTY_F
        grid.expire(batch.window_start(self.q))
        pos = grid.insert(batch, values)
        grid.maintain()
        self._counters["arrivals"] += len(batch)
        if len(self._pos) and self._pos.min() < grid.first_pos:
            self._recompute()
        elif len(batch):
            if len(self._pos) < k:
                enter = np.ones(len(batch), bool)
                self._counters["region_arrivals"] += len(batch)
            else:
                kth = self._scores[-1]
                region = grid.bound_of(grid.column("cell", pos)) >= kth
                self._counters["region_arrivals"] += int(np.count_nonzero(region))
                enter = region & (values >= kth)
            if enter.any():
                self._counters["entered"] += int(np.count_nonzero(enter))
                allpos = np.concatenate((self._pos, pos[enter]))
                allscores = np.concatenate((self._scores, values[enter]))
                allseq = np.concatenate((self._seq, batch.seq[enter]))
                top = top_indices(allscores, allseq, k)
                self._pos, self._scores, self._seq = allpos[top], allscores[top], allseq[top]
        self._end = batch.end
        self._answer = None

    def _recompute(self) -> None:
        self._counters["rescans"] += 1
        self._pos, self._scores, self._seq = self._grid.top(self.q.k)

    def topk(self) -> Answer:
        if self._answer is None:
            self._answer = Answer(self._grid.column("ids", self._pos), self._scores.copy(), self._seq.copy())
        return self._answer

    def candidates(self) -> np.ndarray:
        return self._seq.copy()

    def _stats(self) -> dict[str, Any]:
        grid = self._grid
        return {"candidates": len(self._pos), "retained": grid.live, **self._counters, **grid.counters,
                "cells": grid.cells}

    def footprints(self) -> list[Footprint]:
        result = (self._pos, self._scores, self._seq)
        return [self._grid.footprint(),
                Footprint(RESULT, {"object": len(self._pos)}, array_bytes(result), 0, result)]

    def dump_state(self) -> dict[str, Any]:
        return {"end": self._end, "grid": self._grid.dump(), "result": self._seq.tolist(),
                "counters": dict(self._counters)}

    def load_state(self, data: dict[str, Any]) -> None:
        grid = self._grid
        grid.load(data["grid"])
        self._pos = grid.positions_of(ints_in(data["result"], "result"))
        self._scores, self._seq = grid.column("score", self._pos), grid.column("seq", self._pos)
        self._end = data["end"] if data["end"] is None else int(data["end"])
        self._counters.update({name: int(data["counters"][name]) for name in self._counters})
        self._answer = None

    def check(self) -> None:
        grid = self._grid
        grid.check(self._end)
        expected = grid.top_all(self.q.k)
        assert np.array_equal(self._pos, expected), "result is not the top-k of the window"
        assert np.array_equal(self._scores, grid.column("score", self._pos)), "result scores are stale"
        assert np.array_equal(self._seq, grid.column("seq", self._pos)), "result seq are stale"
