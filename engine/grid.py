"""The regular grid index over the feature space that holds the window for TMA and SMA."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .memory import OBJECT_FIELDS, Footprint, Layout, array_bytes, deep_size
from .query import Query
from .ranking import score, top_indices
from .jsondata import floats_in, floats_out, ints_in
from .window import WindowBuffer

MAX_CELLS = 1 << 22
"""Largest number of cells a grid may have (``cells_per_dim ** d``)."""

AUTO_MAX_CELLS = 4096
"""Cap on the number of cells of an automatically sized grid."""

PER_CELL = 32
"""Objects per cell an automatically sized grid aims at."""

MARGIN = 0.1
"""Fraction of the data's range added on each side of the grid when it is (re)built."""

LAYOUT = Layout("grid", {
    "object": {**OBJECT_FIELDS, "x": "d", "score": 1, "cell": 1, "next": 1},
    "cell": {"head": 1, "tail": 1, "count": 1, "bound": 1, "visiting order": 2},
    "edge": {"edge": 1}})
"""The grid's cost: the window's objects, the cells and the ``d (c + 1)`` edges."""

_EMPTY_I = np.empty(0, np.int64)
_EMPTY_F = np.empty(0, np.float64)


class Grid:
    """A regular grid over the feature space holding every object of the window.

    Each of the ``d`` dimensions is cut into ``c`` cells of equal side between edges fitted to
    the data (its range plus a 10 % margin on each side).  Cell ``(i_0, ..., i_{d-1})`` has the
    flat index ``sum_j i_j c^j``.  The window lives in one arrival-order buffer (id, seq, t,
    features, score, cell, next); every cell is a linked list through ``next`` of its objects
    in arrival order, with ``head``, ``tail`` and ``count``.  Objects expire in arrival order,
    so expiry only advances cell heads.

    **Bounds.**  ``bound[cell]`` is an upper bound of the score of everything in the cell: the
    score of the cell's best corner under the query weights (upper edge where ``w_j >= 0``,
    lower edge where ``w_j < 0``), raised to the score of any object that was put into the cell
    although it lies outside the grid (values beyond the outer edges are clamped into the
    border cells).  Cells are located with ``searchsorted`` on the same float edges the
    corners use, and rounding is monotone, so a corner's score (computed by the shared
    ``score`` function) bounds every object inside exactly.  When more than a quarter of the
    window lies outside the grid, the grid is rebuilt around the window (``rebuilds``):
    ``O(n log n)``, amortised ``O(log n)`` per arrival since a quarter of the window has
    arrived since the last rebuild.

    **Resolution.**  ``cells_per_dim = c`` if given; else ``c`` is the largest integer with
    ``c^d <= min(4096, N / 32)``, where ``N`` is the window length for count windows and the
    number of objects in the window (re-evaluated; the grid is rebuilt when the ideal number of
    cells changes by 4x) for time windows.

    **Memory** (:meth:`footprint`, layout ``LAYOUT``): ``d + 6`` words per object (id, seq, t,
    features, score, cell, next pointer), 6 words per cell (head, tail, count, bound, and the
    visiting order's cell index and bound), ``d (c + 1)`` words of edges.  Measured: the
    buffer's columns at capacity (up to about twice the window) and the cell arrays.

    Examples
    --------
    >>> import engine
    >>> q = engine.Query(weights=[1.0, -1.0], k=2, window=8, slide=4)
    >>> grid = Grid(q, cells_per_dim=2)
    >>> x = np.array([[0.0, 1.0], [1.0, 0.0], [0.5, 0.5], [0.9, 0.2]])
    >>> batch = next(iter(engine.slides((np.arange(4), np.arange(4), x), q)))
    >>> pos = grid.insert(batch, engine.score(x, q.weights))
    >>> grid.top(2)[1].tolist()
    [1.0, 0.7]
    """

    def __init__(self, query: Query, cells_per_dim: int = 0) -> None:
        d = query.dimensions
        if cells_per_dim < 0:
            raise ValueError(f"parameter cells_per_dim must be >= 0 (0: automatic), got {cells_per_dim}")
        if cells_per_dim and cells_per_dim ** d > MAX_CELLS:
            raise ValueError(f"parameter cells_per_dim={cells_per_dim} gives {cells_per_dim}^{d} cells; "
                             f"at most {MAX_CELLS} cells are allowed")
        self.q = query
        self._d = d
        self._w = np.asarray(query.weights, np.float64)
        self._fixed = int(cells_per_dim)
        self._key = query.expiry_key
        self._buf = WindowBuffer({"ids": np.int64, "seq": np.int64, "t": np.int64, "x": (np.float64, (d,)),
                                  "score": np.float64, "cell": np.int64, "next": np.int64})
        self._first = 0
        self._c = 0
        self._edges: np.ndarray | None = None
        self._head = self._tail = self._count = _EMPTY_I
        self._bound = _EMPTY_F
        self._order = _EMPTY_I
        self._negb = _EMPTY_F
        self._clamped = 0
        self.counters = {"rebuilds": 0, "cells_visited": 0, "objects_scanned": 0}

    # -- sizes ---------------------------------------------------------------------------
    @property
    def live(self) -> int:
        """Objects in the window (``O(1)``)."""
        return len(self._buf)

    @property
    def first_pos(self) -> int:
        """Position of the oldest object held; positions only grow (``O(1)``)."""
        return self._first

    @property
    def cells_per_dim(self) -> int:
        return self._c

    @property
    def cells(self) -> int:
        return self._c ** self._d if self._c else 0

    def _auto_cells(self, population: int) -> int:
        if self._fixed:
            return self._fixed
        target = max(1, min(AUTO_MAX_CELLS, population // PER_CELL))
        c = max(1, int(round(target ** (1.0 / self._d))))
        while c > 1 and c ** self._d > target:
            c -= 1
        while (c + 1) ** self._d <= target:
            c += 1
        return c

    def _population(self) -> int:
        return self.q.window if self.q.kind == "count" else self.live

    def footprint(self) -> Footprint:
        """Modelled and measured memory of the grid (``O(1)``)."""
        arrays = (self._head, self._tail, self._count, self._bound, self._order, self._negb)
        arrays += () if self._edges is None else (self._edges,)
        measured = self._buf.measured_bytes() + array_bytes(arrays) \
            + deep_size(self, exclude=(self._buf, self.q, *arrays, _EMPTY_I, _EMPTY_F))
        edges = self._d * (self._c + 1) if self._c else 0
        return Footprint(LAYOUT, {"object": self.live, "cell": self.cells, "edge": edges}, measured, self._d, (self,))

    # -- object access -------------------------------------------------------------------
    def column(self, name: str, pos: np.ndarray) -> np.ndarray:
        """Column ``name`` of the objects at positions ``pos`` (``O(len(pos))``)."""
        return self._buf.view(name)[np.asarray(pos, np.int64) - self._first]

    def bound_of(self, cells: np.ndarray) -> np.ndarray:
        """Score bounds of ``cells`` (``O(len(cells))``)."""
        return self._bound[cells]

    def positions_of(self, seq) -> np.ndarray:
        """Positions of the live objects with the given ``seq`` (``ValueError`` if absent)."""
        seq = np.asarray(seq, np.int64)
        held = self._buf.view("seq")
        at = np.searchsorted(held, seq)
        if len(seq) and (at.max() >= len(held) or not np.array_equal(held[at], seq)):
            raise ValueError("the state refers to objects that are not in the window")
        return at + self._first

    # -- geometry ------------------------------------------------------------------------
    def _make_edges(self, x: np.ndarray, c: int) -> np.ndarray:
        edges = np.empty((self._d, c + 1), np.float64)
        fractions = np.linspace(0.0, 1.0, c + 1)
        for j in range(self._d):
            lo, hi = float(x[:, j].min()), float(x[:, j].max())
            margin = MARGIN * hi - MARGIN * lo
            if not margin > 0:
                margin = 0.5 * max(1.0, abs(lo))
            a, b = lo - margin, hi + margin
            a = a if math.isfinite(a) else lo
            b = b if math.isfinite(b) else hi
            row = a * (1.0 - fractions) + b * fractions
            row[0], row[-1] = a, b
            edges[j] = np.maximum.accumulate(row)
        return edges

    def _locate(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cell of every row of ``x`` (clamped into the grid) and whether it lies outside."""
        m = len(x)
        c = self._c
        cells = np.zeros(m, np.int64)
        outside = np.zeros(m, bool)
        mult = 1
        for j in range(self._d):
            edges, col = self._edges[j], x[:, j]
            idx = np.searchsorted(edges, col, "right") - 1
            np.clip(idx, 0, c - 1, out=idx)
            outside |= (col < edges[0]) | (col > edges[-1])
            cells += idx * mult
            mult *= c
        return cells, outside

    def _outside(self, x: np.ndarray) -> np.ndarray:
        edges = self._edges
        return ((x < edges[:, 0]) | (x > edges[:, -1])).any(axis=1)

    def geometric_bounds(self) -> np.ndarray:
        """Score of every cell's best corner under the weights (``O(c^d d)``).

        The upper edge is the best for a positive weight, the lower edge for a negative one;
        a non-finite corner score becomes ``+inf`` (still an upper bound).
        """
        c, d = self._c, self._d
        index = np.unravel_index(np.arange(c ** d), (c,) * d, order="F")
        corners = np.empty((c ** d, d), np.float64)
        for j in range(d):
            corners[:, j] = self._edges[j][index[j] + 1] if self._w[j] >= 0 else self._edges[j][index[j]]
        bounds = score(corners, self._w)
        bounds[~np.isfinite(bounds)] = np.inf
        return bounds

    def _sort_cells(self) -> None:
        self._order = np.argsort(-self._bound, kind="stable")
        self._negb = -self._bound[self._order]

    # -- linking -------------------------------------------------------------------------
    @staticmethod
    def _link(pos, cells, head, tail, count, nxt, first) -> None:
        """Append objects (``pos`` increasing) to the end of their cells' lists."""
        m = len(pos)
        order = np.argsort(cells, kind="stable")
        sc, sp = cells[order], pos[order]
        breaks = np.flatnonzero(sc[1:] != sc[:-1]) + 1
        starts = np.concatenate(([0], breaks))
        ends = np.concatenate((breaks, [m])) - 1
        following = np.empty(m, np.int64)
        following[:-1] = sp[1:]
        following[ends] = -1
        nxt[sp - first] = following
        group, gfirst, glast = sc[starts], sp[starts], sp[ends]
        old_tail = tail[group]
        joined = old_tail >= 0
        nxt[old_tail[joined] - first] = gfirst[joined]
        head[group[~joined]] = gfirst[~joined]
        tail[group] = glast
        count[group] += ends - starts + 1

    def _rebuild(self) -> None:
        """Fit the grid to the window and relink every object (``O(n log n + c^d)``)."""
        if self._edges is not None:
            self.counters["rebuilds"] += 1
        x = self._buf.view("x")
        self._c = self._auto_cells(self._population())
        self._edges = self._make_edges(x, self._c)
        self._relink()

    def _relink(self) -> None:
        cells_total = self._c ** self._d
        x = self._buf.view("x")
        cells, outside = self._locate(x)
        self._buf.view("cell")[:] = cells
        self._clamped = int(np.count_nonzero(outside))
        self._head = np.full(cells_total, -1, np.int64)
        self._tail = np.full(cells_total, -1, np.int64)
        self._count = np.zeros(cells_total, np.int64)
        pos = np.arange(self._first, self._first + self.live, dtype=np.int64)
        if len(pos):
            self._link(pos, cells, self._head, self._tail, self._count, self._buf.view("next"), self._first)
        self._bound = self.geometric_bounds()
        if self._clamped:
            np.maximum.at(self._bound, cells[outside], self._buf.view("score")[outside])
        self._sort_cells()

    # -- updates -------------------------------------------------------------------------
    def expire(self, start: int) -> int:
        """Remove the objects whose key (seq or t) is below ``start``; returns how many.

        ``O(e log e)`` for ``e`` expiring objects: the expired objects of each cell are the
        front of its list, so its head moves to the successor of its last expired object.
        """
        keys = self._buf.view(self._key)
        gone = int(np.searchsorted(keys, start, "left"))
        if gone == 0:
            return 0
        cells = self._buf.view("cell")[:gone]
        following = self._buf.view("next")[:gone]
        if self._clamped:
            self._clamped -= int(np.count_nonzero(self._outside(self._buf.view("x")[:gone])))
        touched, last_rev, sizes = np.unique(cells[::-1], return_index=True, return_counts=True)
        new_head = following[gone - 1 - last_rev]
        self._head[touched] = new_head
        self._tail[touched[new_head < 0]] = -1
        self._count[touched] -= sizes
        self._buf.expire_before(self._key, start)
        self._first += gone
        return gone

    def insert(self, batch, scores: np.ndarray) -> np.ndarray:
        """Add a slide's objects; returns their positions (``O(m log m)``).

        Their cells are ``column("cell", pos)``, valid until the next :meth:`maintain`.
        """
        m = len(batch)
        if m == 0:
            return _EMPTY_I
        pos = np.arange(self._first + self.live, self._first + self.live + m, dtype=np.int64)
        if self._edges is None:
            self._buf.append(ids=batch.ids, seq=batch.seq, t=batch.t, x=batch.x, score=scores,
                             cell=np.zeros(m, np.int64), next=np.full(m, -1, np.int64))
            self._rebuild()
            return pos
        cells, outside = self._locate(batch.x)
        self._buf.append(ids=batch.ids, seq=batch.seq, t=batch.t, x=batch.x, score=scores, cell=cells,
                         next=np.full(m, -1, np.int64))
        self._link(pos, cells, self._head, self._tail, self._count, self._buf.view("next"), self._first)
        if outside.any():
            self._clamped += int(np.count_nonzero(outside))
            hit = cells[outside]
            before = self._bound[hit]
            np.maximum.at(self._bound, hit, scores[outside])
            if np.any(self._bound[hit] > before):
                self._sort_cells()
        return pos

    def maintain(self) -> bool:
        """Rebuild the grid if a quarter of the window lies outside it, or (automatic size, time
        windows) if the ideal number of cells moved by 4x.  Returns whether it rebuilt."""
        live = self.live
        if live == 0 or self._edges is None:
            return False
        if 4 * self._clamped > live:
            self._rebuild()
            return True
        if not self._fixed and self.q.kind == "time":
            ideal = self._auto_cells(live) ** self._d
            if ideal >= 4 * self.cells or 4 * ideal <= self.cells:
                self._rebuild()
                return True
        return False

    # -- top-k ---------------------------------------------------------------------------
    def _walk(self, cells) -> list[int]:
        nxt, first, head = self._buf.view("next"), self._first, self._head
        out: list[int] = []
        for cell in cells:
            p = int(head[cell])
            while p >= 0:
                out.append(p)
                p = int(nxt[p - first])
        return out

    def top(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Positions, scores and seq of the top ``min(k, n)`` objects, best first.

        Visits cells in descending order of their bound: first the shortest prefix holding
        ``k`` objects, then each further cell while its bound reaches the current k-th score
        (a cell whose bound equals it may hold an equal, newer object).  ``O(c^d)`` vectorised
        plus ``O(v + k log k)`` per visited cell for ``v`` objects visited.
        """
        live = self.live
        if live == 0:
            return _EMPTY_I, _EMPTY_F, _EMPTY_I
        order, negb = self._order, self._negb
        cnt = self._count[order]
        cum = np.cumsum(cnt)
        p = int(np.searchsorted(cum, min(k, live), "left"))
        chosen = order[:p + 1][cnt[:p + 1] > 0]
        visited = len(chosen)
        pos = np.asarray(self._walk(chosen), np.int64)
        scores, seq = self.column("score", pos), self.column("seq", pos)
        top = top_indices(scores, seq, k)
        if live > k:
            kth = scores[top[-1]]
            j = p + 1
            while True:
                reach = int(np.searchsorted(negb, -kth, "right"))
                if j >= reach:
                    break
                nonempty = np.flatnonzero(cnt[j:reach])
                if not len(nonempty):
                    break
                j += int(nonempty[0])
                more = np.asarray(self._walk([order[j]]), np.int64)
                visited += 1
                pos = np.concatenate((pos, more))
                scores = np.concatenate((scores, self.column("score", more)))
                seq = np.concatenate((seq, self.column("seq", more)))
                top = top_indices(scores, seq, k)
                kth = scores[top[-1]]
                j += 1
        self.counters["cells_visited"] += visited
        self.counters["objects_scanned"] += len(pos)
        return pos[top], scores[top], seq[top]

    def top_all(self, k: int) -> np.ndarray:
        """Positions of the top ``k`` by brute force over the whole window (``O(n)``; checks)."""
        top = top_indices(self._buf.view("score"), self._buf.view("seq"), k)
        return top + self._first

    # -- state ---------------------------------------------------------------------------
    def dump(self) -> dict[str, Any]:
        """The grid as plain JSON data (``O(n + c^d)``)."""
        buf = self._buf
        raised: list = []
        if self._edges is not None:
            geometric = self.geometric_bounds()
            above = np.flatnonzero(self._bound > geometric)
            raised = [above.tolist(), floats_out(self._bound[above])]
        return {"cells_per_dim": self._c, "edges": None if self._edges is None else self._edges.tolist(),
                "ids": buf.view("ids").tolist(), "seq": buf.view("seq").tolist(), "t": buf.view("t").tolist(),
                "x": buf.view("x").tolist(), "raised": raised, "counters": dict(self.counters)}

    def load(self, data: dict[str, Any]) -> None:
        """Rebuild from :meth:`dump` data (``O(n log n + c^d)``); ``ValueError`` if inconsistent."""
        d = self._d
        ids, seq, t = ints_in(data["ids"], "ids"), ints_in(data["seq"], "seq"), ints_in(data["t"], "t")
        x = np.asarray(data["x"], np.float64).reshape(-1, d)
        if not len(ids) == len(seq) == len(t) == len(x):
            raise ValueError("grid columns have different lengths")
        if not np.isfinite(x).all():
            raise ValueError("grid features must be finite")
        self.counters.update({name: int(data["counters"][name]) for name in self.counters})
        if data["edges"] is None:
            if len(ids):
                raise ValueError("a grid without edges cannot hold objects")
            return
        c = int(data["cells_per_dim"])
        edges = np.asarray(data["edges"], np.float64)
        if c < 1 or c ** d > MAX_CELLS or edges.shape != (d, c + 1) or not np.isfinite(edges).all() \
                or np.any(np.diff(edges, axis=1) < 0):
            raise ValueError("grid edges are invalid")
        self._c, self._edges = c, edges
        self._buf.append(ids=ids, seq=seq, t=t, x=x, score=score(x, self._w), cell=np.zeros(len(ids), np.int64),
                         next=np.full(len(ids), -1, np.int64))
        self._first = 0
        self._relink()
        if data["raised"]:
            cells, values = ints_in(data["raised"][0], "raised cells"), floats_in(data["raised"][1])
            if len(cells) != len(values) or (len(cells) and (cells.min() < 0 or cells.max() >= c ** d)):
                raise ValueError("raised cell bounds are invalid")
            self._bound[cells] = np.maximum(self._bound[cells], values)
            self._sort_cells()

    def check(self, end: int | None) -> None:
        """Assert every invariant of the grid (``O(n log n + c^d)``)."""
        buf = self._buf
        seq, t = buf.view("seq"), buf.view("t")
        assert np.all(np.diff(seq) > 0), "window seq must increase"
        assert self.q.kind == "count" or np.all(np.diff(t) >= 0), "t must not decrease"
        if end is not None and len(seq):
            keys = buf.view(self._key)
            assert keys[0] >= end - self.q.window and keys[-1] < end, "object outside the window"
        if self._edges is None:
            assert self.live == 0, "objects without a grid"
            return
        x = buf.view("x")
        assert np.array_equal(buf.view("score"), score(x, self._w)), "cached scores are stale"
        cells, outside = self._locate(x)
        assert np.array_equal(cells, buf.view("cell")), "object in the wrong cell"
        assert self._clamped == int(np.count_nonzero(outside)), "clamped count is wrong"
        total = self.cells
        head, tail = np.full(total, -1, np.int64), np.full(total, -1, np.int64)
        count, nxt = np.zeros(total, np.int64), np.full(self.live, -1, np.int64)
        if self.live:
            self._link(np.arange(self._first, self._first + self.live), cells, head, tail, count, nxt, self._first)
        assert np.array_equal(head, self._head) and np.array_equal(tail, self._tail), "cell heads/tails are wrong"
        assert np.array_equal(count, self._count), "cell counts are wrong"
        assert np.array_equal(nxt, buf.view("next")), "cell lists are broken"
        assert np.all(self._bound >= self.geometric_bounds()), "bound below the cell's corner"
        best = np.full(total, -np.inf)
        np.maximum.at(best, cells, buf.view("score"))
        assert np.all(self._bound >= best), "bound below an object of the cell"
        assert np.array_equal(np.sort(self._order), np.arange(total)), "visiting order is not a permutation"
        assert np.array_equal(self._negb, -self._bound[self._order]) and np.all(self._negb[1:] >= self._negb[:-1]), \
            "visiting order is not by descending bound"
