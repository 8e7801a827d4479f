"""The compiled SAP kernels (``engine.kernels.sap``) against plain-Python references.

Every reference below is written from the paper's definitions with Python lists and sorts,
independently of the kernels; inputs have many ties (scores from a few values) so that the
total order ``(score, seq)`` decides.
"""

from __future__ import annotations

from bisect import bisect_left, insort

import numpy as np
import pytest

from engine.algorithms.sap.candidates import packed_top
from engine.algorithms.sap.savl import MeaningfulSet, StackBuilder
from engine.kernels import sap as kernels
from engine.ranking import score

SEEDS = range(30)


def objects(rng, m, values=5, start=0):
    """``m`` objects with scores from ``values`` distinct values, seq ``start, start + 1, ...``."""
    score = rng.integers(0, values, m).astype(np.float64)
    seq = np.arange(start, start + m, dtype=np.int64)
    return score, seq, seq + 1000, seq // 3


def ranked(score, seq, ids, t):
    """Rows as tuples, best first by (score, seq)."""
    return sorted(zip(score.tolist(), seq.tolist(), ids.tolist(), t.tolist()), key=lambda r: (r[0], r[1]),
                  reverse=True)


def columns(rows):
    return (np.array([r[0] for r in rows], np.float64), *(np.array([r[i] for r in rows], np.int64)
                                                          for i in (1, 2, 3)))


@pytest.mark.parametrize("seed", SEEDS)
def test_scores_of_rounds_as_the_engines_score(seed):
    rng = np.random.default_rng(seed)
    d = int(rng.integers(1, 6))
    x = rng.normal(0, 10.0 ** rng.integers(-3, 8), (int(rng.integers(0, 40)), d))
    weights = rng.normal(0, 3, d)
    expected = [sum((row[j] * weights[j] for j in range(1, d)), start=row[0] * weights[0]) for row in x.tolist()]
    assert kernels.scores_of(x, weights).tolist() == expected
    assert kernels.scores_of(x[::2], weights).tolist() == score(x[::2], weights).tolist()


@pytest.mark.parametrize("seed", SEEDS)
def test_take_slide_keeps_the_slides_best_k_and_merges_them_into_the_units_top(seed):
    rng = np.random.default_rng(seed)
    m, k = int(rng.integers(1, 40)), int(rng.integers(1, 15))
    score, seq, ids, t = objects(rng, m, start=100)
    rng.shuffle(seq)
    unit_rows = ranked(*objects(rng, int(rng.integers(0, k + 1))))
    unit = columns(unit_rows) if unit_rows else (np.empty(0), *(np.empty(0, np.int64) for _ in range(3)))
    rows = np.empty(min(k, m), [("score", np.float64), ("seq", np.int64), ("id", np.int64), ("t", np.int64)])
    n = min(k, len(rows) + len(unit_rows))
    top = (np.empty(n), np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64))
    kernels.take_slide(score, seq, ids, t, k, rows, *unit, *top)
    best = ranked(score, seq, ids, t)[:k]
    assert rows.tolist() == best
    assert list(zip(*(c.tolist() for c in top))) == sorted(best + unit_rows, key=lambda r: (r[0], r[1]),
                                                            reverse=True)[:k]


@pytest.mark.parametrize("seed", SEEDS)
def test_merge_ranked_keeps_the_best_k_of_both(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 12))
    a = columns(ranked(*objects(rng, int(rng.integers(0, 15)))))
    b = columns(ranked(*objects(rng, int(rng.integers(0, 15)), start=100)))
    n = min(k, len(a[0]) + len(b[0]))
    out = (np.empty(n), np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64))
    kernels.merge_ranked(*a, *b, *out)
    expected = ranked(*(np.concatenate((x, y)) for x, y in zip(a, b)))[:k]
    assert list(zip(*(column.tolist() for column in out))) == [tuple(r) for r in expected]


