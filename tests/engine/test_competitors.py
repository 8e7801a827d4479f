"""The SAP paper's competitors: one-pass k-skyband, TMA and SMA (grid index).

The generic conformance suite already compares them with the oracle on one-feature streams;
these tests cover what is specific to them: several features and negative weights, data that
leaves the grid's initial bounds, the grid's cell bounds, rescans, state and parameters.
``check_against_oracle`` runs ``check()`` after every slide.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import engine
from engine.jsondata import seal
from engine.grid import Grid
from engine.skyband import DominanceSet, dominance_counts
from tests.streams import assert_same_answer, check_against_oracle

COMPETITORS = ["kskyband", "tma", "sma"]
GRID = ["tma", "sma"]


def features(shape: str, m: int, d: int, rng: np.random.Generator) -> np.ndarray:
    if shape == "normal":
        return rng.normal(size=(m, d))
    if shape == "ties":
        return rng.integers(-2, 3, (m, d)).astype(np.float64)
    if shape == "drift":
        return rng.normal(size=(m, d)) + np.linspace(0.0, 40.0, m)[:, None] * np.where(np.arange(d) % 2, -1.0, 1.0)
    raise ValueError(shape)


@pytest.mark.parametrize("name", COMPETITORS)
@pytest.mark.parametrize("d", [1, 2, 3])
@pytest.mark.parametrize("kind", ["count", "time"])
@pytest.mark.parametrize("shape", ["normal", "ties", "drift"])
def test_several_features_and_negative_weights(name, d, kind, shape):
    rng = np.random.default_rng(1000 * d + len(shape) + (kind == "time"))
    m = 300
    x = features(shape, m, d, rng)
    weights = [-1.0, 0.5, -2.0][:d]
    t = np.cumsum(rng.integers(0, 3, m)) if kind == "time" else np.arange(m)
    q = engine.Query(weights=weights, k=4, window=30, slide=5, kind=kind)
    check_against_oracle(name, (np.arange(m), t, x), q)


@pytest.mark.parametrize("name", GRID)
@pytest.mark.parametrize("cells_per_dim", [1, 2, 7])
def test_fixed_resolution(name, cells_per_dim):
    rng = np.random.default_rng(cells_per_dim)
    m = 400
    x = rng.normal(size=(m, 2))
    q = engine.Query(weights=[1.0, -0.25], k=6, window=60, slide=4)
    check_against_oracle(name, (np.arange(m), np.arange(m), x), q, {"cells_per_dim": cells_per_dim})
    alg = engine.create(name, q, cells_per_dim=cells_per_dim)
    for batch in engine.slides((np.arange(m), np.arange(m), x), q):
        alg.process(batch)
    assert alg.stats()["cells"] == cells_per_dim ** 2


@pytest.mark.parametrize("name", GRID)
@pytest.mark.parametrize("cells_per_dim", [0, 1])
def test_more_features_than_numpy_has_dimensions(name, cells_per_dim):
    """65 features (a wide CSV): the grid has one cell per dimension, 1 ** 65 cells in all, and
    its cell bounds were indexed through a 65-dimensional numpy shape (numpy allows 64)."""
    rng = np.random.default_rng(65)
    m, d = 120, 65
    weights = np.where(np.arange(d) % 3, 1.0, -0.5).tolist()
    q = engine.Query(weights=weights, k=4, window=20, slide=5)
    check_against_oracle(name, (np.arange(m), np.arange(m), rng.random((m, d))), q, {"cells_per_dim": cells_per_dim})


@pytest.mark.parametrize("name", GRID)
@pytest.mark.parametrize("kind", ["count", "time"])
@pytest.mark.parametrize("weights", [[1.0, 1.0], [-1.0, 2.0], [0.0, -1.0]])
def test_values_outside_the_initial_grid(name, kind, weights):
    """The grid is fitted to the first slide; later values lie far outside it on both sides."""
    rng = np.random.default_rng(4)
    m = 360
    x = rng.random((m, 2))
    x[60:120] *= 1e6
    x[120:180] -= 5e6
    x[180:240, 0] = 1e300 * rng.random(60)
    x[240:300] = -x[240:300] * 1e200
    t = np.arange(m) // 2 if kind == "time" else np.arange(m)
    q = engine.Query(weights=weights, k=5, window=24, slide=6, kind=kind)
    check_against_oracle(name, (np.arange(m), t, x), q, {"cells_per_dim": 4})
    alg = engine.create(name, q, cells_per_dim=4)
    for batch in engine.slides((np.arange(m), t, x), q):
        alg.process(batch)
    assert alg.stats()["rebuilds"] >= 3


@pytest.mark.parametrize("name", GRID)
def test_values_outside_the_grid_without_rebuilding(name):
    """A few far-out objects are clamped into border cells (no rebuild) and still ranked exactly."""
    rng = np.random.default_rng(5)
    m = 600
    x = rng.random((m, 1))
    x[rng.choice(np.arange(100, m), 8, replace=False), 0] = [50.0, -50.0, 9.0, 1e9, -1e9, 2.0, 3.0, 1.5]
    q = engine.Query(weights=[1.0], k=3, window=100, slide=10)
    check_against_oracle(name, (np.arange(m), np.arange(m), x), q, {"cells_per_dim": 10})


def test_cell_bounds_use_the_corner_given_by_the_weight_signs():
    q = engine.Query(weights=[2.0, -1.0, 0.0], k=3, window=100, slide=100)
    grid = Grid(q, cells_per_dim=4)
    rng = np.random.default_rng(6)
    x = rng.normal(size=(100, 3))
    batch = next(iter(engine.slides((np.arange(100), np.arange(100), x), q)))
    scores = engine.score(x, q.weights)
    grid.insert(batch, scores)
    edges = grid._edges
    bounds = grid.geometric_bounds()
    for i0 in range(4):
        for i1 in range(4):
            for i2 in range(4):
                cell = i0 + 4 * i1 + 16 * i2
                assert bounds[cell] == 2.0 * edges[0][i0 + 1] - 1.0 * edges[1][i1] + 0.0
    cells = grid.column("cell", np.arange(100))
    assert np.all(scores <= grid.bound_of(cells))
    grid.check(None)
    # arrivals beyond the edges are clamped into border cells, whose bounds rise to their scores
    far = np.array([[100.0, -100.0, 5.0], [-100.0, 100.0, 5.0]])
    batch = engine.Batch(ids=np.array([100, 101]), seq=np.array([100, 101]), t=np.array([100, 101]), x=far,
                         end=200, index=1)
    far_scores = engine.score(far, q.weights)
    pos = grid.insert(batch, far_scores)
    assert np.all(grid.bound_of(grid.column("cell", pos)) >= far_scores)
    assert grid.bound_of(grid.column("cell", pos))[0] == far_scores[0] == 300.0
    grid.check(None)
    assert grid.top(1)[1].tolist() == [300.0]


def test_grid_visits_few_cells():
    rng = np.random.default_rng(7)
    m = 20_000
    q = engine.Query(weights=[1.0], k=10, window=10_000, slide=1_000)
    alg = engine.create("tma", q)
    for batch in engine.slides((np.arange(m), np.arange(m), rng.random(m)), q):
        alg.process(batch)
    stats = alg.stats()
    assert stats["cells"] > 100
    assert stats["rescans"] >= 1
    assert stats["objects_scanned"] < 0.05 * stats["rescans"] * q.window
    assert stats["cells_visited"] <= 4 * stats["rescans"]


def rescans(name: str, x: np.ndarray, k: int, window: int, slide: int) -> int:
    q = engine.Query(weights=[1.0], k=k, window=window, slide=slide)
    alg = engine.create(name, q)
    for batch in engine.slides((np.arange(len(x)), np.arange(len(x)), x), q):
        alg.process(batch)
        alg.check() if batch.index % 97 == 0 else None
    return alg.stats()["rescans"]


@pytest.mark.parametrize("slide", [2, 10])
def test_sma_rescans_grow_with_k_relative_to_s(slide):
    """A decreasing trend with noise: the top-k sit among the oldest objects, so the larger
    ``k`` is against ``s``, the likelier a slide's expiries leave fewer than ``k`` in the skyband."""
    rng = np.random.default_rng(8)
    m = 6000
    x = -np.arange(m) / 1000 + rng.random(m)
    counts = [rescans("sma", x, k, 1000, slide) for k in (1, 4, 16, 64)]
    assert counts == sorted(counts) and counts[-1] > 2 * counts[0], counts
    assert counts[-1] <= (m - 1000) // slide + 1


