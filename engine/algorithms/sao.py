"""SAO index (Luo, Wu, Yu): approximate top-K of any linear query under a memory budget."""

from __future__ import annotations

import math
import sys
from collections import deque
from itertools import islice
from typing import Any

import numpy as np

from ..base import OBJECT_WORDS, WORD, Algorithm, check_answer_size
from ..memory import PY_INT, array_bytes, attribute_bytes, attribute_dict_bytes, python_bytes
from ..jsondata import floats_in, floats_out, ints_in
from ..ranking import Answer, finite_score
from ..registry import register
from ..stream import Batch
from ..kernels import hull as kernel
from .sao_hull import KERNEL_TOLERANCE, Hull, convex_hull, layer_hull, neighbour_distances

HELD_OBJECT_BYTES = python_bytes((10 ** 6, 10 ** 6, 10 ** 6)) + 3 * PY_INT
"""A held object's ``(seq, id, t)`` record in its place's list: the tuple and its three ints."""

EXPIRY_ENTRY_BYTES = python_bytes((10 ** 6, 10 ** 6, 10 ** 6)) + PY_INT
"""An expiry entry ``(key, seq, place)``: the tuple and its key (``seq`` and ``place`` are the
same int objects as the held record's and the place number's); the entry of an object no longer
held (superseded by newer objects at its point, until compacted) owns its ``seq`` as well."""

SPARE_BLOCKS_COPIED = 16 * 64
"""The expiry deque is copied after expiries while it holds fewer entries than this: CPython's
deque keeps up to 16 emptied blocks of 64 entries for reuse, which ``sys.getsizeof`` does not
count (about 8.4 KB: most of a small index's memory after a burst has expired); a larger
deque's entries outweigh them.  ``O(SPARE_BLOCKS_COPIED)`` per slide at most."""

FRAME_LIMIT = 1e6
"""The index coordinates are recomputed when a point held or arriving lies farther than this from
the origin in them (a later window far wider than the creation window, or far away from it), or
when a feature that varies spans less than its inverse (a later window far narrower)."""

ALLOCATIONS = ("dynamic-errmin", "dynamic-uniform", "static-errmin", "static-uniform")
RANK_WEIGHTS = ("1", "1/i")
MAX_MEMORY = 2**53
"""Largest budget ``M``: :func:`layer_quotas` splits it in float64, exact up to ``2**53``."""
MAX_LAYERS = 10_000_000
"""Largest ``L``: every slide splits the budget over at least ``L`` layers (one million took
0.15 s per slide, ``2**63 - 1`` could not be allocated)."""
COUNTERS = ("arrivals_examined", "filtered", "tied", "insertions", "expiries", "evictions", "expelled")


def layer_quotas(memory: int, layers: int, allocation: str, rank_weights: str = "1") -> list[int]:
    """Integer quotas ``N_j`` (summing to ``memory``) of the allocation strategy.

    Error-minimising: ``N_j ∝ sqrt(C_j)``, ``C_j = Σ_{i=j..L} u_i p_ij`` with ``p_ij = 1/i``
    (paper, Appendix); uniform: ``N_j = M / L``.  Rounded by largest remainders; quotas never
    increase inwards, so a zero quota (``M`` below about ``L``) can only be an inner one.  ``O(L log L)``.

    >>> layer_quotas(1000, 4, "dynamic-errmin")
    [385, 278, 204, 133]
    >>> layer_quotas(10, 4, "static-uniform")
    [3, 3, 2, 2]
    """
    if allocation.endswith("uniform"):
        shares = np.ones(layers)
    else:
        u = np.ones(layers) if rank_weights == "1" else 1.0 / np.arange(1, layers + 1)
        p = 1.0 / np.arange(1, layers + 1)
        shares = np.sqrt(np.cumsum((u * p)[::-1])[::-1])  # C_j for every j at once: O(L), not O(L^2)
    real = memory * shares / shares.sum()
    quotas = np.floor(real).astype(np.int64)
    order = np.argsort(-(real - np.floor(real)), kind="stable")
    for j in order[: memory - int(quotas.sum())]:
        quotas[j] += 1
    return quotas.tolist()


class _Rows:
    """Objects held together (a layer, a pool or the creation buffer), sorted by ``seq``."""

    def __init__(self, seq, ids, t, x) -> None:
        self.seq, self.ids, self.t, self.x = seq, ids, t, x

    @classmethod
    def empty(cls, d: int) -> "_Rows":
        return cls(np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64), np.empty((0, d)))

    def __len__(self) -> int:
        return len(self.seq)

    def take(self, where) -> "_Rows":
        return _Rows(self.seq[where], self.ids[where], self.t[where], self.x[where])

    @staticmethod
    def join(parts: list["_Rows"]) -> "_Rows":
        nonempty = [p for p in parts if len(p)]
        if len(nonempty) <= 1:
            return nonempty[0] if nonempty else parts[0]
        parts = nonempty
        rows = _Rows(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("seq", "ids", "t", "x")))
        return rows.take(np.argsort(rows.seq, kind="stable"))

    def records(self) -> list[list]:
        return [[s, i, t, *floats_out(x)] for s, i, t, x in zip(self.seq.tolist(), self.ids.tolist(),
                                                                  self.t.tolist(), self.x)]

    @classmethod
    def from_records(cls, records, d: int) -> "_Rows":
        if not isinstance(records, list) or any(not isinstance(r, list) or len(r) != 3 + d for r in records):
            raise ValueError(f"records must be lists [seq, id, t, {d} features]")
        if not records:
            return cls.empty(d)
        columns = ints_in([v for r in records for v in r[:3]], "seq, id and t").reshape(-1, 3)
        x = floats_in([v for r in records for v in r[3:]]).reshape(-1, d)
        return cls(columns[:, 0].copy(), columns[:, 1].copy(), columns[:, 2].copy(), x)


class _Places:
    """Distinct points held together (one layer, or a pool being peeled), sorted by place number:
    ``raw`` the features, ``x`` the same points in the index's coordinates (for the hulls)."""

    def __init__(self, ids: np.ndarray, x: np.ndarray, raw: np.ndarray) -> None:
        self.ids, self.x, self.raw = ids, x, raw

    @classmethod
    def empty(cls, d: int) -> "_Places":
        return cls(np.empty(0, np.int64), np.empty((0, d)), np.empty((0, d)))

    def __len__(self) -> int:
        return len(self.ids)

    def take(self, where) -> "_Places":
        return _Places(self.ids[where], self.x[where], self.raw[where])

    def plus(self, other: "_Places", r: int) -> "_Places":
        """These places and place ``r`` of ``other``, appended (``O(n d)``)."""
        return _Places(np.append(self.ids, other.ids[r]), np.vstack([self.x, other.x[r:r + 1]]),
                       np.vstack([self.raw, other.raw[r:r + 1]]))

    @staticmethod
    def join(parts: list["_Places"]) -> "_Places":
        nonempty = [p for p in parts if len(p)]
        if len(nonempty) <= 1:
            return nonempty[0] if nonempty else parts[0]
        joined = _Places(*(np.concatenate([getattr(p, f) for p in nonempty]) for f in ("ids", "x", "raw")))
        return joined.take(np.argsort(joined.ids, kind="stable"))


