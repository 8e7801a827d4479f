"""SLA's structures in numpy arrays and the paper's steps over them, compiled.

Haghani, Michel, Aberer (CIKM 2009), Section 3.1: a FIFO of the valid tuples, an object table
(id -> attribute sums, score), one list per stream sorted by attribute, and the materialised
top-``k_max`` view that the Threshold Algorithm refills.

Arrays:

* the **FIFO**, a ring of ``capacity`` (a power of two) rows addressed by a tuple's global
  position ``p`` (row ``p & (capacity - 1)``): ``tuples`` (int64: ``KEY, SEQ, SLOT, STREAM,
  NEXT``) and ``values`` (float64).  ``NEXT`` is the position of the next valid tuple of the
  same object in the same stream, so an object's values in one stream are a chain in arrival
  order (``first[slot, i]`` to ``last[slot, i]``) and re-summing an attribute walks its chain;
* the **object table**, rows of a pool (free rows chained through ``LINK``): ``objects``
  (int64: ``ID, SEQ, TUPLES, IN_VIEW, MARK, LINK``), ``first``, ``last`` (int64, ``rows x d``),
  ``sums`` (float64, ``rows x d``), ``scores`` (float64); the id table of
  :mod:`engine.kernels.incomplete` maps an id to its row;
* the **sorted lists**, one treap per stream over the object rows (:mod:`engine.kernels.incomplete`),
  ordered by ``(attribute, object row)``: ``links`` (int64, ``d x rows x 3``), ``roots`` and
  ``sizes`` (entries) per stream;
* the **view**, ``view_scores``, ``view_seqs``, ``view_rows`` (room for ``k_max + 1`` entries,
  or the object table's rows if fewer: the view lists distinct valid objects), ascending by
  ``(score, seq)``: entry 0 is the view's last (lowest) object;
* ``meta`` (int64): ``HEAD``, ``TAIL`` (positions of the oldest and the next tuple),
  ``OBJECTS``, ``FREE`` (first free row), ``VIEW`` (entries), ``EPOCH`` (TA's seen mark);
* ``counters`` (int64), in ``COUNTERS`` order.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .incomplete import NONE, combine, erase, find, insert, tree_insert, tree_last, tree_previous, tree_remove

KEY, SEQ, SLOT, STREAM, NEXT = range(5)
TUPLE_FIELDS = 5
ID, OBJECT_SEQ, TUPLES, IN_VIEW, MARK, LINK = range(6)
OBJECT_FIELDS = 6
HEAD, TAIL, OBJECTS, FREE, VIEW, EPOCH = range(6)
ARRIVALS, EXPIRATIONS, RECOMPUTATIONS, SORTED_ACCESSES = range(4)
COUNTERS = ("arrivals", "expirations", "recomputations", "sorted_accesses")


def empty_fifo(capacity: int) -> tuple[np.ndarray, np.ndarray]:
    """``tuples, values`` of an empty FIFO ring of ``capacity`` rows (a power of two)."""
    return np.full((capacity, TUPLE_FIELDS), NONE, np.int64), np.zeros(capacity)


def grown_fifo(tuples: np.ndarray, values: np.ndarray, meta: np.ndarray, capacity: int):
    """The FIFO's valid rows moved to a ring of ``capacity`` rows, each at its position's row
    there (``O(capacity)``)."""
    positions = np.arange(meta[HEAD], meta[TAIL])
    wider, wider_values = empty_fifo(capacity)
    wider[positions & (capacity - 1)] = tuples[positions & (len(tuples) - 1)]
    wider_values[positions & (capacity - 1)] = values[positions & (len(values) - 1)]
    return wider, wider_values


def empty_objects(capacity: int, d: int):
    """``objects, first, last, sums, scores`` of an empty object table (every row free)."""
    objects = np.full((capacity, OBJECT_FIELDS), NONE, np.int64)
    objects[:, TUPLES] = 0
    objects[:, IN_VIEW] = 0
    objects[:, MARK] = 0
    objects[:, LINK] = np.arange(1, capacity + 1)
    objects[-1, LINK] = NONE
    return (objects, np.full((capacity, d), NONE, np.int64), np.full((capacity, d), NONE, np.int64),
            np.zeros((capacity, d)), np.zeros(capacity))


def grown_objects(arrays: tuple, meta: np.ndarray, capacity: int):
    """The object table copied into ``capacity`` rows; the new rows join the free chain."""
    old = len(arrays[0])
    wider = empty_objects(capacity, arrays[1].shape[1])
    for new, now in zip(wider, arrays):
        new[:old] = now
    wider[0][-1, LINK] = meta[FREE]
    meta[FREE] = old
    return wider


def grown_links(links: np.ndarray, capacity: int) -> np.ndarray:
    """The sorted lists' links copied into ``capacity`` rows."""
    wider = np.full((len(links), capacity, 3), NONE, np.int64)
    wider[:, :links.shape[1]] = links
    return wider


