"""The dominance-counter skyband of k-skyband and SMA (SAP paper, Section 2)."""

from __future__ import annotations

import math
from bisect import bisect_left, insort

import numpy as np
from sortedcontainers import SortedList

from .memory import OBJECT_FIELDS, Footprint, Layout, array_bytes, deep_size

LAYOUT = Layout("dominance skyband", {"member": {**OBJECT_FIELDS, "score": 1, "counter": 1}})
"""One member: id, seq, t, score and its dominance counter (5 words), in k-skyband and SMA."""


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


def slide_skyband(values: list[float], k: int) -> tuple[list[int], list[int]]:
    """The members of one slide's own k-skyband and their counters, newest first.

    ``values`` are the scores of a slide in arrival order.  Arrival ``i`` is dominated by every
    newer arrival scoring at least as much; scanning newest first with the ``k`` best scores
    seen so far (a sorted list), ``i`` survives iff it beats the smallest of them (or fewer
    than ``k`` were seen), and its counter is then the number of them scoring at least as
    much.  ``O(m)`` comparisons plus ``O(log k + k)`` per survivor; plain Python, because
    most arrivals cost one comparison.

    >>> slide_skyband([3.0, 1.0, 2.0, 5.0], k=2)
    ([3, 2, 0], [0, 1, 1])
    """
    m = len(values)
    best: list[float] = []
    kept: list[int] = []
    counts: list[int] = []
    for i in range(m - 1, max(m - 1 - k, -1), -1):  # the k newest always survive
        value = values[i]
        counts.append(len(best) - bisect_left(best, value))
        kept.append(i)
        insort(best, value)
    floor = best[0] if len(best) == k else math.inf
    for i in range(m - 1 - len(kept), -1, -1):
        value = values[i]
        if value > floor:
            counts.append(k - bisect_left(best, value))
            kept.append(i)
            insort(best, value)
            del best[0]
            floor = best[0]
    return kept, counts


