"""The compiled kernels of k-skyband, SMA and TMA against plain-Python references.

Each reference is the paper's step written the obvious way over Python lists; the kernels run
on numpy columns (compiled, or as Python under ``NUMBA_DISABLE_JIT=1``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from engine.kernels import grid as grid_kernel
from engine.kernels import skyband as skyband_kernel
from engine.kernels import tma as tma_kernel

VALUES = st.sampled_from([0.0, 1.0, 2.0, -1.0]) | st.floats(-10, 10)


def add_one_at_a_time(members, arrivals, k, floor):
    """The one-pass k-skyband step: each arrival (newer than all) raises the counters of the
    members scoring at most its score, members reaching k leave, the arrival enters with 0."""
    members = [list(m) for m in members]
    dropped = added = 0
    for value, seq in arrivals:
        if value < floor:
            continue
        added += 1
        for member in members:
            if member[0] <= value:
                member[2] += 1
        dropped += sum(1 for member in members if member[2] >= k)
        members = [member for member in members if member[2] < k] + [[value, seq, 0]]
    members.sort(key=lambda m: (m[0], m[1]), reverse=True)
    return [tuple(m) for m in members], dropped, added


def columns(rows, capacity):
    score, seq, ids, t, count = (np.zeros(capacity, np.float64),) + tuple(np.zeros(capacity, np.int64) for _ in range(4))
    for i, (value, s, c) in enumerate(rows):
        score[i], seq[i], ids[i], t[i], count[i] = value, s, s + 1000, 2 * s, c
    return score, seq, ids, t, count


@settings(max_examples=150, deadline=None)
@given(k=st.integers(1, 6), slides=st.lists(st.lists(VALUES, max_size=12), max_size=8),
       floor=st.sampled_from([-math.inf, 0.0, 1.5]))
def test_skyband_insertion_equals_adding_one_at_a_time(k, slides, floor):
    members: list = []
    capacity = 1 + sum(len(s) for s in slides)
    score, seq, ids, t, count = columns([], capacity)
    size = 0
    next_seq = 0
    for values in slides:
        arrivals = [(float(v), next_seq + i) for i, v in enumerate(values)]
        next_seq += len(values)
        members, dropped, added = add_one_at_a_time(members, arrivals, k, floor)
        new_seq = np.array([s for _, s in arrivals], np.int64)
        size, got_dropped, got_added = skyband_kernel.insert_arrivals(
            score, seq, ids, t, count, size, k, floor, np.array([v for v, _ in arrivals], np.float64),
            new_seq, new_seq + 1000, 2 * new_seq)
        assert (got_dropped, got_added) == (dropped, added)
        assert list(zip(score[:size].tolist(), seq[:size].tolist(), count[:size].tolist())) == members
        assert ids[:size].tolist() == [s + 1000 for s in seq[:size].tolist()] and t[:size].tolist() == [2 * s for s in seq[:size].tolist()]


def test_skyband_expiry_keeps_the_order():
    rows = [(9.0, 4, 0), (7.0, 1, 0), (7.0, 0, 1), (3.0, 6, 0), (2.0, 3, 1)]
    score, seq, ids, t, count = columns(rows, 8)
    size = skyband_kernel.expire(score, seq, ids, t, count, len(rows), seq, 2)
    assert list(zip(score[:size].tolist(), seq[:size].tolist(), count[:size].tolist())) == [rows[0], rows[3], rows[4]]
    assert ids[:size].tolist() == [1004, 1006, 1003] and t[:size].tolist() == [8, 12, 6]


def reference_cell(row, edges):
    """searchsorted on each dimension's edges, clamped: the documented cell of a vector."""
    c = len(edges[0]) - 1
    cell, stride, outside = 0, 1, False
    for value, edge in zip(row, edges):
        index = sum(1 for e in edge if e <= value) - 1
        cell += min(max(index, 0), c - 1) * stride
        stride *= c
        outside = outside or value < edge[0] or value > edge[-1]
    return cell, outside


@settings(max_examples=150, deadline=None)
@given(d=st.integers(1, 3), c=st.integers(1, 9), lo=st.floats(-1e6, 1e6), width=st.floats(1e-9, 1e6),
       values=st.lists(st.floats(-2e6, 2e6) | st.sampled_from([0.0, 1.0]), min_size=1, max_size=30))
def test_locate_equals_searchsorted(d, c, lo, width, values):
    fractions = np.linspace(0.0, 1.0, c + 1)
    row = np.maximum.accumulate(lo * (1.0 - fractions) + (lo + width) * fractions)
    edges = np.array([row] * d)
    x = np.array([values[(i * d + j) % len(values)] for i in range(len(values)) for j in range(d)], np.float64)
    x = x.reshape(len(values), d)
    for i in range(len(x)):
        assert grid_kernel.locate(x, i, edges) == reference_cell(x[i].tolist(), edges.tolist())