@pytest.mark.parametrize("seed", SEEDS)
def test_counts_above_a_key_and_the_members_a_bound_keeps(seed):
    rng = np.random.default_rng(seed)
    score, seq, _, t = objects(rng, int(rng.integers(0, 30)))
    key = (float(rng.integers(0, 5)), int(rng.integers(0, 30)))
    assert kernels.count_ranked_above(score, seq, *key) == sum((s, q) > key for s, q in zip(score, seq))
    assert kernels.count_at_least(score, key[0]) == sum(s >= key[0] for s in score)
    bound = int(rng.integers(0, 12))
    count, part = rng.integers(0, 5, len(t)), rng.integers(0, 3, len(t))
    members = list(zip(score.tolist(), seq.tolist(), seq.tolist(), t.tolist(), count.tolist(), part.tolist()))
    *kept, oldest = kernels.expire_members(score, seq, seq, t, count, part, t, bound, 2 ** 62)
    expected = [row for row in members if row[3] >= bound]
    assert list(zip(*(column.tolist() for column in kept))) == expected
    assert oldest == min((row[3] for row in expected), default=2 ** 62)


def reference_refine(members, new, serial, k):
    """Refine by definition: every new candidate (newer than every member) dominates the members
    scoring at most its score; members with k dominators leave.  Rows: (score, seq, id, t,
    counter, partition)."""
    kept, dropped = [], []
    for row in members:
        counter = row[4] + sum(1 for r in new if r[0] >= row[0])
        (dropped if counter >= k else kept).append((*row[:4], counter, row[5]))
    rows = kept + [(*r, 0, serial) for r in new]
    return sorted(rows, key=lambda r: (r[0], r[1]), reverse=True), [r[5] for r in dropped]


@pytest.mark.parametrize("seed", SEEDS)
def test_refine_equals_the_definition(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 6))
    members, serial, start = [], 0, 0
    for serial in range(6):
        m = int(rng.integers(0, 8))
        new = ranked(*objects(rng, m, start=start))[:k]
        start += m
        expected, expected_dropped = reference_refine(members, new, serial, k)
        c = [np.array([r[i] for r in members], np.float64 if i == 0 else np.int64) for i in range(6)]
        dead = kernels.add_dominators(c[0], c[4], columns(new)[0], k)
        total = len(members) - dead + len(new)
        out = [np.empty(total, np.float64)] + [np.empty(total, np.int64) for _ in range(5)]
        dropped = np.empty(dead, np.int64)
        kernels.refine(*c, *columns(new), serial, k, *out, dropped)
        assert list(zip(*(column.tolist() for column in out))) == expected
        assert dropped.tolist() == expected_dropped
        members = expected


@pytest.mark.parametrize("seed", SEEDS)
def test_dominators_and_insertion_of_promoted_objects(seed):
    rng = np.random.default_rng(seed)
    rows = ranked(*objects(rng, int(rng.integers(0, 20)), start=50))
    parts = rng.integers(0, 3, len(rows))
    c = [*columns(rows), rng.integers(0, 3, len(rows)), parts.astype(np.int64)]
    promoted = ranked(*objects(rng, int(rng.integers(1, 6))))
    values = columns(promoted)[0]
    got = kernels.dominators(c[0], c[5], values, 0)
    assert got.tolist() == [sum(1 for s, p in zip(c[0], parts) if p != 0 and s >= v) for v in values]
    out = [np.empty(len(rows) + len(promoted), np.float64)] + [np.empty(len(rows) + len(promoted), np.int64)
                                                             for _ in range(5)]
    kernels.insert_ranked(*c, *columns(promoted), got, 0, *out)
    expected = sorted(list(zip(*(column.tolist() for column in c)))
                      + [(*r, int(n), 0) for r, n in zip(promoted, got)], key=lambda r: (r[0], r[1]), reverse=True)
    assert list(zip(*(column.tolist() for column in out))) == expected