class DominanceSet:
    """Objects with dominance counters, sorted best first by ``(score, seq)``.

    Every member carries the number of members that dominate it (rank above it and are
    newer).  :meth:`add` takes one slide of arrivals, all newer than every member: an arrival
    dominates exactly the members scoring at most its score, so a member's counter rises by
    the number of arrivals scoring at least as much, and an arrival's counter is the number
    of newer arrivals scoring at least as much; members and arrivals reaching ``k`` leave.
    This is the state that adding the arrivals one at a time would leave (an arrival that is
    dropped within its slide has ``k`` newer, better arrivals, which dominate whatever it
    dominated), so the set stays the k-skyband of what was added, minus expired objects.

    Storage: five exactly sized arrays (negated score, seq, id, t, counter), replaced on every
    change; the expiry key is the ``seq`` or the ``t`` column (``key``), so the layout is 5
    words per member (``LAYOUT``).

    Examples
    --------
    >>> band = DominanceSet(k=2)
    >>> band.add(np.array([3.0, 1.0, 2.0, 5.0]), np.arange(4), np.arange(100, 104), np.arange(4))
    >>> band.scores().tolist(), band.counts().tolist(), band.dropped
    ([5.0, 3.0, 2.0], [0, 1, 1], 1)
    """

    def __init__(self, k: int, key: str = "seq") -> None:
        if key not in ("seq", "t"):
            raise ValueError(f"key must be 'seq' or 't', got {key!r}")
        self.k = k
        self.key = key
        self._neg = np.empty(0, np.float64)
        self._seq = np.empty(0, np.int64)
        self._ids = np.empty(0, np.int64)
        self._t = np.empty(0, np.int64)
        self._cnt = np.empty(0, np.int64)
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._neg)

    def _columns(self) -> tuple[np.ndarray, ...]:
        return self._neg, self._seq, self._ids, self._t, self._cnt

    def _set(self, columns) -> None:
        self._neg, self._seq, self._ids, self._t, self._cnt = columns

    def add(self, values: np.ndarray, seq: np.ndarray, ids: np.ndarray, t: np.ndarray) -> None:
        """Insert one slide of arrivals (arrival order, newer than every member).

        ``O(m)`` Python comparisons for the slide's own skyband (:func:`slide_skyband`), then
        ``O(C + S log S)`` vectorised to raise, filter and merge, for ``C`` members and ``S``
        surviving arrivals.
        """
        m = len(values)
        if m == 0:
            return
        k = self.k
        kept, counts = slide_skyband(np.asarray(values, np.float64).tolist(), k)
        kept = np.asarray(kept, np.int64)
        new_neg = -np.asarray(values, np.float64)[kept]
        self.dropped += m - len(kept)
        if len(self):
            # A member gains one counter per surviving arrival scoring at least as much.
            ascending = np.sort(new_neg)
            raised = self._cnt + np.searchsorted(ascending, self._neg, "right")
            alive = raised < k
            self.dropped += len(alive) - int(np.count_nonzero(alive))
            old = [column[alive] for column in (self._neg, self._seq, self._ids, self._t)] + [raised[alive]]
        else:
            old = list(self._columns())
        # Arrivals best first: by score descending, newer first among equal scores.
        order = np.lexsort((-np.asarray(seq, np.int64)[kept], new_neg))
        kept = kept[order]
        new = [new_neg[order], np.asarray(seq, np.int64)[kept], np.asarray(ids, np.int64)[kept],
               np.asarray(t, np.int64)[kept], np.asarray(counts, np.int64)[order]]
        if not len(old[0]):
            self._set(new)
            return
        # Newer, so an arrival goes before members with an equal score.
        at = np.searchsorted(old[0], new[0], "left") + np.arange(len(kept))
        is_new = np.zeros(len(old[0]) + len(kept), bool)
        is_new[at] = True
        merged = []
        for before, arriving in zip(old, new):
            column = np.empty(len(is_new), before.dtype)
            column[is_new] = arriving
            column[~is_new] = before
            merged.append(column)
        self._set(merged)

    def expire(self, start: int) -> int:
        """Drop the members whose expiry key is below ``start``; returns how many (``O(C)``)."""
        keys = self._seq if self.key == "seq" else self._t
        alive = keys >= start
        gone = len(alive) - int(np.count_nonzero(alive))
        if gone:
            self._set([column[alive] for column in self._columns()])
        return gone

    def truncate(self, m: int) -> None:
        """Keep only the best ``m`` members (``O(m)``)."""
        if m < len(self):
            self._set([column[:m].copy() for column in self._columns()])

    def load(self, scores, seq, ids, t, counts) -> None:
        """Replace the members, given best first with their counters (``O(m)``)."""
        columns = [-np.asarray(scores, np.float64)] + [np.array(c, np.int64) for c in (seq, ids, t, counts)]
        if len({len(c) for c in columns}) != 1 or any(c.ndim != 1 for c in columns):
            raise ValueError("skyband columns have different lengths")
        self._set(columns)

    def scores(self, m: int | None = None) -> np.ndarray:
        """Scores of the best ``m`` (default all) members, best first (a new array)."""
        return -self._neg[:m]

    def members(self, m: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(scores, seq, ids, t)`` of the best ``m`` (default all) members, best first (copies)."""
        return -self._neg[:m], self._seq[:m].copy(), self._ids[:m].copy(), self._t[:m].copy()

    def counts(self) -> np.ndarray:
        """Dominance counters, best first (read only: a view)."""
        return self._cnt[:]

    def footprint(self) -> Footprint:
        """Modelled and measured memory (``O(1)``)."""
        columns = self._columns()
        measured = array_bytes(columns) + deep_size(self, exclude=columns)
        return Footprint(LAYOUT, {"member": len(self)}, measured, 0, (self,))

    def check(self, start: int | None = None) -> None:
        """Assert order, counters and expiry (``O(m log m)``)."""
        neg, seq, cnt = self._neg, self._seq, self._cnt
        assert len({len(c) for c in self._columns()}) == 1, "skyband columns differ in length"
        assert len(np.unique(seq)) == len(seq), "duplicate objects in the skyband"
        order = np.lexsort((-seq, neg))
        assert np.array_equal(order, np.arange(len(seq))), "skyband not sorted best first"
        assert np.all(cnt >= 0) and np.all(cnt < self.k), "counter outside 0..k-1"
        assert np.array_equal(cnt, dominance_counts(seq)), "dominance counters are wrong"
        if start is not None and len(seq):
            keys = seq if self.key == "seq" else self._t
            assert keys.min() >= start, "expired object in the skyband"
