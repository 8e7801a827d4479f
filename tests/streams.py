"""Streams for the conformance suites: adversarial shapes and the oracle comparison."""

from __future__ import annotations

import tracemalloc

import numpy as np

import engine


def adversarial_scores(shape: str, m: int, rng: np.random.Generator) -> np.ndarray:
    """Scores of one of the adversarial shapes the conformance tests run every exact algorithm on."""
    i = np.arange(m, dtype=np.float64)
    if shape == "uniform":
        return rng.random(m)
    if shape == "ties":
        return rng.integers(0, 3, m).astype(np.float64)
    if shape == "constant":
        return np.full(m, 7.0)
    if shape == "increasing":
        return i
    if shape == "decreasing":
        return -i
    if shape == "sawtooth":
        return (i % 7) - 0.5 * (i % 3)
    raise ValueError(shape)


SHAPES = ("uniform", "ties", "constant", "increasing", "decreasing", "sawtooth")


def kept_answer_case(trend: str, kind: str, time_steps: tuple[int, int]) -> tuple[engine.Query, tuple]:
    """The query (``k = 8``, window 600, slide 3) and stream (2,400 objects) of the kept-answer
    tests.  Scores ``falling`` (the answer is the window's oldest members, which expire),
    ``rising`` (every arrival enters it) or ``flat`` noise (most slides keep it); a time window's
    steps drawn from ``time_steps`` (a step range with 0 has slides that skip empty ones)."""
    rng = np.random.default_rng(7)
    n = 600
    m = 4 * n
    noise = rng.random(m)
    scores = {"falling": -np.arange(m) + 0.5 * noise, "rising": np.arange(m) + 0.5 * noise, "flat": noise}[trend]
    t = np.arange(m) if kind == "count" else np.cumsum(rng.integers(*time_steps, m))
    return engine.Query(weights=[1.0], k=8, window=n, slide=3, kind=kind), (np.arange(m), t, scores)


def time_stamps(shape: str, m: int, rng: np.random.Generator) -> np.ndarray:
    """Non-decreasing times: steady, with bursts (many equal t) or with long gaps."""
    if shape == "steady":
        return np.arange(m, dtype=np.int64)
    if shape == "bursts":
        return np.sort(rng.integers(0, max(1, m // 8), m))
    if shape == "gaps":
        steps = np.where(rng.random(m) < 0.1, rng.integers(20, 60, m), rng.integers(0, 2, m))
        return np.cumsum(steps) + 3
    raise ValueError(shape)


def assert_same_answer(expected: engine.Answer, got: engine.Answer, context: str) -> None:
    """Scores equal within 1e-12 relative; ids may differ only among equal scores."""
    assert len(expected) == len(got), f"{context}: {len(got)} objects instead of {len(expected)}"
    np.testing.assert_allclose(got.scores, expected.scores, rtol=1e-12, atol=0, err_msg=context)
    if not np.array_equal(expected.ids, got.ids):
        for value in np.unique(expected.scores):
            mine = np.sort(got.ids[got.scores == value])
            theirs = np.sort(expected.ids[expected.scores == value])
            assert np.array_equal(mine, theirs), f"{context}: ids differ at score {value}"


def check_against_oracle(name: str, data, query: engine.Query, params=None, check_every: int = 1) -> int:
    """Run ``name`` and the oracle side by side; compare at every slide. Returns slides seen."""
    algorithm = engine.create(name, query, **(params or {}))
    oracle = engine.create("oracle", query)
    count = 0
    for batch in engine.slides(data, query):
        algorithm.process(batch)
        oracle.process(batch)
        assert_same_answer(oracle.topk(), algorithm.topk(), f"{name} slide {batch.index} end {batch.end} {query}")
        if count % check_every == 0:
            algorithm.check()
        count += 1
    return count


def random_column(shape: str, m: int, rng: np.random.Generator) -> np.ndarray:
    """One feature column of the stress tests: the adversarial shapes plus few distinct values,
    negative zeros and magnitudes far apart."""
    if shape in SHAPES:
        return adversarial_scores(shape, m, rng)
    if shape == "few":
        return rng.choice([-1.5, 0.0, 2.0, 5.0], m)
    if shape == "signed-zeros":
        return rng.choice([0.0, -0.0, 1.0, -1.0], m)
    if shape == "far-apart":
        return rng.choice([1e15, -1e15, 1e-15, 0.0, 1.0], m)
    raise ValueError(shape)


COLUMNS = SHAPES + ("few", "signed-zeros", "far-apart")


def random_times(shape: str, m: int, rng: np.random.Generator) -> np.ndarray:
    """:func:`time_stamps`, plus every object at one time, sparse steps (many empty slides) and
    times far below zero (negative slide indices)."""
    if shape == "equal":
        return np.full(m, int(rng.integers(0, 50)), np.int64)
    if shape == "sparse":
        return np.cumsum(rng.integers(0, 8, m)) + int(rng.integers(0, 10))
    if shape == "negative":
        return np.cumsum(rng.integers(0, 3, m)) - int(rng.choice([50, 10 ** 15]))
    return time_stamps(shape, m, rng)


TIMES_ALL = ("steady", "bursts", "gaps", "equal", "sparse", "negative")


def random_query(rng: np.random.Generator, d: int, kind: str) -> engine.Query:
    """Slide 1 to 7, window 1 to 6 slides, k from 1 to past the window, weights of either sign (or 0)."""
    s = int(rng.choice([1, 1, 2, 3, 4, 5, 7]))
    n = s * int(rng.choice([1, 1, 2, 3, 4, 6]))
    k = int(rng.integers(1, n + 6)) if rng.random() < 0.6 else int(rng.integers(1, 4))
    weights = [0.0 if rng.random() < 0.1 else float(rng.choice([-2.0, -1.0, -0.5, 0.5, 1.0, 2.0])) for _ in range(d)]
    return engine.Query(weights=weights, k=k, window=n, slide=s, kind=kind)


def traced_run(create, batches) -> tuple:
    """A fresh algorithm from ``create()`` run over ``batches`` under tracemalloc, and the bytes
    it holds at the end (a first instance runs untraced, so numba's kernels are loaded before)."""
    warm = create()
    for batch in batches:
        warm.process(batch)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        algorithm = create()
        for batch in batches:
            algorithm.process(batch)
        return algorithm, tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
