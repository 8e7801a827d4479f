"""EAA's structures in numpy arrays and Algorithms 1 and 2 over them, compiled.

Haghani, Michel, Aberer (CIKM 2009), Section 3.2: aggregated instances ``p^j`` of each object,
the validity hashtable, the time list ``tsorted`` and the score lists ``csorted`` and
``bsorted``; an instance dominated by ``k`` distinct objects is pruned.

Arrays:

* **instances**, rows of a pool (free rows chained through ``LINK``): ``instances`` (int64:
  ``OID, RECORD`` (its object's row, ``NONE`` when free), ``KEY`` (``p^j.t``), ``SEQ, UID,
  DC``, ``OLDER, NEWER`` (the object's instances, oldest first), ``EARLIER, LATER``
  (``tsorted``, creation order), ``LINK``), ``sums`` and ``counts`` (``rows x d``),
  ``current`` and ``best`` (float64), ``dominators`` (int64, ``rows x width``: the first
  ``DC`` are the ids of the objects dominating the instance; ``DC < k`` while it lives).  A
  dominator is a valid object other than the instance's own (its dominating instance is
  newer), so ``width = min(k, rows of the validity table)`` holds every list (``0`` when a
  count window holds fewer than ``k`` tuples: dominance is then not tracked);
* **csorted** and **bsorted**, treaps over the instance rows (:mod:`engine.kernels.incomplete`)
  by ``(current, row)`` and ``(best, row)``: ``links`` (``2 x rows x 3``), ``roots`` (2);
* the **validity table**, rows of a pool: ``records`` (int64: ``ID, NEWEST_SEQ, OLDEST, NEWEST``
  (instance rows), ``MARK``, ``RECORD_LINK`` (free chain), ``NEWEST_KEY`` (the expiry key of the
  object's newest tuple), ``EARLIER_RECORD, LATER_RECORD`` (the valid objects by newest tuple,
  ``meta[FIRST_RECORD]`` the one that expires first)), ``occurrences`` (``rows x d``: ``n_i``),
  and the id table ``keys``, ``slots``.  An object keeps its entry while it is valid (it has a
  tuple in the window), with or without live instances: its occurrences are what the bound and
  the occurrence promise count;
* ``meta`` (int64): see the ``META`` names; ``counters`` (int64), in ``COUNTERS`` order.

The bound added to an instance's sums (``bestscore``) is chosen by ``mode``: ``PER_VALIDITY``
(``m - n_i``, the object's occurrences), ``PER_WINDOW`` (``m - c_i``, the instance's own) or
``ESTIMATED`` (the approximate algorithm: ``max(0, m̂_i - n_i) · v̂_i`` for a seen stream,
``m̂_i · Pr(i | seen) · v̂_i`` for an unseen one, from per-slide tables ``repeats``,
``estimates`` and ``probabilities[row, i]``, the row of the seen streams' bit mask found in the
id table ``mask_keys``, ``mask_slots``; the slide kernel makes a missing row from the sketches'
``words`` and ``powers`` (:func:`engine.kernels.fmsketch.probability_row`, ``meta[ROWS]`` rows
made this slide) and stops for the caller only when the tables are full).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .fmsketch import probability_row
from .incomplete import (NONE, combine, erase, find, insert, tree_first_from, tree_insert, tree_last, tree_next,
                         tree_previous, tree_remove)

OID, RECORD, KEY, SEQ, UID, DC, OLDER, NEWER, EARLIER, LATER, LINK = range(11)
INSTANCE_FIELDS = 11
ID, NEWEST_SEQ, OLDEST, NEWEST, MARK, RECORD_LINK, NEWEST_KEY, EARLIER_RECORD, LATER_RECORD = range(9)
RECORD_FIELDS = 9
META = ("first", "last", "instances", "records", "held", "first_record", "last_record", "free_instance",
        "free_record", "next_uid", "links", "epoch", "error", "error_oid", "error_stream", "error_count", "need_mask",
        "rows")
(FIRST, LAST, INSTANCES, RECORDS, HELD, FIRST_RECORD, LAST_RECORD, FREE_INSTANCE, FREE_RECORD, NEXT_UID, LINKS, EPOCH,
 ERROR, ERROR_OID, ERROR_STREAM, ERROR_COUNT, NEED_MASK, ROWS) = range(len(META))
COUNTERS = ("arrivals", "instances_created", "pruned", "expired", "dominations", "entries_scanned")
ARRIVALS, INSTANCES_CREATED, PRUNED, EXPIRED, DOMINATIONS, ENTRIES_SCANNED = range(len(COUNTERS))
CSORTED, BSORTED = range(2)
PER_VALIDITY, PER_WINDOW, ESTIMATED = range(3)
NO_ERROR, TOO_MANY_WHILE_VALID, TOO_MANY_IN_WINDOW = range(3)


def empty_meta() -> np.ndarray:
    meta = np.zeros(len(META), np.int64)
    meta[[FIRST, LAST, FIRST_RECORD, LAST_RECORD]] = NONE
    return meta


def empty_instances(capacity: int, d: int, width: int):
    """``instances, sums, counts, current, best, dominators, links`` of an empty pool, each
    instance with room for ``width`` dominators."""
    instances = np.full((capacity, INSTANCE_FIELDS), NONE, np.int64)
    instances[:, LINK] = np.arange(1, capacity + 1)
    instances[-1, LINK] = NONE
    return (instances, np.zeros((capacity, d)), np.zeros((capacity, d), np.int64), np.zeros(capacity),
            np.zeros(capacity), np.zeros((capacity, width), np.int64), np.full((2, capacity, 3), NONE, np.int64))


def empty_records(capacity: int, d: int):
    """``records, occurrences`` of an empty validity table."""
    records = np.full((capacity, RECORD_FIELDS), NONE, np.int64)
    records[:, MARK] = 0
    records[:, RECORD_LINK] = np.arange(1, capacity + 1)
    records[-1, RECORD_LINK] = NONE
    return records, np.zeros((capacity, d), np.int64)


def grown(arrays: tuple, wider: tuple, meta: np.ndarray, link: int, free: int) -> tuple:
    """``arrays`` copied into the corners of the larger empty ``wider`` (more rows, and for
    ``dominators`` perhaps more columns); the new rows join the front of the free chain
    through column ``link``."""
    old = len(arrays[0])
    for new, now in zip(wider, arrays):
        new[tuple(slice(0, size) for size in now.shape)] = now
    wider[0][-1, link] = meta[free]
    meta[free] = old
    return wider


def widened(dominators: np.ndarray, width: int) -> np.ndarray:
    """The dominator lists copied into room for ``width`` each (``O(rows · width)``)."""
    wider = np.zeros((len(dominators), width), np.int64)
    wider[:, :dominators.shape[1]] = dominators
    return wider


# ---------------------------------------------------------------------------- bounds


@njit(cache=True)
def seen_mask(occurrences, record, d):
    """The streams where the object has been seen, as a bit mask (``O(d)``)."""
    mask = 0
    for i in range(d):
        if occurrences[record, i]:
            mask |= 1 << i
    return mask


@njit(cache=True, inline="always")
def bound(sums, counts, occurrences, row, record, weights, m, mode, repeats, estimates, mask_keys, mask_slots,
          probabilities):
    """The highest score instance ``row`` may reach while it lives (``O(d)``)."""
    d = len(weights)
    estimated = NONE
    if mode == ESTIMATED:
        estimated = find(mask_keys, mask_slots, seen_mask(occurrences, record, d))
    total = 0.0
    for i in range(d):
        if mode == PER_VALIDITY:
            attribute = sums[row, i] + (m - occurrences[record, i])
        elif mode == PER_WINDOW:
            attribute = sums[row, i] + (m - counts[row, i])
        elif occurrences[record, i]:
            attribute = sums[row, i] + max(0, repeats[i] - occurrences[record, i]) * estimates[i]
        else:
            attribute = repeats[i] * probabilities[estimated, i] * estimates[i]
        if i == 0:
            total = attribute * weights[0]
        else:
            total += attribute * weights[i]
    return total


# ---------------------------------------------------------------------------- dominance


@njit(cache=True, inline="always")
def _dominated_by(instances, dominators, row, oid):
    """Whether object ``oid`` is among the instance's dominators (``O(k)``)."""
    for j in range(instances[row, DC]):
        if dominators[row, j] == oid:
            return True
    return False