class ReferenceBuilder:
    """Section 5.1 with Python lists: a sorted list of ``(top key, stack)``, bisect per object."""

    def __init__(self, capacity):
        self.capacity, self.stacks, self.tops, self.pruned = capacity, [], [], 0

    def scan(self, entry):
        key = (entry[0], entry[1])
        if len(self.stacks) < self.capacity:
            insort(self.tops, (*key, len(self.stacks)))
            self.stacks.append([entry])
            return
        i = bisect_left(self.tops, key) - 1
        if i < 0:
            self.pruned += 1
            return
        self.tops[i] = (*key, self.tops[i][2])
        self.stacks[self.tops[i][2]].append(entry)


@pytest.mark.parametrize("seed", SEEDS)
def test_savl_scan_builds_the_stacks_of_the_reference(seed):
    rng = np.random.default_rng(seed)
    capacity = int(rng.integers(1, 8))
    score, seq, ids, t = objects(rng, int(rng.integers(0, 80)), values=int(rng.integers(1, 20)))
    reference = ReferenceBuilder(capacity)
    builder = StackBuilder(capacity)
    newest_first = np.arange(len(score))[::-1].copy()
    for r in newest_first.tolist():
        reference.scan((float(score[r]), int(seq[r]), int(ids[r]), int(t[r])))
    for chunk in np.array_split(newest_first, 3):
        builder.scan_rows(score, seq, ids, t, chunk)
    builder.check()
    assert builder.stacks == reference.stacks and builder.pruned == reference.pruned


@pytest.mark.parametrize("seed", SEEDS)
def test_scan_rows_filters_and_orders_newest_first(seed):
    rng = np.random.default_rng(seed)
    score, seq, _, _ = objects(rng, 20)
    order = np.array(sorted(range(20), key=lambda i: (score[i], seq[i]), reverse=True))
    score, seq = score[order], seq[order]
    limit = int(rng.integers(0, 21))
    members, only, exclude = (np.sort(rng.choice(20, int(rng.integers(0, 8)), replace=False)) for _ in range(3))
    use_only = bool(rng.integers(0, 2))
    rows = kernels.scan_rows(score, seq, limit, members, only, use_only, exclude)
    expected = [r for r in range(limit) if seq[r] not in members and seq[r] not in exclude
                and (not use_only or seq[r] in only)]
    assert rows.tolist() == sorted(expected, key=lambda r: -seq[r])


@pytest.mark.parametrize("seed", SEEDS)
def test_offer_slides_cuts_each_slide_and_offers_newest_first(seed):
    """Per slide (newest slide first): rows above theta, at most capacity, at least floor,
    without members and excluded, only those listed if asked; newest first within a slide."""
    rng = np.random.default_rng(seed)
    slides = []
    for number in range(int(rng.integers(1, 6)), 0, -1):  # newest slide first
        score, seq, _, _ = objects(rng, int(rng.integers(0, 8)), start=10 * number)
        order = sorted(range(len(score)), key=lambda i: (score[i], seq[i]), reverse=True)
        slides.append((score[order], seq[order]))
    score = np.concatenate([slide[0] for slide in slides])
    seq = np.concatenate([slide[1] for slide in slides])
    starts = np.cumsum([0] + [len(slide[0]) for slide in slides]).astype(np.int64)
    theta = (float(rng.integers(0, 5)), int(rng.integers(0, 60)))
    use_theta, use_floor, use_only = (bool(rng.integers(0, 2)) for _ in range(3))
    capacity, floor = int(rng.integers(1, 6)), float(rng.integers(0, 5))
    members, only, exclude = (np.sort(rng.choice(60, int(rng.integers(0, 20)), replace=False)) for _ in range(3))
    rows, scanned = kernels.offer_slides(score, seq, starts, *theta, use_theta, capacity, floor, use_floor,
                                         members, only, use_only, exclude)
    expected, expected_scanned = [], 0
    for lo, hi in zip(starts[:-1].tolist(), starts[1:].tolist()):
        cut = [r for r in range(lo, hi) if (not use_theta or (score[r], seq[r]) > theta)
               and (not use_floor or score[r] >= floor)][:capacity]
        expected_scanned += len(cut)
        kept = [r for r in cut if seq[r] not in members and seq[r] not in exclude and (not use_only or seq[r] in only)]
        expected += sorted(kept, key=lambda r: -seq[r])
    assert rows.tolist() == expected and scanned == expected_scanned


