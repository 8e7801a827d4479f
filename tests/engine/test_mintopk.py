"""MinTopK's own structure: the size of the super-top-k list and its counters."""

from __future__ import annotations

import numpy as np
import pytest
import engine


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
