"""MinTopK's own structure: the size of the super-top-k list and its counters."""

from __future__ import annotations

import numpy as np
import pytest
import engine
from engine.kernels import mintopk as kernel
from tests.streams import assert_same_answer, kept_answer_case


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


@pytest.mark.parametrize("prefilter", [True, False])
@pytest.mark.parametrize("kind", ["count", "time"])
@pytest.mark.parametrize("trend", ["falling", "rising", "flat"])
def test_a_slide_keeps_the_answer_only_while_it_stands(trend, kind, prefilter):
    """``process`` keeps the previous ``Answer`` object when no member expired and no arrival
    entered the new window's top k.  Falling scores: the answer is the oldest ``k`` of the
    window, kept while the first window fills, then its members expire on slides no arrival
    enters (keeping it on expiry would be wrong; a time window keeps it where the slide leaving
    it was empty); rising: every arrival enters it; flat noise: most slides keep it.  The
    answers kept are counted on slides with arrivals (a time window's empty slide, where
    nothing arrives, may keep it whatever the trend).
    Every answer equals the oracle's and the one made afresh from the list, with ``topk`` asked
    at every slide and, from a second instance, at every third slide only."""
    q, data = kept_answer_case(trend, kind, (0, 7))
    n = q.window
    every, sparse = (engine.create("mintopk", q, prefilter=prefilter) for _ in range(2))
    oracle = engine.create("oracle", q)
    kept, previous = {False: 0, True: 0}, None
    batches = list(engine.slides(data, q))
    arrived = sum(1 for batch in batches if len(batch))
    for number, batch in enumerate(batches):
        for alg in (every, sparse, oracle):
            alg.process(batch)
        answer = every.topk()
        where = f"{kind} {trend} prefilter {prefilter} slide {batch.index}"
        assert_same_answer(oracle.topk(), answer, where)
        fresh = engine.Answer(*kernel.answer(every._records, every._scores, every._table, every._meta, every._current))
        assert np.array_equal(fresh.ids, answer.ids) and np.array_equal(fresh.seq, answer.seq), where
        if number % 3 == 0:
            assert_same_answer(oracle.topk(), sparse.topk(), where)
        kept[batch.end > n] += len(batch) > 0 and answer is previous
        previous = answer
    assert arrived < len(batches) or kind == "count"
    if trend == "flat":
        assert kept[False] + kept[True] > 0.5 * arrived
    elif trend == "rising":
        assert kept[False] == kept[True] == 0
    else:
        assert kept[False] > 0 and (kept[True] == 0 or kind == "time")
