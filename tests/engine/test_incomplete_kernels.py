"""The incomplete-stream kernels against plain-Python references: the id table against a dict,
the treaps against sorted lists, SLA's steps against its structures rebuilt from the FIFO."""

from __future__ import annotations

import bisect

import numpy as np
import pytest

import engine
from engine.kernels import incomplete as kernel
from engine.kernels import eaa as eaa_kernel
from engine.kernels import sla as sla_kernel
from engine.kernels.incomplete import LEFT, NONE, PARENT, RIGHT


@pytest.mark.parametrize("seed", range(4))
def test_id_table_agrees_with_a_dict(seed):
    rng = np.random.default_rng(seed)
    keys, slots = kernel.empty_table(16)
    reference: dict[int, int] = {}
    for step in range(3000):
        key = int(rng.integers(-2 ** 40, 2 ** 40)) if rng.random() < 0.2 else int(rng.integers(0, 200))
        if key in reference and rng.random() < 0.5:
            kernel.erase(keys, slots, key)
            del reference[key]
        elif key not in reference:
            if 2 * (len(reference) + 1) > len(keys):
                keys, slots = kernel.rehashed(keys, slots, kernel.table_capacity(len(reference) + 1))
            kernel.insert(keys, slots, key, step)
            reference[key] = step
        probe = int(rng.integers(0, 200))
        assert kernel.find(keys, slots, probe) == reference.get(probe, NONE)
    assert sorted(slots[slots != NONE].tolist()) == sorted(reference.values())
    for key, slot in reference.items():
        assert kernel.find(keys, slots, key) == slot


def walk(links, roots, tree, values) -> list[int]:
    """The treap's nodes lowest first, by the kernel's own walk."""
    node = kernel.tree_first_from(links, roots, tree, values, -np.inf)
    nodes = []
    while node != NONE:
        nodes.append(int(node))
        node = kernel.tree_next(links, node)
    return nodes


def assert_treap(links, roots, tree, nodes):
    """Parent links match child links and priorities form a max-heap."""
    for node in nodes:
        for side in (LEFT, RIGHT):
            child = links[node, side]
            if child != NONE:
                assert links[child, PARENT] == node
                assert kernel._priority(child) <= kernel._priority(node)
    root = roots[tree]
    assert (root == NONE) == (not nodes) and (root == NONE or links[root, PARENT] == NONE)


@pytest.mark.parametrize("seed", range(4))
def test_treap_agrees_with_a_sorted_list(seed):
    rng = np.random.default_rng(seed)
    rows = 300
    values = np.zeros(rows)
    links = np.full((rows, 3), NONE, np.int64)
    roots = np.full(1, NONE, np.int64)
    reference: list[tuple[float, int]] = []
    present = set()
    for _ in range(4000):
        row = int(rng.integers(0, rows))
        if row in present:
            kernel.tree_remove(links, roots, 0, row)
            reference.remove((values[row], row))
            present.discard(row)
        if rng.random() < 0.7:
            values[row] = float(rng.integers(0, 20)) / 4  # many ties
            kernel.tree_insert(links, roots, 0, values, row)
            bisect.insort(reference, (values[row], row))
            present.add(row)
        bound = float(rng.integers(0, 21)) / 4
        expected = bisect.bisect_left([value for value, _ in reference], bound)
        found = kernel.tree_first_from(links, roots, 0, values, bound)
        assert found == (reference[expected][1] if expected < len(reference) else NONE)
    nodes = walk(links, roots, 0, values)
    assert nodes == [row for _, row in reference]
    assert kernel.tree_last(links, roots, 0) == (reference[-1][1] if reference else NONE)
    assert [int(kernel.tree_previous(links, node)) for node in nodes] == [NONE] + nodes[:-1]
    assert_treap(links, roots, 0, nodes)


def test_combine_is_bit_identical_to_the_python_reference():
    rng = np.random.default_rng(3)
    for _ in range(200):
        d = int(rng.integers(1, 6))
        attributes, weights = rng.random(d) * 3, rng.random(d)
        assert kernel.combine(attributes, weights) == engine.attributes.combine(attributes.tolist(), weights.tolist())


def sla_after(data, query, **params):
    alg = engine.create("sla", query, **params)
    for batch in engine.slides(data, query):
        alg.process(batch)
        alg.check()
    return alg


@pytest.mark.parametrize("seed", range(3))
def test_sla_threshold_algorithm_refills_the_exact_top(seed):
    """TA (``recompute``) from an empty view gives the top ``k_max`` of every valid object,
    ranked by a plain sort of the objects rebuilt from the FIFO (``check``)."""
    rng = np.random.default_rng(seed)
    n = 400
    ids = rng.integers(0, 60, n)
    stream = rng.integers(0, 3, n)
    value = np.round(rng.random(n), 1)  # ties
    query = engine.Query(weights=[1.0, 0.0, 2.0], k=4, window=90, slide=30)
    alg = sla_after((ids, stream, value, np.arange(n)), query)
    objects, _, _, sums, scores = alg._object_arrays
    view_scores, view_seqs, view_rows = alg._view
    while alg._meta[sla_kernel.VIEW]:
        sla_kernel._view_remove_at(view_scores, view_seqs, view_rows, objects, alg._meta, 0)
    sla_kernel.recompute(alg._tuples_, objects, sums, scores, alg._links, alg._roots, alg._sizes_, view_scores,
                         view_seqs, view_rows, alg._meta, alg._counters, alg._weights, alg._k_max)
    alg.check()
    assert alg._meta[sla_kernel.VIEW] == min(alg._k_max, alg._meta[sla_kernel.OBJECTS])


