"""Compiled steps of SAP (Zhu, Wang, Yang, Zheng, Wang, TKDE 2017), one paper step each.

Objects are kept as aligned columns ``score`` (float64) and ``seq``, ``id``, ``t`` (int64);
a *top* is such a set of columns ranked best first by the total order ``(score, seq)``.

* Selection and merging of tops (Algorithm 1 lines 7-11, Appendix C): the slide's best ``k`` by
  :func:`engine.kernels.select.best_first` (shared with MinTopK and PreTopK),
  :func:`merge_ranked`, :func:`count_ranked_above`.
* The candidate set ``C`` (Section 3.1): :func:`refine` (the one-pass merge with dominance
  counters), :func:`dominators` and :func:`insert_ranked` (objects promoted from ``M_0``),
  :func:`expire_members` (expiry).
* The S-AVL (Section 5.1): :func:`offer_slides` picks the objects of a run of raw slides a
  scan offers (global pruning, Appendix C; :func:`scan_rows` per slide), :func:`savl_scan`
  builds stacks newest first over a sorted array of stack tops (binary search, ``O(log k)``
  per object); ``M_0`` is a max-heap of the stack
  tops with a position index (:func:`m_pop_best`, :func:`m_expire`, ``O(log k)`` each), the
  array form of the paper's AVL tree over the tops.
* The quiet slide (no unit, partition or S-AVL event): :func:`quiet_slide`, the scores, the
  arrival, TBUI's observation and whether the previous answer stands, in one call.
* The dynamic variants' partition test (Section 4.2): :func:`mann_whitney_greater`, the
  one-sided Mann-Whitney rank-sum test (:func:`rank_sum_u`, and :func:`u_counts` for the exact
  distribution).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .select import best_first, ranks_above
from .views import unowned


# ----------------------------------------------------------------- tops
@njit(cache=True)
def merge_ranked(a_score, a_seq, a_id, a_t, b_score, b_seq, b_id, b_t, score, seq, ids, t):
    """The best ``len(score)`` of two tops into ``score, seq, ids, t``, best first: one merge
    pass, ``O(k)``."""
    i = j = 0
    for out in range(len(score)):
        if j >= len(b_score) or (i < len(a_score) and ranks_above(a_score[i], a_seq[i], b_score[j], b_seq[j])):
            score[out], seq[out], ids[out], t[out] = a_score[i], a_seq[i], a_id[i], a_t[i]
            i += 1
        else:
            score[out], seq[out], ids[out], t[out] = b_score[j], b_seq[j], b_id[j], b_t[j]
            j += 1


@njit(cache=True, inline="always")
def select_slide(values, seq, ids, t, k, rows):
    """Appendix C: the slide's best ``len(rows)`` objects into the raw record array ``rows``,
    best first; returns their positions in the slide (``O(m log k)``)."""
    chosen = best_first(values, seq, k)
    for i in range(len(chosen)):
        r = chosen[i]
        rows[i]["score"], rows[i]["seq"], rows[i]["id"], rows[i]["t"] = values[r], seq[r], ids[r], t[r]
    return chosen


@njit(cache=True, inline="always")
def merge_into_full_top(rows, score, seq, ids, t):
    """Merge a slide's best objects ``rows`` (best first) into a top that already holds ``k``
    objects, in place: it keeps its best ``k`` (``O(k)``, nothing when the slide's best does
    not rank above its last).  First the count of the top's members that stay (a forward
    walk), then a merge from the back: the slot written is never below the member read."""
    k, c = len(score), len(rows)
    if c == 0 or not ranks_above(rows[0]["score"], rows[0]["seq"], score[k - 1], seq[k - 1]):
        return
    i = j = 0
    for _ in range(k):
        if j < c and ranks_above(rows[j]["score"], rows[j]["seq"], score[i], seq[i]):
            j += 1
        else:
            i += 1
    i, j, out = i - 1, j - 1, k - 1
    while j >= 0:
        if i >= 0 and ranks_above(rows[j]["score"], rows[j]["seq"], score[i], seq[i]):
            score[out], seq[out], ids[out], t[out] = score[i], seq[i], ids[i], t[i]
            i -= 1
        else:
            score[out], seq[out], ids[out], t[out] = rows[j]["score"], rows[j]["seq"], rows[j]["id"], rows[j]["t"]
            j -= 1
        out -= 1


@njit(cache=True, inline="always")
def take_slide(values, seq, ids, t, k, rows, u_score, u_seq, u_id, u_t, score, out_seq, out_id, out_t):
    """Algorithm 1 lines 7-11 for one slide, with Appendix C: the slide's best ``len(rows)``
    objects (only they can ever be meaningful: they expire together) go to the raw record
    array ``rows``, best first, and are merged with the filling unit's top ``u_*`` into
    ``score, out_seq, out_id, out_t`` (its new top ``k``).  ``O(m log k + k)``."""
    chosen = select_slide(values, seq, ids, t, k, rows)
    i = j = 0
    for out in range(len(score)):
        if j >= len(chosen) or (i < len(u_score) and ranks_above(u_score[i], u_seq[i], values[chosen[j]],
                                                                  seq[chosen[j]])):
            score[out], out_seq[out], out_id[out], out_t[out] = u_score[i], u_seq[i], u_id[i], u_t[i]
            i += 1
        else:
            r = chosen[j]
            score[out], out_seq[out], out_id[out], out_t[out] = values[r], seq[r], ids[r], t[r]
            j += 1


@njit(cache=True)
def answer_of_three(a_score, a_seq, a_id, b_score, b_seq, b_id, c_score, c_seq, c_id, ids, score, seq):
    """The answer: the best ``len(ids)`` of three tops (``C``, ``P_m^k``, the filling unit's
    top ``k``), best first, into ``ids, score, seq`` (``O(k)``)."""
    i = j = h = 0
    for out in range(len(ids)):
        pick = 0
        best_score, best_seq = 0.0, 0
        if i < len(a_score):
            pick, best_score, best_seq = 1, a_score[i], a_seq[i]
        if j < len(b_score) and (pick == 0 or ranks_above(b_score[j], b_seq[j], best_score, best_seq)):
            pick, best_score, best_seq = 2, b_score[j], b_seq[j]
        if h < len(c_score) and (pick == 0 or ranks_above(c_score[h], c_seq[h], best_score, best_seq)):
            pick, best_score, best_seq = 3, c_score[h], c_seq[h]
        score[out], seq[out] = best_score, best_seq
        if pick == 1:
            ids[out] = a_id[i]
            i += 1
        elif pick == 2:
            ids[out] = b_id[j]
            j += 1
        else:
            ids[out] = c_id[h]
            h += 1


@njit(cache=True)
def count_ranked_above(scores, seqs, key_score, key_seq):
    """How many objects rank above the key ``(score, seq)`` (``O(m)``)."""
    count = 0
    for i in range(len(scores)):
        if ranks_above(scores[i], seqs[i], key_score, key_seq):
            count += 1
    return count


@njit(cache=True)
def count_at_least(scores, value):
    """How many scores are at least ``value`` (``O(m)``)."""
    count = 0
    for i in range(len(scores)):
        if scores[i] >= value:
            count += 1
    return count


# ----------------------------------------------------------------- the candidate set C
@njit(cache=True)
def expire_members(score, seq, ids, t, count, part, keys, bound, none):
    """``C`` without the members whose expiry key (``keys``: seq or t) is below ``bound``: the
    kept members' six columns, in order, and their lowest key (``none`` if no member is kept),
    in one pass and one copy (``O(|C|)``)."""
    n = 0
    for i in range(len(keys)):
        if keys[i] >= bound:
            n += 1
    out_score, out_seq, out_id, out_t = np.empty(n, np.float64), np.empty(n, np.int64), np.empty(n, np.int64), \
        np.empty(n, np.int64)
    out_count, out_part = np.empty(n, np.int64), np.empty(n, np.int64)
    oldest = none
    j = 0
    for i in range(len(keys)):
        if keys[i] >= bound:
            out_score[j], out_seq[j], out_id[j], out_t[j] = score[i], seq[i], ids[i], t[i]
            out_count[j], out_part[j] = count[i], part[i]
            oldest = min(oldest, keys[i])
            j += 1
    return out_score, out_seq, out_id, out_t, out_count, out_part, oldest


@njit(cache=True)
def add_dominators(score, count, new_score, k):
    """Algorithm 1 line 13, first half: every new candidate of ``P_m^k`` is newer than every
    member of ``C``, so it dominates exactly the members scoring at most its score; member
    ``i`` gains the number of new scores ``>= score[i]`` (both lists fall: one pointer,
    ``O(|C| + k)``, counters updated in place).  Returns how many members reach ``k``."""
    j = 0
    dead = 0
    for i in range(len(score)):
        while j < len(new_score) and new_score[j] >= score[i]:
            j += 1
        count[i] += j
        if count[i] >= k:
            dead += 1
    return dead


@njit(cache=True)
def refine(score, seq, ids, t, count, part, new_score, new_seq, new_id, new_t, serial, k,
           out_score, out_seq, out_id, out_t, out_count, out_part, dropped):
    """Algorithm 1 line 13, second half (after :func:`add_dominators`): members with ``k``
    dominators leave (their partition serials go to ``dropped``), the others and the new
    candidates (counter 0, partition ``serial``) are merged best first into ``out_*``
    (``O(|C| + k)``)."""
    n, m = len(score), len(new_score)
    a = b = gone = 0
    for out in range(len(out_score)):
        while a < n and count[a] >= k:
            dropped[gone] = part[a]
            gone += 1
            a += 1
        if b >= m or (a < n and ranks_above(score[a], seq[a], new_score[b], new_seq[b])):
            out_score[out], out_seq[out], out_id[out], out_t[out] = score[a], seq[a], ids[a], t[a]
            out_count[out], out_part[out] = count[a], part[a]
            a += 1
        else:
            out_score[out], out_seq[out], out_id[out], out_t[out] = new_score[b], new_seq[b], new_id[b], new_t[b]
            out_count[out], out_part[out] = 0, serial
            b += 1
    while a < n:
        if count[a] >= k:
            dropped[gone] = part[a]
            gone += 1
        a += 1


@njit(cache=True)
def dominators(score, part, values, serial):
    """For objects of partition ``serial`` (older than every other member of ``C``), given
    best first: how many members of other partitions score at least as much (``O(|C| + e)``)."""
    out = np.empty(len(values), np.int64)
    i = 0
    count = 0
    for j in range(len(values)):
        while i < len(score) and score[i] >= values[j]:
            if part[i] != serial:
                count += 1
            i += 1
        out[j] = count
    return out


@njit(cache=True)
def insert_ranked(score, seq, ids, t, count, part, new_score, new_seq, new_id, new_t, new_count, serial,
                  out_score, out_seq, out_id, out_t, out_count, out_part):
    """Insert objects (given best first) into ``C`` at their ranks, into ``out_*``: one merge,
    ``O(|C| + e)``."""
    n, m = len(score), len(new_score)
    a = b = 0
    for out in range(n + m):
        if b >= m or (a < n and ranks_above(score[a], seq[a], new_score[b], new_seq[b])):
            out_score[out], out_seq[out], out_id[out], out_t[out] = score[a], seq[a], ids[a], t[a]
            out_count[out], out_part[out] = count[a], part[a]
            a += 1
        else:
            out_score[out], out_seq[out], out_id[out], out_t[out] = new_score[b], new_seq[b], new_id[b], new_t[b]
            out_count[out], out_part[out] = new_count[b], serial
            b += 1


# ----------------------------------------------------------------- S-AVL construction
@njit(cache=True)
def _sort_tops(e_score, e_seq, top, order, n):
    """``order[:n]``: the stack indices by rising top key (two stable sorts, ``O(n log n)``)."""
    tops = top[:n]
    by_seq = np.argsort(e_seq[tops], kind="mergesort")
    by_key = by_seq[np.argsort(e_score[tops][by_seq], kind="mergesort")]
    order[:n] = by_key


@njit(cache=True)
def savl_scan(e_score, e_seq, e_id, e_t, below, top, order, meta, capacity,
              score, seq, ids, t, rows):
    """Offer objects ``rows`` (newest first) to an S-AVL under construction (Section 5.1).

    The first ``capacity`` objects each open a stack; then an object goes onto the stack
    whose top is the largest key below its own (binary search in ``order``, the stack indices
    by rising top key; the replaced top keeps its place, ``O(log k)``), or is pruned when all
    tops rank above it.  Entries are appended to the pool ``e_*`` (``below``: the entry under
    it in its stack, ``-1`` at the bottom); ``top[stack]`` is a stack's top entry;
    ``meta = [stacks, entries, pruned]``.  The pool must have room for ``len(rows)`` more.
    """
    for r in rows:
        stacks, entries = meta[0], meta[1]
        if stacks < capacity:
            e_score[entries], e_seq[entries], e_id[entries], e_t[entries] = score[r], seq[r], ids[r], t[r]
            below[entries] = -1
            top[stacks] = entries
            meta[0] = stacks + 1
            meta[1] = entries + 1
            if stacks + 1 == capacity:
                _sort_tops(e_score, e_seq, top, order, capacity)
            continue
        lo, hi = 0, stacks  # the number of tops ranking below the object
        while lo < hi:
            mid = (lo + hi) // 2
            entry = top[order[mid]]
            if ranks_above(score[r], seq[r], e_score[entry], e_seq[entry]):
                lo = mid + 1
            else:
                hi = mid
        if lo == 0:
            meta[2] += 1
            continue
        stack = order[lo - 1]
        e_score[entries], e_seq[entries], e_id[entries], e_t[entries] = score[r], seq[r], ids[r], t[r]
        below[entries] = top[stack]
        top[stack] = entries
        meta[1] = entries + 1


@njit(cache=True)
def scan_rows(score, seq, limit, members, only, use_only, exclude):
    """The rows of a raw slide (best first) an S-AVL scan offers, newest first.

    The best ``limit`` rows (global pruning and Appendix C's ``k - rho`` cut, decided by the
    caller) minus members of ``P^k`` and of ``exclude``, and, if ``use_only``, only those in
    ``only`` (every seq array sorted ascending).
    """
    rows = np.empty(limit, np.int64)
    n = 0
    for r in range(limit):
        q = seq[r]
        if _contains(members, q) or _contains(exclude, q):
            continue
        if use_only and not _contains(only, q):
            continue
        rows[n] = r
        n += 1
    rows = rows[:n]
    return rows[np.argsort(-seq[rows], kind="mergesort")]


@njit(cache=True)
def offer_slides(score, seq, starts, theta_score, theta_seq, use_theta, capacity, floor, use_floor,
                 members, only, use_only, exclude):
    """Which objects of consecutive raw slides an S-AVL scan offers, in offering order
    (Section 5.1 with Appendix C): slide ``j`` holds rows ``starts[j]:starts[j + 1]``, best
    first, the slides newest first.  Per slide: the rows ranking above ``theta`` (global
    pruning, if ``use_theta``), at most ``capacity`` (only the best ``k - P.rho`` of a slide can
    be meaningful), at least ``floor`` (if ``use_floor``), then :func:`scan_rows`.  Returns
    ``(rows, scanned)``: row numbers into the slides, and how many objects passed the cuts.
    ``O(r log k)`` for ``r`` rows."""
    out = np.empty(len(score), np.int64)
    total = scanned = 0
    for j in range(len(starts) - 1):
        lo, hi = starts[j], starts[j + 1]
        n = hi - lo
        if use_theta:
            n = count_ranked_above(score[lo:hi], seq[lo:hi], theta_score, theta_seq)
        n = min(n, capacity)
        if use_floor:
            n = min(n, count_at_least(score[lo:hi], floor))
        if n <= 0:
            continue
        scanned += n
        for r in scan_rows(score[lo:hi], seq[lo:hi], n, members, only, use_only, exclude):
            out[total] = lo + r
            total += 1
    return out[:total], scanned


@njit(cache=True)
def _contains(sorted_values, value):
    i = np.searchsorted(sorted_values, value)
    return i < len(sorted_values) and sorted_values[i] == value


# ----------------------------------------------------------------- M_0
@njit(cache=True)
def _m_above(e_score, e_seq, top, a, b):
    """Stack ``a``'s top ranks above stack ``b``'s."""
    x, y = top[a], top[b]
    return ranks_above(e_score[x], e_seq[x], e_score[y], e_seq[y])


@njit(cache=True)
def _m_up(heap, pos, e_score, e_seq, top, i):
    while i > 0:
        parent = (i - 1) // 2
        if not _m_above(e_score, e_seq, top, heap[i], heap[parent]):
            return
        heap[i], heap[parent] = heap[parent], heap[i]
        pos[heap[i]] = i
        pos[heap[parent]] = parent
        i = parent


@njit(cache=True)
def _m_down(heap, pos, size, e_score, e_seq, top, i):
    while True:
        child = 2 * i + 1
        if child >= size:
            return
        if child + 1 < size and _m_above(e_score, e_seq, top, heap[child + 1], heap[child]):
            child += 1
        if not _m_above(e_score, e_seq, top, heap[child], heap[i]):
            return
        heap[i], heap[child] = heap[child], heap[i]
        pos[heap[i]] = i
        pos[heap[child]] = child
        i = child


@njit(cache=True)
def m_push(heap, pos, meta, e_score, e_seq, top, stack):
    """Add a stack's top to the heap of tops (``O(log k)``); ``meta = [heap size, entries]``."""
    size = meta[0]
    heap[size] = stack
    pos[stack] = size
    meta[0] = size + 1
    _m_up(heap, pos, e_score, e_seq, top, size)