def test_rescans_on_a_strictly_decreasing_stream():
    """Every slide expires the best objects: SMA and TMA recompute at every slide once the
    first window is complete; the k-skyband keeps the whole window."""
    m, n, s, k = 600, 100, 10, 5
    x = -np.arange(m, dtype=np.float64)
    slides_after_warmup = (m - n) // s
    assert rescans("sma", x, k, n, s) == slides_after_warmup
    assert rescans("tma", x, k, n, s) == slides_after_warmup
    q = engine.Query(weights=[1.0], k=k, window=n, slide=s)
    alg = engine.create("kskyband", q)
    for batch in engine.slides((np.arange(m), np.arange(m), x), q):
        alg.process(batch)
    assert alg.stats()["candidates"] == n


def test_kskyband_on_an_increasing_stream_keeps_at_most_k():
    m, k = 500, 7
    q = engine.Query(weights=[1.0], k=k, window=100, slide=5)
    alg = engine.create("kskyband", q)
    for batch in engine.slides((np.arange(m), np.arange(m), np.arange(m, dtype=np.float64)), q):
        alg.process(batch)
        assert alg.stats()["candidates"] <= k
    assert alg.stats()["dropped"] == m - k


@pytest.mark.parametrize("name", COMPETITORS)
@pytest.mark.parametrize("k,window,slide", [(50, 20, 5), (1, 1, 1), (3, 40, 40), (8, 16, 1)])
def test_edge_parameters_two_features(name, k, window, slide):
    rng = np.random.default_rng(k + window)
    m = 200
    x = np.column_stack([rng.integers(0, 3, m), rng.normal(size=m)])
    q = engine.Query(weights=[1.0, -1e-3], k=k, window=window, slide=slide)
    check_against_oracle(name, (np.arange(m), np.arange(m), x), q)


