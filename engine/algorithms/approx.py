"""The approximate algorithm of Haghani, Michel, Aberer (CIKM 2009), Sections 4 and 5."""

from __future__ import annotations

import sys
from collections import deque
from typing import Any

import numpy as np

from ..attributes import attribute_sum
from ..base import WORD
from ..memory import PY_FLOAT, PY_INT, python_bytes
from ..fmsketch import SlidingSketches
from ..jsondata import floats_in, floats_out, ints_in
from ..registry import register
from ..stream import Batch
from ..kernels import incomplete as table
from ..kernels.eaa import ESTIMATED
from .eaa import EAA

CACHE_ENTRY_BYTES = python_bytes((0, 0), 0.5, 2 ** 40)
"""Measured bytes of an entry of the per-slide caches: a key (a pair, or an int mask) and a float."""


def slide_bytes(d: int) -> int:
    """Measured bytes of one slide's counters with ``d`` streams: the triple, its end, its two
    lists, ``d`` non-cached tuple counts and ``d`` value sums."""
    return python_bytes((0, 0, 0), [0] * d, [0.0] * d) + PY_INT + d * (PY_INT + PY_FLOAT)


UNSEEN_VALUES = ("mean", "max")
"""What one occurrence not seen yet adds to a best score, times its probability: the window's
mean value in that stream (its expected value), or the largest value, 1 (the paper's formula)."""


