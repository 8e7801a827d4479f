"""Compiled steps of the shared executor (``engine.multi``): MTopList over numpy arrays.

One weights group holds one super-top-k list for every window family of its queries (a family
is a ``(kind, window, slide, since)`` with the largest ``k`` of its queries).  The list is a
skip list over node slots, ranked by ``(score, seq)`` best first; every node carries, per
family, its window marks ``start <= end`` (empty career: ``start = end + 1``; never alive in
the family: ``end = NEVER``) and the number of families it is a member of (``careers``).  Every
family keeps MinTopK's ring of ``C = window / slide`` windows, each with ``tkc`` and ``lbp``.

Each function is one step of the algorithm (``docs/algorithms/multi.md``); all state lives in
the arrays passed in, so the plain-Python reference is the same code under
``NUMBA_DISABLE_JIT=1`` (or ``function.py_func``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

NONE = -1
"""No node."""
HEAD = 0
"""The skip list's sentinel node: never a record, above every record."""
LEVELS = 24
"""Skip-list levels: enough for 2**24 records at p = 1/2."""
NEVER = -(1 << 63)
"""``end`` mark of a node that is not alive in a family (it arrived before the family began):
below every window index, which may be negative (times before zero)."""
ALWAYS = (1 << 63) - 1
"""``end`` mark of the sentinel, so an upward walk can never pass it."""

SEQ, OID, TIME, ABOVE, LEVEL, CAREERS = range(6)
NODE_COLUMNS = 6
ACTIVE, KIND, WINDOW, SLIDE, SPAN, K, SINCE, CURRENT, OFFSET, RELEASED = range(10)
FAMILY_COLUMNS = 10
COUNT_KIND, TIME_KIND = 0, 1
UNSET = -(1 << 63)
"""``CURRENT`` of a time family that has seen no arrival yet, and ``time_now`` unknown: no
window index or time (``t // slide + 1``, negative before zero) is this low."""
LIVE, FREE_TOP, NEXT_SEQ = range(3)
META_COLUMNS = 3
ARRIVALS, PREFILTERED, DISCARDED, INSERTED, EVICTIONS, LBP_SKIPS, ANSWER_SKIPS, ANSWERS = range(8)
COUNTER_NAMES = ("arrivals", "prefiltered", "discarded", "inserted", "evictions", "lbp_skips",
                 "answer_skips", "answers")
E_FAMILY, E_WINDOW, E_POSITION, E_OFFSET, E_LENGTH = range(5)
EMIT_COLUMNS = 5
EMITS, OUTS = range(2)


@njit(cache=True)
def ranks_above(scores, nodes, node, value, seq):
    """Whether ``node`` ranks above the key ``(value, seq)`` in the total order: ``O(1)``.

    Both reads come before the comparisons: read in the branch the comparison of scores takes,
    ``nodes`` kept its reference count update (two atomic operations per call, on the hot path
    of every search and window step) because numba's pruning cannot pair them across branches."""
    score = scores[node]
    later = nodes[node, SEQ] > seq
    return score > value or (score == value and later)


@njit(cache=True)
def node_level(seq):
    """Skip-list height of the record with ``seq``: 1 + trailing ones of a 32-bit hash of it
    (``p = 1/2``).  Derived from ``seq`` alone, so a restored list has the very same shape and
    no random state needs saving; integer steps that cannot overflow, compiled or not."""
    mask = 0xFFFFFFFF
    h = (seq ^ (seq >> 32)) & mask
    h = (((h >> 16) ^ h) * 0x45D9F3B) & mask
    h = (((h >> 16) ^ h) * 0x45D9F3B) & mask
    h = (h >> 16) ^ h
    level = 1
    while level < LEVELS and h & 1 == 1:
        level += 1
        h >>= 1
    return level


@njit(cache=True)
def find_predecessors(scores, nodes, forward, value, seq, update):
    """``update[l]``: the last node at level ``l`` ranking above ``(value, seq)``: ``O(log MTK)``."""
    x = HEAD
    for level in range(LEVELS - 1, -1, -1):
        after = forward[x, level]
        while after != NONE and ranks_above(scores, nodes, after, value, seq):
            x = after
            after = forward[x, level]
        update[level] = x