@njit(cache=True)
def _m_pop_stack(heap, pos, meta, e_score, e_seq, below, alive, top, stack):
    """Remove the top entry of ``stack``: the entry below becomes its top (a smaller key:
    sift down) or the stack leaves the heap (``O(log k)``)."""
    entry = top[stack]
    alive[entry] = False
    meta[1] -= 1
    i = pos[stack]
    nxt = below[entry]
    if nxt >= 0:
        top[stack] = nxt
        _m_down(heap, pos, meta[0], e_score, e_seq, top, i)
        return entry
    top[stack] = -1
    size = meta[0] - 1
    meta[0] = size
    pos[stack] = -1
    if i < size:
        heap[i] = heap[size]
        pos[heap[i]] = i
        _m_down(heap, pos, size, e_score, e_seq, top, i)
        _m_up(heap, pos, e_score, e_seq, top, i)
    return entry


@njit(cache=True)
def m_pop_best(heap, pos, meta, e_score, e_seq, below, alive, top, count, key_score, key_seq, use_key):
    """Algorithm 1 line 6: the best stack top moves out of ``M_0`` (``O(log k)`` each), at most
    ``count`` times, and, if ``use_key``, only while it ranks above ``(key_score, key_seq)``.
    Returns the entries, best first."""
    out = np.empty(count, np.int64)
    n = 0
    while n < count and meta[0] > 0:
        entry = top[heap[0]]
        if use_key and not ranks_above(e_score[entry], e_seq[entry], key_score, key_seq):
            break
        out[n] = _m_pop_stack(heap, pos, meta, e_score, e_seq, below, alive, top, heap[0])
        n += 1
    return out[:n]


