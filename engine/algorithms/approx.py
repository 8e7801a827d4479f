"""The approximate algorithm of Haghani, Michel, Aberer (CIKM 2009), Sections 4 and 5."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..attributes import attribute_sum
from ..base import WORD
from ..fmsketch import SlidingSketches
from ..jsondata import floats_in, floats_out, ints_in, saved_capacity
from ..kernels import approx as kernel
from ..kernels import incomplete as table
from ..kernels.eaa import ESTIMATED, ROWS
from ..registry import register
from ..stream import Batch
from .eaa import EAA

UNSEEN_VALUES = ("mean", "max")
"""What one occurrence not seen yet adds to a best score, times its probability: the window's
mean value in that stream (its expected value), or the largest value, 1 (the paper's formula)."""

MAX_STREAMS = 12
"""The most streams approx takes.  A row of ``Pr(X_y = 1 | X_I = 1)`` for an object seen in the
streams ``I`` costs ``O((d - |I|) 2^{|I|+1} B)`` (inclusion-exclusion over the unions of every
subset, Section 4), doubling with every stream more: 60 objects seen in nearly every stream,
window 300, 100 slides, took 1.2 s at ``d = 12``, 18 s at 16, and an object seen in 30 streams
would take hours per row (the set ``I`` stops fitting the 64-bit mask that finds its row
beyond 62 streams)."""

MAX_BITMAPS = 1 << 14
"""The most FM bitmaps per stream: their stamps take ``bitmaps · L · 8`` bytes per stream (``L <= 32``
positions; 4 MiB at this limit; ``10**8`` asked for 24 GiB and ended in ``MemoryError``)."""

SKETCH_BITS = 32
"""Positions per bitmap where nothing bounds the distinct ids (time windows), and in states
saved before the positions were sized from the window."""

SPARE_BITS = 8
"""Positions per bitmap above the count window's ``bit_length``: a window of ``n`` tuples
holds at most ``n < 2^b`` distinct ids (``b = n.bit_length()``), so position ``b + j`` is set in
a bitmap with probability below ``2^-(j+1)``; an estimate differs from 32 positions' only
when every position from ``b`` to the last is set, below ``2^-36`` per bitmap and window at
8 spare positions."""

FIRST_SLIDES = 16
"""Slides the counters have room for at first, doubled when full: a window holds at most
``n / s + 1`` slides' counters, but ``n / s`` may be a billion (a day in milliseconds with a
slide of 1 ms), far more slides than a stream passes."""


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

    ``retained`` counts instances; ``bytes`` adds the sketches (``d · bitmaps · L``
    timestamps, ``L`` = the count window's ``bit_length`` plus :data:`SPARE_BITS`, at most
    32, and 32 for time windows) and ``2d`` counters per non-empty slide of the window (tuples and value sums per stream).
    The sketches, the slide counters and the estimates are numpy arrays and their steps
    compiled kernels (:mod:`engine.kernels.fmsketch`, :mod:`engine.kernels.approx`); EAA's slide
    kernel makes each missing row of probabilities from the sketches, so a slide is four kernel
    calls, and ``measured_bytes`` counts every array by its size.

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
        if d > MAX_STREAMS:
            raise ValueError(f"approx takes at most {MAX_STREAMS} streams, got {d}: its appearance probabilities "
                             "come from inclusion-exclusion over every subset of the streams an object was seen in, "
                             "exponential in them; use eaa or sla")
        if self.params["bitmaps"] < 1:
            raise ValueError(f"bitmaps must be >= 1, got {self.params['bitmaps']}")
        if self.params["repeats"] < 0:
            raise ValueError(f"repeats must be 0 (estimate) or >= 1, got {self.params['repeats']}")
        if self.params["bitmaps"] > MAX_BITMAPS:
            raise ValueError(f"bitmaps must be at most {MAX_BITMAPS:,}, got {self.params['bitmaps']:,}: each stream "
                             f"keeps 32 stamps per bitmap ({MAX_BITMAPS:,} bitmaps: 4 MiB per stream), and "
                             "the estimates' error, about 0.78 / sqrt(bitmaps), is below 1 % there")
        if self.params["unseen_value"] not in UNSEEN_VALUES:
            raise ValueError(f"unseen_value must be one of {', '.join(UNSEEN_VALUES)}, "
                             f"got {self.params['unseen_value']!r}")
        self._sketches = SlidingSketches(d, bitmaps=self.params["bitmaps"], bits=self._sketch_bits())
        self._counter_arrays = self._empty_counters(min(FIRST_SLIDES, self.q.windows_per_object + 1))
        self._held = 0
        self._start = 0
        self._occurrences = 1
        self._mode = ESTIMATED

    def _sketch_bits(self) -> int:
        """Positions per bitmap: the count window's ``bit_length`` plus :data:`SPARE_BITS`, at
        most :data:`SKETCH_BITS`, which time windows take (``O(1)``)."""
        if self.q.kind != "count":
            return SKETCH_BITS
        return min(SKETCH_BITS, self.q.window.bit_length() + SPARE_BITS)

    def _empty_counters(self, slides: int) -> tuple[np.ndarray, ...]:
        """Room for ``slides`` slides' counters: ends, tuples and value sums per stream."""
        d = self.q.dimensions
        return np.zeros(slides, np.int64), np.zeros((slides, d), np.int64), np.zeros((slides, d))

    def _arrays(self) -> tuple[np.ndarray, ...]:
        arrays = (*super()._arrays(), *self._sketches.arrays(), *self._counter_arrays)
        return tuple({id(array): array for array in arrays}.values())  # the tables hold two sketch arrays

    def _begin(self, batch: Batch) -> None:
        """The slide's ids into the sketches and its counts into the counters, then the
        window's estimates (three kernel calls, ``O(m B + d B L + d · slides)``)."""
        ids, stream, value, keys, _ = self._tuples(batch)
        self._start = batch.window_start(self.q)
        self._sketches.add(stream, ids, keys)
        ends = self._counter_arrays[0]
        if self._held == len(ends):
            grown = self._empty_counters(2 * len(ends))
            for old, new in zip(self._counter_arrays, grown):
                new[:self._held] = old
            self._counter_arrays = grown
            self._measure()
        self._held = kernel.count_slide(*self._counter_arrays, self._held, batch.end, self.q.slide, self._start,
                                        np.asarray(stream, np.int64), np.asarray(value, np.float64))
        self._estimate()

    def _estimate(self) -> None:
        """Fresh per-slide estimates: the sketches restricted to the window, ``m̂_y`` from
        tuples over distinct ids, ``v̂_y``, the rows of probabilities forgotten
        (``O(d · (slides + B L))``)."""
        repeats, values, _, slots = self._tables[:4]
        _, tuples, sums = self._counter_arrays
        sketches = self._sketches
        kernel.estimate(sketches.stamps, sketches.words, *sketches.estimates(), self._start, tuples, sums, self._held,
                        self.params["repeats"], self.params["unseen_value"] == "max", repeats, values)
        slots.fill(table.NONE)
        self._meta[ROWS] = 0

    def _bound_tables(self) -> tuple[np.ndarray, ...]:
        """The kernel's tables of the slide's estimates: ``m̂_y``, ``v̂_y``, rows of
        ``Pr(X_y = 1 | X_I = 1)`` per set ``I`` of seen streams, found by ``I``'s bit mask (the
        kernel makes a row when an object first asks for it), and the sketches' arrays it makes
        them from."""
        d = self.q.dimensions
        keys, slots = table.empty_table(16)
        powers, _ = self._sketches.estimates()
        return (np.full(d, self.params["repeats"] or 1, np.int64), np.ones(d), keys, slots, np.zeros((8, d)),
                self._sketches.words, powers)

    def _add_estimates(self, mask: int) -> None:
        """Room for another row of probabilities: the rows and the mask table doubled
        (``O(rows · d)``)."""
        repeats, values, keys, slots, probabilities, words, powers = self._tables
        rows = len(probabilities)
        keys, slots = table.rehashed(keys, slots, table.table_capacity(2 * rows))
        probabilities = np.vstack([probabilities, np.zeros_like(probabilities)])
        self._tables = repeats, values, keys, slots, probabilities, words, powers
        self._measure()

    def _slide_counters(self) -> list[tuple[int, list[int], list[float]]]:
        """The window's slide counters, oldest first: end, tuples and value sums (``O(d · slides)``)."""
        ends, tuples, sums = (array[:self._held] for array in self._counter_arrays)
        return list(zip(ends.tolist(), tuples.tolist(), sums.tolist()))

    def _value_estimates(self) -> list[float]:
        """``v̂_y`` per stream recomputed in Python: 1 (``"max"``), or the window's mean value
        (1 with no tuple) (``O(d · slides)``)."""
        d = self.q.dimensions
        if self.params["unseen_value"] == "max" or not self._held:
            return [1.0] * d
        counters = self._slide_counters()
        tuples = [sum(counts[y] for _, counts, _ in counters) for y in range(d)]
        sums = [attribute_sum(sums[y] for _, _, sums in counters) for y in range(d)]
        return [min(1.0, total / n) if n else 1.0 for total, n in zip(sums, tuples)]

    def _check_bound(self, row: int, record: int) -> None:
        """Estimated bounds carry no invariant beyond ``current <= best``."""

    def check(self) -> None:
        super().check()
        stamps, words = self._sketches.stamps, self._sketches.words
        assert stamps.shape == (self.q.dimensions, self.params["bitmaps"], self._sketches.bits), "sketch shape"
        in_window = (stamps >= self._start).astype(np.int64) << np.arange(self._sketches.bits)
        assert np.array_equal(words, in_window.sum(axis=2)), "sketch words not of the window"
        if self._end is not None:
            assert self._start == self._end - self.q.window, "sketch window start"
            assert stamps.max() < self._end, "a sketch bit set in the future"
        counters = self._slide_counters()
        ends = [end for end, _, _ in counters]
        assert all(a < b for a, b in zip(ends, ends[1:])), "slide counters out of order"
        assert all(end - self.q.slide >= self._start for end in ends), "slide counter outside the window"
        for _, counts, sums in counters:
            assert min(counts) >= 0, "slide counters"
            assert all(0.0 <= total <= n for total, n in zip(sums, counts)), "slide value sums outside [0, tuples]"
        repeats, values, _, slots = self._tables[:4]
        assert repeats.min() >= 1, "estimated repeats below 1"
        assert values.tolist() == self._value_estimates(), "stale value estimates"
        assert np.count_nonzero(slots != table.NONE) == self._meta[ROWS], "rows of probabilities"

    def _sketch_bytes(self) -> int:
        """Modelled bytes of the sketches and the per-slide counters (``O(1)``)."""
        return WORD * (self._sketches.stamps.size + 2 * self.q.dimensions * self._held)

    def _stats(self) -> dict[str, Any]:
        out = super()._stats()
        repeats, values = self._tables[:2]
        out["sketch_bytes"] = self._sketch_bytes()
        out["estimated_repeats"] = int(repeats.max())
        out["estimated_value"] = float(values.max())
        return out

    def memory(self) -> tuple[int, int]:
        """EAA's figures (measured: the sketches', counters' and probability rows' arrays among
        them) plus the modelled sketches and per-slide counters (``O(1)``)."""
        modelled, measured = super().memory()
        return modelled + self._sketch_bytes(), measured

    def dump_state(self) -> dict[str, Any]:
        data = super().dump_state()
        data["sketches"] = self._sketches.stamps.ravel().tolist()
        data["slide_counts"] = [[end, counts, floats_out(sums)] for end, counts, sums in self._slide_counters()]
        data["start"] = self._start
        return data

    def _saved_stamps(self, stamps: np.ndarray) -> np.ndarray:
        """A state's timestamps shaped as the sketches': those of :data:`SKETCH_BITS` positions
        (states saved before the positions were sized from the window) fold every position from
        the last one up into the last, as :func:`engine.kernels.fmsketch.position` clamps an id's
        position, so they are the stamps the same tuples set (``O(d B L)``)."""
        d, bitmaps, bits = self._sketches.stamps.shape
        if stamps.size == d * bitmaps * bits:
            return stamps.reshape(d, bitmaps, bits)
        if stamps.size != d * bitmaps * SKETCH_BITS:
            raise ValueError(f"sketches hold {stamps.size} timestamps, expected {d * bitmaps * bits} "
                             f"({d} streams x {bitmaps} bitmaps x {bits} positions)")
        stamps = stamps.reshape(d, bitmaps, SKETCH_BITS)
        return np.concatenate([stamps[:, :, :bits - 1], stamps[:, :, bits - 1:].max(axis=2, keepdims=True)], axis=2)

    def _capacities(self) -> dict[str, int]:
        """EAA's, plus the slide counters' rows and the probability rows (the mask table follows them)."""
        return {**super()._capacities(), "slides": len(self._counter_arrays[0]), "probability_rows": len(self._tables[4])}

    def load_state(self, data: dict[str, Any]) -> None:
        """Read :meth:`dump_state` data; ``capacity`` (absent from states saved before it) sizes
        the slide counters and probability rows as they were, EAA's arrays as EAA does."""
        if "capacity" in data:
            self._counter_arrays = self._empty_counters(saved_capacity(data["capacity"], "slides"))
            rows = saved_capacity(data["capacity"], "probability_rows")
            repeats, values, _, _, _, words, powers = self._tables
            self._tables = (repeats, values, *table.empty_table(table.table_capacity(rows)),
                            np.zeros((rows, self.q.dimensions)), words, powers)
        self._sketches.stamps[...] = self._saved_stamps(ints_in(data["sketches"], "sketches"))
        slides = data["slide_counts"]
        if len(slides) > len(self._counter_arrays[0]):
            self._counter_arrays = self._empty_counters(len(slides))
        ends, tuples, sums = self._counter_arrays
        for i, (end, counts, values) in enumerate(slides):
            counts, values = ints_in(counts, "slide_counts"), floats_in(values)
            if len(counts) != self.q.dimensions or len(values) != self.q.dimensions:
                raise ValueError("slide counts have the wrong number of streams")
            ends[i], tuples[i], sums[i] = ints_in([end], "slide_counts")[0], counts, values
        self._held = len(slides)
        self._start = int(ints_in([data["start"]], "start")[0])
        self._estimate()
        super().load_state(data)
        self._measure()
