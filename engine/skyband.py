"""The dominance-counter skyband of k-skyband and SMA (SAP paper, Section 2)."""

from __future__ import annotations

import math
import sys

import numpy as np
from sortedcontainers import SortedList

from .kernels import skyband as kernel
from .memory import OBJECT_FIELDS, WORD, Footprint, Layout, attribute_bytes, deep_size

LAYOUT = Layout("dominance skyband", {"member": {**OBJECT_FIELDS, "score": 1, "counter": 1}})
"""One member: id, seq, t, score and its dominance counter (5 words), in k-skyband and SMA."""

MEMBER_BYTES = LAYOUT.bytes(member=1)
"""``LAYOUT``'s price of one member."""

INITIAL_CAPACITY = 64
"""Rows allocated at first; the columns double when full."""


def fixed_bytes(algorithm, structures: tuple) -> int:
    """Measured bytes of an algorithm's attributes other than its ``structures`` (counters,
    marks, an empty answer), walked once when it is reset; the answer adds ``ANSWER_ROW_BYTES`` a row.

    Used by k-skyband, SMA and TMA, whose ``memory()`` is then ``O(1)``.
    """
    return attribute_bytes(algorithm, exclude=(algorithm.q, algorithm.params, *structures))


ANSWER_ROW_BYTES = 3 * WORD
"""The data of one row of a cached answer: id, score and seq."""


def dominance_counts(seq: np.ndarray) -> np.ndarray:
    """For objects listed best first, how many objects listed before each one are newer.

    Listed best first by ``(score, seq)``, object ``j`` before ``i`` ranks above ``i``; if it is
    also newer (larger ``seq``) it dominates ``i``.  ``O(m^2)`` vectorised for ``m <= 256``,
    ``O(m log m)`` above.

    >>> dominance_counts(np.array([5, 9, 2, 7])).tolist()
    [0, 0, 2, 1]
    """
    seq = np.asarray(seq, np.int64)
    m = len(seq)
    if m <= 256:
        return np.tril(seq[None, :] > seq[:, None], -1).sum(axis=1).astype(np.int64)
    seen = SortedList()
    out = np.empty(m, np.int64)
    for i, value in enumerate(seq.tolist()):
        out[i] = len(seen) - seen.bisect_right(value)
        seen.add(value)
    return out


