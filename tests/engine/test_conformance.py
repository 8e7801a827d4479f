"""Every registered exact single-stream algorithm equals the oracle at every slide, and every one
of them (the oracle included) equals the independent plain-Python reference (``tests/reference.py``)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import engine
from tests.reference import reference_answers
from tests.streams import (COLUMNS, SHAPES, TIMES_ALL, adversarial_scores, assert_same_answer, check_against_oracle,
                           random_column, random_query, random_times, time_stamps)

EXACT = [info.name for info in engine.available() if info.exact and info.stream == "single" and info.name != "oracle"]
VARIANTS = [(name, {}) for name in EXACT] + [
    (info.name, {switch: False}) for info in engine.available() if info.name in EXACT
    for switch in ("prefilter", "delay", "savl") if switch in info.defaults
]
IDS = [f"{name}{'-' + '-'.join(f'{k}={v}' for k, v in p.items()) if p else ''}" for name, p in VARIANTS]


@pytest.mark.parametrize("name,params", VARIANTS, ids=IDS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("k,window,slide", [(3, 12, 4), (1, 8, 1), (4, 10, 10), (25, 12, 3), (2, 30, 5)])
def test_count_windows_adversarial(name, params, shape, k, window, slide):
    rng = np.random.default_rng([SHAPES.index(shape), k, window, slide])
    m = 160
    scores = adversarial_scores(shape, m, rng)
    data = (np.arange(m) + 1000, np.arange(m), scores)
    q = engine.Query(weights=[1.0], k=k, window=window, slide=slide, kind="count")
    assert check_against_oracle(name, data, q, params) == m // slide


@pytest.mark.parametrize("name,params", VARIANTS, ids=IDS)
@pytest.mark.parametrize("shape", ["uniform", "ties", "decreasing", "increasing"])
@pytest.mark.parametrize("times", ["steady", "bursts", "gaps"])
@pytest.mark.parametrize("k,window,slide", [(3, 12, 4), (2, 6, 1), (5, 9, 9), (40, 20, 5)])
def test_time_windows_adversarial(name, params, shape, times, k, window, slide):
    rng = np.random.default_rng([SHAPES.index(shape), ["steady", "bursts", "gaps"].index(times), k, window])
    m = 150
    t = time_stamps(times, m, rng)
    data = (np.arange(m), t, adversarial_scores(shape, m, rng))
    q = engine.Query(weights=[1.0], k=k, window=window, slide=slide, kind="time")
    slides_seen = check_against_oracle(name, data, q, params)
    assert slides_seen == (t[-1] // slide * slide - t[0] // slide * slide) // slide


@pytest.mark.parametrize("name,params", VARIANTS, ids=IDS)
def test_two_features_with_negative_weights(name, params):
    rng = np.random.default_rng(7)
    m = 400
    x = np.column_stack([rng.normal(size=m), rng.integers(0, 4, m)])
    q = engine.Query(weights=[-0.5, 2.0], k=5, window=60, slide=6)
    check_against_oracle(name, (np.arange(m), np.arange(m), x), q, params)


@st.composite
def streams(draw):
    slide = draw(st.integers(1, 6))
    window = slide * draw(st.integers(1, 6))
    k = draw(st.integers(1, 8))
    kind = draw(st.sampled_from(["count", "time"]))
    m = draw(st.integers(0, 80))
    values = draw(st.lists(st.sampled_from([0.0, 1.0, 2.5, -3.0, 1e-9]) | st.floats(-100, 100), min_size=m, max_size=m))
    steps = draw(st.lists(st.integers(0, 4) | st.just(0), min_size=m, max_size=m))
    t = np.cumsum(np.asarray(steps, dtype=np.int64)) if kind == "time" else np.arange(m)
    q = engine.Query(weights=[1.0], k=k, window=window, slide=slide, kind=kind)
    return q, (np.arange(m), t, np.asarray(values, dtype=np.float64))


@pytest.mark.parametrize("name,params", VARIANTS, ids=IDS)
@settings(max_examples=60, deadline=None)
@given(case=streams())
def test_generated_streams(name, params, case):
    q, data = case
    check_against_oracle(name, data, q, params)


LITERAL_TRACES = [
    # (scores, k, window, slide, expected ids per slide) -- worked out by hand
    ([9, 1, 5, 7, 2, 3, 4, 0, 8, 6], 2, 6, 2, [[0, 1], [0, 3], [0, 3], [3, 2], [8, 9]]),
    ([1, 1, 1, 1, 1, 1], 2, 4, 2, [[1, 0], [3, 2], [5, 4]]),
    ([5, 4, 3, 2, 1, 0], 3, 4, 1, [[0], [0, 1], [0, 1, 2], [0, 1, 2], [1, 2, 3], [2, 3, 4]]),
    ([0, 1, 2, 3, 4, 5], 2, 2, 2, [[1, 0], [3, 2], [5, 4]]),
]


@pytest.mark.parametrize("name", EXACT + ["oracle"])
@pytest.mark.parametrize("trace", LITERAL_TRACES, ids=lambda trace: str(trace[0]))
def test_literal_traces(name, trace):
    scores, k, window, slide, expected = trace
    q = engine.Query(weights=[1.0], k=k, window=window, slide=slide)
    alg = engine.create(name, q)
    got = []
    for batch in engine.slides((np.arange(len(scores)), np.arange(len(scores)), np.asarray(scores, float)), q):
        alg.process(batch)
        got.append(alg.topk().ids.tolist())
    assert got == expected


@pytest.mark.parametrize("name", EXACT + ["oracle"])
def test_candidates_are_window_objects_that_include_the_answer_and_match_the_count(name):
    rng = np.random.default_rng(2)
    m = 300
    q = engine.Query(weights=[1.0], k=4, window=30, slide=5)
    alg = engine.create(name, q)
    for batch in engine.slides((np.arange(m), np.arange(m), rng.random(m)), q):
        alg.process(batch)
        seqs = alg.candidates()
        assert len(seqs) == len(set(seqs.tolist())) == alg.stats()["candidates"]
        assert np.all((seqs >= batch.end - q.window) & (seqs < batch.end))
        assert set(alg.topk().seq.tolist()) <= set(seqs.tolist())


TIMES = ("steady", "bursts", "gaps")


def check_against_reference(name, params, ids, t, x, weights, k, window, slide, kind):
    """Run ``name`` and compare every answer, ids, seq and scores exactly, with the reference."""
    expected = reference_answers(ids.tolist(), t.tolist(), x.tolist(), weights, k, window, slide, kind)
    q = engine.Query(weights=weights, k=k, window=window, slide=slide, kind=kind)
    alg = engine.create(name, q, **params)
    got = []
    for batch in engine.slides((ids, t, x), q):
        alg.process(batch)
        answer = alg.topk()
        got.append((batch.end, list(zip(answer.ids.tolist(), answer.scores.tolist(), answer.seq.tolist()))))
    assert len(got) == len(expected), f"{name}: {len(got)} slides, the reference has {len(expected)}"
    for (end, mine), (ref_end, theirs) in zip(got, expected):
        assert end == ref_end and mine == theirs, f"{name} {q} at {end}: {mine} != {theirs}"
    return len(got)


REFERENCE_VARIANTS = [("oracle", {})] + VARIANTS
REFERENCE_IDS = ["oracle"] + IDS


@pytest.mark.parametrize("name,params", REFERENCE_VARIANTS, ids=REFERENCE_IDS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("k,window,slide", [(3, 12, 4), (1, 8, 1), (25, 12, 3), (2, 30, 5)])
def test_count_windows_equal_the_independent_reference(name, params, shape, k, window, slide):
    rng = np.random.default_rng([SHAPES.index(shape), k, window, slide, 1])
    m = 150
    scores = adversarial_scores(shape, m, rng)
    assert check_against_reference(name, params, np.arange(m) + 500, np.arange(m), scores[:, None], [1.0],
                                   k, window, slide, "count") == m // slide


@pytest.mark.parametrize("name,params", REFERENCE_VARIANTS, ids=REFERENCE_IDS)
@pytest.mark.parametrize("shape", ["uniform", "ties", "decreasing", "increasing", "sawtooth"])
@pytest.mark.parametrize("times", TIMES)
@pytest.mark.parametrize("k,window,slide", [(3, 12, 4), (2, 6, 1), (40, 20, 5)])
def test_time_windows_equal_the_independent_reference(name, params, shape, times, k, window, slide):
    rng = np.random.default_rng([SHAPES.index(shape), TIMES.index(times), k, window, 2])
    m = 140
    t = time_stamps(times, m, rng)
    scores = adversarial_scores(shape, m, rng)
    check_against_reference(name, params, np.arange(m), t, scores[:, None], [1.0], k, window, slide, "time")


@pytest.mark.parametrize("name,params", REFERENCE_VARIANTS, ids=REFERENCE_IDS)
@pytest.mark.parametrize("kind", ["count", "time"])
def test_three_features_with_mixed_weights_equal_the_independent_reference(name, params, kind):
    rng = np.random.default_rng(31)
    m = 300
    x = np.column_stack([rng.normal(size=m), rng.integers(0, 3, m), rng.random(m).round(1)])
    t = np.cumsum(rng.integers(0, 3, m)) if kind == "time" else np.arange(m)
    check_against_reference(name, params, np.arange(m) * 7, t, x, [-0.5, 2.0, 1.0], 5, 30, 6, kind)


@pytest.mark.parametrize("trace", LITERAL_TRACES, ids=lambda trace: str(trace[0]))
def test_the_reference_reproduces_the_hand_worked_traces(trace):
    scores, k, window, slide, expected = trace
    m = len(scores)
    answers = reference_answers(range(m), range(m), scores, [1.0], k, window, slide)
    assert [[oid for oid, _, _ in ranked] for _, ranked in answers] == expected


def stress_stream(seed: int):
    """A random query and an adversarial stream of up to 250 rows over 1-3 features."""
    rng = np.random.default_rng(seed)
    d = int(rng.integers(1, 4))
    kind = str(rng.choice(["count", "time"]))
    q = random_query(rng, d, kind)
    m = int(rng.choice([0, 1, 5, 20, 60, 150, 250]))
    x = np.column_stack([random_column(str(rng.choice(COLUMNS)), m, rng) for _ in range(d)])
    t = np.arange(m) if kind == "count" else random_times(str(rng.choice(TIMES_ALL)), m, rng)
    ids = rng.permutation(m) + 10
    return q, (ids, t, x), rng


@pytest.mark.parametrize("name,params", VARIANTS, ids=IDS)
def test_seeded_stress_against_the_oracle_with_check_stats_and_restore(name, params):
    """Fixed seeds, random queries (k past the window, s = 1 to s = n, weights of either sign) on
    adversarial streams: the oracle's ids and scores, ``check()`` and the candidate count after
    every slide, and a copy restored from JSON at a random slide continuing identically."""
    for seed in range(40):
        q, data, rng = stress_stream(seed)
        if "cells_per_dim" in engine.registry.algorithm_class(name).defaults:
            params = {"cells_per_dim": int(rng.choice([0, 1, 2, 5]))}
        batches = list(engine.slides(data, q))
        algorithm, oracle, twin = engine.create(name, q, **params), engine.create("oracle", q), None
        cut = int(rng.integers(0, len(batches) + 1))
        for index, batch in enumerate(batches):
            context = f"seed {seed} {name} {params} {q} slide {index}"
            if index == cut:
                twin = engine.restore(json.loads(json.dumps(algorithm.to_state())), q, algorithm=name, params=params)
            algorithm.process(batch)
            oracle.process(batch)
            answer = algorithm.topk()
            assert_same_answer(oracle.topk(), answer, context)
            assert np.array_equal(oracle.topk().ids, answer.ids), context
            algorithm.check()
            assert algorithm.stats()["candidates"] == len(algorithm.candidates()), context
            if twin is not None:
                twin.process(batch)
                twin.check()
                assert np.array_equal(twin.topk().ids, answer.ids), context
                assert twin._stats() == algorithm._stats(), context