@register
class Approx(EAA):
    """EAA with best scores estimated from appearance correlations between streams.

    Like :class:`EAA`, but an instance's ``bestscore`` takes, for a stream ``y`` where its
    object ``p`` has not been seen, ``m̂_y · Pr(X_y = 1 | X_I = 1) · v̂_y`` instead of the
    maximum ``m · 1``: ``I`` is the set of streams where ``p`` has been seen, and the
    probability is ``|⋈_{I ∪ {y}}| / |⋈_I|``, join sizes of the current window estimated by
    per-stream sliding-window FM sketches (:mod:`engine.fmsketch`; unions by OR, intersections
    by inclusion-exclusion; clipped to ``[0, 1]``, and 1 when ``|⋈_I|`` is not positive).  For
    a stream where ``p`` has been seen ``n_y`` times the bound adds ``max(0, m̂_y - n_y) · v̂_y``.
    ``m̂_y`` estimates the occurrences of one object in stream ``y`` from the data: the
    stream's tuples in the window over its distinct ids (sketch), rounded, at least 1; the
    ``repeats`` parameter fixes it instead (0, the default: estimate).  ``v̂_y``, the value an
    occurrence not seen yet is counted with, is set by ``unseen_value``: ``"mean"`` (default)
    the mean value of stream ``y``'s tuples in the window (1 while it has none), so that an
    unseen attribute counts its expected value ``Pr · E[value]``; ``"max"`` the largest value,
    1, which is the paper's formula read literally (``ṽ_b(y) = Pr``) and prunes less (see
    ``docs/algorithms/incomplete.md`` for the numbers behind the default).
    Estimates are refreshed once per slide, after the slide's tuples enter the sketches.
    A ``bestscore`` never rises (new estimates are capped by the old one) and never falls
    below ``currentscore``.  Approximate: an object whose true best exceeds the estimate may
    be dropped too early.

    ``retained`` counts instances; ``bytes`` adds the sketches (``d · bitmaps · 32``
    timestamps) and ``2d`` counters per slide of the window (tuples and value sums per stream).

    Examples
    --------
    >>> import numpy as np, engine
    >>> from engine.generators import correlated_streams
    >>> q = engine.Query(weights=[1.0, 1.0, 1.0], k=10, window=1000, slide=100)
    >>> approx, eaa = engine.create("approx", q), engine.create("eaa", q)
    >>> for batch in engine.slides(correlated_streams(3000, streams=3, seed=1), q):
    ...     approx.process(batch); eaa.process(batch)
    >>> approx.stats()["retained"] < eaa.stats()["retained"] < 1000
    True
    """

    name = "approx"
    summary = "approximate EAA: best scores from FM-sketch appearance correlations (CIKM 2009)"
    exact = False
    defaults = {"bitmaps": 64, "repeats": 0, "unseen_value": "mean"}

    def _reset_bounds(self) -> None:
        d = self.q.dimensions
        if self.params["bitmaps"] < 1:
            raise ValueError(f"bitmaps must be >= 1, got {self.params['bitmaps']}")
        if self.params["repeats"] < 0:
            raise ValueError(f"repeats must be 0 (estimate) or >= 1, got {self.params['repeats']}")
        if self.params["unseen_value"] not in UNSEEN_VALUES:
            raise ValueError(f"unseen_value must be one of {', '.join(UNSEEN_VALUES)}, "
                             f"got {self.params['unseen_value']!r}")
        self._sketches = SlidingSketches(d, bitmaps=self.params["bitmaps"])
        self._slide_counts: deque = deque()
        self._start = 0
        self._unions: dict[int, float] = {}
        self._probabilities: dict[tuple[int, int], float] = {}
        self._repeats = [self.params["repeats"] or 1] * d
        self._values = [1.0] * d
        self._slide_bytes = slide_bytes(d)
        self._occurrences = 1
        self._mode = ESTIMATED

    def _begin(self, batch: Batch) -> None:
        ids, stream, value, keys, _ = self._tuples(batch)
        d = self.q.dimensions
        self._start = batch.window_start(self.q)
        self._sketches.add(stream, ids, keys)
        self._slide_counts.append((batch.end, np.bincount(stream, minlength=d).tolist(),
                                   np.bincount(stream, weights=value, minlength=d).tolist()))
        while self._slide_counts[0][0] - self.q.slide < self._start:
            self._slide_counts.popleft()
        self._estimate()

    def _estimate(self) -> None:
        """Fresh per-slide estimates: caches cleared, ``m̂_y`` from tuples over distinct ids,
        ``v̂_y`` (``O(d · (slides + B L))``)."""
        self._unions.clear()
        self._probabilities.clear()
        self._values = self._value_estimates()
        tuples = np.sum([counts for _, counts, _ in self._slide_counts], axis=0) if self._slide_counts else None
        for y in range(self.q.dimensions):
            if self.params["repeats"]:
                self._repeats[y] = self.params["repeats"]
                continue
            if tuples is None or not tuples[y]:
                self._repeats[y] = 1
                continue
            distinct = self._sketches.union([y], self._start)
            self._repeats[y] = max(1, int(round(tuples[y] / distinct)))
        repeats, values, _, slots, _ = self._tables
        repeats[:] = self._repeats
        values[:] = self._values
        slots.fill(-1)

    def _bound_tables(self) -> tuple[np.ndarray, ...]:
        """The kernel's tables of the slide's estimates: ``m̂_y``, ``v̂_y``, and rows of
        ``Pr(X_y = 1 | X_I = 1)`` per set ``I`` of seen streams, found by ``I``'s bit mask (the
        rows are added as the kernel asks for them, :meth:`_add_estimates`)."""
        keys, slots = table.empty_table(16)
        return (np.asarray(self._repeats, np.int64), np.asarray(self._values, np.float64), keys, slots,
                np.zeros((8, self.q.dimensions)))

    def _add_estimates(self, mask: int) -> None:
        """The row of ``Pr(X_y = 1 | X_I = 1)`` for the streams ``I`` of ``mask`` and every ``y``
        outside it, as the original lazy cache computed them (``O(d)`` estimates)."""
        repeats, values, keys, slots, probabilities = self._tables
        row = int(np.count_nonzero(slots != -1))
        if row == len(probabilities) or 2 * (row + 1) > len(keys):
            keys, slots = table.rehashed(keys, slots, table.table_capacity(2 * (row + 1)))
            probabilities = np.vstack([probabilities, np.zeros_like(probabilities)])
        d = self.q.dimensions
        seen = [y for y in range(d) if mask >> y & 1]
        for y in range(d):
            probabilities[row, y] = 0.0 if mask >> y & 1 else self._probability(seen, y)
        table.insert(keys, slots, mask, row)
        self._tables = repeats, values, keys, slots, probabilities
        self._measure()

    def _value_estimates(self) -> list[float]:
        """``v̂_y`` per stream: 1 (``"max"``), or the window's mean value (1 with no tuple)."""
        d = self.q.dimensions
        if self.params["unseen_value"] == "max" or not self._slide_counts:
            return [1.0] * d
        tuples = [sum(counts[y] for _, counts, _ in self._slide_counts) for y in range(d)]
        sums = [attribute_sum(sums[y] for _, _, sums in self._slide_counts) for y in range(d)]
        return [min(1.0, total / n) if n else 1.0 for total, n in zip(sums, tuples)]

    def _probability(self, seen: list[int], y: int) -> float:
        """Estimated ``Pr(X_y = 1 | X_seen = 1)`` in the current window."""
        mask = sum(1 << s for s in seen)
        key = (mask, y)
        if key not in self._probabilities:
            both = self._sketches.intersection(seen + [y], self._start, self._unions)
            given = self._sketches.intersection(seen, self._start, self._unions)
            self._probabilities[key] = 1.0 if given <= 0 else min(1.0, max(0.0, both / given))
        return self._probabilities[key]

    def _check_bound(self, row: int, record: int) -> None:
        """Estimated bounds carry no invariant beyond ``current <= best``."""

    def check(self) -> None:
        super().check()
        stamps = self._sketches.stamps
        assert stamps.shape == (self.q.dimensions, self.params["bitmaps"], self._sketches.bits), "sketch shape"
        if self._end is not None:
            assert self._start == self._end - self.q.window, "sketch window start"
            assert stamps.max() < self._end, "a sketch bit set in the future"
        ends = [end for end, _, _ in self._slide_counts]
        assert all(a < b for a, b in zip(ends, ends[1:])), "slide counters out of order"
        assert all(end - self.q.slide >= self._start for end in ends), "slide counter outside the window"
        for _, counts, sums in self._slide_counts:
            assert len(counts) == len(sums) == self.q.dimensions and min(counts) >= 0, "slide counters"
            assert all(0.0 <= total <= n for total, n in zip(sums, counts)), "slide value sums outside [0, tuples]"
        assert all(r >= 1 for r in self._repeats), "estimated repeats below 1"
        assert self._values == self._value_estimates(), "stale value estimates"
        assert all(0.0 <= v <= 1.0 for v in self._values), "value estimate outside [0, 1]"

    def _tallied(self) -> tuple:
        return (*super()._tallied(), self._slide_counts, self._unions, self._probabilities)

    def _sketch_bytes(self) -> int:
        """Modelled bytes of the sketches and the per-slide counters (``O(1)``)."""
        return WORD * (self._sketches.stamps.size + 2 * self.q.dimensions * len(self._slide_counts))

    def _stats(self) -> dict[str, Any]:
        out = super()._stats()
        out["sketch_bytes"] = self._sketch_bytes()
        out["estimated_repeats"] = max(self._repeats)
        out["estimated_value"] = max(self._values)
        return out

    def memory(self) -> tuple[int, int]:
        """EAA's figures plus the sketches and the per-slide counters, and the caches of the
        slide's estimates (``O(1)``: their sizes from entry counts)."""
        modelled, measured = super().memory()
        caches = self._unions, self._probabilities
        measured += (sys.getsizeof(self._slide_counts) + self._slide_bytes * len(self._slide_counts)
                     + sum(map(sys.getsizeof, caches)) + CACHE_ENTRY_BYTES * sum(map(len, caches)))
        return modelled + self._sketch_bytes(), measured

    def dump_state(self) -> dict[str, Any]:
        data = super().dump_state()
        data["sketches"] = self._sketches.stamps.ravel().tolist()
        data["slide_counts"] = [[end, counts, floats_out(sums)] for end, counts, sums in self._slide_counts]
        data["start"] = self._start
        return data

    def load_state(self, data: dict[str, Any]) -> None:
        stamps = ints_in(data["sketches"], "sketches")
        if stamps.size != self._sketches.stamps.size:
            raise ValueError(f"sketches hold {stamps.size} timestamps, expected {self._sketches.stamps.size}")
        self._sketches.stamps = stamps.reshape(self._sketches.stamps.shape)
        for end, counts, sums in data["slide_counts"]:
            counts = ints_in(counts, "slide_counts").tolist()
            sums = floats_in(sums).tolist()
            if len(counts) != self.q.dimensions or len(sums) != self.q.dimensions:
                raise ValueError("slide counts have the wrong number of streams")
            self._slide_counts.append((int(end), counts, sums))
        self._start = int(data["start"])
        self._estimate()
        super().load_state(data)