@njit(cache=True, inline="always")
def _unlink(rows, row, before, after, ends, first, last):
    """Take ``row`` out of the doubly linked list threaded through columns ``before`` and
    ``after`` of ``rows``, whose end rows are ``ends[first]`` and ``ends[last]`` (``O(1)``)."""
    earlier, later = rows[row, before], rows[row, after]
    if earlier == NONE:
        ends[first] = later
    else:
        rows[earlier, after] = later
    if later == NONE:
        ends[last] = earlier
    else:
        rows[later, before] = earlier


@njit(cache=True, inline="always")
def _append(rows, row, before, after, ends, first, last):
    """Put ``row`` at the end of that list (``O(1)``)."""
    rows[row, before] = ends[last]
    rows[row, after] = NONE
    if ends[last] == NONE:
        ends[first] = row
    else:
        rows[ends[last], after] = row
    ends[last] = row


@njit(cache=True, inline="always")
def drop(instances, links, roots, records, keys, slots, meta, row):
    """Remove an expired or dominated instance from the time list, the score lists and its
    object's instances; the object's entry stays while the object is valid (``O(log N)``)."""
    _unlink(instances, row, EARLIER, LATER, meta, FIRST, LAST)
    tree_remove(links[CSORTED], roots, CSORTED, row)
    tree_remove(links[BSORTED], roots, BSORTED, row)
    record = instances[row, RECORD]
    _unlink(instances, row, OLDER, NEWER, records[record], OLDEST, NEWEST)
    meta[LINKS] -= instances[row, DC]
    meta[INSTANCES] -= 1
    instances[row, RECORD] = NONE
    instances[row, LINK] = meta[FREE_INSTANCE]
    meta[FREE_INSTANCE] = row
    if records[record, OLDEST] == NONE:
        meta[HELD] -= 1