def test_sla_fifo_grows_across_the_ring_boundary():
    """Time windows hold any number of tuples: the ring grows while its rows wrap around."""
    n = 600
    t = np.repeat(np.arange(n // 100), 100) * 10
    ids = np.arange(n) % 37
    query = engine.Query(weights=[1.0, 1.0], k=3, window=30, slide=10, kind="time")
    alg = sla_after((ids, np.arange(n) % 2, np.linspace(0, 1, n), t), query)
    assert alg.stats()["retained"] == 300


def python_bound(sums, counts, occurrences, weights, m, mode, repeats, estimates, probabilities):
    """The bound as the paper states it, one instance in plain Python."""
    d = len(weights)
    mask = sum(1 << i for i in range(d) if occurrences[i])
    attributes = []
    for i in range(d):
        if mode == eaa_kernel.PER_VALIDITY:
            attributes.append(sums[i] + (m - occurrences[i]))
        elif mode == eaa_kernel.PER_WINDOW:
            attributes.append(sums[i] + (m - counts[i]))
        elif occurrences[i]:
            attributes.append(sums[i] + max(0, repeats[i] - occurrences[i]) * estimates[i])
        else:
            attributes.append(repeats[i] * probabilities[mask][i] * estimates[i])
    return engine.attributes.combine(attributes, weights)


@pytest.mark.parametrize("mode", [eaa_kernel.PER_VALIDITY, eaa_kernel.PER_WINDOW, eaa_kernel.ESTIMATED])
def test_eaa_bound_agrees_with_the_python_formula(mode):
    rng = np.random.default_rng(mode)
    d = 3
    for _ in range(100):
        occurrences = rng.integers(0, 3, (1, d))
        counts = np.minimum(rng.integers(0, 3, (1, d)), occurrences)
        sums = rng.random((1, d)) * counts
        weights, repeats, estimates = rng.random(d), rng.integers(1, 4, d), rng.random(d)
        probabilities = rng.random((1 << d, d))
        m = int(rng.integers(1, 4))
        mask_keys, mask_slots = kernel.empty_table(kernel.table_capacity(1 << d))
        for mask in range(1 << d):
            kernel.insert(mask_keys, mask_slots, mask, mask)  # row = mask
        found = eaa_kernel.bound(sums, counts, occurrences, 0, 0, weights, m, mode, repeats, estimates, mask_keys,
                                 mask_slots, probabilities)
        expected = python_bound(sums[0].tolist(), counts[0].tolist(), occurrences[0].tolist(), weights.tolist(), m,
                                mode, repeats.tolist(), estimates.tolist(), probabilities.tolist())
        assert found == expected


@pytest.mark.parametrize("seed", range(3))
def test_eaa_answer_scan_agrees_with_a_sorted_scan(seed):
    """``answer`` against the paper's scan written over a plain sorted list of the live
    instances' ``(currentscore, object)``: ``k`` distinct objects and every tie of the last."""
    rng = np.random.default_rng(seed)
    n = 500
    ids = rng.permutation(n * 3)[:n] % 150  # an object at most once per stream while valid, mostly
    stream = rng.integers(0, 2, n)
    value = np.round(rng.random(n), 1)
    query = engine.Query(weights=[1.0, 1.0], k=5, window=100, slide=20)
    alg = engine.create("eaa", query, occurrences=20)
    for batch in engine.slides((ids, stream, value, np.arange(n)), query):
        alg.process(batch)
        alg.check()
        instances, _, _, current, _, _, _ = alg._instance_arrays
        live = np.flatnonzero(instances[:, eaa_kernel.RECORD] != NONE)
        entries = sorted(((current[row], int(instances[row, eaa_kernel.OID])) for row in live), reverse=True)
        expected: dict[int, float] = {}
        kth = None
        for score, oid in entries:
            if kth is not None and score < kth:
                break
            if oid not in expected:
                expected[oid] = score
                if len(expected) == query.k:
                    kth = score
        found, scores, _ = eaa_kernel.answer(instances, current, alg._instance_arrays[6], alg._roots,
                                             alg._record_arrays[0], alg._meta, query.k)
        assert dict(zip(found.tolist(), scores.tolist())) == expected


@pytest.mark.parametrize("stride", [2**31 + 1, 2**31, 2**62, 2**40 + 2**9 + 1, -(2**33) - 3])
def test_ids_differing_only_in_high_bits_spread_over_the_id_table(stride):
    """Found by probing: the home position hashed ``key ^ (key >> 31)``'s low 31 bits, so the
    multiples of ``2**31 + 1`` all had one home and SLA and EAA slowed down 40x on 20,000 of
    them (a linear scan per look-up).  Now distinct high bits give distinct homes as for
    random keys: at least half as many homes as keys, in a table four times the keys."""
    keys = np.arange(4096, dtype=np.int64) * np.int64(stride) if stride != 2**62 else \
        np.array([i * 2**62 + j for i in range(-2, 2) for j in range(1024)], dtype=np.int64)
    homes = {kernel._home(key, 4 * len(keys) - 1) for key in keys.tolist()}
    assert len(homes) >= len(keys) // 2
