"""Kernel of TMA's arrival step (Mouratidis, Bakiras, Papadias, SIGMOD 2006, Section 3)."""

from __future__ import annotations

from numba import njit


@njit(cache=True)
def enter_result(res_pos, res_score, res_seq, size, k, first, m, mask, score, seq, cells, bound):
    """Process the ``m`` arrivals at positions ``first ...`` against the result ``R``.

    ``R`` is ``res_*[:size]``, best first.  While ``R`` holds fewer than ``k`` objects (the
    window holds fewer) every arrival enters.  Otherwise an arrival in a cell outside the
    influence region (bound below the k-th score) is only stored; one inside it that beats the
    k-th object (equal score: the newer wins) replaces it, inserted in rank order.  Returns
    ``(size, arrivals in the influence region, arrivals entered)``; ``O(k)`` per entry.
    """
    region = 0
    entered = 0
    for pos in range(first, first + m):
        row = pos & mask
        value = score[row]
        if size == k:
            kth = res_score[size - 1]
            if bound[cells[row]] < kth:
                continue
            region += 1
            if value < kth:
                continue
            size -= 1
        else:
            region += 1
        at = size
        while at > 0 and res_score[at - 1] <= value:
            res_pos[at] = res_pos[at - 1]
            res_score[at] = res_score[at - 1]
            res_seq[at] = res_seq[at - 1]
            at -= 1
        res_pos[at], res_score[at], res_seq[at] = pos, value, seq[row]
        size += 1
        entered += 1
    return size, region, entered