@njit(cache=True, inline="always")
def _unlist(records, meta, record):
    """Take the entry out of the list of valid objects (``O(1)``)."""
    _unlink(records, record, EARLIER_RECORD, LATER_RECORD, meta, FIRST_RECORD, LAST_RECORD)


@njit(cache=True)
def list_record(records, meta, record):
    """Put the entry at the end of the list of valid objects, as the one with the newest
    tuple (``O(1)``)."""
    _append(records, record, EARLIER_RECORD, LATER_RECORD, meta, FIRST_RECORD, LAST_RECORD)


@njit(cache=True, inline="always")
def _forget(records, keys, slots, meta, record):
    """The object's entry leaves the validity table: its newest tuple expired."""
    _unlist(records, meta, record)
    erase(keys, slots, records[record, ID])
    records[record, ID] = NONE
    records[record, RECORD_LINK] = meta[FREE_RECORD]
    meta[FREE_RECORD] = record
    meta[RECORDS] -= 1


@njit(cache=True, inline="always")
def _add_dominator(instances, dominators, links, roots, records, keys, slots, meta, counters, k, row, oid):
    """One more object dominates the instance; at ``k`` it is pruned.  Returns whether it was."""
    counters[DOMINATIONS] += 1
    dominators[row, instances[row, DC]] = oid
    instances[row, DC] += 1
    meta[LINKS] += 1
    if instances[row, DC] >= k:
        counters[PRUNED] += 1
        drop(instances, links, roots, records, keys, slots, meta, row)
        return True
    return False


@njit(cache=True, inline="always")
def dominate_range(instances, current, best, dominators, links, roots, records, keys, slots, meta, counters, k,
                   row, low, high):
    """Instance ``row`` now beats the ``bestscore`` of the ``bsorted`` entries in
    ``[low, high)``: each older instance of another object counts it once (``O(entries · k)``).
    Only a visited entry can be pruned, so the walk takes its next entry first.  Nothing with
    no room for dominators (dominance untracked: no instance can reach ``k``)."""
    if dominators.shape[1] == 0:
        return
    node = tree_first_from(links[BSORTED], roots, BSORTED, best, low)
    oid, key = instances[row, OID], instances[row, KEY]
    while node != NONE and best[node] < high:
        following = tree_next(links[BSORTED], node)
        counters[ENTRIES_SCANNED] += 1
        if instances[node, KEY] < key and instances[node, OID] != oid and not _dominated_by(instances, dominators,
                                                                                           node, oid):
            _add_dominator(instances, dominators, links, roots, records, keys, slots, meta, counters, k, node, oid)
        node = following


@njit(cache=True, inline="always")
def dominated_by_range(instances, current, best, dominators, links, roots, records, keys, slots, meta, counters,
                       k, row, low, high):
    """The ``currentscore`` of the ``csorted`` entries in ``(low, high]`` now beats instance
    ``row``'s ``bestscore``: each newer instance of another object dominates it, until it is
    pruned (every entry of the range is counted as scanned, as the paper's list range).
    Nothing with no room for dominators (dominance untracked)."""
    if dominators.shape[1] == 0:
        return
    node = tree_first_from(links[CSORTED], roots, CSORTED, current, low)
    while node != NONE and current[node] <= low:
        node = tree_next(links[CSORTED], node)
    alive = True
    key, oid = instances[row, KEY], instances[row, OID]
    while node != NONE and current[node] <= high:
        counters[ENTRIES_SCANNED] += 1
        other = instances[node, OID]
        if alive and instances[node, KEY] > key and other != oid and not _dominated_by(instances, dominators, row,
                                                                                      other):
            alive = not _add_dominator(instances, dominators, links, roots, records, keys, slots, meta, counters, k,
                                       row, other)
        node = tree_next(links[CSORTED], node)