@pytest.mark.parametrize("seed", SEEDS)
def test_meaningful_set_follows_a_list_of_stacks(seed):
    """M_0 against Python lists: the best entry is the best stack top; expiry removes tops."""
    rng = np.random.default_rng(seed)
    stacks, m, start = [], MeaningfulSet(expiry_index=1), 0
    bound = 0
    for step in range(60):
        action = rng.integers(0, 4)
        if action == 0:
            builder = ReferenceBuilder(int(rng.integers(1, 5)))
            score, seq, ids, t = objects(rng, int(rng.integers(1, 30)), start=start)
            start += len(score)
            for r in range(len(score) - 1, -1, -1):
                builder.scan((float(score[r]), int(seq[r]), int(ids[r]), int(t[r])))
            fresh = [list(s) for s in builder.stacks]
            stacks.extend(fresh)
            m.absorb(fresh)
        elif action == 1 and any(stacks):
            best = max((s[-1] for s in stacks if s), key=lambda e: (e[0], e[1]))
            assert m.pop_best() == best
            next(s for s in stacks if s and s[-1] == best).pop()
        elif action == 2:
            count, key = int(rng.integers(1, 4)), (float(rng.integers(0, 5)), int(rng.integers(0, 99)))
            expected = []
            while len(expected) < count and any(stacks):
                best = max((s[-1] for s in stacks if s), key=lambda e: (e[0], e[1]))
                if (best[0], best[1]) <= key:
                    break
                expected.append(best)
                next(s for s in stacks if s and s[-1] == best).pop()
            got = m.pop_columns(count, above=key)
            assert list(zip(*(column.tolist() for column in got))) == expected
        else:
            bound += int(rng.integers(0, 8))
            expected = sum(1 for s in stacks for e in s if e[1] < bound)
            assert m.expire(bound) == expected
            for s in stacks:
                while s and s[-1][1] < bound:
                    s.pop()
        m.check()
        assert len(m) == sum(len(s) for s in stacks)
        assert sorted(m.seqs().tolist()) == sorted(e[1] for s in stacks for e in s)
        assert m.best() == (max((s[-1] for s in stacks if s), key=lambda e: (e[0], e[1])) if any(stacks) else None)


def reference_observe(above, values, tau, zeta, limit, initialising):
    """Algorithm 2 lines 3-9 with Python lists: U^tau grows by the scores >= tau; tau rises to
    the zeta-th highest of U^tau (at |U^tau| >= 2 zeta while initialising, else above limit)."""
    above = above + [v for v in values if v >= tau]
    while (len(above) >= 2 * zeta) if initialising else (len(above) > limit):
        raised = sorted(above, reverse=True)[zeta - 1]
        if raised <= tau:
            break
        tau = raised
        above = [v for v in above if v >= tau]
        if not initialising:
            break
    return above, tau


@pytest.mark.parametrize("seed", SEEDS)
def test_tbui_observe_follows_algorithm_2(seed):
    rng = np.random.default_rng(seed)
    zeta = int(rng.integers(1, 6))
    limit = max(2 * zeta, zeta + int(rng.integers(0, 5)))
    initialising = bool(rng.integers(0, 2))
    above, tau = [], -np.inf
    buffer, n, got_tau = np.empty(1000), 0, -np.inf
    for _ in range(20):
        values = rng.integers(0, 6, int(rng.integers(0, 8))).astype(np.float64)
        above, tau = reference_observe(above, values.tolist(), tau, zeta, limit, initialising)
        n, got_tau = kernels.tbui_observe(values, buffer, n, got_tau, zeta, limit, initialising)
        assert got_tau == tau and sorted(buffer[:n].tolist()) == sorted(above)


