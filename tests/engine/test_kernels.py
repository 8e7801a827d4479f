"""The compiled kernels against plain-Python references.

* MinTopK and PreTopK, whole structures: after every slide the compiled algorithm's state (the
  super-top-k list in order with its window marks, every window's ``tkc`` and ``lbp``, every
  window set, the counters) equals the state of the plain implementation the engine had before
  its kernels (``tests/engine/plain_topk.py``: Python lists, a ``SortedList`` index, ``heapq``).
* The treap position index against a sorted Python list, insert by insert and removal by removal.
* The per-slide prefilter against ``sorted``.
"""

from __future__ import annotations

import numpy as np
import pytest

import engine
from engine.kernels import mintopk as list_kernel
from engine.kernels import pretopk as set_kernel
from engine.kernels.select import best_first
from tests.engine.plain_topk import PlainMinTopK, PlainPreTopK
from tests.streams import SHAPES, adversarial_scores

PLAIN = {"mintopk": PlainMinTopK, "pretopk": PlainPreTopK}


def comparable(state: dict) -> dict:
    """The structure without the compiled arrays' ``capacity`` (an allocation the plain lists do
    not have); PreTopK lists its object table in table order: compare it as a set."""
    state = {key: value for key, value in state.items() if key != "capacity"}
    if "sets" in state:
        state = {**state, "objects": sorted(state["objects"])}
    return state


@pytest.mark.parametrize("name", sorted(PLAIN))
@pytest.mark.parametrize("prefilter", [True, False])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("k,window,slide", [(3, 12, 4), (1, 8, 1), (4, 10, 10), (25, 12, 3), (5, 60, 2)])
def test_the_compiled_structure_equals_the_plain_one_after_every_slide(name, prefilter, shape, k, window, slide):
    rng = np.random.default_rng([SHAPES.index(shape), k, window, slide])
    m = 240
    data = (np.arange(m) + 7, np.arange(m), adversarial_scores(shape, m, rng))
    q = engine.Query(weights=[1.0], k=k, window=window, slide=slide)
    compiled, plain = engine.create(name, q, prefilter=prefilter), PLAIN[name](q, prefilter=prefilter)
    for batch in engine.slides(data, q):
        compiled.process(batch)
        plain.process(batch)
        compiled.check()
        assert comparable(compiled.dump_state()) == comparable(plain.dump_state()), f"slide {batch.index}"
        assert compiled.topk().ids.tolist() == plain.topk().ids.tolist()


@pytest.mark.parametrize("name", sorted(PLAIN))
def test_time_windows_with_empty_slides_equal_the_plain_structure(name):
    rng = np.random.default_rng(3)
    m = 200
    t = np.cumsum(rng.choice([0, 0, 1, 7], m))
    q = engine.Query(weights=[1.0], k=3, window=20, slide=4, kind="time")
    compiled, plain = engine.create(name, q), PLAIN[name](q)
    for batch in engine.slides((np.arange(m), t, rng.random(m)), q):
        compiled.process(batch)
        plain.process(batch)
        assert comparable(compiled.dump_state()) == comparable(plain.dump_state()), f"slide {batch.index}"


def in_order(records: np.ndarray, root: int) -> list[int]:
    """Rows of the treap in search order (best first), by a plain recursive walk."""
    if root == list_kernel.NONE:
        return []
    return in_order(records, records[root, list_kernel.LEFT]) + [root] + \
        in_order(records, records[root, list_kernel.RIGHT])


@pytest.mark.parametrize("seed", range(4))
def test_the_treap_index_keeps_the_order_of_a_sorted_list(seed):
    rng = np.random.default_rng(seed)
    records, scores, _, meta, _ = list_kernel.empty_arrays(512, 1)
    held: dict[int, int] = {}                        # seq -> row
    for seq in range(400):
        if held and rng.random() < 0.4:
            victim = int(rng.choice(sorted(held)))
            list_kernel.unlink(records, meta, held.pop(victim))
        else:
            value = float(rng.integers(0, 20))
            held[seq] = list_kernel.position(records, scores, meta, value, seq, seq, 0, 0)
        expected = sorted(held, key=lambda s: (scores[held[s]], s), reverse=True)
        rows = in_order(records, meta[list_kernel.ROOT])
        assert [int(records[row, list_kernel.SEQ]) for row in rows] == expected
        assert list_kernel.ranked(records, meta).tolist() == rows
        for row in rows:
            parent = records[row, list_kernel.PARENT]
            if parent != list_kernel.NONE:
                assert list_kernel.priority(int(records[row, list_kernel.SEQ])) <= \
                    list_kernel.priority(int(records[parent, list_kernel.SEQ]))