@njit(cache=True)
def link(scores, nodes, forward, free, meta, value, seq, oid, t, update):
    """Take a free slot for a new record and position it in the list: ``O(log MTK)``.  Its
    links above its height are never read (every walk at a level follows that level's chain)."""
    meta[FREE_TOP] -= 1
    node = free[meta[FREE_TOP]]
    scores[node] = value
    nodes[node, SEQ] = seq
    nodes[node, OID] = oid
    nodes[node, TIME] = t
    nodes[node, CAREERS] = 0
    height = node_level(seq)
    nodes[node, LEVEL] = height
    find_predecessors(scores, nodes, forward, value, seq, update)
    for level in range(height):
        forward[node, level] = forward[update[level], level]
        forward[update[level], level] = node
    nodes[node, ABOVE] = update[0]
    below = forward[node, 0]
    if below != NONE:
        nodes[below, ABOVE] = node
    meta[LIVE] += 1
    return node


@njit(cache=True)
def unlink(nodes, forward, free, meta, node):
    """Remove a record from the list and free its slot: ``O(log MTK)`` expected, no key
    comparison.  Its predecessor at level ``l`` is the nearest record above it that is at
    least ``l + 1`` high, found by walking up the ``ABOVE`` links (about ``2**(h - 1)`` steps
    for a record ``h`` high, ``P(h) = 2**-h``: a handful on average, against a search from the
    top of ``2 log MTK`` comparisons)."""
    height = nodes[node, LEVEL]
    above = nodes[node, ABOVE]
    level = 0
    while level < height:
        while above != HEAD and nodes[above, LEVEL] <= level:
            above = nodes[above, ABOVE]
        top = height if above == HEAD else min(height, nodes[above, LEVEL])
        while level < top:
            forward[above, level] = forward[node, level]
            level += 1
    below = forward[node, 0]
    if below != NONE:
        nodes[below, ABOVE] = nodes[node, ABOVE]
    free[meta[FREE_TOP]] = node
    meta[FREE_TOP] += 1
    meta[LIVE] -= 1


@njit(cache=True)
def newest_slot(fam, family):
    """The ring slot of the newest window of ``family``: ``O(1)``."""
    span = fam[family, SPAN]
    return fam[family, OFFSET] + (fam[family, CURRENT] + span - 1) % span


@njit(cache=True)
def insert_piece(scores, nodes, forward, free, meta, start, end, fam, tkc, lbp, counters,
                 values, seqs, ids, ts, chosen, n, newest, entered, update):
    """Insert a piece's best arrivals ``chosen[:n]`` (best first), every family's newest window
    at ring slot ``newest[family]`` (``NONE`` for an inactive family).  Each is discarded in
    ``O(F)`` unless it enters some family's newest window (then it enters a suffix of its
    windows, Lemma 4.3), else positioned once (``O(log MTK)``) and, per family it enters,
    MinTopK's ``UpdateSuperTopk``: it joins the windows from the newest back while it beats their
    ``lbp``; a full window's ``lbp`` record loses the window and ``lbp`` moves up to the next
    record alive in it (Lemma 4.5), ``O(1)`` per window joined plus the records skipped.  The
    first arrival entering no family stops the piece: the worse ones left, in the same windows,
    cannot enter any either (counted as discarded).

    One function, with the discard test and the window marks' update written inline: numba
    does not inline its calls, and a compiled call with array arguments updates each array's
    reference count atomically, which made the calls once per arrival and family (``enters``,
    ``update_window_marks``) cost more than their work."""
    families = fam.shape[0]
    for position in range(n):
        index = chosen[position]
        value = values[index]
        seq = seqs[index]
        any_entered = False
        for family in range(families):
            slot = newest[family]
            entered[family] = slot != NONE and (tkc[slot] < fam[family, K]
                                                or not ranks_above(scores, nodes, lbp[slot], value, seq))
            any_entered = any_entered or entered[family]
        if not any_entered:
            counters[DISCARDED] += n - position
            return
        counters[INSERTED] += 1
        node = link(scores, nodes, forward, free, meta, value, seq, ids[index], ts[index], update)
        for family in range(families):
            span = fam[family, SPAN]
            oldest = fam[family, CURRENT]
            newest_window = oldest + span - 1
            if not entered[family]:
                if fam[family, ACTIVE] == 1:
                    start[node, family] = newest_window + 1
                    end[node, family] = newest_window
                else:
                    start[node, family] = 0
                    end[node, family] = NEVER
                continue
            k = fam[family, K]
            offset = fam[family, OFFSET]
            slot = newest[family]
            end[node, family] = newest_window
            window = newest_window
            while window >= oldest:
                lowest = lbp[slot]
                if tkc[slot] < k:
                    tkc[slot] += 1
                    if lowest == NONE or ranks_above(scores, nodes, lowest, value, seq):
                        lbp[slot] = node
                else:
                    if ranks_above(scores, nodes, lowest, value, seq):
                        break
                    counters[EVICTIONS] += 1
                    above = nodes[lowest, ABOVE]
                    while end[above, family] < window:
                        counters[LBP_SKIPS] += 1
                        above = nodes[above, ABOVE]
                    lbp[slot] = above
                    start[lowest, family] += 1
                    if start[lowest, family] > end[lowest, family]:  # its career in the family is over
                        nodes[lowest, CAREERS] -= 1
                        if nodes[lowest, CAREERS] == 0:
                            unlink(nodes, forward, free, meta, lowest)
                window -= 1
                slot = slot - 1 if slot > offset else offset + span - 1
            start[node, family] = window + 1
            if window < newest_window:
                nodes[node, CAREERS] += 1


