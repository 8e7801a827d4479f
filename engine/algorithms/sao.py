"""SAO index (Luo, Wu, Yu): approximate top-K of any linear query under a memory budget."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from sortedcontainers import SortedList

from ..base import OBJECT_WORDS, WORD, Algorithm
from ..jsondata import floats_in, floats_out
from ..ranking import Answer, score
from ..registry import register
from ..stream import Batch
from .sao_hull import Hull, convex_hull, neighbour_distances

ALLOCATIONS = ("dynamic-errmin", "dynamic-uniform", "static-errmin", "static-uniform")
RANK_WEIGHTS = ("1", "1/i")
FILTER_CHUNK = 4096
"""Arrivals tested against the innermost layer per vectorised step."""


def layer_quotas(memory: int, layers: int, allocation: str, rank_weights: str = "1") -> list[int]:
    """Integer quotas ``N_j`` (summing to ``memory``) of the allocation strategy.

    Error-minimising: ``N_j ∝ sqrt(C_j)``, ``C_j = Σ_{i=j..L} u_i p_ij`` with ``p_ij = 1/i``
    (paper, Appendix); uniform: ``N_j = M / L``.  Rounded by largest remainders; quotas never
    increase inwards, so a zero quota (``M`` below about ``L``) can only be an inner one.  ``O(L^2)``.

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
        shares = np.sqrt(np.array([np.sum(u[j:] * p[j:]) for j in range(layers)]))
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
        head = [r[:3] for r in records]
        if any(isinstance(v, bool) or not isinstance(v, int) for row in head for v in row):
            raise ValueError("seq, id and t must be integers")
        columns = np.asarray(head, np.int64)
        x = floats_in([v for r in records for v in r[3:]]).reshape(-1, d)
        return cls(columns[:, 0].copy(), columns[:, 1].copy(), columns[:, 2].copy(), x)


class _Layer:
    """One approximate convex layer: its objects (all hull vertices) and their hull.

    ``hull`` is ``None`` while the objects changed and the hull is not rebuilt yet.
    """

    def __init__(self, rows: _Rows, hull: Hull | None) -> None:
        self.rows, self.hull = rows, hull


def _settled(pool: _Rows) -> tuple[_Rows, Hull, _Rows]:
    """Split ``pool`` into the vertices of its hull (with the hull, renamed to them) and the rest.

    One Qhull run; ``O(n log n)`` in 2-D and 3-D.
    """
    hull = convex_hull(pool.x)
    if len(hull.vertices) == len(pool):
        return pool, hull, pool.take(slice(0, 0))
    outside = np.ones(len(pool), dtype=bool)
    outside[hull.vertices] = False
    return pool.take(hull.vertices), hull.reindexed(hull.vertices, len(pool)), pool.take(outside)


