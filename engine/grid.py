"""The regular grid index over the feature space that holds the window for TMA and SMA."""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

from .kernels import grid as kernel
from .memory import OBJECT_FIELDS, Footprint, Layout, deep_size
from .query import Query
from .ranking import score, top_indices
from .jsondata import floats_in, floats_out, ints_in, saved_capacity

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

INITIAL_CAPACITY = 1024
"""Rows of the window's ring buffer at first; it doubles when full (a power of two)."""

COUNTERS = ("rebuilds", "cells_visited", "objects_scanned")
"""The grid's counters, kept in ``Grid.counters``: a dict of its own, or its holder's (given
to the constructor) so that the holder's ``stats()`` copies one dict for both."""



class Grid:
    """A regular grid over the feature space holding every object of the window.

    Each of the ``d`` dimensions is cut into ``c`` cells of equal side between edges fitted to
    the data (its range plus a 10 % margin on each side).  Cell ``(i_0, ..., i_{d-1})`` has the
    flat index ``sum_j i_j c^j``.  The window lives in ring-buffer columns (id, seq, t,
    features, score, cell, next), the object at arrival position ``pos`` in row ``pos & mask``;
    every cell is a linked list through ``next`` of its objects in arrival order, with
    ``head``, ``tail`` and ``count``.  Objects expire in arrival order, so expiry only advances
    cell heads.  The per-object work is compiled (:mod:`engine.kernels.grid`).

    **Bounds.**  ``bound[cell]`` is an upper bound of the score of everything in the cell: the
    score of the cell's best corner under the query weights (upper edge where ``w_j >= 0``,
    lower edge where ``w_j < 0``), raised to the score of any object that was put into the cell
    although it lies outside the grid (values beyond the outer edges are clamped into the
    border cells).  Cells are located by binary search on the same float edges the corners
    use, and rounding is monotone, so a corner's score (computed by the shared ``score``
    function) bounds every object inside exactly.  When more than a quarter of the window lies
    outside the grid, the grid is rebuilt around the window (``rebuilds``): ``O(n log n)``,
    amortised ``O(log n)`` per arrival since a quarter of the window has arrived since the
    last rebuild.

    **Resolution.**  ``cells_per_dim = c`` if given; else ``c`` is the largest integer with
    ``c^d <= min(4096, N / 32)``, where ``N`` is the window length for count windows and the
    number of objects in the window (re-evaluated; the grid is rebuilt when the ideal number of
    cells changes by 4x) for time windows.

    **Memory** (:meth:`footprint`, layout ``LAYOUT``): ``d + 6`` words per object (id, seq, t,
    features, score, cell, next pointer), 6 words per cell (head, tail, count, bound, and the
    visiting order's cell index and bound), ``d (c + 1)`` words of edges.  Measured: the ring
    buffer's columns at capacity (a power of two, up to twice the window) and the cell arrays.

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

    def __init__(self, query: Query, cells_per_dim: int = 0, counters: dict[str, int] | None = None) -> None:
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
        self._first = 0
        self._end = 0
        self._allocate(INITIAL_CAPACITY)
        self._c = 0
        self._edges: np.ndarray | None = None
        self._head = self._tail = self._count = _EMPTY_I
        self._bound = _EMPTY_F
        self._order = _EMPTY_I
        self._ordered_bound = _EMPTY_F
        self._clamped = 0
        self.counters = {} if counters is None else counters
        self.counters.update(dict.fromkeys(COUNTERS, 0))
        self._object_price = LAYOUT.bytes(d, object=1, cell=0, edge=0)
        self._cell_price = LAYOUT.bytes(d, object=0, cell=1, edge=0)
        self._edge_price = LAYOUT.bytes(d, object=0, cell=0, edge=1)
        self.cells = 0
        self._frame_price = 0
        self._overhead = 0
        self.measured = 0
        held = () if counters is None else (counters,)
        self._overhead = deep_size(self, exclude=(self.q, *self._arrays(), _EMPTY_I, _EMPTY_F, *held)) \
            + 10 * deep_size(2 ** 40)
        self._measure()

    # -- sizes ---------------------------------------------------------------------------
    @property
    def live(self) -> int:
        """Objects in the window (``O(1)``)."""
        return self._end - self._first

    @property
    def first_pos(self) -> int:
        """Position of the oldest object held; positions only grow (``O(1)``)."""
        return self._first

    @property
    def cells_per_dim(self) -> int:
        return self._c

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

    def _arrays(self) -> tuple[np.ndarray, ...]:
        cells = (self._head, self._tail, self._count, self._bound, self._order, self._ordered_bound)
        edges = () if self._edges is None else (self._edges,)
        return (self._ids, self._seq, self._t, self._x, self._score, self._cell, self._next) + cells + edges

    def _measure(self) -> None:
        """Recompute the kept sizes after an allocation or a relink (``O(arrays)``): the cell
        count, the modelled price of the cells and edges, and the measured size."""
        self.cells = self._c ** self._d if self._c else 0
        edges = self._d * (self._c + 1) if self._c else 0
        self._frame_price = self._cell_price * self.cells + self._edge_price * edges
        self.measured = self._overhead + sum(sys.getsizeof(array) for array in self._arrays()
                                             if array is not _EMPTY_I and array is not _EMPTY_F)

    def _counts(self) -> dict[str, int]:
        return {"object": self.live, "cell": self.cells, "edge": self._d * (self._c + 1) if self._c else 0}

    def modelled_bytes(self) -> int:
        """``LAYOUT``'s price of the objects, cells and edges (``O(1)``: the cells' and edges'
        price is kept as the grid is relinked)."""
        return self._object_price * (self._end - self._first) + self._frame_price

    def footprint(self) -> Footprint:
        """Modelled and measured memory of the grid (``O(1)``)."""
        return Footprint(LAYOUT, self._counts(), self.measured, self._d, (self,))

    # -- the ring buffer -----------------------------------------------------------------
    def _allocate(self, capacity: int) -> None:
        """Ring columns of ``capacity`` rows (a power of two), the live objects moved over."""
        rows = np.arange(self._first, self._end, dtype=np.int64)
        old = None if not len(rows) else (self._columns(), rows & self._mask)
        d = self._d
        self._ids = np.empty(capacity, np.int64)
        self._seq = np.empty(capacity, np.int64)
        self._t = np.empty(capacity, np.int64)
        self._x = np.empty((capacity, d), np.float64)
        self._score = np.empty(capacity, np.float64)
        self._cell = np.empty(capacity, np.int64)
        self._next = np.empty(capacity, np.int64)
        self._mask = capacity - 1
        if old is not None:
            columns, at = old
            for fresh, column in zip(self._columns(), columns):
                fresh[rows & self._mask] = column[at]

    def _columns(self) -> tuple[np.ndarray, ...]:
        return self._ids, self._seq, self._t, self._x, self._score, self._cell, self._next

    def _reserve(self, m: int) -> None:
        capacity = self._mask + 1
        if self.live + m > capacity:
            while capacity < self.live + m:
                capacity *= 2
            self._allocate(capacity)
            self._measure()

    def _rows(self, pos) -> np.ndarray:
        return np.asarray(pos, np.int64) & self._mask

    def held(self, name: str) -> np.ndarray:
        """Column ``name`` of every object held, oldest first (a copy, ``O(n)``)."""
        return getattr(self, "_" + name)[np.arange(self._first, self._end, dtype=np.int64) & self._mask]

    # -- object access -------------------------------------------------------------------
    def column(self, name: str, pos: np.ndarray) -> np.ndarray:
        """Column ``name`` of the objects at positions ``pos`` (``O(len(pos))``)."""
        return getattr(self, "_" + name)[self._rows(pos)]

    def kernel_columns(self) -> tuple:
        """``(mask, score, seq, cell, bound)``: the ring columns an algorithm's kernel reads the
        objects at positions ``pos`` from (row ``pos & mask``), and the cell bounds (``O(1)``)."""
        return self._mask, self._score, self._seq, self._cell, self._bound

    def bound_of(self, cells: np.ndarray) -> np.ndarray:
        """Score bounds of ``cells`` (``O(len(cells))``)."""
        return self._bound[cells]

    def positions_of(self, seq) -> np.ndarray:
        """Positions of the live objects with the given ``seq`` (``ValueError`` if absent)."""
        seq = np.asarray(seq, np.int64)
        held = self.held("seq")
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
        """Cell of every row of ``x`` (clamped into the grid) and whether it lies outside:
        the vectorised counterpart of :func:`engine.kernels.grid.locate`, for :meth:`check`."""
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

    def geometric_bounds(self) -> np.ndarray:
        """Score of every cell's best corner under the weights (``O(c^d d)``).

        The upper edge is the best for a positive weight, the lower edge for a negative one;
        a non-finite corner score becomes ``+inf`` (still an upper bound).
        """
        c, d = self._c, self._d
        cells = np.arange(c ** d)
        corners = np.empty((c ** d, d), np.float64)
        for j in range(d):
            index = cells // c ** j % c  # the cell's place along dimension j (the first varies fastest)
            corners[:, j] = self._edges[j][index + 1] if self._w[j] >= 0 else self._edges[j][index]
        bounds = score(corners, self._w)
        bounds[~np.isfinite(bounds)] = np.inf
        return bounds

    def _sort_cells(self) -> None:
        self._order = np.argsort(-self._bound, kind="stable")
        self._ordered_bound = self._bound[self._order]

    # -- linking -------------------------------------------------------------------------
    @staticmethod
    def _link(pos, cells, head, tail, count, nxt, first) -> None:
        """Append objects (``pos`` increasing) to the end of their cells' lists, vectorised:
        the reference :meth:`check` compares the compiled lists with."""
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
        self._c = self._auto_cells(self._population())
        self._edges = self._make_edges(self.held("x"), self._c)
        self._relink()

    def _relink(self) -> None:
        cells_total = self._c ** self._d
        self._head = np.full(cells_total, -1, np.int64)
        self._tail = np.full(cells_total, -1, np.int64)
        self._count = np.zeros(cells_total, np.int64)
        self._bound = self.geometric_bounds()
        self._clamped = kernel.link_all(self._first, self._end, self._mask, self._x, self._score, self._cell,
                                        self._next, self._head, self._tail, self._count, self._bound, self._edges)
        self._sort_cells()
        self._measure()

    # -- updates -------------------------------------------------------------------------
    def expire(self, start: int) -> int:
        """Remove the objects whose key (seq or t) is below ``start``; returns how many.

        ``O(d)`` compiled per expiring object: each is the head of its cell's list, which
        moves to its successor (:func:`engine.kernels.grid.expire`).
        """
        if self._edges is None:
            return 0
        key = self._seq if self._key == "seq" else self._t
        first, clamped = kernel.expire(self._first, self._end, self._mask, key, start, self._x, self._cell,
                                       self._next, self._head, self._tail, self._count, self._edges)
        gone = first - self._first
        self._first = first
        self._clamped -= clamped
        return gone

    def insert(self, batch, scores: np.ndarray) -> np.ndarray:
        """Add a slide's objects; returns their positions (``O(m d log c)`` compiled).

        Their cells are ``column("cell", pos)``, valid until the next :meth:`maintain`.
        """
        m = len(batch)
        if m == 0:
            return _EMPTY_I
        self._reserve(m)
        end = self._end
        if self._edges is None:
            rows = self._rows(np.arange(end, end + m))
            for name, values in (("ids", batch.ids), ("seq", batch.seq), ("t", batch.t), ("x", batch.x),
                                 ("score", scores)):
                getattr(self, "_" + name)[rows] = values
            self._end += m
            self._rebuild()
        else:
            clamped, raised = kernel.insert(
                end, self._mask, self._ids, self._seq, self._t, self._x, self._score, self._cell, self._next,
                self._head, self._tail, self._count, self._bound, self._edges,
                np.asarray(batch.ids, np.int64), np.asarray(batch.seq, np.int64), np.asarray(batch.t, np.int64),
                np.asarray(batch.x, np.float64), np.asarray(scores, np.float64))
            self._end += m
            self._clamped += clamped
            if raised:
                self._sort_cells()
        return np.arange(end, end + m, dtype=np.int64)

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
    def top(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Positions, scores and seq of the top ``min(k, n)`` objects, best first.

        Visits cells in descending order of their bound until the next cell's bound is below
        the k-th score found (:func:`engine.kernels.grid.top`): ``O(v log k)`` compiled for
        ``v`` objects visited.
        """
        live = self.live
        if live == 0:
            return _EMPTY_I, _EMPTY_F, _EMPTY_I
        m = min(k, live)
        pos, scores, seq = np.empty(m, np.int64), np.empty(m, np.float64), np.empty(m, np.int64)
        visited, scanned = kernel.top(k, live, self._order, self._ordered_bound, self._head, self._next,
                                      self._mask, self._score, self._seq, pos, scores, seq)
        self.counters["cells_visited"] += visited
        self.counters["objects_scanned"] += scanned
        return pos, scores, seq

    def top_all(self, k: int) -> np.ndarray:
        """Positions of the top ``k`` by brute force over the whole window (``O(n)``; checks)."""
        return top_indices(self.held("score"), self.held("seq"), k) + self._first

    # -- state ---------------------------------------------------------------------------
    def dump(self) -> dict[str, Any]:
        """The grid as plain JSON data (``O(n + c^d)``)."""
        raised: list = []
        if self._edges is not None:
            geometric = self.geometric_bounds()
            above = np.flatnonzero(self._bound > geometric)
            raised = [above.tolist(), floats_out(self._bound[above])]
        return {"cells_per_dim": self._c, "edges": None if self._edges is None else self._edges.tolist(),
                "ids": self.held("ids").tolist(), "seq": self.held("seq").tolist(), "t": self.held("t").tolist(),
                "x": self.held("x").tolist(), "raised": raised,
                "counters": {name: self.counters[name] for name in COUNTERS}, "capacity": self._mask + 1}

    def load(self, data: dict[str, Any]) -> None:
        """Rebuild from :meth:`dump` data (``O(n log n + c^d)``); ``ValueError`` if inconsistent.
        ``capacity`` (absent from data dumped before it) gives the ring's rows as they were, so
        the rebuilt grid grows and measures as the dumped one."""
        d = self._d
        if "capacity" in data:
            capacity = saved_capacity(data, "capacity")
            if capacity & (capacity - 1) or capacity < len(data["ids"]):
                raise ValueError(f"grid capacity {capacity} is not a power of two holding {len(data['ids'])} objects")
            self._first = self._end = 0
            self._allocate(capacity)
            self._measure()
        ids, seq, t = ints_in(data["ids"], "ids"), ints_in(data["seq"], "seq"), ints_in(data["t"], "t")
        x = np.asarray(data["x"], np.float64).reshape(-1, d)
        if not len(ids) == len(seq) == len(t) == len(x):
            raise ValueError("grid columns have different lengths")
        if not np.isfinite(x).all():
            raise ValueError("grid features must be finite")
        self.counters.update({name: int(data["counters"][name]) for name in COUNTERS})
        if data["edges"] is None:
            if len(ids):
                raise ValueError("a grid without edges cannot hold objects")
            return
        c = int(data["cells_per_dim"])
        edges = np.asarray(data["edges"], np.float64)
        if c < 1 or c ** d > MAX_CELLS or edges.shape != (d, c + 1) or not np.isfinite(edges).all() \
                or np.any(edges[:, 1:] < edges[:, :-1]):
            raise ValueError("grid edges are invalid")
        self._c, self._edges = c, edges
        m = len(ids)
        self._first = self._end = 0
        self._reserve(m)
        for name, values in (("ids", ids), ("seq", seq), ("t", t), ("x", x), ("score", score(x, self._w))):
            getattr(self, "_" + name)[:m] = values
        self._end = m
        self._relink()
        if data["raised"]:
            cells, values = ints_in(data["raised"][0], "raised cells"), floats_in(data["raised"][1])
            if len(cells) != len(values) or (len(cells) and (cells.min() < 0 or cells.max() >= c ** d)):
                raise ValueError("raised cell bounds are invalid")
            self._bound[cells] = np.maximum(self._bound[cells], values)
            self._sort_cells()

    def check(self, end: int | None) -> None:
        """Assert every invariant of the grid (``O(n log n + c^d)``)."""
        seq, t = self.held("seq"), self.held("t")
        assert 0 <= self.live <= self._mask + 1, "more objects than rows"
        assert np.all(np.diff(seq) > 0), "window seq must increase"
        assert self.q.kind == "count" or np.all(np.diff(t) >= 0), "t must not decrease"
        if end is not None and len(seq):
            keys = self.held(self._key)
            assert keys[0] >= end - self.q.window and keys[-1] < end, "object outside the window"
        if self._edges is None:
            assert self.live == 0, "objects without a grid"
            return
        x = self.held("x")
        assert np.array_equal(self.held("score"), score(x, self._w)), "cached scores are stale"
        cells, outside = self._locate(x)
        assert np.array_equal(cells, self.held("cell")), "object in the wrong cell"
        assert self._clamped == int(np.count_nonzero(outside)), "clamped count is wrong"
        total = self.cells
        head, tail = np.full(total, -1, np.int64), np.full(total, -1, np.int64)
        count, nxt = np.zeros(total, np.int64), np.full(self.live, -1, np.int64)
        if self.live:
            self._link(np.arange(self._first, self._end), cells, head, tail, count, nxt, self._first)
        assert np.array_equal(head, self._head) and np.array_equal(tail, self._tail), "cell heads/tails are wrong"
        assert np.array_equal(count, self._count), "cell counts are wrong"
        assert np.array_equal(nxt, self.held("next")), "cell lists are broken"
        assert np.all(self._bound >= self.geometric_bounds()), "bound below the cell's corner"
        best = np.full(total, -np.inf)
        np.maximum.at(best, cells, self.held("score"))
        assert np.all(self._bound >= best), "bound below an object of the cell"
        assert np.array_equal(np.sort(self._order), np.arange(total)), "visiting order is not a permutation"
        assert np.array_equal(self._ordered_bound, self._bound[self._order]) \
            and np.all(self._ordered_bound[1:] <= self._ordered_bound[:-1]), "visiting order is not by descending bound"