def test_stats_and_memory_model():
    rng = np.random.default_rng(9)
    m, d = 500, 2
    x = rng.random((m, d))
    q = engine.Query(weights=[1.0, 1.0], k=5, window=100, slide=10)
    algs = {name: engine.create(name, q, **({} if name == "kskyband" else {"cells_per_dim": 3}))
            for name in COMPETITORS}
    for batch in engine.slides((np.arange(m), np.arange(m), x), q):
        for alg in algs.values():
            alg.process(batch)
    band = algs["kskyband"].stats()
    assert band["retained"] == band["candidates"] and band["bytes"] == 8 * 5 * band["candidates"]
    grid_bytes = 8 * (100 * (d + 6) + 6 * 9 + d * 4)
    tma, sma = algs["tma"].stats(), algs["sma"].stats()
    assert tma["retained"] == sma["retained"] == 100
    assert tma["candidates"] == 5 and tma["bytes"] == grid_bytes + 8 * 3 * 5
    assert sma["bytes"] == grid_bytes + 8 * (5 * sma["candidates"] + 2)
    for key in ("rescans", "cells_visited", "objects_scanned", "rebuilds"):
        assert isinstance(sma[key], int) and isinstance(tma[key], int)
    assert sma["candidates"] >= 5


def run_with_restores(name: str, data, q: engine.Query, cuts: set[int], params=None):
    """Answers and stats of one run, restoring from a JSON round trip of the state at ``cuts``."""
    alg = engine.create(name, q, **(params or {}))
    answers = []
    for batch in engine.slides(data, q):
        alg.process(batch)
        answers.append((alg.topk().ids.tolist(), alg.topk().scores.tolist(), alg._stats()))
        if batch.index in cuts:
            state = json.loads(json.dumps(alg.to_state(), allow_nan=False))
            restored = engine.restore(state, q)
            assert restored._stats() == alg._stats()  # measured_bytes depends on buffer capacity
            assert restored.topk().ids.tolist() == alg.topk().ids.tolist()
            alg = restored
    return answers


@pytest.mark.parametrize("name", COMPETITORS)
@pytest.mark.parametrize("kind", ["count", "time"])
def test_restore_continues_identically(name, kind):
    rng = np.random.default_rng(10)
    m = 400
    x = rng.normal(size=(m, 2)) + np.linspace(0, 20, m)[:, None]
    x[150:170] = 1e7
    t = np.cumsum(rng.integers(0, 3, m)) if kind == "time" else np.arange(m)
    q = engine.Query(weights=[-1.0, 0.5], k=6, window=40, slide=8, kind=kind)
    data = (np.arange(m), t, x)
    plain = run_with_restores(name, data, q, set())
    restored = run_with_restores(name, data, q, {0, 1, 7, 18, 19, 30, 44})
    assert plain == restored