# ---------------------------------------------------------------------------- Algorithms 1 and 2


@njit(cache=True, inline="always")
def update(instances, sums, counts, current, best, dominators, links, roots, records, occurrences, keys, slots,
           meta, counters, weights, k, m, mode, repeats, estimates, mask_keys, mask_slots, probabilities, row, stream,
           value):
    """Algorithm 2: one more attribute for instance ``row``; its scores and list entries follow,
    and the new dominations both ways are counted (``O(d + log N)`` plus the ranges)."""
    old_current, old_best = current[row], best[row]
    sums[row, stream] += value
    counts[row, stream] += 1
    if mode == PER_WINDOW and counts[row, stream] > m:
        meta[ERROR] = TOO_MANY_IN_WINDOW
        meta[ERROR_OID] = instances[row, OID]
        meta[ERROR_STREAM] = stream
        meta[ERROR_COUNT] = counts[row, stream]
        return
    record = instances[row, RECORD]
    tree_remove(links[CSORTED], roots, CSORTED, row)
    tree_remove(links[BSORTED], roots, BSORTED, row)
    current[row] = combine(sums[row], weights)
    best[row] = max(current[row], min(old_best, bound(sums, counts, occurrences, row, record, weights, m, mode,
                                                      repeats, estimates, mask_keys, mask_slots,
                                                      probabilities)))
    tree_insert(links[CSORTED], roots, CSORTED, current, row)
    tree_insert(links[BSORTED], roots, BSORTED, best, row)
    if current[row] > old_current:
        dominate_range(instances, current, best, dominators, links, roots, records, keys, slots, meta, counters, k,
                       row, old_current, current[row])
    if best[row] < old_best:
        dominated_by_range(instances, current, best, dominators, links, roots, records, keys, slots, meta,
                           counters, k, row, best[row], old_best)


@njit(cache=True, inline="always")
def arrive(instances, sums, counts, current, best, dominators, links, roots, records, occurrences, keys, slots,
           meta, counters, weights, k, m, mode, repeats, estimates, mask_keys, mask_slots, probabilities, oid, stream,
           value, key, seq):
    """Algorithm 1: find or make the object's entry, update its live instances (Algorithm 2),
    then create ``p^{r+1}`` (none in a time window when the newest has the same time) and
    count the older instances it dominates (``O(r (d + log N))`` plus the ranges)."""
    counters[ARRIVALS] += 1
    record = find(keys, slots, oid)
    if record == NONE:
        record = meta[FREE_RECORD]
        meta[FREE_RECORD] = records[record, RECORD_LINK]
        records[record, ID] = oid
        records[record, OLDEST] = NONE
        records[record, NEWEST] = NONE
        records[record, RECORD_LINK] = NONE
        occurrences[record, :] = 0
        insert(keys, slots, oid, record)
        meta[RECORDS] += 1
    else:
        _unlist(records, meta, record)
    list_record(records, meta, record)
    records[record, NEWEST_KEY] = key
    occurrences[record, stream] += 1
    if mode == PER_VALIDITY and occurrences[record, stream] > m:
        meta[ERROR] = TOO_MANY_WHILE_VALID
        meta[ERROR_OID] = oid
        meta[ERROR_STREAM] = stream
        meta[ERROR_COUNT] = occurrences[record, stream]
        return
    records[record, NEWEST_SEQ] = seq
    newest = records[record, NEWEST]
    newest_key = instances[newest, KEY] if newest != NONE else NONE
    row = records[record, OLDEST]
    while row != NONE:
        following = instances[row, NEWER]
        update(instances, sums, counts, current, best, dominators, links, roots, records, occurrences, keys, slots,
               meta, counters, weights, k, m, mode, repeats, estimates, mask_keys, mask_slots, probabilities, row,
               stream, value)
        if meta[ERROR]:
            return
        row = following
    if newest != NONE and newest_key == key:
        return
    row = meta[FREE_INSTANCE]
    meta[FREE_INSTANCE] = instances[row, LINK]
    counters[INSTANCES_CREATED] += 1
    instances[row, OID] = oid
    instances[row, RECORD] = record
    instances[row, KEY] = key
    instances[row, SEQ] = seq
    instances[row, UID] = meta[NEXT_UID]
    meta[NEXT_UID] += 1
    instances[row, DC] = 0
    instances[row, LINK] = NONE
    sums[row, :] = 0.0
    counts[row, :] = 0
    sums[row, stream] += value
    counts[row, stream] += 1
    current[row] = combine(sums[row], weights)
    best[row] = max(current[row], bound(sums, counts, occurrences, row, record, weights, m, mode, repeats,
                                        estimates, mask_keys, mask_slots, probabilities))
    link(instances, records, current, best, links, roots, meta, row)
    dominate_range(instances, current, best, dominators, links, roots, records, keys, slots, meta, counters, k,
                   row, -np.inf, current[row])