@njit(cache=True)
def m_expire(heap, pos, meta, e_score, e_seq, below, alive, top, stack_of, queue, head, keys, bound):
    """Entries whose expiry key is below ``bound`` leave ``M_0``: walked oldest first from
    ``queue[head]``; a top is the oldest entry of its stack, so each one is a top
    (``O(log k)`` each).  Returns ``(new head, entries removed)``."""
    gone = 0
    while head < len(queue) and keys[queue[head]] < bound:
        entry = queue[head]
        head += 1
        if not alive[entry]:
            continue
        if top[stack_of[entry]] != entry:
            raise AssertionError("an expiring entry is not its stack's top")
        _m_pop_stack(heap, pos, meta, e_score, e_seq, below, alive, top, stack_of[entry])
        gone += 1
    return head, gone


# ----------------------------------------------------------------- TBUI
@njit(cache=True)
def kth_highest(values, j):
    """The ``j``-th highest value (the paper's median search, ``O(len)``)."""
    return np.partition(values, len(values) - j)[len(values) - j]


@njit(cache=True)
def _keep_at_least(above, n, tau):
    kept = 0
    for i in range(n):
        if above[i] >= tau:
            above[kept] = above[i]
            kept += 1
    return kept


@njit(cache=True)
def tbui_observe(values, above, n, tau, zeta, limit, initialising):
    """Algorithm 2 lines 3-9 for one slide: the slide's scores of at least ``tau`` join
    ``U^tau`` (``above[:n]``, room for them required); during the initialisation ``tau`` rises
    to the ``zeta``-th highest of ``U^tau`` whenever ``|U^tau| >= 2 zeta``, afterwards once when
    ``|U^tau| > limit`` (the uptrend).  Returns ``(n, tau)``; ``O(s + |U^tau|)``."""
    for v in values:
        if v >= tau:
            above[n] = v
            n += 1
    if initialising:
        while n >= 2 * zeta:
            raised = kth_highest(above[:n], zeta)
            if raised <= tau:
                break
            tau = raised
            n = _keep_at_least(above, n, tau)
    elif n > limit:
        raised = kth_highest(above[:n], zeta)
        if raised > tau:
            tau = raised
            n = _keep_at_least(above, n, tau)
    return n, tau


