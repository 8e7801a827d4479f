"""Sliding-window Flajolet-Martin sketches: distinct counts of unions and intersections.

One sketch per stream: ``B`` bitmaps of ``L`` bits, each bitmap with its own hash function.
An id sets, in every bitmap ``b``, the bit ``ρ(h_b(id))`` (the position of the lowest 1-bit of
its 64-bit hash).  Instead of a bit, each position stores the latest expiry key (``seq`` or
``t``) that set it (Datar et al.'s timestamp per bit), so a bit counts only while that key is
in the window.  ``R_b`` is the lowest position not set within the window; the number of
distinct ids is ``2^{mean_b R_b} / φ`` (``φ = 0.77351``), the bitmaps' estimates averaged in
the exponent.  The sketch of a union of streams is the position-wise maximum of their
timestamps (OR of bits); an intersection comes from unions by inclusion-exclusion,
``|∩_S| = Σ_{∅≠T⊆S} (-1)^{|T|+1} |∪_T|``.

The arrays and the steps over them are compiled kernels (:mod:`engine.kernels.fmsketch`).
Memory: ``d · B · L`` timestamps (8 bytes each), ``B`` hash salts, ``d · B`` words of the
current window's bits and ``B L + 1`` estimates (one per total of the ``R_b``).
"""

from __future__ import annotations

import contextlib

import numpy as np
from numba.core import config

from .kernels import fmsketch as kernel
from .kernels.fmsketch import NEVER

PHI = 0.77351
"""Flajolet and Martin's correction factor."""

__all__ = ["NEVER", "PHI", "SlidingSketches"]


def _wrapping_hash():
    """Where the hash's uint64 arithmetic wraps silently: always in the compiled kernels; in
    plain Python (``NUMBA_DISABLE_JIT=1``) numpy warns on the wrap unless told not to.  The
    compiled path enters no ``np.errstate`` (about 1.5 us per call)."""
    return np.errstate(over="ignore") if config.DISABLE_JIT else contextlib.nullcontext()


class SlidingSketches:
    """Per-stream sliding-window FM sketches over object ids.

    Estimates are of the window set by :meth:`restrict` (the ids whose key is at least its
    ``start``).

    Parameters
    ----------
    streams
        Number of streams ``d``.
    bitmaps
        Bitmaps ``B`` per sketch (independent hash functions, estimates averaged).
    bits
        Bits ``L`` per bitmap; estimates stay below ``2^L``.

    Examples
    --------
    >>> sketches = SlidingSketches(2, bitmaps=64)
    >>> sketches.add(np.zeros(2000, np.int64), np.arange(2000), np.arange(2000))
    >>> sketches.add(np.ones(1000, np.int64), np.arange(1000, 2000), np.arange(2000, 3000))
    >>> sketches.restrict(0)
    >>> 700 < sketches.intersection([0, 1]) < 1400
    True
    >>> sketches.restrict(2000)
    >>> sketches.intersection([0, 1]) < 300
    True
    """

    def __init__(self, streams: int, bitmaps: int = 64, bits: int = 32) -> None:
        if bitmaps < 1 or not 1 <= bits <= 63:
            raise ValueError(f"sketches need bitmaps >= 1 and 1 <= bits <= 63, got {bitmaps}, {bits}")
        self.bits = bits
        self.stamps = np.full((streams, bitmaps, bits), NEVER, np.int64)
        self.words = np.zeros((streams, bitmaps), np.int64)
        with _wrapping_hash():
            self._salts = kernel.salts(bitmaps)
        # 2 ** mean as numpy's scalar power computes it (libm's pow), once per total
        self._powers = np.array([float(2.0 ** np.float64(total / bitmaps) / PHI)
                                 for total in range(bitmaps * bits + 1)])

    def arrays(self) -> tuple[np.ndarray, ...]:
        """Every array the sketches hold (for the owner's measured bytes)."""
        return self.stamps, self.words, self._salts, self._powers

    def estimates(self) -> tuple[np.ndarray, int]:
        """``powers`` and ``L``, what the kernels need besides ``words`` to estimate."""
        return self._powers, self.bits

    def add(self, stream: np.ndarray, ids: np.ndarray, keys: np.ndarray) -> None:
        """Record that each id occurred in its stream at its key (``O(m B)``, one kernel call)."""
        with _wrapping_hash():
            kernel.add(self.stamps, self._salts, np.asarray(stream, np.int64),
                       np.ascontiguousarray(ids, np.int64).view(np.uint64), np.asarray(keys, np.int64))

    def restrict(self, start: int) -> None:
        """Estimate from now on the ids with a key ``>= start`` (``O(d B L)``)."""
        kernel.restrict(self.stamps, start, self.words)

    def union(self, streams) -> float:
        """Estimated distinct ids in the union of ``streams`` (``O(B |streams|)``)."""
        return float(kernel.union(self.words, self._powers, self.bits, np.asarray(streams, np.int64)))

    def intersection(self, streams) -> float:
        """Estimated ids present in every one of ``streams`` (inclusion-exclusion over unions,
        ``O(2^n B)`` for ``n`` streams)."""
        return float(kernel.intersection(self.words, self._powers, self.bits, np.asarray(streams, np.int64)))

    def probability_row(self, mask: int, row: np.ndarray) -> None:
        """``row[y]``: estimated ``Pr(X_y = 1 | X_I = 1)`` for the streams ``I`` of ``mask``, 0
        for ``y`` in ``I`` (``O(d 2^{|I|+1} B)``, one kernel call)."""
        kernel.probability_row(self.words, self._powers, self.bits, mask, row)
