"""Kernels of the grid index that holds the window for TMA and SMA (Mouratidis, Bakiras,
Papadias, SIGMOD 2006, Section 3).

The window's objects live in ring-buffer columns, the object at arrival position ``pos`` in
row ``pos & mask`` (positions count arrivals and only grow).  Each cell is a singly linked
list of its objects in arrival order: ``head``, ``tail`` and ``count`` per cell, ``next`` per
object (positions; ``-1`` for none).  Objects expire in arrival order, so expiry only moves
cell heads forward.  ``edges`` is the ``(d, c + 1)`` array of cell boundaries per dimension.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def locate(x, i, edges):
    """The flat cell ``sum_j i_j c^j`` of the feature vector ``x[i]``, clamped into the grid, and
    whether the vector lies outside the outer edges (``O(d)``).

    ``i_j`` is the index of the last edge at or below the value (``searchsorted(..., "right")
    - 1``), so a cell's corner, scored from the same edges, bounds every object located in it.
    The edges are equally spaced: the index is computed by division (of halves, which cannot
    overflow), then moved to the exact edge (a step at most, from rounding).
    """
    c = edges.shape[1] - 1
    cell = 0
    stride = 1
    outside = False
    for j in range(edges.shape[0]):
        value = x[i, j]
        low, high = edges[j, 0], edges[j, c]
        if value < low or value > high:
            outside = True
        half_span = 0.5 * high - 0.5 * low
        index = 0
        if half_span > 0.0:
            index = int(min(max((0.5 * value - 0.5 * low) / half_span * c, 0.0), c - 1.0))
        while index < c - 1 and edges[j, index + 1] <= value:
            index += 1
        while index > 0 and edges[j, index] > value:
            index -= 1
        cell += index * stride
        stride *= c
    return cell, outside


@njit(cache=True)
def link(pos, cell, mask, nxt, head, tail, count):
    """Append the object at ``pos`` to the end of its cell's list (``O(1)``)."""
    nxt[pos & mask] = -1
    last = tail[cell]
    if last >= 0:
        nxt[last & mask] = pos
    else:
        head[cell] = pos
    tail[cell] = pos
    count[cell] += 1


@njit(cache=True)
def insert(end, mask, ids, seq, t, x, score, cells, nxt, head, tail, count, bound, edges,
           new_ids, new_seq, new_t, new_x, new_score):
    """Store arrivals at positions ``end, end + 1, ...``, each at the end of its cell's list.

    An arrival outside the grid is clamped into a border cell, whose bound rises to its score
    if below.  Returns ``(clamped arrivals, whether a bound rose)``; ``O(d log c)`` each.
    """
    clamped = 0
    raised = False
    for i in range(len(new_ids)):
        pos = end + i
        row = pos & mask
        ids[row] = new_ids[i]
        seq[row] = new_seq[i]
        t[row] = new_t[i]
        for j in range(x.shape[1]):
            x[row, j] = new_x[i, j]
        score[row] = new_score[i]
        cell, outside = locate(new_x, i, edges)
        cells[row] = cell
        link(pos, cell, mask, nxt, head, tail, count)
        if outside:
            clamped += 1
            if new_score[i] > bound[cell]:
                bound[cell] = new_score[i]
                raised = True
    return clamped, raised


@njit(cache=True)
def expire(first, end, mask, key, start, x, cells, nxt, head, tail, count, edges):
    """Unlink the oldest objects while their expiry key (``seq`` or ``t``) is below ``start``.

    Each is the head of its cell's list, which moves to its successor.  Returns ``(first
    position still held, clamped objects removed)``; ``O(d)`` per expired object.
    """
    c = edges.shape[1] - 1
    clamped = 0
    while first < end:
        row = first & mask
        if key[row] >= start:
            break
        cell = cells[row]
        following = nxt[row]
        head[cell] = following
        if following < 0:
            tail[cell] = -1
        count[cell] -= 1
        for j in range(edges.shape[0]):
            if x[row, j] < edges[j, 0] or x[row, j] > edges[j, c]:
                clamped += 1
                break
        first += 1
    return first, clamped


@njit(cache=True)
def link_all(first, end, mask, x, score, cells, nxt, head, tail, count, bound, edges):
    """Locate and link every object held, oldest first, into empty cells (``head = tail = -1``,
    ``count = 0``), raising the bound of a cell holding a clamped object to its score.
    Returns the number of clamped objects; ``O(n d log c)``."""
    clamped = 0
    for pos in range(first, end):
        row = pos & mask
        cell, outside = locate(x, row, edges)
        cells[row] = cell
        link(pos, cell, mask, nxt, head, tail, count)
        if outside:
            clamped += 1
            if score[row] > bound[cell]:
                bound[cell] = score[row]
    return clamped


@njit(cache=True)
def _worse(score_a, seq_a, score_b, seq_b):
    return score_a < score_b or (score_a == score_b and seq_a < seq_b)


@njit(cache=True)
def _sift_down(heap_pos, heap_score, heap_seq, size, i):
    while True:
        child = 2 * i + 1
        if child >= size:
            return
        if child + 1 < size and _worse(heap_score[child + 1], heap_seq[child + 1], heap_score[child], heap_seq[child]):
            child += 1
        if not _worse(heap_score[child], heap_seq[child], heap_score[i], heap_seq[i]):
            return
        heap_pos[i], heap_pos[child] = heap_pos[child], heap_pos[i]
        heap_score[i], heap_score[child] = heap_score[child], heap_score[i]
        heap_seq[i], heap_seq[child] = heap_seq[child], heap_seq[i]
        i = child


@njit(cache=True)
def top(k, live, order, ordered_bound, head, nxt, mask, score, seq, out_pos, out_score, out_seq):
    """The top-k computation: visit cells in descending bound order, keeping the best ``min(k,
    live)`` objects seen in a heap (worst on top), until the next cell's bound is below the
    k-th score (a cell whose bound equals it may hold an equal, newer object, which ranks
    higher).  The visited cells are the query's influence region.

    Writes the result best first into ``out_*[:min(k, live)]``; returns ``(cells visited,
    objects scanned)``.  ``O(v log k)`` for ``v`` objects scanned.
    """
    m = min(k, live)
    size = 0
    visited = 0
    scanned = 0
    for j in range(len(order)):
        p = head[order[j]]
        if p < 0:
            continue
        if size == m and (m == live or ordered_bound[j] < out_score[0]):
            break
        visited += 1
        while p >= 0:
            row = p & mask
            scanned += 1
            if size < m:
                i = size
                size += 1
                out_pos[i], out_score[i], out_seq[i] = p, score[row], seq[row]
                while i > 0:
                    parent = (i - 1) >> 1
                    if not _worse(out_score[i], out_seq[i], out_score[parent], out_seq[parent]):
                        break
                    out_pos[i], out_pos[parent] = out_pos[parent], out_pos[i]
                    out_score[i], out_score[parent] = out_score[parent], out_score[i]
                    out_seq[i], out_seq[parent] = out_seq[parent], out_seq[i]
                    i = parent
            elif _worse(out_score[0], out_seq[0], score[row], seq[row]):
                out_pos[0], out_score[0], out_seq[0] = p, score[row], seq[row]
                _sift_down(out_pos, out_score, out_seq, size, 0)
            p = nxt[row]
    for last in range(size - 1, 0, -1):
        out_pos[0], out_pos[last] = out_pos[last], out_pos[0]
        out_score[0], out_score[last] = out_score[last], out_score[0]
        out_seq[0], out_seq[last] = out_seq[last], out_seq[0]
        _sift_down(out_pos, out_score, out_seq, last, 0)
    return visited, scanned