def test_locate_on_a_grid_too_wide_for_division():
    edges = np.array([[-1.7e308, -1e308, 0.0, 1e308, 1.7e308]])
    x = np.array([[-1.8e308 / 2], [0.0], [5.0], [1.75e308]])
    for i in range(len(x)):
        assert grid_kernel.locate(x, i, edges) == reference_cell(x[i].tolist(), edges.tolist())


class ReferenceGrid:
    """Cells as Python lists of positions in arrival order."""

    def __init__(self, edges):
        self.edges, self.lists, self.objects = edges, {}, {}

    def insert(self, pos, row, value, seq):
        cell, _ = reference_cell(row, self.edges.tolist())
        self.lists.setdefault(cell, []).append(pos)
        self.objects[pos] = (value, seq, cell)

    def expire(self, positions):
        for pos in positions:
            cell = self.objects.pop(pos)[2]
            assert self.lists[cell].pop(0) == pos
            if not self.lists[cell]:
                del self.lists[cell]


def kernel_lists(head, nxt, mask):
    out = {}
    for cell in range(len(head)):
        p, items = head[cell], []
        while p >= 0:
            items.append(int(p))
            p = nxt[p & mask]
        if items:
            out[cell] = items
    return out


@settings(max_examples=60, deadline=None)
@given(c=st.integers(1, 5), d=st.integers(1, 2), k=st.integers(1, 6),
       slides=st.lists(st.lists(st.floats(-0.5, 1.5), max_size=10), min_size=1, max_size=10),
       keep=st.integers(0, 30))