def random_slide(rng):
    """A slide of ``m`` objects with tied integer features, weights of either sign and shuffled
    ``seq``, and a ``k``: ``(m, k, weights, x, score, seq, ids, t)``, ``score`` summed by hand in
    :func:`engine.ranking.score`'s column order."""
    m, k = int(rng.integers(1, 40)), int(rng.integers(1, 15))
    weights = rng.choice([-1.0, 0.5, 2.0], int(rng.integers(1, 4)))
    x = rng.integers(0, 4, (m, len(weights))).astype(np.float64)
    score = [sum((row[j] * weights[j] for j in range(1, len(weights))), start=row[0] * weights[0])
             for row in x.tolist()]
    seq = rng.permutation(m).astype(np.int64) + 500
    return m, k, weights, x, score, seq, seq + 1000, seq // 3


def quiet_state(k, n, tau, zeta, limit, initialising, observe, full, kth_score, kth_seq):
    """A quiet slide's scalars as the kernels take them: ``(ints, floats)``."""
    ints, floats = np.zeros(kernels.QUIET_INTS, np.int64), np.zeros(kernels.QUIET_FLOATS)
    for index, value in ((kernels.QUIET_K, k), (kernels.QUIET_N, n), (kernels.QUIET_ZETA, zeta),
                         (kernels.QUIET_LIMIT, limit), (kernels.QUIET_INITIALISING, initialising),
                         (kernels.QUIET_OBSERVE, observe), (kernels.QUIET_FULL, full),
                         (kernels.QUIET_KTH_SEQ, kth_seq)):
        ints[index] = value
    floats[kernels.QUIET_TAU], floats[kernels.QUIET_KTH_SCORE] = tau, kth_score
    return ints, floats


@pytest.mark.parametrize("seed", SEEDS)
def test_quiet_slide_takes_the_slide_observes_it_and_tells_whether_the_answer_stands(seed):
    """The quiet slide against the references of its steps: the slide's best ``k`` and the
    unit's new top, TBUI's ``U^tau`` and ``tau`` (``observe`` only), and whether the previous
    answer (the best of ``C``, ``P_m^k`` and the unit's old top) is still the best ``k`` of
    them with the new top: it is reported standing exactly when it is."""
    rng = np.random.default_rng(seed)
    m, k, weights, x, score, seq, ids, t = random_slide(rng)
    unit_rows = ranked(*objects(rng, int(rng.integers(0, k + 1)), start=300))
    c_rows = ranked(*objects(rng, int(rng.integers(0, 20))))
    open_rows = ranked(*objects(rng, int(rng.integers(0, k + 1)), start=100))
    unit = columns(unit_rows) if unit_rows else (np.empty(0), *(np.empty(0, np.int64) for _ in range(3)))
    rows = np.empty(min(k, m), [("score", np.float64), ("seq", np.int64), ("id", np.int64), ("t", np.int64)])
    size = min(k, len(rows) + len(unit_rows))
    top = (np.empty(size), np.empty(size, np.int64), np.empty(size, np.int64), np.empty(size, np.int64))
    previous = sorted(c_rows + open_rows + unit_rows, key=lambda r: (r[0], r[1]), reverse=True)[:k]
    observe, initialising, zeta = bool(seed % 2), bool(rng.integers(0, 2)), int(rng.integers(1, 6))
    limit = max(2 * zeta, zeta + 2)
    held = rng.integers(1, 6, int(rng.integers(0, 5))).astype(np.float64)  # U^tau: every score >= tau = 1
    above = np.empty(100)
    above[:len(held)] = held
    ints, floats = quiet_state(k, len(held), 1.0, zeta, limit, initialising, observe, len(previous) == k,
                               *(previous[-1][:2] if previous else (0.0, 0)))
    stands = kernels.quiet_slide(x, weights, seq, ids, t, rows, *unit, *top, above, ints, floats)
    got_n, got_tau = ints[kernels.QUIET_N], floats[kernels.QUIET_TAU]
    best = ranked(np.array(score), seq, ids, t)[:k]
    assert rows.tolist() == best
    new_top = sorted(best + unit_rows, key=lambda r: (r[0], r[1]), reverse=True)[:k]
    assert list(zip(*(c.tolist() for c in top))) == new_top
    if observe:
        expected, tau = reference_observe(held.tolist(), score, 1.0, zeta, limit, initialising)
        assert got_tau == tau and sorted(above[:got_n].tolist()) == sorted(expected)
    else:
        assert (got_n, got_tau) == (len(held), 1.0)
    everything = sorted(c_rows + open_rows + new_top, key=lambda r: (r[0], r[1]), reverse=True)[:k]
    assert stands == (everything == previous)