class DominanceSet:
    """Objects with dominance counters, sorted best first by ``(score, seq)``.

    Every member carries the number of members that dominate it (rank above it and are
    newer).  :meth:`add` takes arrivals one at a time in arrival order, each newer than every
    member (:func:`engine.kernels.skyband.insert_arrivals`): an arrival dominates exactly the
    members scoring at most its score, whose counters rise by one; members reaching ``k``
    leave, and the arrival enters with counter 0.  The set stays the k-skyband of what was
    added, minus expired objects.

    Storage: five columns (score, seq, id, t, counter) of the same capacity, the members in
    the first ``len`` rows; the capacity doubles when full.  The expiry key is the ``seq`` or
    the ``t`` column (``key``), so the layout is 5 words per member (``LAYOUT``).

    Tallies kept as the set changes, read by the algorithms' ``stats()`` in ``O(1)``: ``size``
    (members), ``dropped`` (members that reached ``k``) and ``measured`` (the columns at
    capacity and the set object, in bytes).

    Examples
    --------
    >>> band = DominanceSet(k=2)
    >>> band.add(np.array([3.0, 1.0, 2.0, 5.0]), np.arange(4), np.arange(100, 104), np.arange(4))
    4
    >>> band.scores().tolist(), band.counts().tolist(), band.dropped
    ([5.0, 3.0, 2.0], [0, 1, 1], 1)
    """

    def __init__(self, k: int, key: str = "seq") -> None:
        if key not in ("seq", "t"):
            raise ValueError(f"key must be 'seq' or 't', got {key!r}")
        self.k = k
        self.key = key
        self.dropped = 0
        self.size = 0
        self._overhead = 0
        self._allocate(INITIAL_CAPACITY)
        self._overhead = deep_size(self, exclude=self._columns()) + sys.getsizeof(2 ** 40) * 2
        self.measured += self._overhead

    def __len__(self) -> int:
        return self.size

    def _columns(self) -> tuple[np.ndarray, ...]:
        return self._score, self._seq, self._ids, self._t, self._count

    def _allocate(self, capacity: int) -> None:
        """Columns of ``capacity`` rows, the members copied over (``O(capacity)``)."""
        size = self.size
        old = self._columns() if size else None
        self._score = np.empty(capacity, np.float64)
        self._seq = np.empty(capacity, np.int64)
        self._ids = np.empty(capacity, np.int64)
        self._t = np.empty(capacity, np.int64)
        self._count = np.empty(capacity, np.int64)
        if old is not None:
            for fresh, column in zip(self._columns(), old):
                fresh[:size] = column[:size]
        self.measured = self._overhead + sum(sys.getsizeof(column) for column in self._columns())

    def _reserve(self, rows: int) -> None:
        needed = self.size + rows
        if needed > len(self._score):
            self._allocate(max(needed, 2 * len(self._score)))

    def add(self, values: np.ndarray, seq: np.ndarray, ids: np.ndarray, t: np.ndarray,
            floor: float = -math.inf) -> int:
        """Insert the arrivals scoring at least ``floor`` in arrival order, all newer than every
        member; returns how many.

        ``O(log C + D)`` compiled per arrival, ``D`` the members it dominates.
        """
        m = len(values)
        if m == 0:
            return 0
        self._reserve(m)
        self.size, dropped, added = kernel.insert_arrivals(
            *self._columns(), self.size, self.k, floor, np.asarray(values, np.float64),
            np.asarray(seq, np.int64), np.asarray(ids, np.int64), np.asarray(t, np.int64))
        self.dropped += dropped
        return added

    def expire(self, start: int) -> int:
        """Drop the members whose expiry key is below ``start``; returns how many (``O(C)``)."""
        key = self._seq if self.key == "seq" else self._t
        size = kernel.expire(*self._columns(), self.size, key, start)
        gone = self.size - size
        self.size = size
        return gone

    def truncate(self, m: int) -> None:
        """Keep only the best ``m`` members (``O(1)``)."""
        self.size = min(self.size, m)

    @property
    def capacity(self) -> int:
        """Rows of the columns (``O(1)``)."""
        return len(self._score)

    def load(self, scores, seq, ids, t, counts, capacity: int | None = None) -> None:
        """Replace the members, given best first with their counters, in columns of ``capacity``
        rows (a saved :attr:`capacity`, so that the set grows and measures as the saved one;
        ``None``: room for the members) (``O(m + capacity)``)."""
        columns = [np.asarray(scores, np.float64)] + [np.asarray(c, np.int64) for c in (seq, ids, t, counts)]
        if len({len(c) for c in columns}) != 1 or any(c.ndim != 1 for c in columns):
            raise ValueError("skyband columns have different lengths")
        m = len(columns[0])
        if capacity is not None and capacity < m:
            raise ValueError(f"capacity: {capacity} rows cannot hold {m} skyband members")
        self.size = 0
        if capacity is not None:
            self._allocate(capacity)
        self._reserve(m)
        for target, column in zip(self._columns(), columns):
            target[:m] = column
        self.size = m

    def scores(self, m: int | None = None) -> np.ndarray:
        """Scores of the best ``m`` (default all) members, best first (a copy)."""
        return self._score[:self.size if m is None else min(m, self.size)].copy()

    def members(self, m: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(scores, seq, ids, t)`` of the best ``m`` (default all) members, best first (copies)."""
        top = self.size if m is None else min(m, self.size)
        return self._score[:top].copy(), self._seq[:top].copy(), self._ids[:top].copy(), self._t[:top].copy()

    def counts(self) -> np.ndarray:
        """Dominance counters, best first (a copy)."""
        return self._count[:self.size].copy()

    def footprint(self) -> Footprint:
        """Modelled and measured memory (``O(1)``): the columns at capacity and the object."""
        return Footprint(LAYOUT, {"member": self.size}, self.measured, 0, (self,))

    def check(self, start: int | None = None) -> None:
        """Assert order, counters and expiry (``O(m log m)``)."""
        size = self.size
        assert 0 <= size <= len(self._score), "size outside the columns"
        assert len({len(c) for c in self._columns()}) == 1, "skyband columns differ in length"
        score, seq, cnt = self._score[:size], self._seq[:size], self._count[:size]
        assert len(np.unique(seq)) == len(seq), "duplicate objects in the skyband"
        order = np.lexsort((-seq, -score))
        assert np.array_equal(order, np.arange(size)), "skyband not sorted best first"
        assert np.all(cnt >= 0) and np.all(cnt < self.k), "counter outside 0..k-1"
        assert np.array_equal(cnt, dominance_counts(seq)), "dominance counters are wrong"
        if start is not None and size:
            keys = seq if self.key == "seq" else self._t[:size]
            assert keys.min() >= start, "expired object in the skyband"
