"""Sliding-window Flajolet-Martin sketches in numpy arrays, and their per-slide steps, compiled.

Arrays (one sketch per stream, ``B`` bitmaps of ``L <= 63`` positions):

* ``stamps`` (int64, ``d x B x L``): the latest expiry key that set each position (``NEVER``:
  none), Datar et al.'s timestamp per bit;
* ``salts`` (uint64, ``B``): the salt of each bitmap's hash;
* ``words`` (int64, ``d x B``): per stream and bitmap, the positions set within the current
  window as the bits of one word (refreshed once per slide, :func:`restrict`), so a union of
  streams is the OR of their words and ``R_b`` the word's trailing ones;
* ``powers`` (float64, ``B L + 1``): ``2^{r / B} / φ`` for every total ``r`` of the ``R_b``,
  computed once in Python (``libm``'s ``pow``, as the plain-Python sketches compute it: the
  compiled ``**`` differs from it in the last bit for about one exponent in a thousand), so an
  estimate is a table look-up of ``Σ_b R_b``.

An id's position in bitmap ``b`` is ``ρ(h_b(id))``, the lowest 1-bit of its salted SplitMix64
hash (``L - 1`` at most, and for a zero hash).
"""

from __future__ import annotations

import numpy as np
from numba import njit

NEVER = np.iinfo(np.int64).min
"""Timestamp of a position never set."""


@njit(cache=True)
def mix64(x):
    """SplitMix64's finaliser of a ``uint64`` (``O(1)``)."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@njit(cache=True)
def salts(bitmaps):
    """The hash salt of each of ``bitmaps`` bitmaps (``O(B)``)."""
    out = np.empty(bitmaps, np.uint64)
    for b in range(bitmaps):
        out[b] = mix64(np.uint64(b + 1) * np.uint64(0x632BE59BD9B4E019))
    return out


@njit(cache=True)
def position(hashed, bits):
    """``ρ``: the lowest 1-bit of ``hashed``, at most ``bits - 1`` (``O(ρ)``)."""
    p = 0
    while p < bits - 1 and not (hashed >> np.uint64(p)) & np.uint64(1):
        p += 1
    return p


@njit(cache=True)
def add(stamps, salt, stream, ids, keys):
    """Each id sets its position in every bitmap of its stream's sketch to its key, unless a
    later key holds it (``O(m B)``; ``ids`` as ``uint64``)."""
    bitmaps, bits = stamps.shape[1], stamps.shape[2]
    for j in range(len(ids)):
        for b in range(bitmaps):
            p = position(mix64(ids[j] ^ salt[b]), bits)
            if keys[j] > stamps[stream[j], b, p]:
                stamps[stream[j], b, p] = keys[j]


@njit(cache=True)
def restrict(stamps, start, words):
    """``words``: the positions whose key is at least ``start`` (``O(d B L)``)."""
    streams, bitmaps, bits = stamps.shape
    for s in range(streams):
        for b in range(bitmaps):
            word = 0
            for p in range(bits):
                if stamps[s, b, p] >= start:
                    word |= 1 << p
            words[s, b] = word


@njit(cache=True)
def trailing_ones(word, bits):
    """``R``: the lowest position not set in ``word``, ``bits`` if all are (``O(R)``)."""
    r = 0
    while r < bits and (word >> r) & 1:
        r += 1
    return r


@njit(cache=True)
def union(words, powers, bits, streams):
    """Estimated distinct ids in the union of ``streams`` within the window (``O(B |streams|)``)."""
    total = 0
    for b in range(words.shape[1]):
        word = 0
        for s in streams:
            word |= words[s, b]
        total += trailing_ones(word, bits)
    return powers[total]


@njit(cache=True)
def intersection(words, powers, bits, streams):
    """Estimated ids in every one of ``streams`` by inclusion-exclusion over the unions of
    their non-empty subsets, added in the order of the subsets' bit masks over ``streams``
    (``O(2^n B)`` for ``n`` streams: each subset's word is its smaller subset's OR one stream)."""
    n = len(streams)
    subsets = 1 << n
    word = np.zeros(subsets, np.int64)
    totals = np.zeros(subsets, np.int64)
    for b in range(words.shape[1]):
        for subset in range(1, subsets):
            lowest = subset & -subset
            i = 0
            while lowest >> i != 1:
                i += 1
            word[subset] = word[subset ^ lowest] | words[streams[i], b]
            totals[subset] += trailing_ones(word[subset], bits)
    estimate = 0.0
    for subset in range(1, subsets):
        members = 0
        for i in range(n):
            members += subset >> i & 1
        if members % 2:
            estimate += powers[totals[subset]]
        else:
            estimate += -powers[totals[subset]]
    return estimate


@njit(cache=True)
def probability_row(words, powers, bits, mask, row):
    """``row[y] = Pr(X_y = 1 | X_I = 1)`` for the streams ``I`` of ``mask`` and every ``y``
    outside it (0 inside): ``|⋈_{I ∪ {y}}| / |⋈_I|`` clipped to ``[0, 1]``, 1 when ``|⋈_I|``
    is not positive (``O(d 2^{|I|+1} B)``)."""
    d = words.shape[0]
    seen = np.empty(d, np.int64)
    n = 0
    for s in range(d):
        if mask >> s & 1:
            seen[n] = s
            n += 1
    given = intersection(words, powers, bits, seen[:n])
    for y in range(d):
        if mask >> y & 1:
            row[y] = 0.0
            continue
        seen[n] = y
        both = intersection(words, powers, bits, seen[:n + 1])
        if given <= 0:
            row[y] = 1.0
        else:
            ratio = both / given
            ratio = ratio if ratio > 0.0 else 0.0
            row[y] = ratio if ratio < 1.0 else 1.0