@njit(cache=True)
def take_slide_observed(values, seq, ids, t, k, rows, u_score, u_seq, u_id, u_t, score, out_seq, out_id, out_t,
                        above, n, tau, zeta, limit, initialising):
    """The enhanced variant's arrival in one call: :func:`take_slide`, then
    :func:`tbui_observe` on the same scores.  Returns ``(n, tau)``."""
    take_slide(values, seq, ids, t, k, rows, u_score, u_seq, u_id, u_t, score, out_seq, out_id, out_t)
    return tbui_observe(values, above, n, tau, zeta, limit, initialising)


@njit(cache=True, inline="always")
def scores_of(x, weights):
    """``F = x · w`` of every row of ``x``, summed column by column in the order of
    :func:`engine.ranking.score` (the same roundings, so the same floats).  ``O(m d)``."""
    values = np.empty(x.shape[0], np.float64)
    for i in range(x.shape[0]):
        value = x[i, 0] * weights[0]
        for j in range(1, len(weights)):
            value += x[i, j] * weights[j]
        values[i] = value
    return values


QUIET_K, QUIET_N, QUIET_ZETA, QUIET_LIMIT, QUIET_INITIALISING, QUIET_OBSERVE, QUIET_FULL, QUIET_KTH_SEQ = range(8)
(QUIET_SLIDE, QUIET_WINDOW, QUIET_SLIDE_SIZE, QUIET_BLOCKED, QUIET_C_OLDEST, QUIET_M_NEXT, QUIET_UNIT_SLIDES,
 QUIET_UNIT_OBJECTS) = range(8, 16)