@pytest.mark.parametrize("seed", SEEDS)
def test_quiet_slide_full_merges_the_slide_into_a_full_top_in_place(seed):
    """The filling unit's top already holds ``k`` objects: the slide's best ``k`` go to ``rows``
    and the top's own arrays become the best ``k`` of both (some slides enter it, some do not),
    with TBUI and the answer's verdict as in :func:`quiet_slide`."""
    rng = np.random.default_rng(seed)
    m, k, weights, x, score, seq, ids, t = random_slide(rng)
    unit_score = rng.integers(-4, 12, k).astype(np.float64)  # from below every slide score to above all
    unit_rows = ranked(unit_score, np.arange(300, 300 + k), np.arange(1300, 1300 + k), np.arange(100, 100 + k))
    unit = columns(unit_rows)
    arrays = [id(column) for column in unit]
    rows = np.empty(min(k, m), [("score", np.float64), ("seq", np.int64), ("id", np.int64), ("t", np.int64)])
    c_rows = ranked(*objects(rng, int(rng.integers(0, 20))))
    previous = sorted(c_rows + unit_rows, key=lambda r: (r[0], r[1]), reverse=True)[:k]
    observe = bool(seed % 2)
    above = np.empty(100)
    above[:2] = (1.0, 3.0)
    ints, floats = quiet_state(k, 2, 1.0, 2, 4, False, observe, True, *previous[-1][:2])
    stands = kernels.quiet_slide_full(x, weights, seq, ids, t, rows, *unit, above, ints, floats)
    got_n, got_tau = ints[kernels.QUIET_N], floats[kernels.QUIET_TAU]
    best = ranked(np.array(score), seq, ids, t)[:k]
    assert rows.tolist() == best
    new_top = sorted(best + unit_rows, key=lambda r: (r[0], r[1]), reverse=True)[:k]
    assert list(zip(*(c.tolist() for c in unit))) == new_top and [id(column) for column in unit] == arrays
    if observe:
        expected, tau = reference_observe([1.0, 3.0], score, 1.0, 2, 4, False)
        assert got_tau == tau and sorted(above[:got_n].tolist()) == sorted(expected)
    everything = sorted(c_rows + new_top, key=lambda r: (r[0], r[1]), reverse=True)[:k]
    assert stands == (everything == previous)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("grow", [False, True])