@njit(cache=True, inline="always")
def link(instances, records, current, best, links, roots, meta, row):
    """A new instance joins the end of the time list and of its object's instances, and the
    two score lists (``O(log N)``)."""
    _append(instances, row, EARLIER, LATER, meta, FIRST, LAST)
    record = instances[row, RECORD]
    if records[record, NEWEST] == NONE:
        meta[HELD] += 1
    _append(instances, row, OLDER, NEWER, records[record], OLDEST, NEWEST)
    tree_insert(links[CSORTED], roots, CSORTED, current, row)
    tree_insert(links[BSORTED], roots, BSORTED, best, row)
    meta[INSTANCES] += 1


@njit(cache=True)
def slide(instances, sums, counts, current, best, dominators, links, roots, records, occurrences, keys, slots,
          meta, counters, weights, k, m, mode, repeats, estimates, mask_keys, mask_slots, probabilities, words, powers,
          start, ids, stream, value, tkeys, seq):
    """One slide: instances with a key below ``start`` expire from the front of the time
    list and objects whose newest tuple did from the front of the validity list, then the
    slide's tuples arrive in order (Algorithm 1 each; with estimated bounds, after the row of
    probabilities of the object's seen streams is made if it is missing).  Returns how many
    tuples it processed: it stops at a broken occurrence promise (``meta[ERROR]``) and, with
    estimated bounds, before a tuple whose missing row (``meta[NEED_MASK]``) the full tables
    cannot hold.  The caller has made room for the slide."""
    while meta[FIRST] != NONE and instances[meta[FIRST], KEY] < start:
        counters[EXPIRED] += 1
        drop(instances, links, roots, records, keys, slots, meta, meta[FIRST])
    while meta[FIRST_RECORD] != NONE and records[meta[FIRST_RECORD], NEWEST_KEY] < start:
        _forget(records, keys, slots, meta, meta[FIRST_RECORD])
    for j in range(len(ids)):
        if mode == ESTIMATED:
            record = find(keys, slots, ids[j])
            mask = (seen_mask(occurrences, record, len(weights)) if record != NONE else 0) | 1 << stream[j]
            if find(mask_keys, mask_slots, mask) == NONE:
                row = meta[ROWS]
                if row == len(probabilities) or 2 * (row + 1) > len(mask_keys):
                    meta[NEED_MASK] = mask
                    return j
                probability_row(words, powers, (len(powers) - 1) // words.shape[1], mask, probabilities[row])
                insert(mask_keys, mask_slots, mask, row)
                meta[ROWS] += 1
        arrive(instances, sums, counts, current, best, dominators, links, roots, records, occurrences, keys, slots,
               meta, counters, weights, k, m, mode, repeats, estimates, mask_keys, mask_slots, probabilities, ids[j],
               stream[j], value[j], tkeys[j], seq[j])
        if meta[ERROR]:
            return j
    return len(ids)


@njit(cache=True)
def answer(instances, current, links, roots, records, meta, k):
    """Scan ``csorted`` downwards to ``k`` distinct objects and every tie of the ``k``-th:
    their ids, scores (their first entry's ``currentscore``) and newest seqs (``O(entries)``)."""
    meta[EPOCH] += 1
    epoch = meta[EPOCH]
    ids = np.empty(meta[HELD], np.int64)
    scores = np.empty(meta[HELD])
    seqs = np.empty(meta[HELD], np.int64)
    found = 0
    kth = np.inf
    node = tree_last(links[CSORTED], roots, CSORTED)
    while node != NONE:
        if found >= k and current[node] < kth:
            break
        record = instances[node, RECORD]
        if records[record, MARK] != epoch:
            records[record, MARK] = epoch
            ids[found], scores[found], seqs[found] = records[record, ID], current[node], records[record, NEWEST_SEQ]
            found += 1
            if found == k:
                kth = current[node]
        node = tree_previous(links[CSORTED], node)
    return ids[:found], scores[:found], seqs[:found]
