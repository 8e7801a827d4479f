"""Kernels of the one-pass k-skyband with dominance counters (SAP paper, Section 2).

The candidates are five columns sorted best first by ``(score, seq)``: score, seq, id, t and
the dominance counter, the number of candidates that rank above the candidate and expire no
earlier.  Used by the k-skyband competitor and by SMA's skyband.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _worse(index_a, index_b, score, seq):
    return score[index_a] < score[index_b] or (score[index_a] == score[index_b] and seq[index_a] < seq[index_b])


@njit(cache=True)
def _sift_down(items, counts, size, i, score, seq):
    while True:
        child = 2 * i + 1
        if child >= size:
            return
        if child + 1 < size and _worse(items[child + 1], items[child], score, seq):
            child += 1
        if not _worse(items[child], items[i], score, seq):
            return
        items[i], items[child] = items[child], items[i]
        counts[i], counts[child] = counts[child], counts[i]
        i = child


@njit(cache=True)
def _sort_best_first(items, counts, score, seq):
    """Heapsort the indices ``items`` (and ``counts`` alongside) best first by ``(score, seq)``
    of the objects they index (``O(m log m)``)."""
    m = len(items)
    for i in range(m // 2 - 1, -1, -1):
        _sift_down(items, counts, m, i, score, seq)
    for last in range(m - 1, 0, -1):
        items[0], items[last] = items[last], items[0]
        counts[0], counts[last] = counts[last], counts[0]
        _sift_down(items, counts, last, 0, score, seq)


@njit(cache=True)
def insert_arrivals(score, seq, ids, t, count, size, k, floor, new_score, new_seq, new_ids, new_t):
    """Add one slide's arrivals scoring at least ``floor`` (arrival order, all newer than
    every candidate); returns ``(size, dropped, added)``.

    The result is that of adding them one at a time: each arrival enters with counter 0 and
    dominates the candidates scoring at most its score (equal score: the newer ranks first),
    whose counters rise by one; those reaching ``k`` leave.  Computed in three steps:

    1. the slide's own k-skyband, newest first, with the ``k`` best scores seen so far in an
       ascending array: an arrival survives iff it beats the smallest of them (or fewer than
       ``k`` were seen), and its counter is the number of them scoring at least as much;
    2. each candidate's counter rises by the number of surviving arrivals scoring at least as
       much, and candidates reaching ``k`` leave;
    3. the survivors, sorted best first, are merged in (before candidates of equal score).

    Counting only the survivors is exact: an arrival dropped within its slide has ``k``
    newer arrivals scoring at least as much, which dominate whatever it dominates.
    ``O(m + S (log S + k) + C)`` for ``m`` arrivals, ``S`` survivors and ``C`` candidates.
    The columns must have room for ``size + len(new_score)`` rows.
    """
    m = len(new_score)
    best = np.empty(min(k, m), np.float64)
    seen = 0
    kept = np.empty(m, np.int64)
    kept_count = np.empty(m, np.int64)
    survivors = 0
    added = 0
    for i in range(m - 1, -1, -1):
        value = new_score[i]
        if value < floor:
            continue
        added += 1
        if seen == k and not value > best[0]:
            continue
        lo, hi = 0, seen
        while lo < hi:
            mid = (lo + hi) >> 1
            if best[mid] < value:
                lo = mid + 1
            else:
                hi = mid
        kept[survivors] = i
        kept_count[survivors] = seen - lo
        survivors += 1
        if seen < k:
            for j in range(seen, lo, -1):
                best[j] = best[j - 1]
            best[lo] = value
            seen += 1
        else:
            for j in range(lo - 1):
                best[j] = best[j + 1]
            best[lo - 1] = value
    dropped = added - survivors
    if survivors == 0:
        return size, dropped, added
    arriving, arriving_count = kept[:survivors], kept_count[:survivors]
    _sort_best_first(arriving, arriving_count, new_score, new_seq)
    above = 0
    remaining = 0
    for j in range(size):
        while above < survivors and new_score[arriving[above]] >= score[j]:
            above += 1
        raised = count[j] + above
        if raised < k:
            score[remaining] = score[j]
            seq[remaining] = seq[j]
            ids[remaining] = ids[j]
            t[remaining] = t[j]
            count[remaining] = raised
            remaining += 1
        else:
            dropped += 1
    member = remaining - 1
    arrival = survivors - 1
    for at in range(remaining + survivors - 1, -1, -1):
        if arrival < 0:
            break
        i = arriving[arrival]
        if member >= 0 and score[member] <= new_score[i]:
            score[at] = score[member]
            seq[at] = seq[member]
            ids[at] = ids[member]
            t[at] = t[member]
            count[at] = count[member]
            member -= 1
        else:
            score[at] = new_score[i]
            seq[at] = new_seq[i]
            ids[at] = new_ids[i]
            t[at] = new_t[i]
            count[at] = arriving_count[arrival]
            arrival -= 1
    return remaining + survivors, dropped, added


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