@njit(cache=True)
def answer_window(scores, nodes, forward, free, meta, start, end, fam, tkc, lbp, counters,
                  family, position, emits, out_ids, out_scores, out_seq, cursor):
    """MinTopK's ``PurgeExpiredWindow`` for the oldest window of ``family``: write its answer
    (the first ``tkc`` records of the list alive in it, Lemma 4.4), take the window from its
    members, and open the next future window.  ``RELEASED``: the records of the answer that
    left the list (alive in no later window), which only the answer holds now.
    ``O(tkc log MTK)`` plus the records skipped."""
    fam[family, RELEASED] = 0
    span = fam[family, SPAN]
    window = fam[family, CURRENT]
    slot = fam[family, OFFSET] + window % span
    count = tkc[slot]
    e = cursor[EMITS]
    emits[e, E_FAMILY] = family
    emits[e, E_WINDOW] = window
    emits[e, E_POSITION] = position
    emits[e, E_OFFSET] = cursor[OUTS]
    emits[e, E_LENGTH] = count
    cursor[EMITS] = e + 1
    node = forward[HEAD, 0]
    taken = 0
    while taken < count and node != NONE:
        after = forward[node, 0]
        if end[node, family] >= window:
            o = cursor[OUTS]
            out_ids[o] = nodes[node, OID]
            out_scores[o] = scores[node]
            out_seq[o] = nodes[node, SEQ]
            cursor[OUTS] = o + 1
            taken += 1
            start[node, family] += 1
            if start[node, family] > end[node, family]:
                nodes[node, CAREERS] -= 1
                if nodes[node, CAREERS] == 0:
                    unlink(nodes, forward, free, meta, node)
                    fam[family, RELEASED] += 1
        else:
            counters[ANSWER_SKIPS] += 1
        node = after
    counters[ANSWERS] += 1
    tkc[slot] = 0
    lbp[slot] = NONE
    fam[family, CURRENT] = window + 1


@njit(cache=True)
def advance(scores, nodes, forward, free, meta, start, end, fam, tkc, lbp, counters,
            family, key, position, emits, out_ids, out_scores, out_seq, cursor):
    """Answer every window of ``family`` whose boundary is at most ``key`` (``seq`` or ``t``).

    Returns ``False`` when the output buffers are full (the caller grows them and resumes).
    """
    slide = fam[family, SLIDE]
    longest = min(fam[family, K], scores.shape[0])  # an answer holds at most k records, at most every record
    count_kind = fam[family, KIND] == COUNT_KIND
    while fam[family, CURRENT] * slide <= key:
        if cursor[EMITS] >= emits.shape[0] or cursor[OUTS] + longest > out_ids.shape[0]:
            return False
        at = fam[family, CURRENT] * slide if count_kind else position
        answer_window(scores, nodes, forward, free, meta, start, end, fam, tkc, lbp, counters,
                      family, at, emits, out_ids, out_scores, out_seq, cursor)
    return True


@njit(cache=True)
def best_of_piece(values, lo, hi, k, chosen):
    """The ``min(k, hi - lo)`` best arrivals of ``values[lo:hi]`` (later index wins ties), best
    first, into ``chosen``; returns how many.  ``O(L + k log k)``: arrivals between two
    consecutive boundaries of any family share every window, so only their top ``k`` can
    ever be a member (MinTopK's batch prefilter)."""
    length = hi - lo
    n = 0
    if length > k:
        kth = np.partition(values[lo:hi], length - k)[length - k]
        for index in range(lo, hi):
            if values[index] > kth:
                chosen[n] = index
                n += 1
        index = hi - 1
        while n < k:
            if values[index] == kth:
                chosen[n] = index
                n += 1
            index -= 1
        chosen[:n] = np.sort(chosen[:n])
    else:
        for index in range(lo, hi):
            chosen[n] = index
            n += 1
    ranked = chosen[:n][np.argsort(values[chosen[:n]], kind="mergesort")]
    chosen[:n] = ranked[::-1]
    return n