def test_quiet_slide_raw_drops_the_expired_raw_slide_and_takes_the_slide_into_the_ring(seed, grow):
    """The whole quiet slide in one call: the raw slide ``W`` slides old leaves the ring, the
    slide's best ``k`` enter it (ring and index checked, a rebuild forced when it has no room),
    the filling top becomes the best ``k`` of both (in place when full, into the new top when
    growing; each top one ``(4, n)`` array), the returned code carries the raw objects gained; a
    blocked slide, a bound that reaches ``C`` or ``M_0`` (``QUIET_EXPIRES``) and a new top of the
    wrong size are declined with nothing done; and no argument's reference count moves."""
    import sys

    from engine.algorithms.sap.raw import RawSlides

    rng = np.random.default_rng(seed)
    m, k, weights, x, score, seq, ids, t = random_slide(rng)
    held = int(rng.integers(0, k)) if grow else k
    unit_rows = ranked(rng.integers(-4, 12, held).astype(np.float64), np.arange(300, 300 + held),
                       np.arange(1300, 1300 + held), np.arange(100, 100 + held))
    unit = packed_top(held)  # the filling top: its columns are the rows of one array
    for column, values in zip(unit, columns(unit_rows) if held else unit):
        column[:] = values
    size = min(k, held + min(k, m))
    top = packed_top(size) if grow else ()
    blocks = (unit[1].base, top[1].base) if grow else (unit[1].base,)
    window = 4
    raw = RawSlides()
    old = ranked(*objects(rng, 3, start=10))
    raw.reserve(1, 3)[0][:] = old  # slide 1: it leaves at slide 1 + window; the ring has 16 rows
    crowded = seed % 2 == 1  # slide 2 keeps rows 3-14: after slide 1 leaves, room for 3 rows at most
    if crowded:
        second = ranked(*objects(rng, 12, start=20))
        raw.reserve(2, 12)[0][:] = second
    ints = np.zeros(kernels.QUIET_INTS + kernels.QUIET_WEIGHTS + len(weights) + 100, np.int64)  # U^tau's room last
    floats = ints.view(np.float64)[kernels.QUIET_INTS:]
    floats[kernels.QUIET_WEIGHTS:kernels.QUIET_WEIGHTS + len(weights)] = weights
    for cell, value in ((kernels.QUIET_K, k), (kernels.QUIET_SLIDE, window), (kernels.QUIET_WINDOW, window),
                        (kernels.QUIET_SLIDE_SIZE, 1), (kernels.QUIET_C_OLDEST, 2 ** 62),
                        (kernels.QUIET_M_NEXT, 2 ** 63 - 1), (kernels.QUIET_ZETA, 2), (kernels.QUIET_LIMIT, 4)):
        ints[cell] = value
    step = kernels.quiet_slide_raw_grow if grow else kernels.quiet_slide_raw

    def call():
        return step(x, seq, ids, t, raw.ring, *blocks, ints)

    for cell, value, code in ((kernels.QUIET_BLOCKED, 1, kernels.QUIET_SLOW),
                              (kernels.QUIET_C_OLDEST, 0, kernels.QUIET_EXPIRES),
                              (kernels.QUIET_M_NEXT, 0, kernels.QUIET_EXPIRES)):
        saved, state = ints[cell], ints.copy()
        ints[cell] = value
        assert call() == code
        ints[cell] = saved
        assert np.array_equal(ints, state) and raw.get(1).tolist() == old
    if grow:
        wrong = np.empty((4, size + 1), np.int64)
        assert kernels.quiet_slide_raw_grow(x, seq, ids, t, raw.ring, blocks[0], wrong, ints) \
            == kernels.QUIET_SLOW
    arrays = (x, seq, ids, t, raw.ring, *blocks, ints)
    counts = [sys.getrefcount(array) for array in arrays]
    done = call()
    assert [sys.getrefcount(array) for array in arrays] == counts
    best = ranked(np.array(score), seq, ids, t)[:k]
    assert raw.get(1) is None
    kept = [2] if crowded else []
    if crowded and len(best) > 3:  # no room: the slide is the interpreter's, slide 1 already gone
        assert done == kernels.QUIET_SLOW - kernels.QUIET_CODES * 3 and ints[kernels.QUIET_SLIDE] == window
        assert ints[kernels.QUIET_UNIT_SLIDES] == 0 and list(zip(*(c.tolist() for c in unit))) == unit_rows
    else:
        assert done == kernels.QUIET_DROPPED + kernels.QUIET_CODES * (len(best) - 3)
        assert ints[kernels.QUIET_SLIDE] == window + 1 and ints[kernels.QUIET_UNIT_SLIDES] == 1
        assert ints[kernels.QUIET_UNIT_OBJECTS] == m
        new_top = sorted(best + unit_rows, key=lambda r: (r[0], r[1]), reverse=True)[:k]
        assert list(zip(*(c.tolist() for c in (top if grow else unit)))) == new_top
        assert raw.get(window + 1).tolist() == best
        kept.append(window + 1)
    assert [slide for slide, _ in raw.items()] == kept
    if crowded:
        assert raw.get(2).tolist() == second
    raw.check()


