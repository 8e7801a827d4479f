"""PreTopK's predicted top-k sets in numpy arrays and its steps over them, compiled.

PreTopK (the baseline of Yang, Shastri, Rundensteiner, Ward, EDBT 2011) keeps one predicted
top-k set per window.  Arrays:

* ``objects`` (int64, ``capacity x FIELDS``): ``SEQ, ID, T``, the reference count ``REFS``
  (sets holding the object) and ``NEXT_FREE`` (the free rows' chain);
* ``scores`` (float64, ``capacity``);
* ``sets`` (int64, ``C_nw x width``): window ``w``'s set in row ``w % C_nw``, a min-heap of
  object rows by ``(score, seq)`` (the set's lowest object at column 0), ``sizes[w % C_nw]`` of
  them; ``width <= k`` is at least the number of objects a set can hold before the next call
  (the caller widens it, :func:`widened`), so a huge ``k`` allocates only what is held;
* ``meta`` (int64): ``FREE`` (first free row), ``DISTINCT`` (objects held), ``MEMBERSHIPS``;
* ``counters`` (int64): ``offered`` and ``entries``, in ``COUNTERS`` order.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .pool import grown_pool
from .select import best_first, ranks_above

SEQ, ID, T, REFS, NEXT_FREE = range(5)
FIELDS = 5
FREE, DISTINCT, MEMBERSHIPS = range(3)
OFFERED, ENTRIES = range(2)
COUNTERS = ("offered", "entries")
NONE = -1


def empty_arrays(capacity: int, windows: int, width: int):
    """``objects, scores, sets, sizes, meta, counters`` with no object, ``capacity`` free rows
    and sets ``width`` wide."""
    objects = np.zeros((capacity, FIELDS), np.int64)
    objects[:, NEXT_FREE] = np.arange(1, capacity + 1)
    objects[-1, NEXT_FREE] = NONE
    return (objects, np.zeros(capacity), np.full((windows, width), NONE, np.int64), np.zeros(windows, np.int64),
            np.array([0, 0, 0], np.int64), np.zeros(len(COUNTERS), np.int64))


def widened(sets: np.ndarray, width: int) -> np.ndarray:
    """``sets`` copied into ``width`` columns, the new ones empty (``O(C_nw width)``).

    >>> widened(np.array([[4, NONE], [NONE, NONE]]), 3).tolist()
    [[4, -1, -1], [-1, -1, -1]]
    """
    wider = np.full((len(sets), width), NONE, np.int64)
    wider[:, :sets.shape[1]] = sets
    return wider


def grown(objects: np.ndarray, scores: np.ndarray, meta: np.ndarray, capacity: int):
    """The object arrays copied into ``capacity`` rows; the new rows join the free chain."""
    return grown_pool(objects, scores, meta, capacity, link=NEXT_FREE, free=FREE, fill=0)


@njit(cache=True)
def new_object(objects, scores, meta, score, seq, oid, t) -> int:
    """A free row holding the object, no reference yet (``O(1)``)."""
    row = meta[FREE]
    meta[FREE] = objects[row, NEXT_FREE]
    scores[row] = score
    objects[row, SEQ] = seq
    objects[row, ID] = oid
    objects[row, T] = t
    objects[row, REFS] = 0
    meta[DISTINCT] += 1
    return row


@njit(cache=True)
def release(objects, meta, row) -> None:
    """One set less holds the object; its row is freed at the last one (``O(1)``)."""
    objects[row, REFS] -= 1
    meta[MEMBERSHIPS] -= 1
    if objects[row, REFS] == 0:
        objects[row, NEXT_FREE] = meta[FREE]
        meta[FREE] = row
        meta[DISTINCT] -= 1


@njit(cache=True)
def _sift_up(heap, objects, scores, i) -> None:
    while i:
        parent = (i - 1) // 2
        if not ranks_above(scores[heap[parent]], objects[heap[parent], SEQ], scores[heap[i]], objects[heap[i], SEQ]):
            return
        heap[i], heap[parent] = heap[parent], heap[i]
        i = parent


@njit(cache=True)
def _sift_down(heap, size, objects, scores, i) -> None:
    while True:
        child = 2 * i + 1
        if child >= size:
            return
        if child + 1 < size and ranks_above(scores[heap[child]], objects[heap[child], SEQ],
                                            scores[heap[child + 1]], objects[heap[child + 1], SEQ]):
            child += 1
        if not ranks_above(scores[heap[i]], objects[heap[i], SEQ], scores[heap[child]], objects[heap[child], SEQ]):
            return
        heap[i], heap[child] = heap[child], heap[i]
        i = child


@njit(cache=True)
def offer(objects, scores, sets, sizes, meta, k, score, seq, oid, t) -> int:
    """Offer one object to every window's set: ``O(C_nw log k)``; returns the sets it entered.

    It enters a set holding fewer than ``k`` objects, or replaces the set's lowest object if it
    ranks above it (that object's reference count drops, its row is freed at zero).
    """
    row = NONE
    for w in range(len(sets)):
        heap, size = sets[w], sizes[w]
        if size < k:
            if row == NONE:
                row = new_object(objects, scores, meta, score, seq, oid, t)
            heap[size] = row
            sizes[w] = size + 1
            _sift_up(heap, objects, scores, size)
        elif ranks_above(score, seq, scores[heap[0]], objects[heap[0], SEQ]):
            if row == NONE:
                row = new_object(objects, scores, meta, score, seq, oid, t)
            evicted = heap[0]
            heap[0] = row
            _sift_down(heap, size, objects, scores, 0)
            release(objects, meta, evicted)
        else:
            continue
        objects[row, REFS] += 1
        meta[MEMBERSHIPS] += 1
    return 0 if row == NONE else objects[row, REFS]


@njit(cache=True)
def drop_window(objects, sets, sizes, meta, window) -> None:
    """Release the answered window's set and empty its row for the newest window (``O(k)``)."""
    w = window % len(sets)
    for i in range(sizes[w]):
        release(objects, meta, sets[w, i])
        sets[w, i] = NONE
    sizes[w] = 0


@njit(cache=True)
def slide(objects, scores, sets, sizes, meta, counters, k, current, newest_slide, values, seqs, ids, ts,
          prefilter) -> None:
    """One slide: drop every window answered since ``current``, then offer the arrivals (with
    ``prefilter``, only the slide's top ``k``, best first: ``O(s log k)``)."""
    for window in range(current, newest_slide):
        drop_window(objects, sets, sizes, meta, window)
    order = best_first(values, seqs, k) if prefilter else np.arange(len(values))
    for i in order:
        counters[ENTRIES] += offer(objects, scores, sets, sizes, meta, k, values[i], seqs[i], ids[i], ts[i])
    counters[OFFERED] += len(order)


@njit(cache=True)
def members(objects, scores, sets, sizes, window) -> np.ndarray:
    """Rows of ``window``'s set, best first (``O(k log k)``)."""
    w = window % len(sets)
    rows = sets[w, :sizes[w]]
    seqs = np.empty(len(rows), np.int64)
    values = np.empty(len(rows))
    for i in range(len(rows)):
        seqs[i] = objects[rows[i], SEQ]
        values[i] = scores[rows[i]]
    return rows[best_first(values, seqs, len(rows))]


@njit(cache=True)
def answer(objects, scores, sets, sizes, window):
    """``ids, scores, seqs`` of ``window``'s set, best first (``O(k log k)``)."""
    rows = members(objects, scores, sets, sizes, window)
    ids, values, seqs = np.empty(len(rows), np.int64), np.empty(len(rows)), np.empty(len(rows), np.int64)
    for i in range(len(rows)):
        ids[i] = objects[rows[i], ID]
        values[i] = scores[rows[i]]
        seqs[i] = objects[rows[i], SEQ]
    return ids, values, seqs
