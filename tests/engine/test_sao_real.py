"""SAO on the real trades of ``sample_data/`` (SPY, 7 October 2013), as an outside checker would:
ties on price ticks and round lots, points near the surface notional = price x size, a sparse
pre-market and a time window over it.  At every slide: ``check()``; the answer holds
``min(K, window)`` window objects with their true scores; ``query`` under weights of either
sign, random or along one feature (ties), is the exact top ``k`` of what the index holds (the
onion search's stop rule loses nothing it holds); the budget is used; a copy restored from its JSON state continues exactly."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import engine
from benchmarks.bench_sao import trades

SPY = pathlib.Path(__file__).resolve().parents[2] / "sample_data" / "spy_20131007_trade.zip"


@pytest.fixture(scope="module")
def spy():
    ids, t, x = trades([SPY])
    return ids[:16_000], t[:16_000], x[:16_000]


def held_exactly(alg, k: int, weights: list[float], x: np.ndarray) -> bool:
    """Whether ``query(weights, k)`` equals the top ``k`` of every object the index holds."""
    candidates = alg.candidates()
    exact = engine.Answer.ranked(candidates, engine.score(x[candidates], weights), candidates, k)
    got = alg.query(weights, k)
    return got.seq.tolist() == exact.seq.tolist() and np.allclose(got.scores, exact.scores, rtol=1e-12, atol=0)


@pytest.mark.parametrize("kind", ["count", "time"])
def test_every_promise_at_every_slide_on_real_trades(spy, kind):
    ids, t, x = spy
    if kind == "count":
        q = engine.Query(weights=[1.0, 0.0, 0.0], k=10, window=2_000, slide=250)
    else:  # 60 s windows: empty and nearly empty before the open, hundreds of trades a second after
        q = engine.Query(weights=[1.0, 0.0, 0.0], k=10, window=60_000, slide=15_000, kind="time")
    params = {"memory": 100}
    alg, oracle = engine.create("sao", q, **params), engine.create("oracle", q)
    rng = np.random.default_rng(18)
    copy = None
    slides = held_checked = 0
    for batch in engine.slides((ids, t, x), q):
        slides += 1
        for each in (alg, oracle) if copy is None else (alg, oracle, copy):
            each.process(batch)
        alg.check()
        context = f"{kind} slide {batch.index}"
        window = oracle.candidates()
        answer = alg.topk()
        assert len(answer) == min(q.k, len(window)), context
        assert set(answer.seq.tolist()) <= set(window.tolist()), context
        np.testing.assert_allclose(answer.scores, engine.score(x[answer.seq], q.weights), rtol=1e-12, atol=0)
        stats = alg.stats()
        if stats["created"] and kind == "count" and batch.end >= 2 * q.window:
            distinct = len(np.unique(x[window], axis=0))
            assert stats["places"] >= 0.9 * min(params["memory"], distinct), context
            held_checked += 1
        axis = [0.0, 0.0, 0.0]
        axis[batch.index % 3] = float(rng.choice([-1.0, 1.0]))  # one feature: ties on ticks and lots
        for k, weights in ((1, list(rng.uniform(-1, 1, 3))), (q.k, list(rng.uniform(-1, 1, 3))), (q.k, axis)):
            assert held_exactly(alg, k, weights, x), f"{context} k={k} weights={weights}"
        if copy is not None:
            mine, theirs = copy.topk(), alg.topk()
            assert mine.ids.tolist() == theirs.ids.tolist() and mine.scores.tolist() == theirs.scores.tolist(), context
            assert copy._stats() == alg._stats(), context
        elif stats["created"] and len(window) > q.k:
            copy = engine.restore(json.loads(json.dumps(alg.to_state(), allow_nan=False)), query=q,
                                  algorithm="sao", params=params)
    assert copy is not None and slides > 50
    assert kind == "time" or held_checked > 40
