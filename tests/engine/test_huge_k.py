"""A time-window query may ask for more objects than any window holds, up to int64's largest k.

Every registered single-stream algorithm (each variant switch off as well) runs such a query
over a small stream with ties, bursts at one time and empty slides: it must equal the oracle at
every slide (the oracle itself: the plain-Python reference), pass ``check()`` after every slide,
continue exactly after a JSON round trip of its state mid-stream, and keep its memory bounded
(an algorithm sizing a structure by ``k`` would fail to allocate, or report terabytes).
SAO is approximate, but exact while its budget (500 objects by default) exceeds the window.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import engine
from tests.reference import reference_answers
from tests.streams import assert_same_answer

HUGE_K = [10 ** 12, 2 ** 63 - 1]
SINGLE = [info for info in engine.available() if info.stream == "single"]
VARIANTS = [(info.name, {}) for info in SINGLE] + [
    (info.name, {switch: False}) for info in SINGLE for switch in ("prefilter", "delay", "savl")
    if switch in info.defaults]
IDS = [name + "".join(f"-{key}={value}" for key, value in params.items()) for name, params in VARIANTS]
WINDOW, SLIDE = 12, 3
CUT = 9
"""The slide after which the state goes through JSON and the restored copy continues."""
MEASURED_LIMIT = 10 * 2 ** 20


def stream(seed: int):
    """``ids, t, scores``: about 90 objects, scores in {0, 1, 2}, several at one time, and gaps
    of up to four slides without an object."""
    rng = np.random.default_rng(seed)
    m = 90
    steps = np.where(rng.random(m) < 0.08, rng.integers(2 * SLIDE, 5 * SLIDE, m), rng.integers(0, 2, m))
    t = np.cumsum(steps) + 5
    return np.arange(m) + 100, t, rng.integers(0, 3, m).astype(np.float64)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("k", HUGE_K, ids=["1e12", "int64-max"])
@pytest.mark.parametrize("name,params", VARIANTS, ids=IDS)
def test_huge_k_over_a_time_window_is_exact_restorable_and_bounded(name, params, k, seed):
    ids, t, scores = stream(seed)
    q = engine.Query(weights=[1.0], k=k, window=WINDOW, slide=SLIDE, kind="time")
    batches = list(engine.slides((ids, t, scores), q))
    empty = sum(1 for batch in batches if len(batch) == 0)
    assert empty >= 3 and len(batches) > CUT + 5, "the stream lost its empty slides"
    expected = reference_answers(ids.tolist(), t.tolist(), scores.tolist(), [1.0], k, WINDOW, SLIDE, "time")
    assert [end for end, _ in expected] == [batch.end for batch in batches]
    oracle = engine.create("oracle", q)
    algorithm = engine.create(name, q, **params)
    largest = 0
    for index, (batch, (end, ranked)) in enumerate(zip(batches, expected)):
        algorithm.process(batch)
        oracle.process(batch)
        context = f"{name} {params} k={k} slide {index} end {end}"
        got = algorithm.topk()
        if name == "oracle":
            assert list(zip(got.ids.tolist(), got.scores.tolist(), got.seq.tolist())) == ranked, context
        else:
            assert_same_answer(oracle.topk(), got, context)
        assert len(got) == len(ranked) < 60, context
        algorithm.check()
        largest = max(largest, algorithm.stats()["measured_bytes"])
        if index == CUT:
            algorithm = engine.restore(json.loads(json.dumps(algorithm.to_state())), q, algorithm=name,
                                       params=params)
    assert largest < MEASURED_LIMIT, f"{name}: {largest:,} bytes measured"


def test_pretopk_sets_grow_with_what_they_hold_and_stop_at_k():
    """PreTopK's sets are as wide as the objects held (plus a slide's arrivals) need, never
    wider than ``k``: a count window (``k <= n``) ends at width ``k``, a time window with a huge
    ``k`` at about what its windows hold."""
    rng = np.random.default_rng(5)
    m = 400
    data = (np.arange(m), np.arange(m), rng.random(m))
    count = engine.create("pretopk", engine.Query(weights=[1.0], k=7, window=40, slide=4))
    huge = engine.create("pretopk", engine.Query(weights=[1.0], k=2 ** 63 - 1, window=40, slide=4, kind="time"))
    for algorithm in (count, huge):
        for batch in engine.slides(data, algorithm.q):
            algorithm.process(batch)
    assert count._sets.shape == (10, 7)
    assert huge._sets.shape[0] == 10 and 40 <= huge._sets.shape[1] <= 2 * (40 + 4)
