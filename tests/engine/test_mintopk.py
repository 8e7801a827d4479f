"""MinTopK's own structure: the size of the super-top-k list and its counters."""

from __future__ import annotations

import numpy as np
import pytest
import engine
from benchmarks.bench_mintopk import MinTopKOverSortedList
from engine.sortedkeys import SortedKeys


def feed(alg, scores, q):
    sizes = []
    for batch in engine.slides((np.arange(len(scores)), np.arange(len(scores)), scores), q):
        alg.process(batch)
        alg.check()
        sizes.append(alg.stats()["candidates"])
    return sizes


def test_decreasing_scores_reach_the_worst_case_c_nw_times_k():
    q = engine.Query(weights=[1.0], k=3, window=40, slide=4)
    sizes = feed(engine.create("mintopk", q), -np.arange(400.0), q)
    assert max(sizes) == q.windows_per_object * q.k


def test_increasing_scores_keep_only_k():
    q = engine.Query(weights=[1.0], k=3, window=40, slide=4)
    sizes = feed(engine.create("mintopk", q), np.arange(400.0), q)
    assert max(sizes) == q.k


@pytest.mark.parametrize("windows", [10, 100])
def test_random_scores_keep_about_k_times_the_harmonic_number_of_windows(windows):
    k, slide = 5, 50
    q = engine.Query(weights=[1.0], k=k, window=windows * slide, slide=slide)
    rng = np.random.default_rng(5)
    sizes = feed(engine.create("mintopk", q), rng.random(slide * windows * 4), q)
    steady = np.mean(sizes[2 * windows:])
    expected = k * sum(1 / i for i in range(1, windows + 1))
    assert 0.8 * expected < steady < 1.2 * expected


def test_prefilter_passes_only_the_top_k_of_each_slide():
    q = engine.Query(weights=[1.0], k=2, window=20, slide=10)
    alg = engine.create("mintopk", q)
    feed(alg, np.random.default_rng(1).random(100), q)
    stats = alg.stats()
    assert stats["arrivals"] == 100 and stats["prefiltered"] == 80
    assert stats["inserted"] + stats["discarded"] == 20


@pytest.mark.parametrize("scores", ["uniform", "decreasing"])
def test_the_benchmarked_sortedlist_index_gives_the_same_run(scores):
    """``make bench`` compares SortedKeys with this variant: it must do the same work."""
    q = engine.Query(weights=[1.0], k=4, window=60, slide=3)
    m = 600
    x = np.random.default_rng(8).random(m) if scores == "uniform" else -np.arange(m, dtype=np.float64)
    plain = engine.create("mintopk", q)
    swapped = MinTopKOverSortedList(q)
    for batch in engine.slides((np.arange(m), np.arange(m), x), q):
        plain.process(batch)
        swapped.process(batch)
        swapped.check()
        assert swapped.topk().ids.tolist() == plain.topk().ids.tolist()
        assert swapped._stats() == plain._stats()


def test_sortedkeys_remove_of_an_absent_key_raises_keyerror():
    keys = SortedKeys()
    with pytest.raises(KeyError):
        keys.remove(1)
    for key in range(3000):
        keys.insert(key)
    for absent in (-1, 1500.5, 5000):
        with pytest.raises(KeyError):
            keys.remove(absent)
    keys.remove(1500)
    assert len(keys) == 2999 and list(keys) == [k for k in range(3000) if k != 1500]
