"""MinTopK's super-top-k list in numpy arrays and the paper's steps over it, compiled.

The list (Yang, Shastri, Rundensteiner, Ward, EDBT 2011) is an array-backed doubly linked list
of records sorted by ``(score, seq)``, best at the top, with a position index: a treap over the
same records (binary search tree on the key, better keys on the left; heap on a priority hashed
from ``seq``), so
positioning an arriving object costs ``O(log MTK)`` expected, like the paper's sorted index.

Arrays (one record per row, free rows chained through ``BELOW``):

* ``records`` (int64, ``capacity x FIELDS``): ``SEQ, ID, T``, the window marks ``START, END``
  (``start_w``, ``end_w``), the list links ``ABOVE, BELOW`` and the index links
  ``LEFT, RIGHT, PARENT`` (``NONE`` = no record);
* ``scores`` (float64, ``capacity``);
* ``windows`` (int64, ``C_nw x 2``): ``TKC`` and ``LBP`` of window ``w`` in row ``w % C_nw``;
* ``meta`` (int64): ``TOP`` (best record), ``ROOT`` (of the index), ``SIZE`` (records),
  ``FREE`` (first free row), then the algorithm's counters in ``COUNTERS`` order (``ARRIVALS``
  onwards; ``counters`` is a view of them), so a slide unboxes one array fewer and ``stats()``
  reads every figure in one ``tolist()``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .pool import grown_pool
from .select import best_first, ranks_above
from .views import unowned

SEQ, ID, T, START, END, ABOVE, BELOW, LEFT, RIGHT, PARENT = range(10)
FIELDS = 10
TOP, ROOT, SIZE, FREE = range(4)
TKC, LBP = range(2)
COUNTERS = ("arrivals", "prefiltered", "discarded", "inserted", "evictions", "lbp_skips")
ARRIVALS, PREFILTERED, DISCARDED, INSERTED, EVICTIONS, LBP_SKIPS = range(4, 4 + len(COUNTERS))
NONE = -1
_PRIME = 2147483647


def empty_arrays(capacity: int, windows: int):
    """``records, scores, windows, meta, counters`` of an empty list with ``capacity`` free rows
    (``counters``: the view of ``meta`` from ``ARRIVALS`` on)."""
    records = np.full((capacity, FIELDS), NONE, np.int64)
    records[:, BELOW] = np.arange(1, capacity + 1)
    records[-1, BELOW] = NONE
    table = np.zeros((windows, 2), np.int64)
    table[:, LBP] = NONE
    meta = np.array([NONE, NONE, 0, 0] + [0] * len(COUNTERS), np.int64)
    return records, np.zeros(capacity), table, meta, meta[ARRIVALS:]


def grown(records: np.ndarray, scores: np.ndarray, meta: np.ndarray, capacity: int):
    """The two record arrays copied into ``capacity`` rows; the new rows join the free chain."""
    return grown_pool(records, scores, meta, capacity, link=BELOW, free=FREE, fill=NONE)


@njit(cache=True)
def priority(seq: int) -> int:
    """The index priority of a record: a hash of its ``seq`` in ``[0, 2**31)`` (``O(1)``)."""
    x = seq % _PRIME + 1
    x = (x * 48271) % _PRIME
    x ^= x >> 15
    x = (x * 69621) % _PRIME
    x ^= x >> 13
    return (x * 48271) % _PRIME


@njit(cache=True, inline="always")
def _replace_child(records, meta, parent, old, new):
    if parent == NONE:
        meta[ROOT] = new
    elif records[parent, LEFT] == old:
        records[parent, LEFT] = new
    else:
        records[parent, RIGHT] = new
    if new != NONE:
        records[new, PARENT] = parent


@njit(cache=True, inline="always")
def _rotate_up(records, meta, x):
    """Rotate ``x`` above its parent, keeping the search order (``O(1)``)."""
    p = records[x, PARENT]
    g = records[p, PARENT]
    if records[p, LEFT] == x:
        inner = records[x, RIGHT]
        records[p, LEFT] = inner
        records[x, RIGHT] = p
    else:
        inner = records[x, LEFT]
        records[p, RIGHT] = inner
        records[x, LEFT] = p
    if inner != NONE:
        records[inner, PARENT] = p
    records[p, PARENT] = x
    _replace_child(records, meta, g, p, x)


@njit(cache=True, inline="always")
def index_insert(records, scores, meta, slot) -> int:
    """Put row ``slot`` into the index; return the record directly above it, or ``NONE``.

    ``O(log MTK)`` expected: one descent, then rotations while its priority beats its parent's.
    """
    score, seq = scores[slot], records[slot, SEQ]
    parent, node, above = NONE, meta[ROOT], NONE
    while node != NONE:
        parent = node
        if ranks_above(scores[node], records[node, SEQ], score, seq):
            above = node
            node = records[node, RIGHT]
        else:
            node = records[node, LEFT]
    records[slot, LEFT] = NONE
    records[slot, RIGHT] = NONE
    records[slot, PARENT] = parent
    if parent == NONE:
        meta[ROOT] = slot
    elif parent == above:
        records[parent, RIGHT] = slot
    else:
        records[parent, LEFT] = slot
    mine = priority(seq)
    while records[slot, PARENT] != NONE and mine > priority(records[records[slot, PARENT], SEQ]):
        _rotate_up(records, meta, slot)
    return above


@njit(cache=True, inline="always")
def index_remove(records, meta, slot) -> None:
    """Take row ``slot`` out of the index: rotate it down to at most one child, splice it out
    (``O(log MTK)`` expected)."""
    while records[slot, LEFT] != NONE and records[slot, RIGHT] != NONE:
        left, right = records[slot, LEFT], records[slot, RIGHT]
        if priority(records[left, SEQ]) > priority(records[right, SEQ]):
            _rotate_up(records, meta, left)
        else:
            _rotate_up(records, meta, right)
    child = records[slot, LEFT] if records[slot, LEFT] != NONE else records[slot, RIGHT]
    _replace_child(records, meta, records[slot, PARENT], slot, child)


@njit(cache=True, inline="always")
def position(records, scores, meta, score, seq, oid, t, end_window) -> int:
    """Link a new record into the list at its rank, window marks ``end_window .. end_window``;
    return its row (``O(log MTK)`` expected)."""
    slot = meta[FREE]
    meta[FREE] = records[slot, BELOW]
    scores[slot] = score
    records[slot, SEQ] = seq
    records[slot, ID] = oid
    records[slot, T] = t
    records[slot, START] = end_window
    records[slot, END] = end_window
    above = index_insert(records, scores, meta, slot)
    below = records[above, BELOW] if above != NONE else meta[TOP]
    records[slot, ABOVE] = above
    records[slot, BELOW] = below
    if above == NONE:
        meta[TOP] = slot
    else:
        records[above, BELOW] = slot
    if below != NONE:
        records[below, ABOVE] = slot
    meta[SIZE] += 1
    return slot


@njit(cache=True, inline="always")
def unlink(records, meta, slot) -> None:
    """Remove a record from the list and the index; its row becomes free (``O(log MTK)``)."""
    above, below = records[slot, ABOVE], records[slot, BELOW]
    if above == NONE:
        meta[TOP] = below
    else:
        records[above, BELOW] = below
    if below != NONE:
        records[below, ABOVE] = above
    index_remove(records, meta, slot)
    records[slot, BELOW] = meta[FREE]
    meta[FREE] = slot
    meta[SIZE] -= 1


@njit(cache=True, inline="always")
def purge_expired_window(records, windows, meta, window) -> None:
    """``PurgeExpiredWindow``: the answered window's top records (the first ``tkc`` of the list,
    Lemma 4.4) lose it (``start_w += 1``, dropped past ``end_w``); its row is emptied for the
    newest window.  ``O(k log MTK)``."""
    row = window % len(windows)
    record = meta[TOP]
    for _ in range(windows[row, TKC]):
        below = records[record, BELOW]
        records[record, START] += 1
        if records[record, START] > records[record, END]:
            unlink(records, meta, record)
        record = below
    windows[row, TKC] = 0
    windows[row, LBP] = NONE


@njit(cache=True)
def slide(records, scores, windows, meta, k, current, newest_slide,
          x, weights, seqs, ids, ts, prefilter) -> bool:
    """One slide: ``PurgeExpiredWindow`` for every window answered since ``current``, then
    ``UpdateSuperTopk`` for the slide's arrivals (features ``x``, scored with ``weights`` as
    :func:`engine.ranking.score` does: ``O(s d)``), best first; with ``prefilter`` only the
    top ``k`` of the slide arrive (``O(s log k)``): the others expire with them, never in MTK.

    ``UpdateSuperTopk`` (Figure 6), written out in the arrivals' loop; the steps (the
    prefilter's :func:`engine.kernels.select.best_first` too) are inlined and every array is
    bound through :func:`engine.kernels.views.unowned` views, so they count no references (a
    call between compiled functions counts each array argument atomically): an arrival that
    ranks below the newest window's full top k is discarded (``O(1)``); otherwise it is
    positioned (``O(log MTK)``) and enters windows from the newest back while they are not full
    or it ranks above their ``lbp`` object, which then loses the window (``start_w += 1``,
    dropped past ``end_w``) while ``lbp`` moves one record up (Lemma 4.5), skipping records
    that do not live in that window: ``O(1)`` amortised per window entered.

    Returns whether window ``current``'s answer stands as window ``newest_slide``'s: no purge
    dropped a record (none of its members expired) and no arrival entered ``newest_slide``'s
    predicted top k (``docs/algorithms/mintopk.md``, "The kept answer")."""
    records, scores, windows, meta = unowned(records), unowned(scores), unowned(windows), unowned(meta)
    x, weights, seqs, ids, ts = unowned(x), unowned(weights), unowned(seqs), unowned(ids), unowned(ts)
    held = meta[SIZE]
    for window in range(current, newest_slide):
        purge_expired_window(records, windows, meta, window)
    stands = meta[SIZE] == held
    values = weighted_scores(x, weights)
    m = len(values)
    meta[ARRIVALS] += m
    if prefilter:
        order = best_first(values, seqs, k)
        meta[PREFILTERED] += m - len(order)
    else:
        order = np.arange(m)
    size = len(windows)
    newest = newest_slide + size - 1
    for i in order:
        score, seq = values[i], seqs[i]
        row = newest % size
        lowest = windows[row, LBP]
        if windows[row, TKC] == k and ranks_above(scores[lowest], records[lowest, SEQ], score, seq):
            meta[DISCARDED] += 1
            continue
        record = position(records, scores, meta, score, seq, ids[i], ts[i], newest)
        window = newest
        while window >= newest_slide:
            lowest = windows[row, LBP]
            if windows[row, TKC] < k:
                windows[row, TKC] += 1
                if lowest == NONE or ranks_above(scores[lowest], records[lowest, SEQ], score, seq):
                    windows[row, LBP] = record
            else:
                if ranks_above(scores[lowest], records[lowest, SEQ], score, seq):
                    break
                meta[EVICTIONS] += 1
                records[lowest, START] += 1
                above = records[lowest, ABOVE]
                while records[above, END] < window:
                    meta[LBP_SKIPS] += 1
                    above = records[above, ABOVE]
                windows[row, LBP] = above
                if records[lowest, START] > records[lowest, END]:
                    unlink(records, meta, lowest)
            window -= 1
            row = row - 1 if row else size - 1
        records[record, START] = window + 1
        meta[INSERTED] += 1
        if window < newest_slide:
            stands = False
    return stands


@njit(cache=True, inline="always")
def weighted_scores(x, weights):
    """``F = x . w`` per row, summed column by column in :func:`engine.ranking.score`'s order,
    so a score is the same bits in every algorithm (``O(m d)``)."""
    m, d = x.shape
    values = np.empty(m)
    for i in range(m):
        value = x[i, 0] * weights[0]
        for j in range(1, d):
            value += x[i, j] * weights[j]
        values[i] = value
    return values


@njit(cache=True)
def answer(records, scores, windows, meta, window):
    """``ids, scores, seqs`` of ``window``'s predicted top k, best first: the first ``tkc``
    records of the list (Lemma 4.4, ``O(k)``)."""
    size = windows[window % len(windows), TKC]
    ids, values, seqs = np.empty(size, np.int64), np.empty(size), np.empty(size, np.int64)
    record = meta[TOP]
    for i in range(size):
        ids[i] = records[record, ID]
        values[i] = scores[record]
        seqs[i] = records[record, SEQ]
        record = records[record, BELOW]
    return ids, values, seqs


@njit(cache=True)
def ranked(records, meta) -> np.ndarray:
    """Rows of every record, best first, following the list (``O(MTK)``)."""
    rows = np.empty(meta[SIZE], np.int64)
    record = meta[TOP]
    for i in range(len(rows)):
        rows[i] = record
        record = records[record, BELOW]
    return rows