def test_grid_lists_and_top_k_equal_the_reference(c, d, k, slides, keep):
    edges = np.array([np.linspace(0.0, 1.0, c + 1)] * d)
    weights = np.array([1.0, -0.5][:d])
    capacity = 64
    mask = capacity - 1
    ids, seq, t, cell, nxt = (np.zeros(capacity, np.int64) for _ in range(5))
    x, score = np.zeros((capacity, d)), np.zeros(capacity)
    cells = c ** d
    head, tail, count = np.full(cells, -1, np.int64), np.full(cells, -1, np.int64), np.zeros(cells, np.int64)
    corners = np.array([[edges[j][(n // c ** j) % c + (1 if weights[j] >= 0 else 0)] for j in range(d)]
                        for n in range(cells)])
    bound = corners @ weights
    reference = ReferenceGrid(edges)
    first = end = 0
    for values in slides:
        m = len(values)
        new_x = np.array([[values[(i + j) % m] for j in range(d)] for i in range(m)], np.float64).reshape(m, d)
        new_score = new_x @ weights
        new_seq = np.arange(end, end + m, dtype=np.int64)
        for i in range(m):
            reference.insert(end + i, new_x[i].tolist(), float(new_score[i]), end + i)
        raised_before = bound.copy()
        clamped, raised = grid_kernel.insert(end, mask, ids, seq, t, x, score, cell, nxt, head, tail, count, bound,
                                             edges, new_seq, new_seq, new_seq, new_x, new_score)
        outside = [i for i in range(m) if reference_cell(new_x[i].tolist(), edges.tolist())[1]]
        assert clamped == len(outside) and raised == bool(np.any(bound > raised_before))
        end += m
        start = max(first, end - keep)
        gone = list(range(first, start))
        reference.expire(gone)
        first, clamped_gone = grid_kernel.expire(first, end, mask, seq, start, x, cell, nxt, head, tail, count, edges)
        assert first == start
        assert clamped_gone == sum(1 for p in gone if reference_cell(x[p & mask].tolist(), edges.tolist())[1])
        assert kernel_lists(head, nxt, mask) == reference.lists
        assert [count[n] for n in range(cells)] == [len(reference.lists.get(n, [])) for n in range(cells)]
        for n, items in reference.lists.items():
            assert tail[n] == items[-1]
            assert max(reference.objects[p][0] for p in items) <= bound[n]
        live = end - first
        if not live:
            continue
        order = np.argsort(-bound, kind="stable")
        pos, top_score, top_seq = np.empty(min(k, live), np.int64), np.empty(min(k, live)), np.empty(min(k, live), np.int64)
        visited, scanned = grid_kernel.top(k, live, order, bound[order], head, nxt, mask, score, seq, pos, top_score, top_seq)
        ranked = sorted(reference.objects.items(), key=lambda item: (item[1][0], item[1][1]), reverse=True)[:k]
        assert pos.tolist() == [p for p, _ in ranked]
        assert top_score.tolist() == [o[0] for _, o in ranked] and top_seq.tolist() == [o[1] for _, o in ranked]
        kth = ranked[-1][1][0]
        expected_cells = [n for n in order.tolist() if n in reference.lists]
        if len(ranked) == k and live > k:
            # every non-empty cell whose bound reaches the k-th score, and no other
            needed = [n for n in expected_cells if bound[n] >= kth]
            assert visited == len(needed) and scanned == sum(len(reference.lists[n]) for n in needed)
        else:
            assert visited == len(expected_cells) and scanned == live


@settings(max_examples=150, deadline=None)
@given(k=st.integers(1, 5), result=st.lists(VALUES, max_size=5), arrivals=st.lists(VALUES, max_size=10),
       cut=st.floats(-5, 5))
def test_tma_arrival_step_equals_the_reference(k, result, arrivals, cut):
    result = sorted(result, reverse=True)[:k]
    size = len(result)
    res_pos, res_score, res_seq = np.zeros(k, np.int64), np.zeros(k), np.zeros(k, np.int64)
    res_score[:size] = result
    res_pos[:size] = res_seq[:size] = np.arange(size)[::-1]
    m = len(arrivals)
    first = 100
    mask = 255
    score, seq, cells = np.zeros(256), np.zeros(256, np.int64), np.zeros(256, np.int64)
    bound = np.array([cut, 10.0])
    for i, value in enumerate(arrivals):
        score[(first + i) & mask], seq[(first + i) & mask] = value, first + i
        cells[(first + i) & mask] = 1 if value > cut else i % 2
    # reference: the paper's test, one arrival at a time
    ranked = [(v, int(s), int(p)) for v, s, p in zip(res_score[:size].tolist(), res_seq[:size], res_pos[:size])]
    region = entered = 0
    for i, value in enumerate(arrivals):
        pos = first + i
        if len(ranked) == k:
            kth = ranked[-1][0]
            if bound[cells[pos & mask]] < kth:
                continue
            region += 1
            if value < kth:
                continue
            ranked.pop()
        else:
            region += 1
        ranked.append((value, pos, pos))
        ranked.sort(key=lambda r: (r[0], r[1]), reverse=True)
        entered += 1
    got = tma_kernel.enter_result(res_pos, res_score, res_seq, size, k, first, m, mask, score, seq, cells, bound)
    assert got == (len(ranked), region, entered)
    assert list(zip(res_score[:got[0]].tolist(), res_seq[:got[0]].tolist(), res_pos[:got[0]].tolist())) == ranked


@pytest.mark.parametrize("k", [1, 3, 50])
def test_top_k_when_the_window_holds_fewer_than_k(k):
    edges = np.array([[0.0, 0.5, 1.0]])
    mask = 7
    ids, seq, t, cell, nxt = (np.zeros(8, np.int64) for _ in range(5))
    x, score = np.zeros((8, 1)), np.zeros(8)
    head, tail, count, bound = np.full(2, -1, np.int64), np.full(2, -1, np.int64), np.zeros(2, np.int64), np.array([0.5, 1.0])
    new_x = np.array([[0.2], [0.9], [0.2], [0.6]])
    grid_kernel.insert(5, mask, ids, seq, t, x, score, cell, nxt, head, tail, count, bound, edges,
                       np.arange(5, 9), np.arange(5, 9), np.arange(5, 9), new_x, new_x[:, 0].copy())
    order = np.array([1, 0])
    m = min(k, 4)
    pos, values, seqs = np.empty(m, np.int64), np.empty(m), np.empty(m, np.int64)
    grid_kernel.top(k, 4, order, bound[order], head, nxt, mask, score, seq, pos, values, seqs)
    assert list(zip(values.tolist(), seqs.tolist())) == [(0.9, 6), (0.6, 8), (0.2, 7), (0.2, 5)][:m]


def test_top_k_visits_a_cell_whose_bound_equals_the_kth_score():
    """A cell whose bound equals the k-th score may hold an equal, newer object, which ranks higher."""
    edges = np.array([[0.0, 0.5, 1.0]])
    mask = 7
    ids, seq, t, cell, nxt = (np.zeros(8, np.int64) for _ in range(5))
    x, score = np.zeros((8, 1)), np.zeros(8)
    head, tail, count = np.full(2, -1, np.int64), np.full(2, -1, np.int64), np.zeros(2, np.int64)
    bound = np.array([0.5, 1.0])
    new_x = np.array([[0.7], [0.2]])  # an old object in cell 1, a newer one in cell 0
    grid_kernel.insert(0, mask, ids, seq, t, x, score, cell, nxt, head, tail, count, bound, edges,
                       np.arange(2), np.arange(2), np.arange(2), new_x, np.array([0.5, 0.5]))
    order = np.array([1, 0])
    pos, values, seqs = np.empty(1, np.int64), np.empty(1), np.empty(1, np.int64)
    assert grid_kernel.top(1, 2, order, bound[order], head, nxt, mask, score, seq, pos, values, seqs) == (2, 2)
    assert seqs.tolist() == [1]