@njit(cache=True)
def process_arrivals(scores, nodes, forward, free, meta, start, end, fam, tkc, lbp, counters,
                     values, seqs, ids, ts, first, stream_end, time_now, emits, out_ids, out_scores, out_seq, cursor):
    """Take arrivals ``first..`` of a chunk (scores ``values``, increasing ``seqs``), answering
    every window whose boundary they pass; then every count window with a boundary at most
    ``stream_end`` (the arrivals the whole stream has had) and every time window with a
    boundary at most ``time_now`` (the stream's latest time, ``UNSET`` when unknown).

    The chunk is cut into pieces at every boundary of every family; each piece is prefiltered
    to its best ``max k`` and inserted best first, until one enters no family (the worse ones
    left in the piece, in the same windows, cannot enter any either).  Returns ``(consumed, done)``: it stops
    early, with consistent state, when free slots or output space run out (``done`` is
    ``False``); the caller grows the arrays and calls again from ``consumed``.
    """
    m = values.shape[0]
    families = fam.shape[0]
    update = np.empty(LEVELS, np.int64)
    entered = np.zeros(families, np.bool_)
    newest = np.empty(families, np.int64)
    chosen = np.empty(m, np.int64)
    i = first
    while i < m:
        seq = seqs[i]
        t = ts[i]
        for family in range(families):
            if fam[family, ACTIVE] != 1:
                continue
            if fam[family, KIND] == TIME_KIND and fam[family, CURRENT] == UNSET:
                fam[family, CURRENT] = t // fam[family, SLIDE] + 1
            key = t if fam[family, KIND] == TIME_KIND else seq
            if not advance(scores, nodes, forward, free, meta, start, end, fam, tkc, lbp, counters,
                           family, key, seq, emits, out_ids, out_scores, out_seq, cursor):
                return i, False
        piece_end = m
        widest = 1
        for family in range(families):
            newest[family] = NONE
            if fam[family, ACTIVE] != 1:
                continue
            newest[family] = newest_slot(fam, family)
            boundary = fam[family, CURRENT] * fam[family, SLIDE]
            keys = seqs if fam[family, KIND] == COUNT_KIND else ts
            piece_end = min(piece_end, i + np.searchsorted(keys[i:piece_end], boundary))
            widest = max(widest, fam[family, K])
        if meta[FREE_TOP] < min(piece_end - i, widest):
            return i, False
        n = best_of_piece(values, i, piece_end, widest, chosen)
        insert_piece(scores, nodes, forward, free, meta, start, end, fam, tkc, lbp, counters,
                     values, seqs, ids, ts, chosen, n, newest, entered, update)
        counters[ARRIVALS] += piece_end - i
        counters[PREFILTERED] += piece_end - i - n
        meta[NEXT_SEQ] = seqs[piece_end - 1] + 1
        i = piece_end
    for family in range(families):
        if fam[family, ACTIVE] != 1:
            continue
        if fam[family, KIND] == COUNT_KIND:
            key = stream_end
        elif time_now != UNSET and fam[family, CURRENT] != UNSET:
            key = time_now
        else:
            continue
        if not advance(scores, nodes, forward, free, meta, start, end, fam, tkc, lbp, counters,
                       family, key, stream_end, emits, out_ids, out_scores, out_seq, cursor):
            return m, False
    meta[NEXT_SEQ] = stream_end
    return m, True


@njit(cache=True)
def drop_family(scores, nodes, forward, free, meta, start, end, fam, family):
    """Take every record out of ``family`` (records in no other family leave the list) and
    deactivate it: ``O(MTK log MTK)``."""
    update = np.empty(LEVELS, np.int64)
    node = forward[HEAD, 0]
    while node != NONE:
        after = forward[node, 0]
        member = start[node, family] <= end[node, family]
        start[node, family] = 0
        end[node, family] = NEVER
        if member:
            nodes[node, CAREERS] -= 1
            if nodes[node, CAREERS] == 0:
                unlink(nodes, forward, free, meta, node)
        node = after
    fam[family, ACTIVE] = 0


@njit(cache=True)
def append_ranked(scores, nodes, forward, free, meta, values, seqs, oids, ts):
    """Rebuild a list from records given best first (a restored state): ``O(MTK log MTK)``.
    Returns the slots, in the order given."""
    update = np.empty(LEVELS, np.int64)
    slots = np.empty(values.shape[0], np.int64)
    for i in range(values.shape[0]):
        slots[i] = link(scores, nodes, forward, free, meta, values[i], seqs[i], oids[i], ts[i], update)
    return slots