@pytest.mark.parametrize("name", COMPETITORS)
def test_restore_of_a_new_algorithm(name):
    q = engine.Query(weights=[1.0], k=2, window=4, slide=2)
    restored = engine.restore(json.loads(json.dumps(engine.create(name, q).to_state())))
    batch = next(iter(engine.slides((np.arange(2), np.arange(2), [1.0, 2.0]), q)))
    restored.process(batch)
    assert restored.topk().ids.tolist() == [1, 0]


def corrupt_states(name: str) -> list[dict]:
    q = engine.Query(weights=[1.0], k=3, window=20, slide=5)
    alg = engine.create(name, q)
    rng = np.random.default_rng(11)
    for batch in engine.slides((np.arange(100), np.arange(100), rng.random(100)), q):
        alg.process(batch)
    good = alg.to_state()
    data = good["data"]
    bad = []
    if name == "kskyband":
        for key, value in [("counts", [q.k] * len(data["counts"])), ("seq", list(reversed(data["seq"]))),
                           ("scores", ["x"] * len(data["scores"])), ("ids", data["ids"][:-1])]:
            bad.append({**data, key: value})
    else:
        grid = data["grid"]
        bad.append({**data, "grid": {**grid, "edges": [[1.0, 0.0]]}})
        bad.append({**data, "grid": {**grid, "edges": [[0.0, 0.5, 1.0]]}})
        bad.append({**data, "grid": {**grid, "x": grid["x"][:-1]}})
        bad.append({**data, "grid": {**grid, "seq": [s + 1000 for s in grid["seq"]]}})
        if name == "tma":
            bad.append({**data, "result": [10 ** 6]})
            bad.append({**data, "result": data["result"][:-1]})
        else:
            bad.append({**data, "skyband": [10 ** 6] * len(data["skyband"])})
            bad.append({**data, "counts": [0] * (len(data["counts"]) + 1)})
            bad.append({**data, "theta": [1e9, 99]})
    return [seal({**good, "data": d}) for d in bad]


@pytest.mark.parametrize("name", COMPETITORS)
def test_corrupt_state_is_refused(name):
    for state in corrupt_states(name):
        with pytest.raises(engine.StateError, match=f"state of {name} is corrupt"):
            engine.restore(state)


@pytest.mark.parametrize("name", GRID)
def test_invalid_cells_per_dim(name):
    q = engine.Query(weights=[1.0] * 4, k=1, window=10, slide=1)
    for value in (-1, 100, "many", 1.5):
        with pytest.raises(ValueError, match="cells_per_dim"):
            engine.create(name, q, cells_per_dim=value)
    assert engine.create(name, q, cells_per_dim="3").params["cells_per_dim"] == 3


def test_dominance_counts_brute_force():
    rng = np.random.default_rng(12)
    for m in (0, 1, 5, 300, 700):
        seq = rng.permutation(m)
        expected = [sum(seq[j] > seq[i] for j in range(i)) for i in range(m)] if m <= 300 else None
        got = dominance_counts(seq)
        if expected is not None:
            assert got.tolist() == expected
        assert np.array_equal(got, np.array([np.count_nonzero(seq[:i] > seq[i]) for i in range(m)], np.int64))


@settings(max_examples=80, deadline=None)
@given(k=st.integers(1, 5),
       ops=st.lists(st.one_of(st.sampled_from([0.0, 1.0, 2.0, -1.0]), st.floats(-10, 10), st.just(None)),
                    max_size=60))
def test_dominance_set_is_the_k_skyband(k, ops):
    """Arrivals (numbers) and expiries of the oldest live object (``None``), against brute force."""
    band = DominanceSet(k)
    alive: list[tuple[float, int]] = []
    start = 0
    arriving = []  # a run of arrivals between expiries is added as one slide
    for seq, op in enumerate(ops + ["end"]):
        if isinstance(op, float):
            arriving.append((op, seq))
            alive.append((op, seq))
            continue
        if arriving:
            values, seqs = np.array([v for v, _ in arriving]), np.array([s for _, s in arriving])
            band.add(values, seqs, seqs + 1000, seqs)
            arriving = []
        if op is None and alive:
            start = alive.pop(0)[1] + 1
            band.expire(start)
        expected = []
        for value, s in alive:
            dominators = sum(1 for v2, s2 in alive if s2 > s and v2 >= value)
            if dominators < k:
                expected.append((value, s, dominators))
        expected.sort(key=lambda e: (e[0], e[1]), reverse=True)
        values, seqs, ids, _ = band.members()
        assert list(zip(values.tolist(), seqs.tolist(), band.counts().tolist())) == expected
        assert ids.tolist() == [s + 1000 for s in seqs.tolist()]
        band.check(start)