QUIET_INTS = 16
"""The integer cells of a quiet slide's state (``ints``): ``k``; TBUI's ``|U^tau|``, ``zeta``,
uptrend limit (floored: ``|U^tau|`` is an integer), whether it is initialising and whether the
variant observes at all; whether the previous answer stands unless an arrival displaces it
(it holds ``k`` objects and no other source of it changed) and its last's ``seq``.

Then what :func:`quiet_slide_raw` reads: the last slide, the window and the slide size (in
slides and in seq or time units), whether a quiet slide needs the interpreter this time
(``blocked``), the lowest expiry key of ``C`` and the next of ``M_0`` (a bound above either
expires something); and what it counts: the filling unit's slides and objects since the
algorithm last read them."""

QUIET_TAU, QUIET_KTH_SCORE, QUIET_WEIGHTS = range(3)
QUIET_FLOATS = 2
"""The float cells of a quiet slide's state (``floats``): TBUI's ``tau``, the previous answer's
last score; then (:func:`quiet_slide_raw`) the query's weights from ``QUIET_WEIGHTS`` on, and
after them TBUI's ``U^tau`` (its first ``QUIET_N`` cells; the rest is its room).
:func:`quiet_slide_raw` reads them as the float64 view of ``ints`` after its
:data:`QUIET_INTS` cells (one array argument fewer): the algorithm keeps ``floats`` as that view."""

QUIET_DONE, QUIET_DROPPED, QUIET_SLOW, QUIET_EXPIRES = range(4)
QUIET_CODES = 4
"""What :func:`quiet_slide_raw` did: the slide, and the answer stands; the slide, and the
answer must be made again; nothing but perhaps the expired raw slide's drop (the
interpreter's quiet step must take the slide); nothing, because the expiry bound reaches
``C`` or ``M_0`` (the interpreter expires the slide of ``P_0`` and calls again).  It returns
the code plus ``QUIET_CODES`` times the raw objects the ring gained (negative when it lost more
than it gained)."""


@njit(cache=True, inline="always")
def _observe_and_judge(values, rows, above, ints, floats):
    """The end of a quiet slide: TBUI's observation (when the variant observes) and whether the
    previous answer stands (:func:`quiet_slide`)."""
    if ints[QUIET_OBSERVE]:
        n, tau = tbui_observe(values, above, ints[QUIET_N], floats[QUIET_TAU], ints[QUIET_ZETA], ints[QUIET_LIMIT],
                              ints[QUIET_INITIALISING] != 0)
        ints[QUIET_N], floats[QUIET_TAU] = n, tau
    return ints[QUIET_FULL] != 0 and (len(rows) == 0 or not ranks_above(
        rows[0]["score"], rows[0]["seq"], floats[QUIET_KTH_SCORE], ints[QUIET_KTH_SEQ]))


@njit(cache=True)
def quiet_slide(x, weights, seq, ids, t, rows, u_score, u_seq, u_id, u_t, score, out_seq, out_id, out_t,
                above, ints, floats):
    """A slide in which no unit, partition or S-AVL event falls (the driver's common case), in
    one call: the slide's scores (:func:`scores_of`), Algorithm 1 lines 7-11
    (:func:`take_slide`), TBUI's observation if the variant observes (:func:`tbui_observe`,
    its state read from and written back to ``ints`` and ``floats``), and whether the previous
    answer stands: it does when the state says it stands unless displaced (it holds ``k``
    objects and the caller vouches that no other source of the answer changed) and the slide's
    best object does not rank above its last.  The scalars live in the two small arrays
    ``ints`` and ``floats`` (:data:`QUIET_INTS`, :data:`QUIET_FLOATS`) that the algorithm keeps:
    a scalar argument costs the call about as much as an array.  Returns whether the answer
    stands; ``O(m (d + log k) + |U^tau|)``.

    The steps are inlined (``inline="always"``) and the arrays bound through
    :func:`engine.kernels.views.unowned` views: a call between compiled functions, or a binding,
    counts every array argument's reference atomically, which would cost more than the steps."""
    x, weights, seq, ids, t, rows = unowned(x), unowned(weights), unowned(seq), unowned(ids), unowned(t), unowned(rows)
    u_score, u_seq, u_id, u_t = unowned(u_score), unowned(u_seq), unowned(u_id), unowned(u_t)
    score, out_seq, out_id, out_t = unowned(score), unowned(out_seq), unowned(out_id), unowned(out_t)
    ints, floats = unowned(ints), unowned(floats)
    values = scores_of(x, weights)
    take_slide(values, seq, ids, t, ints[QUIET_K], rows, u_score, u_seq, u_id, u_t, score, out_seq, out_id, out_t)
    return _observe_and_judge(values, rows, above, ints, floats)


