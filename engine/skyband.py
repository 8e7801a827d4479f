"""The dominance-counter skyband of k-skyband and SMA (SAP paper, Section 2)."""

from __future__ import annotations

import numpy as np
from sortedcontainers import SortedList

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

    Every object carries the number of objects in the set that dominate it (rank above it and
    are newer).  :meth:`add` takes an arrival that is newer than every member: it dominates
    exactly the members scoring at most its score, which, best first, are a suffix of the
    set; their counters rise by one and those reaching ``k`` leave.  The set therefore stays
    the k-skyband of what was added (minus expired objects).

    Storage: arrays of negated scores, an ``(m, 4)`` block of seq, expiry key, id and t, the
    expiry keys again (contiguous, for the expiry scan) and the counters, with a live range
    ``[head, tail)``.

    Examples
    --------
    >>> band = DominanceSet(k=2)
    >>> for seq, value in enumerate([3.0, 1.0, 2.0, 5.0]):
    ...     band.add(value, seq, seq, 100 + seq, seq)
    >>> band.scores().tolist(), band.counts().tolist(), band.dropped
    ([5.0, 3.0, 2.0], [0, 1, 1], 1)
    """

    _COLUMNS = ("_neg", "_obj", "_key", "_cnt")

    def __init__(self, k: int, capacity: int = 64) -> None:
        self.k = k
        self._neg = np.empty(capacity, np.float64)
        self._obj = np.empty((capacity, 4), np.int64)
        self._key = np.empty(capacity, np.int64)
        self._cnt = np.empty(capacity, np.int64)
        self._h = 0
        self._t = 0
        self.dropped = 0

    def __len__(self) -> int:
        return self._t - self._h

    def _room(self, extra: int) -> None:
        live = len(self)
        if self._t + extra <= len(self._neg):
            return
        capacity = len(self._neg)
        if live + extra > capacity // 2:
            capacity = max(2 * (live + extra), capacity)
        for name in self._COLUMNS:
            old = getattr(self, name)
            fresh = np.empty((capacity, *old.shape[1:]), old.dtype)
            fresh[:live] = old[self._h:self._t]
            setattr(self, name, fresh)
        self._h, self._t = 0, live

    def add(self, value: float, seq: int, key: int, oid: int, t: int) -> None:
        """Insert an arrival newer than every member (``O(log m + m_d)``, ``m_d`` dominated)."""
        self._room(1)
        h, end = self._h, self._t
        neg = self._neg
        i = h + int(np.searchsorted(neg[h:end], -value, "left"))
        if i < end:
            cnt = self._cnt[i:end]
            cnt += 1
            if cnt.max() >= self.k:
                keep = cnt < self.k
                kept = int(np.count_nonzero(keep))
                self.dropped += end - i - kept
                for col in (neg, self._obj, self._key, self._cnt):
                    col[i + 1:i + 1 + kept] = col[i:end][keep]
                end = i + 1 + kept
            else:
                for col in (neg, self._obj, self._key, self._cnt):
                    col[i + 1:end + 1] = col[i:end]
                end += 1
        else:
            end += 1
        neg[i] = -value
        self._obj[i] = (seq, key, oid, t)
        self._key[i] = key
        self._cnt[i] = 0
        self._t = end

    def expire(self, start: int) -> int:
        """Drop the members whose expiry key is below ``start``; returns how many.

        One vectorised pass over the keys (``O(m)``), then the members are packed towards
        whichever end of the live range is nearer to the expired ones, so the copy is
        ``O(min(last expired, m - first expired))``.
        """
        h, end = self._h, self._t
        keys = self._key[h:end]
        dead = np.flatnonzero(keys < start)
        gone = len(dead)
        if gone == 0:
            return 0
        first, last = h + int(dead[0]), h + int(dead[-1])
        if last + 1 - h <= end - first:
            alive = keys[:last + 1 - h] >= start
            kept = last + 1 - h - gone
            for col in self._COLUMNS:
                array = getattr(self, col)
                array[last + 1 - kept:last + 1] = array[h:last + 1][alive]
            self._h = last + 1 - kept
        else:
            alive = keys[first - h:] >= start
            kept = end - first - gone
            for col in self._COLUMNS:
                array = getattr(self, col)
                array[first:first + kept] = array[first:end][alive]
            self._t = first + kept
        return gone

    def truncate(self, m: int) -> None:
        """Keep only the best ``m`` members (``O(1)``)."""
        self._t = min(self._t, self._h + m)

    def load(self, scores, obj, counts) -> None:
        """Replace the members by ``scores``, ``obj`` rows ``(seq, key, id, t)`` and ``counts``,
        given best first (``O(m)``)."""
        m = len(scores)
        self._h = self._t = 0
        self._room(m)
        self._neg[:m] = -np.asarray(scores, np.float64)
        self._obj[:m] = np.asarray(obj, np.int64).reshape(m, 4)
        self._key[:m] = self._obj[:m, 1]
        self._cnt[:m] = counts
        self._t = m

    def scores(self, m: int | None = None) -> np.ndarray:
        """Scores of the best ``m`` (default all) members, best first (a copy)."""
        end = self._t if m is None else min(self._t, self._h + m)
        return -self._neg[self._h:end]

    def members(self, m: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(scores, rows)`` of the best ``m`` members; rows are ``(seq, key, id, t)``."""
        end = self._t if m is None else min(self._t, self._h + m)
        return -self._neg[self._h:end], self._obj[self._h:end]

    def counts(self) -> np.ndarray:
        """Dominance counters, best first (a view)."""
        return self._cnt[self._h:self._t]

    def check(self, start: int | None = None) -> None:
        """Assert order, counters and expiry (``O(m log m)``)."""
        neg, obj, cnt = self._neg[self._h:self._t], self._obj[self._h:self._t], self._cnt[self._h:self._t]
        seq = obj[:, 0]
        assert len(np.unique(seq)) == len(seq), "duplicate objects in the skyband"
        order = np.lexsort((-seq, neg))
        assert np.array_equal(order, np.arange(len(seq))), "skyband not sorted best first"
        assert np.all(cnt >= 0) and np.all(cnt < self.k), "counter outside 0..k-1"
        assert np.array_equal(cnt, dominance_counts(seq)), "dominance counters are wrong"
        if start is not None and len(seq):
            assert obj[:, 1].min() >= start, "expired object in the skyband"
        assert np.array_equal(obj[:, 1], self._key[self._h:self._t]), "expiry keys disagree"