@register
class SAO(Algorithm):
    """SAO index: ``L`` approximate convex layers holding at most ``M`` objects (``M + 1`` transiently).

    Every object of layer ``l_j`` is a vertex of the convex hull of ``l_j``, and ``l_j`` lies
    inside ``l_{j-1}``; a query of any weights searches ``l_1, l_2, ...`` (onion search) and
    stops when the K-th best found beats the best of the next layer.  Answers are approximate
    once the window holds more than ``M`` objects.

    Creation (3.5): the first ``M`` objects of the window are peeled into ``L`` layers at once
    (until then the objects are kept as they come and answers are exact).  Maintenance (3.6),
    per arrival: (1) inside ``l_L``: discarded (the *filtering ratio*); otherwise inserted into
    the first layer (from the inside) it lies outside of, expelled vertices cascading inwards
    and leaving the index past ``l_L``; (2) the oldest object, once expired, is deleted and its
    layer rebuilt with the next layer's objects pulled up, cascading inwards; (3) on overflow
    (``M + 1`` objects) one object is evicted: from the layer with the largest ``M_j / N_j``
    among those with ``M_j >= N_j``, the one nearest to a hull neighbour (older on ties).
    Static strategies evict from any layer above its quota ``N_j`` instead.  Arrivals are
    tested against ``l_L``'s facets in numpy batches that end at the next arrival that changes
    the index or at the next expiry, so a filtered arrival costs ``O(f d)`` vectorised work.

    Costs: a filtered arrival ``O(f d)`` (``f`` facets of ``l_L``); an insertion, expiry or
    eviction one Qhull run per layer it reaches (``O(M_j log M_j)`` in 2-D/3-D) plus
    ``O(log M)`` in the expiry list; ``query`` ``O(Σ M_j d)`` over the layers it searches.

    Memory (``bytes``): per object its id, seq, t, ``d`` features, its layer label and two
    expiry-list links (``d + 6`` words); per layer ``d + 1`` words per hull facet.

    Parameters: ``memory`` (``M >= 1``), ``layers`` (``L``), ``allocation`` (one of
    ``dynamic-errmin``, ``dynamic-uniform``, ``static-errmin``, ``static-uniform``) and
    ``rank_weights`` (``"1"`` or ``"1/i"``: the ``u_i`` of the error-minimising quotas).

    Examples
    --------
    >>> import numpy as np, engine
    >>> q = engine.Query(weights=[1.0, 1.0], k=2, window=200, slide=50)
    >>> alg = engine.create("sao", q, memory=40, layers=3)
    >>> x = np.random.default_rng(0).standard_normal((400, 2))
    >>> for batch in engine.slides((np.arange(400), np.arange(400), x), q):
    ...     alg.process(batch)
    >>> alg.stats()["retained"] <= 40, len(alg.query([1.0, -1.0], 3))
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
        if p["memory"] < 1:
            raise ValueError(f"parameter memory of sao must be >= 1, got {p['memory']}")
        if p["allocation"] not in ALLOCATIONS:
            raise ValueError(f"parameter allocation of sao must be one of {', '.join(ALLOCATIONS)}, got {p['allocation']!r}")
        if p["rank_weights"] not in RANK_WEIGHTS:
            raise ValueError(f"parameter rank_weights of sao must be one of {', '.join(RANK_WEIGHTS)}, got {p['rank_weights']!r}")
        self._d = self.q.dimensions
        self._memory = p["memory"]
        self._static = p["allocation"].startswith("static")
        self._quotas = layer_quotas(p["memory"], p["layers"], p["allocation"], p["rank_weights"])
        self._created = False
        self._buffer = _Rows.empty(self._d)
        self._layers = [_Layer(_Rows.empty(self._d), convex_hull(np.empty((0, self._d)))) for _ in self._quotas]
        self._expiry = SortedList()
        self._end: int | None = None
        self._answer: Answer | None = Answer.empty()
        self._counters = {"arrivals_examined": 0, "filtered": 0, "insertions": 0, "expiries": 0,
                          "evictions": 0, "expelled": 0}

    # ----------------------------------------------------------------- arrivals

    def process(self, batch: Batch) -> None:
        """One slide: filtered arrivals in numpy batches, the others in the paper's three steps."""
        rows = _Rows(batch.seq, batch.ids, batch.t, batch.x)
        if self.q.kind == "count":
            bounds = batch.seq + 1 - self.q.window
        else:
            bounds = np.full(len(batch), batch.window_start(self.q), np.int64)
        start = 0 if self._created else self._collect(rows, bounds)
        if self._created:
            self._maintain(rows, bounds, start)
            self._expire(batch.window_start(self.q))
            self._enforce_quotas()
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
        """Peel ``L`` layers off ``rows`` in one batch (3.5); the rest is discarded."""
        self._created = True
        for layer in self._layers:
            kept, hull, rows = _settled(rows)
            layer.rows, layer.hull = kept, hull
            self._expiry.update(zip(self._keys(kept).tolist(), kept.seq.tolist()))
        self._enforce_quotas()

    def _maintain(self, rows: _Rows, bounds: np.ndarray, start: int) -> None:
        """Arrivals ``start..`` of a slide: blocks up to the next expiry are tested against
        ``l_L`` at once; the first arrival outside it goes through the three steps.

        ``O(f d)`` numpy work per filtered arrival (a ball test first, then the facets).
        """
        m = len(rows)
        p = start
        counters = self._counters
        while p < m:
            expiring = m
            if self._expiry:
                head = self._expiry[0][0]
                expiring = max(p, int(np.searchsorted(bounds, head, side="right")))
            stop = min(m, expiring + 1, p + FILTER_CHUNK)
            inner = self._layers[-1]
            if len(inner.rows):
                outside = np.flatnonzero(~inner.hull.contains(rows.x[p:stop]))
            else:
                outside = np.zeros(1, np.int64)
            counters["arrivals_examined"] += stop - p if not len(outside) else int(outside[0]) + 1
            if not len(outside):
                counters["filtered"] += stop - p
                if expiring < stop:
                    self._expire(int(bounds[expiring]))
                    self._enforce_quotas()
                p = stop
                continue
            arrival = p + int(outside[0])
            counters["filtered"] += arrival - p
            self._insert(rows.take([arrival]))
            self._expire(int(bounds[arrival]))
            self._enforce_quotas()
            p = arrival + 1

    def _insert(self, row: _Rows) -> None:
        """Step 1: into the first layer, from the inside, that ``row`` lies outside of."""
        target = 0
        for j in range(len(self._layers) - 2, -1, -1):
            layer = self._layers[j]
            if len(layer.rows) and layer.hull.contains(row.x)[0]:
                target = j + 1
                break
        self._counters["insertions"] += 1
        self._expiry.add((int(self._keys(row)[0]), int(row.seq[0])))
        self._cascade(target, row, pull=False)

    def _expire(self, bound: int) -> None:
        """Step 2: delete every object whose key is below ``bound`` (oldest first)."""
        while self._expiry and self._expiry[0][0] < bound:
            self._counters["expiries"] += 1
            self._delete(self._expiry[0][1])

    def _enforce_quotas(self) -> None:
        """Step 3: evict until the budget (dynamic) or every layer's quota (static) holds."""
        while True:
            sizes = [len(layer.rows) for layer in self._layers]
            if self._static:
                over = [j for j, (size, quota) in enumerate(zip(sizes, self._quotas)) if size > quota]
            elif sum(sizes) > self._memory:
                over = [j for j, (size, quota) in enumerate(zip(sizes, self._quotas)) if size >= quota and size]
            else:
                return
            if not over:
                return
            j = max(over, key=lambda j: (sizes[j] / self._quotas[j] if self._quotas[j] else math.inf, j))
            layer = self._layers[j]
            distances = neighbour_distances(layer.rows.x, layer.hull)
            keys = self._keys(layer.rows)
            victim = int(np.lexsort((layer.rows.seq, keys, distances))[0])
            self._counters["evictions"] += 1
            self._delete(int(layer.rows.seq[victim]), j)

    def _delete(self, seq: int, j: int | None = None) -> None:
        """Remove object ``seq`` and rebuild its layer, pulling objects up from the next one."""
        if j is None:
            j = next(j for j, layer in enumerate(self._layers) if np.any(layer.rows.seq == seq))
        layer = self._layers[j]
        position = int(np.searchsorted(layer.rows.seq, seq))
        gone = layer.rows.take(slice(position, position + 1))
        self._expiry.remove((int(self._keys(gone)[0]), seq))
        keep = np.ones(len(layer.rows), dtype=bool)
        keep[position] = False
        layer.rows, layer.hull = layer.rows.take(keep), None
        self._cascade(j, _Rows.empty(self._d), pull=True)

    def _cascade(self, j: int, incoming: _Rows, pull: bool) -> None:
        """Rebuild layers from ``j`` inwards (the insertion and the deletion cascades of 3.6).

        Layer ``j`` becomes the hull vertices of its objects, ``incoming`` and (when ``pull``)
        the next layer's objects; objects offered to an unchanged layer that lie inside its
        hull skip Qhull.  Whatever is not a vertex goes one layer inwards (or stays there, for
        pulled objects).  Stops when nothing moves; objects pushed past ``l_L`` leave the
        index.  At most one Qhull run per layer reached.
        """
        layers = self._layers
        empty = _Rows.empty(self._d)
        while j < len(layers):
            layer = layers[j]
            below = layers[j + 1].rows if pull and j + 1 < len(layers) else empty
            offered = _Rows.join([incoming, below])
            if layer.hull is None:
                layer.rows, layer.hull, rest = _settled(_Rows.join([layer.rows, offered]))
            else:
                outside = ~layer.hull.contains(offered.x)
                if outside.any():
                    layer.rows, layer.hull, rest = _settled(_Rows.join([layer.rows, offered.take(outside)]))
                    rest = _Rows.join([rest, offered.take(~outside)])
                else:
                    rest = offered
            from_below = np.isin(rest.seq, below.seq) if len(below) else np.zeros(len(rest), bool)
            pull = int(np.count_nonzero(from_below)) < len(below)
            if pull:
                layers[j + 1].rows, layers[j + 1].hull = rest.take(from_below), None
            incoming = rest.take(~from_below)
            if not len(incoming) and not pull:
                return
            j += 1
        self._counters["expelled"] += len(incoming)
        for key, seq in zip(self._keys(incoming).tolist(), incoming.seq.tolist()):
            self._expiry.remove((key, seq))

    # ------------------------------------------------------------------ queries

    def topk(self) -> Answer:
        if self._answer is None:
            self._answer = self.query(self.q.weights, self.q.k)
        return self._answer

    def query(self, weights, k: int) -> Answer:
        """Approximate top ``k`` of the window under any ``weights``, by onion search (3.7).

        Searches ``l_1, l_2, ...`` and stops after all layers or when the ``k``-th best score
        found is above the best score of the next layer.  ``O(Σ M_j d)`` over the layers
        searched; exact over the buffered objects before the index is created.
        """
        weights = self.q.with_weights(weights).weights
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"k must be an integer >= 1, got {k!r}")
        if not self._created:
            return Answer.ranked(self._buffer.ids, score(self._buffer.x, weights), self._buffer.seq, k)
        found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        kth = -math.inf
        count = 0
        for layer in self._layers:
            rows = layer.rows
            if not len(rows):
                break
            scores = score(rows.x, weights)
            if count >= k and kth > scores.max():
                break
            found.append((rows.ids, scores, rows.seq))
            count += len(rows)
            if count >= k:
                every = np.concatenate([f[1] for f in found])
                kth = float(np.partition(every, len(every) - k)[len(every) - k])
        if not found:
            return Answer.empty()
        ids, scores, seq = (np.concatenate(column) for column in zip(*found))
        return Answer.ranked(ids, scores, seq, k)

    def layers(self) -> list[np.ndarray]:
        """``seq`` of the tuples of each layer, outermost first (``O(M)``).

        Before the index is created (fewer than ``M`` tuples seen) the buffer is one layer.
        """
        if not self._created:
            return [self._buffer.seq.copy()]
        return [layer.rows.seq.copy() for layer in self._layers]

    def candidates(self) -> np.ndarray:
        if not self._created:
            return self._buffer.seq.copy()
        return np.concatenate([layer.rows.seq for layer in self._layers])

    def _stats(self) -> dict[str, Any]:
        sizes = [len(layer.rows) for layer in self._layers]
        held = sum(sizes) if self._created else len(self._buffer)
        facets = sum(len(layer.hull.offsets) for layer in self._layers)
        examined = self._counters["arrivals_examined"]
        return {"candidates": held, "retained": held,
                "bytes": WORD * (held * (OBJECT_WORDS + self._d + 3) + facets * (self._d + 1)),
                "created": self._created, "layer_counts": sizes, "layer_quotas": list(self._quotas),
                "filtering_ratio": self._counters["filtered"] / examined if examined else 0.0,
                **self._counters}

    # -------------------------------------------------------------------- state

    def dump_state(self) -> dict[str, Any]:
        return {"layers": [{"objects": layer.rows.records(), "hull": _hull_out(layer.hull)} for layer in self._layers],
                "buffer": self._buffer.records(), "created": self._created, "end": self._end,
                "counters": dict(self._counters)}

    def load_state(self, data: dict[str, Any]) -> None:
        layers = data["layers"]
        if not isinstance(layers, list) or len(layers) != len(self._layers):
            raise ValueError(f"expected {len(self._layers)} layers")
        self._created = bool(data["created"])
        self._buffer = _Rows.from_records(data["buffer"], self._d)
        for layer, saved in zip(self._layers, layers):
            layer.rows = _Rows.from_records(saved["objects"], self._d)
            layer.hull = _hull_in(saved["hull"], layer.rows, self._d)
            self._expiry.update(zip(self._keys(layer.rows).tolist(), layer.rows.seq.tolist()))
        end = data["end"]
        if end is not None and (isinstance(end, bool) or not isinstance(end, int)):
            raise ValueError("end must be an integer or null")
        self._end = end
        counters = data["counters"]
        if not isinstance(counters, dict) or set(counters) != set(self._counters):
            raise ValueError(f"counters must have the keys {sorted(self._counters)}")
        self._counters.update({name: int(value) for name, value in counters.items()})
        self._answer = None if end is not None else Answer.empty()

    def check(self) -> None:
        """Assert every invariant: layers are hull vertex sets, nested, within budget and quotas.

        ``O(Σ M_j f_j d)`` plus one Qhull run per layer.
        """
        sizes = [len(layer.rows) for layer in self._layers]
        if not self._created:
            assert sum(sizes) == 0 and len(self._expiry) == 0, "objects in layers before creation"
            assert len(self._buffer) < self._memory, "buffer reached M without creating the index"
            assert np.all(np.diff(self._buffer.seq) > 0), "buffer seq must increase"
            self._check_window(self._buffer)
            return
        assert len(self._buffer) == 0, "buffer kept after creation"
        assert sum(sizes) <= self._memory, f"{sum(sizes)} objects over the budget {self._memory}"
        if self._static:
            assert all(s <= q for s, q in zip(sizes, self._quotas)), f"layers {sizes} over quotas {self._quotas}"
        empty_seen = False
        for j, layer in enumerate(self._layers):
            rows, hull = layer.rows, layer.hull
            assert hull is not None, f"layer {j}: hull not rebuilt"
            assert np.all(np.diff(rows.seq) > 0), f"layer {j}: seq must increase"
            assert not (empty_seen and len(rows)), f"layer {j} holds objects below an empty layer"
            empty_seen = empty_seen or not len(rows)
            fresh = convex_hull(rows.x)
            assert len(fresh.vertices) == len(rows), \
                f"layer {j}: {len(rows) - len(fresh.vertices)} objects are not hull vertices"
            assert np.array_equal(hull.vertices, np.arange(len(rows))), f"layer {j}: hull vertices are not its objects"
            assert hull.exact == fresh.exact, f"layer {j}: stored hull is {'not ' * fresh.exact}exact"
            if hull.exact and len(rows):
                distance = rows.x @ hull.normals.T + hull.offsets
                assert distance.max() <= hull.tolerance, f"layer {j}: an object lies outside its stored hull"
                assert np.all(distance.max(axis=0) >= -hull.tolerance), f"layer {j}: a stored facet touches no object"
            if j and len(rows) and len(self._layers[j - 1].rows):
                outer = self._layers[j - 1].hull
                assert not outer.exact or outer.contains(rows.x).all(), f"layer {j} is not inside layer {j - 1}"
            self._check_window(rows)
        every = self.candidates()
        assert len(np.unique(every)) == len(every), "an object is on two layers"
        listed = sorted(zip(np.concatenate([self._keys(l.rows) for l in self._layers]).tolist(), every.tolist()))
        assert list(self._expiry) == listed, "expiry list disagrees with the layers"

    def _check_window(self, rows: _Rows) -> None:
        if self._end is not None and len(rows):
            keys = self._keys(rows)
            assert keys.min() >= self._end - self.q.window and keys.max() < self._end, "object outside the window"