# ---------------------------------------------------------------------------- the view


def empty_view(capacity: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``view_scores, view_seqs, view_rows`` of an empty view with room for ``capacity`` entries."""
    return np.zeros(capacity), np.zeros(capacity, np.int64), np.zeros(capacity, np.int64)


def grown_view(view: tuple, capacity: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The view's entries copied into room for ``capacity`` (``O(capacity)``)."""
    wider = empty_view(capacity)
    for new, now in zip(wider, view):
        new[:len(now)] = now
    return wider


@njit(cache=True, inline="always")
def _view_position(view_scores, view_seqs, size, score, seq):
    low, high = 0, size
    while low < high:
        mid = (low + high) // 2
        if view_scores[mid] < score or (view_scores[mid] == score and view_seqs[mid] < seq):
            low = mid + 1
        else:
            high = mid
    return low


@njit(cache=True, inline="always")
def _view_add(view_scores, view_seqs, view_rows, objects, meta, score, seq, row):
    """Insert an object into the view in ``(score, seq)`` order (``O(k_max)``)."""
    size = meta[VIEW]
    at = _view_position(view_scores, view_seqs, size, score, seq)
    for i in range(size, at, -1):
        view_scores[i] = view_scores[i - 1]
        view_seqs[i] = view_seqs[i - 1]
        view_rows[i] = view_rows[i - 1]
    view_scores[at], view_seqs[at], view_rows[at] = score, seq, row
    objects[row, IN_VIEW] = 1
    meta[VIEW] = size + 1


@njit(cache=True, inline="always")
def _view_remove_at(view_scores, view_seqs, view_rows, objects, meta, at):
    size = meta[VIEW]
    objects[view_rows[at], IN_VIEW] = 0
    for i in range(at, size - 1):
        view_scores[i] = view_scores[i + 1]
        view_seqs[i] = view_seqs[i + 1]
        view_rows[i] = view_rows[i + 1]
    meta[VIEW] = size - 1


@njit(cache=True, inline="always")
def leave_view(view_scores, view_seqs, view_rows, objects, scores, meta, row):
    """Take an object out of the view if it is there, before its score changes (``O(k_max)``)."""
    if not objects[row, IN_VIEW]:
        return False
    at = _view_position(view_scores, view_seqs, meta[VIEW], scores[row], objects[row, OBJECT_SEQ])
    _view_remove_at(view_scores, view_seqs, view_rows, objects, meta, at)
    return True


@njit(cache=True, inline="always")
def offer(view_scores, view_seqs, view_rows, objects, scores, meta, row, k_max):
    """An object outside the view enters if it beats the view's last entry or no other object
    is outside; beyond ``k_max`` entries the last leaves (Yi et al.; ``O(k_max)``)."""
    score, seq, size = scores[row], objects[row, OBJECT_SEQ], meta[VIEW]
    if meta[OBJECTS] - size == 1 or (size and (score > view_scores[0] or
                                              (score == view_scores[0] and seq > view_seqs[0]))):
        _view_add(view_scores, view_seqs, view_rows, objects, meta, score, seq, row)
        if meta[VIEW] > k_max:
            _view_remove_at(view_scores, view_seqs, view_rows, objects, meta, 0)


# ---------------------------------------------------------------------------- maintenance


@njit(cache=True, inline="always")
def set_attribute(tuples, values, first, sums, scores, links, roots, sizes, row, stream, weights,
                  listed, resum, value):
    """One attribute changed: its list entry (if ``listed``) leaves, the sum is redone (an
    arrival adds ``value`` to it, the same operations as a re-sum in arrival order; an expiry
    re-sums the chain from 0), the entry returns if the object still has values in the stream,
    and the score is recombined (``O(d + log n + chain)`` expected)."""
    if listed:
        tree_remove(links[stream], roots, stream, row)
        sizes[stream] -= 1
    if resum:
        total = 0.0
        mask = len(tuples) - 1
        p = first[row, stream]
        while p != NONE:
            total += values[p & mask]
            p = tuples[p & mask, NEXT]
        sums[row, stream] = total
    else:
        sums[row, stream] += value
    if first[row, stream] != NONE:
        tree_insert(links[stream], roots, stream, sums[:, stream], row)
        sizes[stream] += 1
    scores[row] = combine(sums[row], weights)


@njit(cache=True, inline="always")
def arrive(tuples, values, objects, first, last, sums, scores, links, roots, sizes, view_scores,
           view_seqs, view_rows, keys, slots, meta, counters, weights, k_max, oid, stream, value, key, seq):
    """One tuple enters the FIFO: its object (found by id, or made) gets the value in the
    stream, its list entry and score follow, and the view re-offers it (``O(d + log n + k_max)``
    expected)."""
    counters[ARRIVALS] += 1
    row = find(keys, slots, oid)
    if row == NONE:
        row = meta[FREE]
        meta[FREE] = objects[row, LINK]
        objects[row, ID] = oid
        objects[row, TUPLES] = 0
        objects[row, IN_VIEW] = 0
        objects[row, LINK] = NONE
        first[row, :] = NONE
        last[row, :] = NONE
        sums[row, :] = 0.0
        scores[row] = 0.0
        insert(keys, slots, oid, row)
        meta[OBJECTS] += 1
    else:
        leave_view(view_scores, view_seqs, view_rows, objects, scores, meta, row)
    mask = len(tuples) - 1
    p = meta[TAIL]
    meta[TAIL] = p + 1
    tuples[p & mask, KEY] = key
    tuples[p & mask, SEQ] = seq
    tuples[p & mask, SLOT] = row
    tuples[p & mask, STREAM] = stream
    tuples[p & mask, NEXT] = NONE
    values[p & mask] = value
    listed = last[row, stream] != NONE
    if not listed:
        first[row, stream] = p
    else:
        tuples[last[row, stream] & mask, NEXT] = p
    last[row, stream] = p
    objects[row, TUPLES] += 1
    objects[row, OBJECT_SEQ] = seq
    set_attribute(tuples, values, first, sums, scores, links, roots, sizes, row, stream, weights,
                  listed, False, value)
    offer(view_scores, view_seqs, view_rows, objects, scores, meta, row, k_max)


@njit(cache=True, inline="always")
def expire(tuples, values, objects, first, last, sums, scores, links, roots, sizes, view_scores,
           view_seqs, view_rows, keys, slots, meta, counters, weights, k_max):
    """The oldest tuple leaves: its object's attribute is re-summed without it, or the object
    goes with its last tuple; a view member re-enters only if it still beats the rest."""
    counters[EXPIRATIONS] += 1
    mask = len(tuples) - 1
    p = meta[HEAD]
    meta[HEAD] = p + 1
    row, stream = tuples[p & mask, SLOT], tuples[p & mask, STREAM]
    in_view = leave_view(view_scores, view_seqs, view_rows, objects, scores, meta, row)
    first[row, stream] = tuples[p & mask, NEXT]
    if first[row, stream] == NONE:
        last[row, stream] = NONE
    objects[row, TUPLES] -= 1
    set_attribute(tuples, values, first, sums, scores, links, roots, sizes, row, stream, weights,
                  True, True, 0.0)
    if not objects[row, TUPLES]:
        erase(keys, slots, objects[row, ID])
        objects[row, OBJECT_SEQ] = NONE
        objects[row, LINK] = meta[FREE]
        meta[FREE] = row
        meta[OBJECTS] -= 1
    elif in_view:
        offer(view_scores, view_seqs, view_rows, objects, scores, meta, row, k_max)


@njit(cache=True)
def _keep(view_scores, view_seqs, view_rows, objects, scores, meta, row, need):
    """TA's candidate: into the view while it holds fewer than ``need``, else in place of the
    view's last entry if it ranks above it (``O(k_max)``)."""
    score, seq = scores[row], objects[row, OBJECT_SEQ]
    if meta[VIEW] < need:
        _view_add(view_scores, view_seqs, view_rows, objects, meta, score, seq, row)
    elif score > view_scores[0] or (score == view_scores[0] and seq > view_seqs[0]):
        _view_remove_at(view_scores, view_seqs, view_rows, objects, meta, 0)
        _view_add(view_scores, view_seqs, view_rows, objects, meta, score, seq, row)


@njit(cache=True)
def recompute(tuples, objects, sums, scores, links, roots, sizes, view_scores, view_seqs, view_rows, meta,
              counters, weights, k_max):
    """The Threshold Algorithm: the exact top ``k_max`` into the view.

    Round-robin sorted access down the lists of the positive-weight streams, random access to
    the object's score; stop once the view holds ``need`` objects and its last scores strictly
    above ``Σ w_i · (last value seen in list i)``.  If the lists run out, every object not seen
    scores 0 and they compete newest first from the back of the FIFO.  ``O(sorted accesses
    · k_max)``.
    """
    counters[RECOMPUTATIONS] += 1
    need = min(k_max, meta[OBJECTS])
    while meta[VIEW]:
        _view_remove_at(view_scores, view_seqs, view_rows, objects, meta, meta[VIEW] - 1)
    meta[EPOCH] += 1
    epoch = meta[EPOCH]
    d = len(weights)
    cursors = np.full(d, NONE, np.int64)
    live = np.zeros(d, np.bool_)
    depth = np.zeros(d)
    active = 0
    for i in range(d):
        if weights[i] > 0:
            cursors[i] = tree_last(links[i], roots, i)
            live[i] = True
            active += 1
    while active:
        for i in range(d):
            if not live[i]:
                continue
            row = cursors[i]
            if row == NONE:
                live[i] = False
                active -= 1
                depth[i] = 0.0
                continue
            counters[SORTED_ACCESSES] += 1
            depth[i] = sums[row, i]
            cursors[i] = tree_previous(links[i], row)
            if objects[row, MARK] != epoch:
                objects[row, MARK] = epoch
                _keep(view_scores, view_seqs, view_rows, objects, scores, meta, row, need)
        if meta[VIEW] == need and view_scores[0] > combine(depth, weights):
            break
    if meta[VIEW] < need or view_scores[0] <= 0.0:
        mask = len(tuples) - 1
        for p in range(meta[TAIL] - 1, meta[HEAD] - 1, -1):
            row, seq = tuples[p & mask, SLOT], tuples[p & mask, SEQ]
            if objects[row, MARK] != epoch and objects[row, OBJECT_SEQ] == seq:
                objects[row, MARK] = epoch
                if meta[VIEW] == need and (view_scores[0] > 0.0 or (view_scores[0] == 0.0 and
                                                                    view_seqs[0] > seq)):
                    break
                _keep(view_scores, view_seqs, view_rows, objects, scores, meta, row, need)


@njit(cache=True)
def arrivals(tuples, values, objects, first, last, sums, scores, links, roots, sizes, view_scores,
             view_seqs, view_rows, keys, slots, meta, counters, weights, k_max, ids, stream, value, tkeys, seq):
    """Tuples enter in arrival order (:func:`arrive` each); the caller has made room."""
    for j in range(len(ids)):
        arrive(tuples, values, objects, first, last, sums, scores, links, roots, sizes, view_scores,
               view_seqs, view_rows, keys, slots, meta, counters, weights, k_max, ids[j], stream[j], value[j],
               tkeys[j], seq[j])


@njit(cache=True)
def slide(tuples, values, objects, first, last, sums, scores, links, roots, sizes, view_scores,
          view_seqs, view_rows, keys, slots, meta, counters, weights, k, k_max, start, ids, stream, value, tkeys,
          seq):
    """One slide: expiries (tuples with a key below ``start``), the slide's tuples in arrival
    order, then TA if the view holds fewer than ``min(k, valid objects)``.  The caller has made
    room for the slide's tuples and objects."""
    mask = len(tuples) - 1
    while meta[HEAD] < meta[TAIL] and tuples[meta[HEAD] & mask, KEY] < start:
        expire(tuples, values, objects, first, last, sums, scores, links, roots, sizes, view_scores,
               view_seqs, view_rows, keys, slots, meta, counters, weights, k_max)
    arrivals(tuples, values, objects, first, last, sums, scores, links, roots, sizes, view_scores,
             view_seqs, view_rows, keys, slots, meta, counters, weights, k_max, ids, stream, value, tkeys, seq)
    if meta[VIEW] < min(k, meta[OBJECTS]):
        recompute(tuples, objects, sums, scores, links, roots, sizes, view_scores, view_seqs, view_rows, meta,
                  counters, weights, k_max)
