"""The incomplete-stream kernels against plain-Python references: the id table against a dict,
the treaps against sorted lists, SLA's steps against its structures rebuilt from the FIFO."""

from __future__ import annotations

import bisect

import numpy as np
import pytest

import engine
from engine.kernels import incomplete as kernel
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