def _hull_out(hull: Hull) -> dict[str, Any]:
    return {"normals": [floats_out(row) for row in hull.normals], "offsets": floats_out(hull.offsets),
            "cells": None if hull.cells is None else hull.cells.tolist(), "exact": hull.exact,
            "scale": floats_out([hull.scale])[0]}


def _hull_in(data: dict[str, Any], rows: _Rows, d: int) -> Hull:
    """A layer's saved hull (every object a vertex); its invariants are asserted by ``check``."""
    normals = np.array([floats_in(row) for row in data["normals"]], np.float64).reshape(-1, d)
    offsets = floats_in(data["offsets"])
    if len(offsets) != len(normals):
        raise ValueError("a hull needs one offset per normal")
    cells = data["cells"]
    if cells is not None:
        cells = np.array(cells, np.int64).reshape(len(cells), -1) if cells else np.empty((0, 2), np.int64)
        if len(cells) and (cells.min() < 0 or cells.max() >= len(rows)):
            raise ValueError("hull cells must name objects of the layer")
    exact = data["exact"]
    if not isinstance(exact, bool):
        raise ValueError("exact must be true or false")
    center = rows.x.mean(axis=0) if exact and len(rows) else None
    return Hull(np.arange(len(rows), dtype=np.int64), normals, offsets, cells, exact,
                float(floats_in([data["scale"]])[0]), center)