def test_positioning_returns_the_record_directly_above():
    records, scores, _, meta, _ = list_kernel.empty_arrays(8, 1)
    first = list_kernel.position(records, scores, meta, 5.0, 0, 0, 0, 0)
    second = list_kernel.position(records, scores, meta, 1.0, 1, 1, 0, 0)
    middle = list_kernel.position(records, scores, meta, 3.0, 2, 2, 0, 0)
    assert records[middle, list_kernel.ABOVE] == first and records[middle, list_kernel.BELOW] == second
    assert meta[list_kernel.TOP] == first and records[first, list_kernel.ABOVE] == list_kernel.NONE


@pytest.mark.parametrize("m,k", [(0, 3), (1, 3), (5, 5), (50, 7), (200, 1), (30, 100)])
def test_the_slide_prefilter_equals_sorting(m, k):
    rng = np.random.default_rng(m * 1000 + k)
    scores = rng.integers(0, 4, m).astype(np.float64)
    seqs = np.arange(m, dtype=np.int64) * 3
    expected = sorted(range(m), key=lambda i: (scores[i], seqs[i]), reverse=True)[:k]
    assert best_first(scores, seqs, k).tolist() == expected


@pytest.mark.parametrize("damage", ["tkc", "lbp", "start", "index", "order"])
def test_mintopk_check_finds_a_damaged_structure(damage):
    q = engine.Query(weights=[1.0], k=3, window=12, slide=3)
    alg = engine.create("mintopk", q)
    for batch in engine.slides((np.arange(60), np.arange(60), np.random.default_rng(2).random(60)), q):
        alg.process(batch)
    alg.check()
    rows = list_kernel.ranked(alg._records, alg._meta)
    table = alg._table[alg._current % q.windows_per_object]
    if damage == "tkc":
        table[list_kernel.TKC] -= 1
    elif damage == "lbp":
        table[list_kernel.LBP] = rows[-1] if table[list_kernel.LBP] != rows[-1] else rows[0]
    elif damage == "start":
        alg._records[rows[0], list_kernel.START] = alg._records[rows[0], list_kernel.END] + 1
    elif damage == "index":
        root = alg._meta[list_kernel.ROOT]
        alg._records[root, list_kernel.LEFT], alg._records[root, list_kernel.RIGHT] = \
            alg._records[root, list_kernel.RIGHT], alg._records[root, list_kernel.LEFT]
    else:
        alg._scores[rows[0]] = alg._scores[rows[-1]] - 1.0
    with pytest.raises(AssertionError):
        alg.check()


@pytest.mark.parametrize("damage", ["refs", "heap", "distinct"])
def test_pretopk_check_finds_a_damaged_structure(damage):
    q = engine.Query(weights=[1.0], k=3, window=12, slide=3)
    alg = engine.create("pretopk", q)
    for batch in engine.slides((np.arange(60), np.arange(60), np.random.default_rng(2).random(60)), q):
        alg.process(batch)
    alg.check()
    heap = alg._sets[alg._current % q.windows_per_object]
    if damage == "refs":
        alg._objects[heap[0], set_kernel.REFS] += 1
    elif damage == "heap":
        heap[0], heap[1] = heap[1], heap[0]
    else:
        alg._meta[set_kernel.DISTINCT] += 1
    with pytest.raises(AssertionError):
        alg.check()


@pytest.mark.parametrize("dimensions", [1, 2, 5])
def test_mintopk_scores_a_slide_as_the_engine_scores_it(dimensions):
    rng = np.random.default_rng(dimensions)
    x = rng.normal(size=(500, dimensions)) * 10.0 ** rng.integers(-8, 9, size=(500, dimensions))
    weights = rng.normal(size=dimensions)
    ours = list_kernel.weighted_scores(x, weights)
    assert ours.tobytes() == engine.ranking.score(x, weights.tolist()).tobytes()


def test_mintopk_slides_leave_the_reference_counts_of_its_arrays_alone():
    """The slide kernel binds its state arrays through views without a reference count
    (``unowned``): a wrong count would free or leak them."""
    import sys

    q = engine.Query(weights=[1.0], k=5, window=60, slide=3)
    alg = engine.create("mintopk", q)
    alg._reserve(200)
    arrays = (alg._records, alg._scores, alg._table, alg._meta, alg._counters)
    before = [sys.getrefcount(array) for array in arrays]
    rng = np.random.default_rng(3)
    for batch in engine.slides((np.arange(600), np.arange(600), rng.random((600, 1))), q):
        alg.process(batch)
    assert [sys.getrefcount(array) for array in arrays] == before
    assert alg._records is arrays[0]
    alg.check()