def _hull_arrays(hull: Hull) -> tuple[np.ndarray, ...]:
    return tuple(a for a in (hull.vertices, hull.normals, hull.offsets, hull.cells, hull.center) if a is not None)


class _Layer:
    """One approximate convex layer: its places (all hull vertices) and their hull.

    ``hull`` is ``None`` while the places changed and the hull is not rebuilt yet.
    """

    def __init__(self, places: _Places, hull: Hull | None) -> None:
        self.places, self.hull = places, hull


def _settled(pool: _Places) -> tuple[_Places, Hull, _Places]:
    """Split ``pool`` into the vertices of its hull (with the hull, renamed to them) and the rest.

    One hull computation; ``O(n log n)`` in 2-D and 3-D.
    """
    hull = layer_hull(pool.x)
    if len(hull.vertices) == len(pool):
        return pool, hull, pool.take(slice(0, 0))
    outside = np.ones(len(pool), dtype=bool)
    outside[hull.vertices] = False
    return pool.take(hull.vertices), hull.reindexed(hull.vertices, len(pool)), pool.take(outside)


def _peeled(pool: _Places, origin: np.ndarray, earlier: list[_Layer], free_layers: int, room: int):
    """The layers of ``pool``, outermost first, computed on demand: ``(layer, its hull, the
    positions in pool of its places)`` each, the layer split off as :func:`_settled` splits
    it.  ``pool`` holds the places of the layers ``earlier`` (``origin[i]``: the earlier layer
    of place ``i``, ``-1`` for a new place); an earlier layer whose hull is unset lost places.

    In 3-D the compiled peel settles every layer it can in one call, each from the places
    left down to the first intact earlier layer, and stops where the earlier layers follow
    unchanged (they are yielded as they are) or at the layer where the budget binds (see
    :func:`engine.kernels.hull.repeel_3d` for ``free_layers`` and ``room``: the caller takes
    no layer after it); its layers are views of one reordered copy of the pool.  The layers
    it leaves (flat or numerically hard remainders), and every layer in other dimensions,
    take one :func:`layer_hull` each.  ``O(Σ n_j f_j)`` over the layers
    yielded.
    """
    left = np.arange(len(pool))
    if pool.x.shape[1] == 3 and len(pool):
        damaged = np.array([layer.hull is None for layer in earlier], dtype=bool)
        members, member_starts, facets, facet_starts, normals, offsets, scales, kept_from = \
            kernel.repeel_3d(np.ascontiguousarray(pool.x), KERNEL_TOLERANCE, origin, damaged,
                             free_layers, room)
        if len(scales):
            settled = pool.take(members)
            centers = np.add.reduceat(settled.x, member_starts[:-1], axis=0) / np.diff(member_starts)[:, None]
            for j, (a, b) in enumerate(zip(member_starts[:-1].tolist(), member_starts[1:].tolist())):
                faces = slice(facet_starts[j], facet_starts[j + 1])
                hull = Hull(np.arange(b - a, dtype=np.int64), normals[faces], offsets[faces], facets[faces],
                            True, float(scales[j]), centers[j])
                yield _Places(settled.ids[a:b], settled.x[a:b], settled.raw[a:b]), hull, members[a:b]
        if kept_from >= 0:
            for j in range(kept_from, len(earlier)):
                if len(earlier[j].places):  # a layer whose places all left is dropped
                    yield earlier[j].places, earlier[j].hull, np.flatnonzero(origin == j)
            return
        below = np.ones(len(pool), dtype=bool)
        below[members] = False
        left = np.flatnonzero(below)
    while len(left):
        part = pool.take(left)
        hull = layer_hull(part.x)
        vertices = hull.vertices
        below = np.ones(len(left), dtype=bool)
        below[vertices] = False
        if below.any():
            part, hull = part.take(vertices), hull.reindexed(vertices, len(left))
        yield part, hull, left[vertices]
        left = left[below]