@njit(cache=True)
def quiet_slide_full(x, weights, seq, ids, t, rows, u_score, u_seq, u_id, u_t, above, ints, floats):
    """:func:`quiet_slide` when the filling unit's top ``u_*`` already holds ``k`` objects: the
    slide's best objects are merged into it in place (:func:`merge_into_full_top`), so the call
    takes four arrays fewer and the caller allocates no new top.  Returns whether the answer
    stands; inlined and unowned like :func:`quiet_slide`."""
    x, weights, seq, ids, t, rows = unowned(x), unowned(weights), unowned(seq), unowned(ids), unowned(t), unowned(rows)
    u_score, u_seq, u_id, u_t = unowned(u_score), unowned(u_seq), unowned(u_id), unowned(u_t)
    ints, floats = unowned(ints), unowned(floats)
    values = scores_of(x, weights)
    select_slide(values, seq, ids, t, ints[QUIET_K], rows)
    merge_into_full_top(rows, u_score, u_seq, u_id, u_t)
    return _observe_and_judge(values, rows, above, ints, floats)


# ----------------------------------------------------------------- the raw slides' arena
RAW = np.dtype([("score", np.float64), ("seq", np.int64), ("id", np.int64), ("t", np.int64)])
"""A raw object: one record of the ring."""

RAW_HEAD, RAW_TAIL, RAW_SLIDES, RAW_SIZE, RAW_OLDEST, RAW_NEWEST, RAW_SLOTS = range(7)
RAW_META = 7
"""The cells of the raw slides' index (``cells``) before its slots: the next free row of the
ring of rows, the first row of the oldest slide, how many slides and rows are kept, the oldest
and newest slide kept, the number of slots.  Slot ``j`` (three cells from ``RAW_META + 3 j``:
slide, first row, rows) holds the slides ``slide & (slots - 1) == j``, ``slots`` a power of two
above the span from the oldest kept slide to the newest; a slot with no rows is free.  The
index and the ring are one int64 array (``ring``): the index, then the ring's records (four
cells each, the score's read as float64), so a call takes them as one argument
(:func:`ring_parts`)."""


@njit(cache=True, inline="always")
def ring_parts(ring):
    """The index and the records of the raw slides' array ``ring`` (views)."""
    cells = ring[:RAW_META + 3 * ring[RAW_SLOTS]]
    return cells, ring[len(cells):].view(RAW)


