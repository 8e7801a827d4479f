"""The approximate algorithm's per-slide statistics, compiled (Haghani, Michel, Aberer, CIKM 2009,
Sections 4 and 5).

Once per slide, before EAA's slide kernel reads them: the slide's counters join the window's,
and the estimates of the window are refreshed.  Arrays:

* the **slide counters**, one row per slide of the window, oldest first (the first ``held``
  rows): ``ends`` (int64: the slide's end), ``tuples`` (int64, ``slides x d``: its tuples per
  stream) and ``sums`` (float64, ``slides x d``: its values per stream, added in arrival order
  as ``np.bincount`` adds them);
* the estimates the bound reads: ``repeats`` (``m̂_y``, int64) and ``values`` (``v̂_y``).

The sketches' arrays are those of :mod:`engine.kernels.fmsketch`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .fmsketch import restrict, union


@njit(cache=True)
def count_slide(ends, tuples, sums, held, end, slide, start, stream, value):
    """The slide ending at ``end`` appended to the counters unless it is empty, then the slides
    that began before ``start`` dropped from the front; returns how many are held
    (``O(m + slides · d)``; the arrays have room for one more slide).  An empty slide (a time
    window's) adds nothing to any total, so the rows stay as many as the window's non-empty
    slides: at most its tuples, however many slides ``n / s`` is."""
    if len(stream):
        ends[held] = end
        tuples[held] = 0
        sums[held] = 0.0
        for j in range(len(stream)):
            tuples[held, stream[j]] += 1
            sums[held, stream[j]] += value[j]
        held += 1
    gone = 0
    while gone < held and ends[gone] - slide < start:
        gone += 1
    for i in range(gone, held):
        ends[i - gone] = ends[i]
        tuples[i - gone] = tuples[i]
        sums[i - gone] = sums[i]
    return held - gone


@njit(cache=True)
def estimate(stamps, words, powers, bits, start, tuples, sums, held, fixed_repeats, literal, repeats, values):
    """The window's estimates: the sketches restricted to keys ``>= start``; per stream ``y``
    ``v̂_y`` = its values' mean (sums added oldest slide first, capped at 1; 1 with no tuple or
    ``literal``) and ``m̂_y`` = ``fixed_repeats``, or its tuples over its distinct ids
    rounded half to even, at least 1 (1 with no tuple) (``O(d (slides + B) + d B L)``)."""
    restrict(stamps, start, words)
    streams = np.arange(len(repeats))
    for y in range(len(repeats)):
        n = 0
        total = 0.0
        for i in range(held):
            n += tuples[i, y]
            total += sums[i, y]
        if literal or n == 0:
            values[y] = 1.0
        else:
            mean = total / n
            values[y] = mean if mean < 1.0 else 1.0
        if fixed_repeats:
            repeats[y] = fixed_repeats
        elif n == 0:
            repeats[y] = 1
        else:
            repeats[y] = max(1, int(np.rint(n / union(words, powers, bits, streams[y:y + 1]))))