@register
class SAO(Algorithm):
    """SAO index: approximate convex layers of distinct points holding at most ``M`` of them.

    Objects at the same point share one *place* (the point once, with its objects in arrival
    order), so ties cost one unit of the budget and every tied object can be answered.  Every
    place of layer ``l_j`` is a vertex of the convex hull of ``l_j``, and ``l_j`` lies inside
    ``l_{j-1}``; a query of any weights searches ``l_1, l_2, ...`` (onion search) and stops
    when the K-th best object found beats the best of the next layer.  Answers are approximate
    once the window holds more than ``M`` distinct points.

    Creation (3.5): the first ``M`` objects of the window are peeled into layers at once (until
    then they are kept as they come and answers are exact).  Maintenance (3.6), once per
    slide (answers are only asked at slide ends): (0) an arrival at the point of a held place
    joins it (no geometry); (2) objects that left the window leave their places; emptied
    places (joined by no arrival) are deleted; (1) once ``L`` layers exist and the budget
    binds, the remaining distinct points inside ``l_L`` (``l_K`` when the index holds ``K > L``
    layers: a point inside it is beaten by ``K`` places in every direction) are discarded but
    for as many as the slide's deletions made room for (the *filtering ratio*), the others
    become places; the layers from the outermost one a deletion touched
    or an insertion lies outside of are peeled again, inwards, together with the new places
    (the insertion and deletion cascades of a whole slide at once); (3) while more than ``M``
    places are held, places are evicted: from the layer with the largest ``M_j / N_j`` among
    those with ``M_j >= N_j``, the place nearest to a hull neighbour (sooner to expire on
    ties).  Layers are peeled below ``l_L`` while the budget has room (the first layer beyond
    ``L`` that would exceed it leaves the index with every place inside it), and the quotas
    ``N_j`` are those of the allocation strategy over the layers that exist (at least ``L``).
    Static strategies evict from any layer above its quota instead.

    Costs per slide of ``m`` arrivals: ``O(m d)`` hashing plus ``O(m f d)`` vectorised
    filtering (``f`` facets of ``l_L``); one hull per layer re-peeled (``O(M_j log M_j)`` in
    2-D/3-D, all of a re-peel's 3-D layers in one compiled call; at most one re-peel for the
    arrivals and expiries and one per eviction round); ``O(log n)`` per object in the expiry list.  ``query``
    ``O(Σ M_j d + k)`` over the layers it searches.

    Memory (``bytes``): per place its number, ``d`` features, its object count and layer label
    and a point-dictionary entry (``d + 5`` words); per object its id, seq, t and two
    expiry-list links; per layer ``d + 1`` words per hull facet.

    Parameters: ``memory`` (``M >= 1`` places), ``layers`` (``L``: the layers kept when the
    budget binds, and the fewest the quotas plan for; static strategies keep exactly ``L``),
    ``allocation`` (one of ``dynamic-errmin``, ``dynamic-uniform``,
    ``static-errmin``, ``static-uniform``) and ``rank_weights`` (``"1"`` or ``"1/i"``: the
    ``u_i`` of the error-minimising quotas).

    Examples
    --------
    >>> import numpy as np, engine
    >>> q = engine.Query(weights=[1.0, 1.0], k=2, window=200, slide=50)
    >>> alg = engine.create("sao", q, memory=40, layers=3)
    >>> x = np.random.default_rng(0).standard_normal((400, 2))
    >>> for batch in engine.slides((np.arange(400), np.arange(400), x), q):
    ...     alg.process(batch)
    >>> alg.stats()["places"] <= 40, len(alg.query([1.0, -1.0], 3))
    (True, 3)
    """

    name = "sao"
    summary = "SAO index: approximate convex layers under a memory budget (any weights, approximate)"
    exact = False
    defaults = {"memory": 500, "layers": 4, "allocation": "dynamic-errmin", "rank_weights": "1"}

    def _reset(self) -> None:
        p = self.params
        if p["layers"] < 1:
            raise ValueError(f"parameter layers of sao must be >= 1, got {p['layers']}")
        if p["layers"] > MAX_LAYERS:
            raise ValueError(f"parameter layers of sao must be from 1 to {MAX_LAYERS:,}, got {p['layers']:,}")
        if p["memory"] < 1:
            raise ValueError(f"parameter memory of sao must be >= 1, got {p['memory']}")
        if p["memory"] > MAX_MEMORY:
            raise ValueError(f"parameter memory of sao must be from 1 to {MAX_MEMORY:,} (2**53), got {p['memory']:,}")
        if p["allocation"] not in ALLOCATIONS:
            raise ValueError(f"parameter allocation of sao must be one of {', '.join(ALLOCATIONS)}, got {p['allocation']!r}")
        if p["rank_weights"] not in RANK_WEIGHTS:
            raise ValueError(f"parameter rank_weights of sao must be one of {', '.join(RANK_WEIGHTS)}, got {p['rank_weights']!r}")
        self._d = self.q.dimensions
        self._memory = p["memory"]
        self._static = p["allocation"].startswith("static")
        self._quota_cache: dict[int, list[int]] = {}
        self._shift, self._spread = np.zeros(self._d), np.ones(self._d)
        self._created = False
        self._buffer = _Rows.empty(self._d)
        self._reserve = _Rows.empty(self._d)
        self._layers: list[_Layer] = []
        self._objects: dict[int, list[tuple[int, int, int]]] = {}
        self._per_place = min(self.q.k, sys.maxsize)
        self._where: dict[bytes, int] = {}
        self._next_place = 0
        self._held = 0
        self._expiry: deque = deque()
        self._count = 0
        self._end: int | None = None
        self._answer: Answer | None = Answer.empty()
        self._counters = dict.fromkeys(COUNTERS, 0)

    def _quotas(self) -> list[int]:
        """Quotas of the layers that exist (planned for at least ``L``); ``O(L log L)`` once per count."""
        planned = self.params["layers"] if self._static else max(self.params["layers"], len(self._layers))
        if planned not in self._quota_cache:
            self._quota_cache[planned] = layer_quotas(self._memory, planned, self.params["allocation"],
                                                      self.params["rank_weights"])
        return self._quota_cache[planned]

    # ----------------------------------------------------------------- arrivals

    def last_end(self) -> int | None:
        return self._end

    def process(self, batch: Batch) -> None:
        """One slide: the paper's steps for the slide's arrivals at once (see the class notes)."""
        rows = _Rows(batch.seq, batch.ids, batch.t, batch.x + 0.0)  # -0.0 -> 0.0: places are keyed by bytes
        if self.q.kind == "count":
            bounds = batch.seq + 1 - self.q.window
        else:
            bounds = np.full(len(batch), batch.window_start(self.q), np.int64)
        start = 0 if self._created else self._collect(rows, bounds)
        if self._created:
            self._maintain(rows, batch.window_start(self.q), start)
            self._reserve = self._reserve.take(self._keys(self._reserve) >= batch.window_start(self.q))
        else:
            self._buffer = self._buffer.take(self._keys(self._buffer) >= batch.window_start(self.q))
        self._end = batch.end
        self._answer = None

    def _keys(self, rows: _Rows) -> np.ndarray:
        return rows.seq if self.q.kind == "count" else rows.t

    def _collect(self, rows: _Rows, bounds: np.ndarray) -> int:
        """Buffer arrivals until ``M`` are alive; then create the index.  Returns the next arrival.

        The live count at every arrival comes from one ``searchsorted`` (``O((B + m) log)``).
        """
        held = len(self._buffer)
        pool = _Rows.join([self._buffer, rows])
        dead = np.searchsorted(self._keys(pool), bounds, side="left")
        alive = held + np.arange(1, len(rows) + 1) - dead
        full = np.flatnonzero(alive >= self._memory)
        if not len(full):
            self._buffer = pool.take(np.arange(len(pool)))  # a copy: batches are views of the stream
            return len(rows)
        i = int(full[0])
        self._buffer = _Rows.empty(self._d)
        self._create(pool.take(np.arange(int(dead[i]), held + i + 1)))
        return i + 1

    def _create(self, rows: _Rows) -> None:
        """Group ``rows`` into places and peel them into layers (3.5): ``O(M log M)`` per layer."""
        self._created = True
        points, first, inverse = np.unique(rows.x, axis=0, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")
        number = np.empty(len(points), np.int64)
        number[order] = np.arange(len(points))
        for r in range(len(rows)):
            self._add_object(int(number[inverse[r]]), rows, r)
        for place in order.tolist():
            self._where[points[place].tobytes()] = int(number[place])
        self._next_place = len(points)
        self._held = len(points)
        self._shift, self._spread = _frame(points)
        self._peel(_Places(np.arange(len(points), dtype=np.int64), self._scaled(points[order]), points[order]))

    def _scaled(self, raw: np.ndarray) -> np.ndarray:
        """Points in the index's coordinates: each feature shifted and scaled by the creation
        window's minimum and range (an affine map: convex layers are unchanged); ``O(n d)``.
        A difference beyond the largest float (a range that overflows, whose half is the
        spread) is taken in halves, exactly, so it maps to at most 2 instead of ``inf``."""
        with np.errstate(over="ignore"):
            shifted = raw - self._shift
            beyond = ~np.isfinite(shifted)
            if not beyond.any():
                return shifted / self._spread
            return np.where(beyond, 2.0 * ((0.5 * raw - 0.5 * self._shift) / self._spread), shifted / self._spread)

    def _add_object(self, place: int, rows: _Rows, r: int) -> None:
        seq, key = int(rows.seq[r]), int(self._keys(rows)[r])
        self._count += self._hold(self._objects.setdefault(place, []), [(seq, int(rows.ids[r]), int(rows.t[r]))])
        self._expiry.append((key, seq, place))

    def _hold(self, objects: list, arrivals: list) -> int:
        """Append ``arrivals`` to a place's ``objects`` and keep its newest ``k`` (:attr:`_per_place`);
        returns how many more it holds (``O(k)``)."""
        before = len(objects)
        objects.extend(arrivals)
        if len(objects) > self._per_place:
            del objects[:len(objects) - self._per_place]
        return len(objects) - before

    def _peel(self, pool: _Places, origin: np.ndarray | None = None, earlier: list[_Layer] | None = None) -> None:
        """Append layers peeled off ``pool`` below the innermost one while the budget has room
        (static strategies: up to ``L`` layers).  Beyond ``L`` layers, the first layer that
        would exceed the budget keeps the places the budget has room for, the others leaving
        by the eviction rule (smallest ``R_t`` first; a subset of a layer's vertices is in
        convex position, so it is a layer), and every place still in ``pool`` leaves the
        index.  ``pool`` may hold the places of the ``earlier`` layers (see :func:`_peeled`).
        ``O(n log n)`` per layer peeled."""
        above = self._held - len(pool)
        origin = np.full(len(pool), -1, np.int64) if origin is None else origin
        peeled = np.zeros(len(pool), dtype=bool)
        free_layers = max(self.params["layers"] - len(self._layers), 0)
        peel_room = -1 if self._static else self._memory - above
        for kept, hull, taken in _peeled(pool, origin, earlier or [], free_layers, peel_room):
            if len(self._layers) >= self.params["layers"] and (self._static or above + len(kept) > self._memory):
                room = 0 if self._static else self._memory - above
                before = np.flatnonzero(~peeled)
                gone = pool.take(before)
                if room > 0:
                    peeled[taken] = True
                    left = np.flatnonzero(~peeled)
                    order = self._eviction_order(kept, hull)
                    part, part_hull, rejected = _settled(kept.take(np.sort(order[len(kept) - room:])))
                    self._layers.append(_Layer(part, part_hull))
                    evicted = _Places.join([kept.take(np.sort(order[:len(kept) - room])), rejected])
                    self._counters["evictions"] += len(evicted)
                    gone = _Places.join([evicted, pool.take(left)])
                    self._counters["expelled"] += len(left)
                else:
                    self._counters["expelled"] += len(before)
                self._drop(gone)
                return
            self._layers.append(_Layer(kept, hull))
            above += len(kept)
            peeled[taken] = True

    def _eviction_order(self, places: _Places, hull: Hull) -> np.ndarray:
        """Positions in ``places`` (a layer) in the order step 3 evicts them: smallest ``R_t``
        first, then the sooner to expire, then the lower place number (``O(f d^2 + n log n)``)."""
        distances = neighbour_distances(places.x, hull)
        expiring = np.array([self._objects[place][-1][0] for place in places.ids.tolist()])
        return np.lexsort((places.ids, expiring, distances))

    def _maintain(self, rows: _Rows, bound: int, start: int) -> None:
        """Arrivals ``start..`` of a slide, in one batch per step (the window at the slide's end
        starts at ``bound``; arrivals already outside it are skipped).

        Step 0: arrivals at the point of a held place join it (one sort groups the rows by
        point, one hash per distinct point; a point that does not fit the index coordinates
        recomputes them first).  Step 2: expired objects leave; places left empty (and joined
        by no arrival) are taken out.  Step 1: the remaining distinct points are tested
        against ``l_max(L, K)`` (``l_L`` if fewer layers exist) as it was at the slide's start,
        at once (``O(f d)`` vectorised work each); the layers from the outermost one changed
        are peeled again with the new places.  Step 3: evictions.  ``O(m log m + m f d)``
        numpy work plus one hull per layer re-peeled.
        """
        counters, objects, where = self._counters, self._objects, self._where
        rows = rows.take(slice(start, None))
        rows = rows.take(self._keys(rows) >= bound)
        first, inverse = _distinct(rows.x)
        keys = _row_bytes(rows.x[first])
        places = [where.get(key) for key in keys]
        unheld = rows.x[first[[place is None for place in places]]]
        if not self._framed(unheld):
            self._reframe(unheld)
            places = [where.get(key) for key in keys]  # a static re-peel may drop places
        deepest = max(self.params["layers"], self.q.k)
        gate = None if len(self._layers) < self.params["layers"] else \
            self._layers[deepest - 1 if len(self._layers) >= deepest else self.params["layers"] - 1].hull
        changed = self._taken_out(self._expire(bound, keep={place for place in places if place is not None}), False)
        fresh = np.array([i for i, place in enumerate(places) if place is None], np.int64)
        points = self._scaled(rows.x[first[fresh]])
        outside = np.ones(len(fresh), dtype=bool)
        if gate is not None and len(fresh) and (self._static or self._held + len(fresh) > self._memory):
            inside = np.flatnonzero(gate.contains(points))
            room = 0 if self._static else max(self._memory - self._held, 0)
            outside[inside[room:]] = False
        numbers = np.arange(self._next_place, self._next_place + int(outside.sum()), dtype=np.int64)
        self._next_place += len(numbers)
        for i, number in zip(fresh[outside].tolist(), numbers.tolist()):
            places[i] = number
            where[keys[i]] = number
        place_of = np.array([-1 if place is None else place for place in places], np.int64)[inverse]
        kept = np.flatnonzero(place_of >= 0)
        seq = rows.seq[kept].tolist()  # one int per object, shared by its record and its expiry entry
        self._expiry.extend(zip(self._keys(rows)[kept].tolist(), seq, place_of[kept].tolist()))
        grouped = np.argsort(place_of[kept], kind="stable")
        owners = place_of[kept[grouped]]
        records = list(map(list(zip(seq, rows.ids[kept].tolist(), rows.t[kept].tolist())).__getitem__, grouped.tolist()))
        starts = np.flatnonzero(np.diff(owners, prepend=-1)).tolist()
        for place, begin, end in zip(owners[starts].tolist(), starts, starts[1:] + [len(records)]):
            self._count += self._hold(objects.setdefault(place, []), records[begin:end])
        self._compact_expiry()
        self._set_aside(rows.take(place_of < 0))
        counters["filtered"] += len(rows) - len(kept)
        counters["tied"] += len(kept) - len(numbers)
        counters["arrivals_examined"] += len(rows)
        incoming = _Places(numbers, points[outside], rows.x[first[fresh[outside]]])
        self._held += len(numbers)
        counters["insertions"] += len(numbers)
        reached = len(self._layers) if changed is None else changed
        if len(numbers):
            reached = next((j for j in range(reached) if not self._layers[j].hull.contains(incoming.x).all()), reached)
        self._repeel(reached, incoming)
        self._enforce_budget()

    def _framed(self, unheld: np.ndarray) -> bool:
        """Whether the index coordinates still suit the held places and ``unheld``: every
        coordinate finite and within ``FRAME_LIMIT``, and every feature that varies spanning at
        least ``1 / FRAME_LIMIT`` (else the hulls' tolerances would merge its distinct values).
        The outer layer bounds every held place, so ``O((|l_1| + m) d)``."""
        raw = np.concatenate([self._layers[0].places.raw, unheld]) if self._layers else unheld
        if not len(raw):
            return True
        with np.errstate(over="ignore", invalid="ignore"):
            x = self._scaled(raw)
            low, high = x.min(axis=0), x.max(axis=0)
            varies = raw.max(axis=0) > raw.min(axis=0)
            return bool(np.all(np.abs(low) <= FRAME_LIMIT) and np.all(np.abs(high) <= FRAME_LIMIT)
                        and np.all(~varies | (high - low >= 1 / FRAME_LIMIT)))

    def _reframe(self, unheld: np.ndarray) -> None:
        """New index coordinates from the held places and ``unheld`` (points whose coordinates
        in the old ones are not finite or beyond ``FRAME_LIMIT``), and every layer peeled
        again in them (convex layers are affine invariant; only the conditioning changes, and
        the tolerances then see the new points' scale).  ``O(M d)`` plus one peel."""
        held = [layer.places.raw for layer in self._layers]
        self._shift, self._spread = _frame(np.concatenate(held + [unheld]))
        for layer in self._layers:
            layer.places.x, layer.hull = self._scaled(layer.places.raw), None
        self._repeel(0, _Places.empty(self._d))

    def _expire(self, bound: int, keep: set[int]) -> list[int]:
        """Step 2: every object whose key is below ``bound`` leaves its place (oldest first);
        returns the places emptied, but those in ``keep`` (joined by an arrival).

        The expired entries are grouped by place first: a place's objects expire in arrival
        order, so each place drops the front of its list up to its newest expired object
        (``O(expired + k)`` per place: one dictionary write per entry, one slice deletion)."""
        expiry = self._expiry
        newest: dict[int, int] = {}
        while expiry and expiry[0][0] < bound:
            _, seq, place = expiry.popleft()
            newest[place] = seq
        if newest and len(expiry) < SPARE_BLOCKS_COPIED:
            self._expiry = deque(expiry)  # a deque keeps up to 16 emptied blocks, unseen by getsizeof
        emptied = []
        left = 0
        for place, seq in newest.items():
            objects = self._objects.get(place)
            if not objects:
                continue  # its place left the index
            gone = 0
            while gone < len(objects) and objects[gone][0] <= seq:
                gone += 1
            del objects[:gone]
            left += gone
            if not objects and place not in keep:
                emptied.append(place)
        self._counters["expiries"] += left
        self._count -= left
        return emptied

    def _enforce_budget(self) -> None:
        """Step 3: evict places until the budget (dynamic) or every layer's quota (static) holds
        (layers below ``L`` were already trimmed to the budget by :meth:`_peel`).  Victims are
        chosen in rounds on the layers as they are (the nearest-neighbour distances of a layer
        computed once per round), each round removed with one re-peel; a dynamic strategy needs
        one round, a static one repeats while places pulled up overfill a quota."""
        while True:
            victims = self._victims()
            if not victims:
                return
            self._counters["evictions"] += len(victims)
            self._repeel(self._taken_out(victims, True), _Places.empty(self._d))

    def _victims(self) -> list[int]:
        """The places step 3 evicts from the layers as they are: from the layer with the largest
        ``M_j / N_j`` (static: any over its quota), the place nearest a hull neighbour (sooner
        to expire on ties), the ratios updated after each choice.  ``O(Σ f_j d^2)``."""
        sizes = [len(layer.places) for layer in self._layers]
        quotas = self._quotas()
        held = self._held
        ranked: dict[int, list[int]] = {}
        victims: list[int] = []
        while True:
            if self._static:
                over = [j for j, size in enumerate(sizes) if size > quotas[j]]
            elif held > self._memory:
                over = [j for j, size in enumerate(sizes) if size >= quotas[j] and size]
            else:
                return victims
            if not over:
                return victims
            j = max(over, key=lambda j: (sizes[j] / quotas[j] if quotas[j] else math.inf, j))
            if j not in ranked:
                layer = self._layers[j]
                ranked[j] = layer.places.ids[self._eviction_order(layer.places, layer.hull)[::-1]].tolist()
            victims.append(ranked[j].pop())
            sizes[j] -= 1
            held -= 1

    def _drop(self, places: _Places) -> None:
        """Forget ``places`` and their objects (they left the index; their expiry entries are
        skipped when reached); ``O(places)``."""
        left = []
        for place, point in zip(places.ids.tolist(), places.raw):
            objects = self._objects.pop(place)
            self._count -= len(objects)
            left += [(seq, oid, t, point) for seq, oid, t in objects]
            del self._where[point.tobytes()]
        self._compact_expiry()
        self._held -= len(places)
        if left:
            left.sort(key=lambda held: held[0])  # _Rows are sorted by seq; the reserve keeps the newest k
            seq, ids, t, x = zip(*left[-self._per_place:])
            self._set_aside(_Rows(np.array(seq, np.int64), np.array(ids, np.int64), np.array(t, np.int64), np.array(x)))

    def _set_aside(self, rows: _Rows) -> None:
        """Window objects the index does not hold (filtered at arrival, or their place left under
        the budget) join the reserve, which keeps the newest ``k`` of them by ``seq``: answered
        beside the layers, they keep a window of ``k`` objects answering ``k`` after the places
        that filtered them expire (``O(k + m log m)``)."""
        if len(rows):
            pool = _Rows.join([self._reserve, rows])
            self._reserve = pool.take(slice(max(len(pool) - self._per_place, 0), None))

    def _compact_expiry(self) -> None:
        """Drop the expiry entries of objects no longer held (their place left, or newer tied
        objects superseded them) once they outnumber the held ones; amortised ``O(1)`` per entry."""
        if len(self._expiry) > 2 * self._count + 64:
            oldest = {place: objects[0][0] for place, objects in self._objects.items() if objects}
            self._expiry = deque([entry for entry in self._expiry if entry[1] >= oldest.get(entry[2], math.inf)])

    def _taken_out(self, doomed: list[int], evicted: bool) -> int | None:
        """Delete the places ``doomed`` (expired, or ``evicted`` with their objects) from their
        layers, their hulls unset until :meth:`_repeel`; returns the outermost layer changed
        (``None``: none).  ``O(n)``."""
        if not doomed or not self._layers:
            return None
        starts = np.cumsum([0] + [len(layer.places) for layer in self._layers]).tolist()
        doomed_mask = np.isin(np.concatenate([layer.places.ids for layer in self._layers]), np.array(doomed, np.int64))
        hit = np.flatnonzero(doomed_mask)
        first = None
        for j in np.unique(np.searchsorted(starts, hit, side="right") - 1).tolist():  # the layers that lose places
            layer = self._layers[j]
            gone = doomed_mask[starts[j]:starts[j + 1]]
            if evicted:
                self._drop(layer.places.take(gone))
            else:
                for place, point in zip(layer.places.ids[gone].tolist(), layer.places.raw[gone]):
                    del self._objects[place]
                    del self._where[point.tobytes()]
                self._held -= int(gone.sum())
            layer.places, layer.hull = layer.places.take(~gone), None
            first = j if first is None else first
        return first

    def _repeel(self, j: int, incoming: _Places) -> None:
        """Peel the places of layers ``j, j+1, ...`` and ``incoming`` again (the insertion and
        deletion cascades of 3.6 for a whole slide at once); one hull per layer peeled."""
        if j >= len(self._layers) and not len(incoming):
            return
        earlier = self._layers[j:]
        parts = [layer.places for layer in earlier] + [incoming]
        origin = np.repeat(np.arange(len(parts), dtype=np.int64), [len(part) for part in parts])
        origin[len(origin) - len(incoming):] = -1
        joined = _Places(*(np.concatenate([getattr(part, f) for part in parts]) for f in ("ids", "x", "raw")))
        order = np.argsort(joined.ids, kind="stable")
        del self._layers[j:]
        self._peel(joined.take(order), origin[order], earlier)

    # ------------------------------------------------------------------ queries

    def topk(self) -> Answer:
        if self._answer is None:
            self._answer = self._search(self.q.weights, min(self.q.k, sys.maxsize))  # the query's own: valid
        return self._answer

    def query(self, weights, k: int) -> Answer:
        """Approximate top ``k`` of the window under any ``weights``, by onion search (3.7).

        Searches ``l_1, l_2, ...`` and stops after all layers or when the ``k``-th best object
        found is above the best place of the next layer; a place contributes its newest ``k``
        objects (it holds at most the query's ``k``: a larger ``k`` sees that many per point).
        ``O(Σ M_j d + k)`` over the layers searched; exact over the buffered objects before the
        index is created.  ``weights`` must hold one finite number per feature; weights under
        which a score it computes overflows (huge weights times huge features) raise
        ``ValueError``, as the stream's own weights do when a row arrives.
        """
        weights = self.q.with_weights(weights).weights
        if len(weights) != self._d:
            raise ValueError(f"weights must hold {self._d} numbers (one per feature), got {len(weights)}")
        check_answer_size(k)
        return self._search(weights, min(int(k), sys.maxsize))  # nothing holds more; itertools.islice takes no more

    def _search(self, weights: tuple[float, ...], k: int) -> Answer:
        """:meth:`query` of valid ``weights`` and ``k``."""
        if not self._created:
            return Answer.ranked(self._buffer.ids, finite_score(self._buffer.x, weights), self._buffer.seq, k)
        found_places, found_scores, found_counts = [], [], []
        kth = -math.inf
        count = 0
        for layer in self._layers:
            scores = finite_score(layer.places.raw, weights)
            if count >= k and kth > scores.max():
                break
            counts = np.array([len(self._objects[place]) for place in layer.places.ids.tolist()], np.int64)
            found_places.append(layer.places.ids)
            found_scores.append(scores)
            found_counts.append(counts)
            count += int(counts.sum())
            if count >= k:
                every = np.concatenate(found_scores)
                order = np.argsort(-every, kind="stable")
                reached = np.searchsorted(np.cumsum(np.concatenate(found_counts)[order]), k)
                kth = float(every[order[reached]])
        reserve = self._reserve
        ids, seq, values = reserve.ids.tolist(), reserve.seq.tolist(), finite_score(reserve.x, weights).tolist()
        places = np.concatenate(found_places) if found_places else np.empty(0, np.int64)
        scores = np.concatenate(found_scores) if found_scores else np.empty(0)
        taken = 0
        for place, value in zip(places[np.argsort(-scores, kind="stable")].tolist(), np.sort(scores)[::-1].tolist()):
            newest = list(islice(reversed(self._objects[place]), k))
            seq += [s for s, _, _ in newest]
            ids += [i for _, i, _ in newest]
            values += [value] * len(newest)
            taken += len(newest)
            if taken >= k and value < kth:
                break
        return Answer.ranked(ids, values, seq, k)

    def layers(self) -> list[np.ndarray]:
        """``seq`` of the objects of each layer, outermost first (``O(n)``).

        Before the index is created (fewer than ``M`` objects seen) the buffer is one layer.
        """
        if not self._created:
            return [self._buffer.seq.copy()]
        return [self._layer_seq(layer) for layer in self._layers]

    def _layer_seq(self, layer: _Layer) -> np.ndarray:
        seq = [s for place in layer.places.ids.tolist() for s, _, _ in self._objects[place]]
        return np.sort(np.array(seq, np.int64))

    def candidates(self) -> np.ndarray:
        if not self._created:
            return self._buffer.seq.copy()
        return np.concatenate([*(self._layer_seq(layer) for layer in self._layers), self._reserve.seq])

    def memory(self) -> tuple[int, int]:
        """``(bytes, measured_bytes)`` in ``O(M + L)``, whatever the window: the per-object Python
        records (held objects, expiry entries, place keys) priced by their counts with sizes
        measured once at import; the place lists (at most ``M``) and containers by
        ``sys.getsizeof``; the layers' and buffer's arrays and the small attributes by a walk
        that does not enter the per-object containers."""
        objects, expiry, where = self._objects, self._expiry, self._where
        per_object = (sys.getsizeof(objects) + sum(map(sys.getsizeof, objects.values())) + len(objects) * PY_INT
                      + self._count * HELD_OBJECT_BYTES
                      + sys.getsizeof(expiry) + len(expiry) * EXPIRY_ENTRY_BYTES + (len(expiry) - self._count) * PY_INT
                      + sys.getsizeof(where) + len(where) * (sys.getsizeof(bytes(WORD * self._d)) + PY_INT))
        layers = self._layers
        rest = attribute_bytes(self, exclude=(self.q, self.params, objects, expiry, where, layers))
        return self._modelled_bytes(), per_object + rest + self._layers_bytes()

    def _layers_bytes(self) -> int:
        """The layers: their arrays (views with their bases, once), plus the Python shells of
        one layer (the layer, its places, its hull, their attribute dicts and the hull's
        scalars, alike in every layer) times the number of layers; ``O(L)``."""
        layers = self._layers
        if not layers:
            return sys.getsizeof(layers)
        first = layers[0]
        shells = [first, first.places] if first.hull is None else [first, first.places, first.hull]
        scalars = [] if first.hull is None else [v for v in vars(first.hull).values() if isinstance(v, float)]
        shell = python_bytes(*shells, *scalars) + sum(attribute_dict_bytes(vars(item)) for item in shells)
        arrays = array_bytes(array for layer in layers
                             for array in (layer.places.ids, layer.places.x, layer.places.raw,
                                           *(_hull_arrays(layer.hull) if layer.hull is not None else ())))
        return sys.getsizeof(layers) + shell * len(layers) + arrays

    def _modelled_bytes(self) -> int:
        objects = self._count if self._created else len(self._buffer)
        places = self._held if self._created else len(self._buffer)
        facets = sum(len(layer.hull.offsets) for layer in self._layers if layer.hull is not None)
        return WORD * (places * (self._d + 5) + objects * (OBJECT_WORDS + 3) + facets * (self._d + 1)
                       + len(self._reserve) * (OBJECT_WORDS + self._d))

    def _stats(self) -> dict[str, Any]:
        sizes = [len(layer.places) for layer in self._layers]
        objects = self._count + len(self._reserve) if self._created else len(self._buffer)
        places = self._held if self._created else len(self._buffer)
        examined = self._counters["arrivals_examined"]
        return {"candidates": objects, "retained": objects, "places": places,
                "reserved": len(self._reserve), "created": self._created, "layer_counts": sizes, "layer_quotas": self._quotas()[:max(len(sizes), 1)],
                "filtering_ratio": self._counters["filtered"] / examined if examined else 0.0,
                **self._counters}

    # -------------------------------------------------------------------- state

    def dump_state(self) -> dict[str, Any]:
        return {"format": 2,
                "layers": [{"places": [[place, *floats_out(x)] for place, x in zip(layer.places.ids.tolist(), layer.places.raw)],
                            "hull": _hull_out(layer.hull)} for layer in self._layers],
                "objects": self._listed(),
                "next_place": self._next_place, "shift": floats_out(self._shift), "spread": floats_out(self._spread),
                "buffer": self._buffer.records(), "reserve": self._reserve.records(), "created": self._created,
                "end": self._end,
                "counters": dict(self._counters)}

    def _listed(self) -> list[list[int]]:
        """Every held object as ``[place, seq, id, t]``, in expiry order (``O(n log n)``)."""
        every = [(seq if self.q.kind == "count" else t, seq, place, oid, t)
                 for place, objects in self._objects.items() for seq, oid, t in objects]
        return [[place, seq, oid, t] for _, seq, place, oid, t in sorted(every)]

    def load_state(self, data: dict[str, Any]) -> None:
        layers = data["layers"]
        if not isinstance(layers, list):
            raise ValueError("layers must be a list")
        self._created = bool(data["created"])
        self._buffer = _Rows.from_records(data["buffer"], self._d)
        self._reserve = _Rows.from_records(data.get("reserve", []), self._d)  # none before the reserve
        if data.get("format") == 2:
            self._shift, self._spread = floats_in(data["shift"]), floats_in(data["spread"])
            if self._shift.shape != (self._d,) or self._spread.shape != (self._d,) or np.any(self._spread <= 0):
                raise ValueError(f"shift and spread must hold {self._d} numbers, spread positive")
            self._load_places(layers, data["objects"], data["next_place"])
        else:
            self._migrate_v1(layers)
        end = data["end"]
        if end is not None and (isinstance(end, bool) or not isinstance(end, int)):
            raise ValueError("end must be an integer or null")
        self._end = end
        counters = data["counters"]
        if not isinstance(counters, dict) or not set(counters) <= set(self._counters):
            raise ValueError(f"counters must have the keys {sorted(self._counters)}")
        self._counters.update({name: int(value) for name, value in counters.items()})
        self._answer = None if end is not None else Answer.empty()

    def _load_places(self, layers: list, objects: list, next_place: int) -> None:
        d = self._d
        for saved in layers:
            records = saved["places"]
            if not isinstance(records, list) or any(not isinstance(r, list) or len(r) != 1 + d for r in records):
                raise ValueError(f"places must be lists [place, {d} features]")
            ids = ints_in([r[0] for r in records], "places")
            x = floats_in([v for r in records for v in r[1:]]).reshape(-1, d)
            places = _Places(ids, self._scaled(x), x)
            self._layers.append(_Layer(places, _hull_in(saved["hull"], places, d)))
            self._where.update((point.tobytes(), place) for place, point in zip(ids.tolist(), x))
        held = {place for layer in self._layers for place in layer.places.ids.tolist()}
        for record in objects:
            place, seq, oid, t = ints_in(record, "objects").tolist()
            if place not in held:
                raise ValueError(f"object {seq} names no held place")
            key = seq if self.q.kind == "count" else t
            if self._expiry and self._expiry[-1][:2] >= (key, seq):
                raise ValueError("objects must be listed in expiry order")
            self._objects.setdefault(place, []).append((seq, oid, t))
            self._expiry.append((key, seq, place))
        for objects in self._objects.values():
            del objects[:max(len(objects) - self._per_place, 0)]
        self._count = sum(map(len, self._objects.values()))
        self._compact_expiry()
        if isinstance(next_place, bool) or not isinstance(next_place, int):
            raise ValueError("next_place must be an integer")
        self._next_place = next_place
        self._held = sum(len(layer.places) for layer in self._layers)

    def _migrate_v1(self, layers: list) -> None:
        """The layout before places: layers of ``[seq, id, t, features]`` objects (every object a
        vertex); objects at one point become one place, hulls are recomputed."""
        every = [_Rows.from_records(saved["objects"], self._d).x for saved in layers]
        every = np.concatenate(every) if every else np.empty((0, self._d))
        if len(every):
            self._shift, self._spread = _frame(every)
        held, owners = [], []
        for saved in layers:
            layer_rows = _Rows.from_records(saved["objects"], self._d)
            points = []
            for r in range(len(layer_rows)):
                key = layer_rows.x[r].tobytes()
                if key not in self._where:
                    self._where[key] = self._next_place
                    self._next_place += 1
                    points.append(layer_rows.x[r])
                owners.append((int(self._keys(layer_rows)[r]), self._where[key], layer_rows, r))
            held.append(np.array(points).reshape(-1, self._d))
        for _, place, layer_rows, r in sorted(owners, key=lambda owner: (owner[0], int(owner[2].seq[owner[3]]))):
            self._add_object(place, layer_rows, r)
        base = 0
        for points in held:
            if len(points):
                pool = _Places(np.arange(base, base + len(points), dtype=np.int64), self._scaled(points), points)
                kept, hull, rest = _settled(pool)
                self._layers.append(_Layer(kept, hull))
                self._held += len(pool)
                if len(rest):
                    self._drop(rest)
            base += len(points)

    def check(self) -> None:
        """Assert every invariant: layers are hull vertex sets of distinct points, nested, within
        budget and quotas; places, objects, the point dictionary and the expiry list agree.

        ``O(Σ M_j f_j d + n)`` plus one hull per layer.
        """
        if not self._created:
            assert not self._layers and len(self._expiry) == len(self._reserve) == 0, "objects held before creation"
            assert len(self._buffer) < self._memory, "buffer reached M without creating the index"
            assert np.all(np.diff(self._buffer.seq) > 0), "buffer seq must increase"
            self._check_window(self._buffer.seq, self._keys(self._buffer))
            return
        assert len(self._buffer) == 0, "buffer kept after creation"
        sizes = [len(layer.places) for layer in self._layers]
        assert self._held == sum(sizes), "held places disagree with the layers"
        assert self._held <= self._memory, f"{self._held} places over the budget {self._memory}"
        if self._static:
            quotas = self._quotas()
            assert all(s <= q for s, q in zip(sizes, quotas)), f"layers {sizes} over quotas {quotas}"
        assert all(sizes), "an empty layer is kept"
        for j, layer in enumerate(self._layers):
            places, hull = layer.places, layer.hull
            assert hull is not None, f"layer {j}: hull not rebuilt"
            assert np.all(np.diff(places.ids) > 0), f"layer {j}: place numbers must increase"
            fresh = convex_hull(places.x)
            assert len(fresh.vertices) == len(places), \
                f"layer {j}: {len(places) - len(fresh.vertices)} places are not hull vertices"
            assert np.array_equal(hull.vertices, np.arange(len(places))), f"layer {j}: hull vertices are not its places"
            assert hull.exact == fresh.exact, f"layer {j}: stored hull is {'not ' * fresh.exact}exact"
            if hull.exact:
                distance = places.x @ hull.normals.T + hull.offsets
                assert distance.max() <= hull.tolerance, f"layer {j}: a place lies outside its stored hull"
                assert np.all(distance.max(axis=0) >= -hull.tolerance), f"layer {j}: a stored facet touches no place"
            if j:
                outer = self._layers[j - 1].hull
                assert not outer.exact or outer.contains(places.x).all(), f"layer {j} is not inside layer {j - 1}"
        every = np.concatenate([layer.places.ids for layer in self._layers]) if self._layers else np.empty(0, np.int64)
        assert len(np.unique(every)) == len(every), "a place is on two layers"
        assert set(every.tolist()) == set(self._objects), "places and objects disagree"
        points = [x.tobytes() for layer in self._layers for x in layer.places.raw]
        for layer in self._layers:
            assert np.array_equal(layer.places.x, self._scaled(layer.places.raw)), "index coordinates are stale"
        assert len(set(points)) == len(points), "two places share a point"
        assert self._where == dict(zip(points, every.tolist())), "point dictionary disagrees with the places"
        listed = []
        for place, objects in self._objects.items():
            assert objects, f"place {place} holds no object"
            assert len(objects) <= self._per_place, f"place {place}: over k objects"
            assert all(a[0] < b[0] for a, b in zip(objects, list(objects)[1:])), f"place {place}: objects out of order"
            listed += [(seq if self.q.kind == "count" else t, seq, place) for seq, _, t in objects]
        alive = {(place, seq) for _, seq, place in listed}
        live = [entry for entry in self._expiry if (entry[2], entry[1]) in alive]
        assert live == sorted(listed), "expiry list disagrees with the places"
        assert all(a[:2] < b[:2] for a, b in zip(self._expiry, list(self._expiry)[1:])), "expiry list out of order"
        assert self._count == len(listed), "object count disagrees with the places"
        reserve = self._reserve
        assert len(reserve) <= self._per_place and np.all(np.diff(reserve.seq) > 0), "reserve: the newest k, by seq"
        assert not set(reserve.seq.tolist()) & {seq for _, seq, _ in listed}, "an object both held and reserved"
        self._check_window(reserve.seq, self._keys(reserve))
        assert all(place < self._next_place for place in self._objects), "a place number not yet issued"
        self._check_window(np.array([s for _, s, _ in listed], np.int64), np.array([k for k, _, _ in listed], np.int64))

    def _check_window(self, seq: np.ndarray, keys: np.ndarray) -> None:
        if self._end is not None and len(seq):
            assert keys.min() >= self._end - self.q.window and keys.max() < self._end, "object outside the window"


def _distinct(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of ``x``: the first row of each, in order of appearance, and for every
    row the position of its point in that list (``O(m log m)``, one sort of the rows' bytes)."""
    if not len(x):
        return np.empty(0, np.int64), np.empty(0, np.int64)
    rows = np.ascontiguousarray(x).view(np.dtype((np.void, x.dtype.itemsize * x.shape[1]))).ravel()
    _, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    return first[order], rank[inverse.ravel()]


def _row_bytes(x: np.ndarray) -> list[bytes]:
    """``row.tobytes()`` of every row of ``x``, in one conversion (``O(m d)``)."""
    return np.ascontiguousarray(x).view(np.dtype((np.void, x.dtype.itemsize * x.shape[1]))).ravel().tolist()


def _frame(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Shift and positive spread of the affine map into index coordinates: each feature's
    minimum and range over ``points`` (half the range where the range overflows; ``1`` for a
    constant feature), so the points map into ``[0, 1]`` (``[0, 2]``)."""
    low, high = points.min(axis=0), points.max(axis=0)
    with np.errstate(over="ignore"):
        spread = high - low
    spread = np.where(np.isfinite(spread), spread, 0.5 * high - 0.5 * low)
    return low, np.where(spread > 0, spread, 1.0)


def _hull_out(hull: Hull) -> dict[str, Any]:
    return {"normals": [floats_out(row) for row in hull.normals], "offsets": floats_out(hull.offsets),
            "cells": None if hull.cells is None else hull.cells.tolist(), "exact": hull.exact,
            "scale": floats_out([hull.scale])[0]}


def _hull_in(data: dict[str, Any], rows: _Places, d: int) -> Hull:
    """A layer's saved hull (every object a vertex); its invariants are asserted by ``check``."""
    normals = np.array([floats_in(row) for row in data["normals"]], np.float64).reshape(-1, d)
    offsets = floats_in(data["offsets"])
    if len(offsets) != len(normals):
        raise ValueError("a hull needs one offset per normal")
    cells = data["cells"]
    if cells is not None:
        if not isinstance(cells, list) or any(not isinstance(cell, list) for cell in cells):
            raise ValueError("hull cells must be a list of lists of object positions")
        cells = ints_in([v for cell in cells for v in cell], "hull cells").reshape(len(cells), -1) if cells \
            else np.empty((0, 2), np.int64)
        if len(cells) and (cells.min() < 0 or cells.max() >= len(rows)):
            raise ValueError("hull cells must name objects of the layer")
    exact = data["exact"]
    if not isinstance(exact, bool):
        raise ValueError("exact must be true or false")
    with np.errstate(over="ignore"):  # a corrupt state's places may overflow; check() then refuses it
        center = rows.x.mean(axis=0) if exact and len(rows) else None
    return Hull(np.arange(len(rows), dtype=np.int64), normals, offsets, cells, exact,
                float(floats_in([data["scale"]])[0]), center)
