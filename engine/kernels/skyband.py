"""Kernels of the one-pass k-skyband with dominance counters (SAP paper, Section 2).

The candidates are five columns sorted best first by ``(score, seq)``: score, seq, id, t and
the dominance counter, the number of candidates that rank above the candidate and expire no
earlier.  Used by the k-skyband competitor and by SMA's skyband.
"""

from __future__ import annotations

from numba import njit


@njit(cache=True)
def insert_arrivals(score, seq, ids, t, count, size, k, floor, new_score, new_seq, new_ids, new_t):
    """Add the arrivals scoring at least ``floor`` one at a time, in arrival order; returns
    ``(size, dropped, added)``.

    An arrival is newer than every candidate, so it dominates exactly the candidates scoring
    at most its score, the suffix from its insertion point (equal score: the newer ranks
    first).  Their counters rise by one and those reaching ``k`` leave; the arrival enters at
    the insertion point with counter 0.  ``O(log C + D)`` per arrival, ``D`` candidates
    dominated.  The columns must have room for ``size + len(new_score)`` rows.
    """
    dropped = 0
    added = 0
    for i in range(len(new_score)):
        value = new_score[i]
        if value < floor:
            continue
        added += 1
        lo, hi = 0, size
        while lo < hi:
            mid = (lo + hi) >> 1
            if score[mid] > value:
                lo = mid + 1
            else:
                hi = mid
        at = lo
        kept = at
        for j in range(at, size):
            raised = count[j] + 1
            if raised < k:
                score[kept] = score[j]
                seq[kept] = seq[j]
                ids[kept] = ids[j]
                t[kept] = t[j]
                count[kept] = raised
                kept += 1
            else:
                dropped += 1
        for j in range(kept, at, -1):
            score[j] = score[j - 1]
            seq[j] = seq[j - 1]
            ids[j] = ids[j - 1]
            t[j] = t[j - 1]
            count[j] = count[j - 1]
        score[at] = value
        seq[at] = new_seq[i]
        ids[at] = new_ids[i]
        t[at] = new_t[i]
        count[at] = 0
        size = kept + 1
    return size, dropped, added


@njit(cache=True)
def expire(score, seq, ids, t, count, size, key, start):
    """Remove the candidates whose expiry key (the ``seq`` or ``t`` column) is below ``start``,
    keeping the order; returns the new size (``O(C)``)."""
    kept = 0
    for j in range(size):
        if key[j] >= start:
            if kept != j:
                score[kept] = score[j]
                seq[kept] = seq[j]
                ids[kept] = ids[j]
                t[kept] = t[j]
                count[kept] = count[j]
            kept += 1
    return kept