@njit(cache=True, inline="always")
def _raw_slot(cells, slide):
    return RAW_META + 3 * (slide & ((len(cells) - RAW_META) // 3 - 1))


@njit(cache=True, inline="always")
def raw_find(cells, slide):
    """``(first row, rows)`` of a kept raw slide, ``(0, 0)`` if it is not kept (``O(1)``)."""
    slot = _raw_slot(cells, slide)
    if cells[slot + 2] == 0 or cells[slot] != slide:
        return 0, 0
    return cells[slot + 1], cells[slot + 2]


@njit(cache=True, inline="always")
def raw_room(capacity, cells, slide, count):
    """Where ``count`` rows of ``slide`` (newer than every kept slide) go in the ring of
    ``capacity`` rows: after the newest rows, or from row 0 when the end of the ring is too
    short; ``-1`` when neither has room or the slots do not span the slides (``O(1)``)."""
    if cells[RAW_SLIDES] == 0:
        return 0 if count <= capacity and (len(cells) - RAW_META) // 3 > 0 else -1
    if slide - cells[RAW_OLDEST] >= (len(cells) - RAW_META) // 3:
        return -1
    head, tail = cells[RAW_HEAD], cells[RAW_TAIL]
    if head > tail:
        if capacity - head >= count:
            return head
        return 0 if tail >= count else -1
    return head if tail - head >= count else -1


@njit(cache=True, inline="always")
def raw_place(cells, slide, start, count):
    """Record ``count`` rows of ``slide`` from row ``start`` (:func:`raw_room`), ``O(1)``."""
    slot = _raw_slot(cells, slide)
    cells[slot], cells[slot + 1], cells[slot + 2] = slide, start, count
    if cells[RAW_SLIDES] == 0:
        cells[RAW_OLDEST], cells[RAW_TAIL] = slide, start
    cells[RAW_NEWEST] = slide
    cells[RAW_HEAD] = start + count
    cells[RAW_SLIDES] += 1
    cells[RAW_SIZE] += count


@njit(cache=True)
def raw_reserve(capacity, cells, slide, count):
    """:func:`raw_room` then :func:`raw_place`: the first row for ``count`` rows of ``slide``,
    or ``-1`` (nothing recorded) when the ring must be rebuilt first (``O(1)``)."""
    start = raw_room(capacity, cells, slide, count)
    if start >= 0:
        raw_place(cells, slide, start, count)
    return start


@njit(cache=True)
def raw_drop(cells, slide):
    """Forget a raw slide; returns its rows (0 if it was not kept).  When it was the oldest,
    the oldest kept becomes the next one (a walk over the slides between, each walked once
    while it is the oldest: ``O(1)`` amortised)."""
    slot = _raw_slot(cells, slide)
    count = cells[slot + 2]
    if count == 0 or cells[slot] != slide:
        return 0
    cells[slot + 2] = 0
    cells[RAW_SLIDES] -= 1
    cells[RAW_SIZE] -= count
    if cells[RAW_SLIDES] == 0:
        cells[RAW_HEAD] = cells[RAW_TAIL] = cells[RAW_OLDEST] = cells[RAW_NEWEST] = 0
    elif slide == cells[RAW_OLDEST]:
        nxt = slide + 1
        while True:
            start, rows = raw_find(cells, nxt)
            if rows:
                break
            nxt += 1
        cells[RAW_OLDEST], cells[RAW_TAIL] = nxt, start
    return count


@njit(cache=True)
def raw_span(cells, first, last):
    """``(slides, first rows, rows)`` of the kept raw slides from ``first`` to ``last``, oldest
    first (``O(last - first)``)."""
    n = max(0, last - first + 1)
    slides, starts, counts = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64)
    kept = 0
    for slide in range(first, last + 1):
        start, count = raw_find(cells, slide)
        if count:
            slides[kept], starts[kept], counts[kept] = slide, start, count
            kept += 1
    return slides[:kept], starts[:kept], counts[:kept]


@njit(cache=True)
def raw_drop_span(cells, first, last):
    """:func:`raw_drop` of every slide from ``first`` to ``last``; returns the rows dropped."""
    dropped = 0
    for slide in range(first, last + 1):
        dropped += raw_drop(cells, slide)
    return dropped


@njit(cache=True)
def raw_gather(rows, cells, first, last, newest_first, theta_score, theta_seq, use_theta):
    """The rows of the kept raw slides from ``first`` to ``last`` whose best object ranks above
    ``theta`` (every one if not ``use_theta``), copied into one record array, newest slide first
    if ``newest_first``: ``(records, bounds)``, slide ``j`` at rows ``bounds[j]:bounds[j + 1]``
    (``O(last - first + rows copied)``)."""
    n = max(0, last - first + 1)
    starts, counts = np.empty(n, np.int64), np.empty(n, np.int64)
    kept = total = 0
    for j in range(n):
        start, count = raw_find(cells, last - j if newest_first else first + j)
        if count and (not use_theta or ranks_above(rows[start]["score"], rows[start]["seq"], theta_score, theta_seq)):
            starts[kept], counts[kept] = start, count
            kept += 1
            total += count
    records = np.empty(total, rows.dtype)
    bounds = np.empty(kept + 1, np.int64)
    bounds[0] = 0
    for j in range(kept):
        records[bounds[j]:bounds[j] + counts[j]] = rows[starts[j]:starts[j] + counts[j]]
        bounds[j + 1] = bounds[j] + counts[j]
    return records, bounds


@njit(cache=True)
def raw_copy(rows, cells, new_rows, new_cells):
    """The kept raw slides of ``rows, cells`` into the empty ``new_rows, new_cells``, oldest
    first from row 0 (as :func:`raw_reserve` places them), ``O(span + rows kept)``."""
    if cells[RAW_SLIDES] == 0:
        return
    for slide in range(cells[RAW_OLDEST], cells[RAW_NEWEST] + 1):
        start, count = raw_find(cells, slide)
        if count:
            head = new_cells[RAW_HEAD]
            new_rows[head:head + count] = rows[start:start + count]
            raw_place(new_cells, slide, head, count)


@njit(cache=True, inline="always")
def _quiet_raw(x, seq, ids, t, raw, cells, u_score, u_seq, u_id, u_t, score, out_seq, out_id, out_t, ints, grow):
    """:func:`quiet_slide_raw` (``grow`` False: the filling top is full and merged in place) and
    :func:`quiet_slide_raw_grow` (``grow``: merged with it into ``score, out_*``)."""
    floats = ints.view(np.float64)[QUIET_INTS:]
    d = x.shape[1]
    above = floats[QUIET_WEIGHTS + d:]
    m = len(seq)
    e = ints[QUIET_SLIDE] + 1
    gone = e - ints[QUIET_WINDOW]
    bound = gone * ints[QUIET_SLIDE_SIZE]
    chosen = min(ints[QUIET_K], m)
    if ints[QUIET_BLOCKED] or (ints[QUIET_OBSERVE] and ints[QUIET_N] + m > len(above)) \
            or (grow and len(score) != min(ints[QUIET_K], len(u_score) + chosen)):
        return QUIET_SLOW
    if bound > ints[QUIET_C_OLDEST] or bound > ints[QUIET_M_NEXT]:
        return QUIET_EXPIRES
    dropped = raw_drop(cells, gone)
    start = raw_reserve(len(raw), cells, e, chosen)
    if start < 0:
        return QUIET_SLOW - QUIET_CODES * dropped
    rows = raw[start:start + chosen]
    values = scores_of(x, floats[QUIET_WEIGHTS:QUIET_WEIGHTS + d])
    if grow:
        take_slide(values, seq, ids, t, chosen, rows, u_score, u_seq, u_id, u_t, score, out_seq, out_id, out_t)
    else:
        select_slide(values, seq, ids, t, chosen, rows)
        merge_into_full_top(rows, u_score, u_seq, u_id, u_t)
    stands = _observe_and_judge(values, rows, above, ints, floats)
    ints[QUIET_SLIDE] = e
    ints[QUIET_UNIT_SLIDES] += 1
    ints[QUIET_UNIT_OBJECTS] += m
    return (QUIET_DONE if stands else QUIET_DROPPED) + QUIET_CODES * (chosen - dropped)


@njit(cache=True, inline="always")
def top_columns(block):
    """The four columns of a top kept as one ``(4, n)`` int64 array (score, as float64 bits;
    seq; id; t), as views without a reference count (:func:`engine.kernels.views.unowned`)."""
    return unowned(block[0].view(np.float64)), unowned(block[1]), unowned(block[2]), unowned(block[3])


@njit(cache=True)
def quiet_slide_raw(x, seq, ids, t, ring, unit, ints):
    """A quiet slide whole, in one call: what the interpreter's quiet step does when nothing
    but the slide's arrival and the expiry of one raw slide happens, the filling unit's top full.

    Nothing is done (returns ``QUIET_SLOW``) when ``ints`` says the slide is ``blocked`` (an
    S-AVL is forming, the open tops are cached), when ``U^tau`` has no room for the slide, or
    when the raw slides' ring has none for its best ``k`` (the expired slide is dropped first);
    nothing either (returns ``QUIET_EXPIRES``) when the expiry bound reaches ``C`` or ``M_0``
    (``QUIET_C_OLDEST``, ``QUIET_M_NEXT``).
    Otherwise: the expired slide leaves the ring (:func:`raw_drop`; the ring and its index are
    the one array ``ring``, :func:`ring_parts`), the slide's best ``k`` go
    to the ring (:func:`raw_reserve`), are merged into the filling unit's full top ``unit`` (its
    four columns as one array, :func:`top_columns`; :func:`merge_into_full_top`) and observed
    (:func:`tbui_observe`), the filling unit's counts in ``ints`` move, and the answer's verdict
    is returned (``QUIET_DONE`` or ``QUIET_DROPPED``), plus ``QUIET_CODES`` times the raw objects
    gained.  ``floats`` is the float64 view of ``ints`` after its ``QUIET_INTS`` cells; the
    scores use the weights there from ``QUIET_WEIGHTS``, and ``U^tau`` is the rest of it.  ``O(m (d + log k) + |U^tau|)``; the
    arrays bound as in :func:`quiet_slide`.  Every array argument costs the call its typing and
    unboxing (about 0.15 us each, more for a record array): hence one array for the ring and its
    index, one per top, and the scalars and ``U^tau`` in ``ints``."""
    x, seq, ids, t = unowned(x), unowned(seq), unowned(ids), unowned(t)
    cells, raw = ring_parts(unowned(ring))
    u_score, u_seq, u_id, u_t = top_columns(unowned(unit))
    return _quiet_raw(x, seq, ids, t, raw, cells, u_score, u_seq, u_id, u_t, u_score, u_seq, u_id, u_t,
                      unowned(ints), False)


@njit(cache=True)
def quiet_slide_raw_grow(x, seq, ids, t, ring, unit, out, ints):
    """:func:`quiet_slide_raw` while the filling unit's top ``unit`` holds fewer than ``k``
    objects: the slide's best objects and it are merged (:func:`take_slide`) into the new top
    ``out`` the caller made (one ``(4, n)`` array too), which must hold ``min(k, |unit| +
    min(k, m))`` objects (else ``QUIET_SLOW``, nothing done)."""
    x, seq, ids, t = unowned(x), unowned(seq), unowned(ids), unowned(t)
    cells, raw = ring_parts(unowned(ring))
    u_score, u_seq, u_id, u_t = top_columns(unowned(unit))
    score, out_seq, out_id, out_t = top_columns(unowned(out))
    return _quiet_raw(x, seq, ids, t, raw, cells, u_score, u_seq, u_id, u_t, score, out_seq, out_id, out_t,
                      unowned(ints), True)


# ----------------------------------------------------------------- partitioning (Section 4.2)
@njit(cache=True)
def rank_sum_u(x, y):
    """Mann-Whitney ``U`` of ``x`` against ``y`` (``R_1 - n_1 (n_1 + 1) / 2``, tied values
    sharing their mean rank) and the tie term ``sum(t^3 - t)`` over the groups of tied values
    (``O((n_1 + n_2) log(n_1 + n_2))``)."""
    n1, n = len(x), len(x) + len(y)
    values = np.empty(n, np.float64)
    values[:n1] = x
    values[n1:] = y
    order = np.argsort(values, kind="mergesort")
    rank_sum = 0.0
    ties = 0.0
    i = 0
    while i < n:
        j = i + 1
        while j < n and values[order[j]] == values[order[i]]:
            j += 1
        mean_rank = (i + j + 1) / 2.0
        group = j - i
        ties += group * group * group - group
        for r in range(i, j):
            if order[r] < n1:
                rank_sum += mean_rank
        i = j
    return rank_sum - n1 * (n1 + 1) / 2.0, ties


@njit(cache=True)
def u_counts(n1, n2):
    """How many of the ``C(n1 + n2, n1)`` arrangements of two tie-free samples give each
    ``U = 0 .. n1 n2``: the coefficients of the Gaussian binomial ``[n1 + n2 choose n1]_q``,
    built as ``prod_i (1 - q^{n2 + i}) / (1 - q^i)`` (``O(n1^2 n2)``; exact in int64 while
    ``C(n1 + n2, n1) < 2^62``)."""
    top = n1 * n2
    counts = np.zeros(top + 1, np.int64)
    counts[0] = 1
    for i in range(1, n1 + 1):
        step = n2 + i
        for u in range(top, step - 1, -1):
            counts[u] -= counts[u - step]
        for u in range(i, top + 1):
            counts[u] += counts[u - i]
    return counts


@njit(cache=True)
def mann_whitney_greater(x, y, exact):
    """One-sided p-value ``P(U >= U_obs)`` of the Mann-Whitney rank-sum test that ``x`` is
    stochastically greater than ``y``: exact when ``exact`` and the samples hold no tied
    values (``O(n_1^2 n_2)``), else (``O(n log n)``) by the normal
    approximation ``z = (U - n_1 n_2 / 2) / sqrt(n_1 n_2 / 12 ((n + 1) - sum(t^3 - t) / (n (n - 1))))``
    without continuity correction, as ``scipy.stats.mannwhitneyu`` computes them."""
    n1, n2 = len(x), len(y)
    u, ties = rank_sum_u(x, y)
    if exact and ties == 0.0:
        counts = u_counts(n1, n2)
        at_least = 0.0
        for v in range(int(u + 0.5), n1 * n2 + 1):
            at_least += counts[v]
        return min(1.0, at_least / counts.sum())
    n = n1 + n2
    sigma = np.sqrt(n1 * n2 / 12.0 * ((n + 1) - ties / (n * (n - 1))))
    if sigma == 0.0:
        return np.nan
    z = (u - n1 * n2 / 2.0) / sigma
    return 0.5 * math.erfc(z / math.sqrt(2.0))
