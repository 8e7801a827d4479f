"""The per-slide prefilter shared by MinTopK and PreTopK: a slide's best objects, best first."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def ranks_above(score_a: float, seq_a: int, score_b: float, seq_b: int) -> bool:
    """The total order: ``a`` ranks above ``b`` iff ``(score, seq)`` is larger (``O(1)``)."""
    return score_a > score_b or (score_a == score_b and seq_a > seq_b)


@njit(cache=True, inline="always")
def _sift_down(heap, size, scores, seqs, i):
    """Restore the min-heap (worst of the kept objects at the root) below position ``i``."""
    while True:
        child = 2 * i + 1
        if child >= size:
            return
        if child + 1 < size and ranks_above(scores[heap[child]], seqs[heap[child]],
                                            scores[heap[child + 1]], seqs[heap[child + 1]]):
            child += 1
        if not ranks_above(scores[heap[i]], seqs[heap[i]], scores[heap[child]], seqs[heap[child]]):
            return
        heap[i], heap[child] = heap[child], heap[i]
        i = child


@njit(cache=True, inline="always")
def best_first(scores: np.ndarray, seqs: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``min(k, m)`` best of ``m`` objects by ``(score, seq)``, best first.

    ``O(m log k)``: a min-heap of the ``k`` best seen so far (an object enters only if it
    ranks above the heap's worst), then the heap emptied worst first into the back of the
    output.  Exact under ties, like :func:`engine.ranking.top_indices`.
    """
    m = len(scores)
    size = min(k, m)
    heap = np.empty(size, np.int64)
    for i in range(size):
        heap[i] = i
    for i in range(size // 2 - 1, -1, -1):
        _sift_down(heap, size, scores, seqs, i)
    if size:
        worst_score, worst_seq = scores[heap[0]], seqs[heap[0]]
        for i in range(size, m):
            if scores[i] >= worst_score and ranks_above(scores[i], seqs[i], worst_score, worst_seq):
                heap[0] = i
                _sift_down(heap, size, scores, seqs, 0)
                worst_score, worst_seq = scores[heap[0]], seqs[heap[0]]
    order = np.empty(size, np.int64)
    for last in range(size - 1, -1, -1):
        order[last] = heap[0]
        heap[0] = heap[last]
        _sift_down(heap, last, scores, seqs, 0)
    return order