# ----------------------------------------------------------------- the Mann-Whitney test (Section 4.2)
def test_u_counts_enumerate_every_arrangement():
    """Reference: every choice of the ranks of the first sample among ``n1 + n2``, its ``U``."""
    from itertools import combinations
    for n1 in range(1, 5):
        for n2 in range(1, 6):
            expected = [0] * (n1 * n2 + 1)
            for ranks in combinations(range(1, n1 + n2 + 1), n1):
                expected[sum(ranks) - n1 * (n1 + 1) // 2] += 1
            assert kernels.u_counts(n1, n2).tolist() == expected, (n1, n2)


def mann_whitney_cases(rng):
    """``(x, y, exact)``: tie-free small samples (exact, shifted up or not) and tied samples of
    every size up to the dynamic variants' (``k`` and ``ceil(eta k)``), with all values equal too."""
    for trial in range(400):
        n1, n2 = int(rng.integers(1, 11)), int(rng.integers(1, 36))
        values = rng.permutation(300)[:n1 + n2].astype(np.float64)
        yield values[:n1] + float(rng.integers(0, 150)), values[n1:], True
        n1, n2 = int(rng.integers(1, 130)), int(rng.integers(2, 200))
        x = rng.integers(0, int(rng.integers(1, 9)), n1).astype(np.float64) + float(rng.integers(0, 3))
        yield x, rng.integers(0, 6, n2).astype(np.float64), bool(trial % 2)
        yield rng.random(n1), rng.random(n2), False
    yield np.full(3, 2.0), np.full(5, 2.0), True


def test_mann_whitney_equals_scipy_on_random_and_tied_samples():
    from scipy.stats import mannwhitneyu
    checked = 0
    for x, y, exact in mann_whitney_cases(np.random.default_rng(7)):
        tied = len(np.unique(np.concatenate((x, y)))) < len(x) + len(y)
        method = "exact" if exact and not tied else "asymptotic"
        expected = mannwhitneyu(x, y, alternative="greater", method=method, use_continuity=False).pvalue
        p = kernels.mann_whitney_greater(x, y, exact)
        if np.isnan(expected):
            assert np.isnan(p), (x, y)
            continue
        assert abs(p - expected) <= 1e-9, (x.tolist(), y.tolist(), method, p, expected)
        checked += 1
    assert checked > 1000


def test_quiet_slides_leave_the_reference_counts_of_their_arrays_alone():
    """The quiet slides bind their arrays through views without a reference count
    (:func:`engine.kernels.views.unowned`): a wrong count would free or leak them."""
    import sys

    rng = np.random.default_rng(5)
    m, k, weights, x, score, seq, ids, t = random_slide(rng)
    rows = np.empty(min(k, m), [("score", np.float64), ("seq", np.int64), ("id", np.int64), ("t", np.int64)])
    unit = (np.arange(k, 0, -1).astype(np.float64), *(np.arange(k, dtype=np.int64) for _ in range(3)))
    top = (np.empty(k), *(np.empty(k, np.int64) for _ in range(3)))
    above = np.empty(100)
    ints, floats = quiet_state(k, 0, 0.0, 2, 4, False, False, True, 1.0, 0)
    arrays = (x, weights, seq, ids, t, rows, *unit, *top, above, ints, floats)
    before = [sys.getrefcount(array) for array in arrays]
    for observe in (False, True, False):
        ints[kernels.QUIET_OBSERVE] = observe
        kernels.quiet_slide(x, weights, seq, ids, t, rows, *unit, *top, above, ints, floats)
        kernels.quiet_slide_full(x, weights, seq, ids, t, rows, *unit, above, ints, floats)
    assert [sys.getrefcount(array) for array in arrays] == before