@st.composite
def multi_feature_streams(draw):
    d = draw(st.integers(1, 3))
    slide = draw(st.integers(1, 5))
    window = slide * draw(st.integers(1, 5))
    k = draw(st.integers(1, 7))
    kind = draw(st.sampled_from(["count", "time"]))
    m = draw(st.integers(0, 70))
    value = st.sampled_from([0.0, 1.0, -2.0, 1e6, -1e6]) | st.floats(-100, 100)
    x = np.asarray(draw(st.lists(st.lists(value, min_size=d, max_size=d), min_size=m, max_size=m)),
                   np.float64).reshape(m, d)
    weights = draw(st.lists(st.sampled_from([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0]), min_size=d, max_size=d))
    steps = draw(st.lists(st.integers(0, 3), min_size=m, max_size=m))
    t = np.cumsum(np.asarray(steps, np.int64)) if kind == "time" else np.arange(m)
    cells = draw(st.sampled_from([0, 1, 2, 3]))
    q = engine.Query(weights=weights, k=k, window=window, slide=slide, kind=kind)
    return q, (np.arange(m), t, x), cells


@pytest.mark.parametrize("name", COMPETITORS)
@settings(max_examples=60, deadline=None)
@given(case=multi_feature_streams())
def test_generated_multi_feature_streams(name, case):
    q, data, cells = case
    check_against_oracle(name, data, q, {} if name == "kskyband" else {"cells_per_dim": cells})


@pytest.mark.parametrize("name", GRID)
def test_time_window_grid_follows_the_population(name):
    """Automatic resolution for time windows: the grid grows with the number of objects held."""
    rng = np.random.default_rng(13)
    m = 6000
    t = np.repeat(np.arange(m // 100), 100)
    x = rng.random((m, 1))
    q = engine.Query(weights=[1.0], k=5, window=20, slide=2, kind="time")
    check_against_oracle(name, (np.arange(m), t, x), q, check_every=7)
    alg = engine.create(name, q)
    for batch in engine.slides((np.arange(m), t, x), q):
        alg.process(batch)
    assert alg.stats()["cells"] >= 16 and alg.stats()["rebuilds"] >= 1


@pytest.mark.parametrize("name", COMPETITORS)
def test_answers_equal_the_oracle_ids_under_the_total_order(name):
    """Ties: with the total order (score, seq) the answer is unique, ids included."""
    rng = np.random.default_rng(14)
    m = 300
    x = rng.integers(0, 3, (m, 2)).astype(np.float64)
    q = engine.Query(weights=[1.0, -1.0], k=9, window=50, slide=5)
    alg, oracle = engine.create(name, q), engine.create("oracle", q)
    for batch in engine.slides((np.arange(m), np.arange(m), x), q):
        alg.process(batch)
        oracle.process(batch)
        assert alg.topk().ids.tolist() == oracle.topk().ids.tolist()
        assert_same_answer(oracle.topk(), alg.topk(), name)


@pytest.mark.parametrize("name", GRID)
def test_restoring_a_grid_that_spans_the_float_range_is_quiet(name):
    """Features from -1.7e308 to 1.7e308: the grid's edges span them, and ``load`` checked that
    they do not decrease with ``np.diff``, whose differences overflow: every restore (a replay's
    resume) printed numpy's overflow warning.  Restored copies continue as the original."""
    x = np.array([1.7e308, -1.7e308, 1.0, 5.0, -1e308, 1e308, 3.0, 2.0] * 4)[:, None]
    m = len(x)
    q = engine.Query(weights=[1.0], k=2, window=4, slide=2)
    alg, oracle = engine.create(name, q), engine.create("oracle", q)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for batch in engine.slides((np.arange(m), np.arange(m), x), q):
            alg = engine.restore(json.loads(json.dumps(alg.to_state())), q, algorithm=name, params={})
            alg.process(batch)
            oracle.process(batch)
            assert_same_answer(oracle.topk(), alg.topk(), f"{name} slide {batch.index}")
