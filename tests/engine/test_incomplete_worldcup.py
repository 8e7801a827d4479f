"""The incomplete-stream algorithms on the real World Cup sample (``sample_data/worldcup``).

The stream is built as ``pipelines/worldcup.py`` ingests it (one tuple per site section, 5 s
chunk and client; value = chunk bytes over the largest chunk's), without Spark, by
``benchmarks.bench_incomplete.worldcup_stream``, from one afternoon hour of the sample
(8,053 tuples).  Clients occur many times in one stream, so EAA takes the per-window promise
``occurrences_per="window"``: for count windows the most tuples of one client in one stream
within any window of the slice (measured, 18), for time windows the number of 5 s chunks a
window can hold (sound by construction of the ingest).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import engine
from benchmarks.bench_incomplete import WORLDCUP_CHUNK_MS, max_occurrences, worldcup_stream
from tests.engine.test_incomplete import compare

HOUR = ("01/May/1998,12",)
COUNT = engine.Query(weights=[1.0] * 4, k=20, window=500, slide=50)
TIME = engine.Query(weights=[1.0] * 4, k=20, window=300_000, slide=30_000, kind="time")


@pytest.fixture(scope="module")
def worldcup():
    return worldcup_stream(HOUR)


def eaa_params(data, query: engine.Query) -> dict:
    ids, stream, _, t = data
    if query.kind == "time":
        most = -(-query.window // WORLDCUP_CHUNK_MS)
    else:
        most = max_occurrences(ids, stream, np.arange(len(ids)), query.window)
    return {"occurrences": most, "occurrences_per": "window"}


def test_the_slice_repeats_clients_within_a_window(worldcup):
    ids, stream, value, t = worldcup
    assert len(ids) == 8053 and set(stream.tolist()) == {0, 1, 2, 3}
    assert value.max() == 1.0 and value.min() >= 0.0
    assert max_occurrences(ids, stream, np.arange(len(ids)), COUNT.window) == 18
    assert eaa_params(worldcup, TIME)["occurrences"] == 60


@pytest.mark.parametrize("query", [COUNT, TIME], ids=["count", "time"])
@pytest.mark.parametrize("name", ["sla", "eaa"])
def test_exact_algorithms_equal_the_brute_force_at_every_slide(worldcup, name, query):
    params = eaa_params(worldcup, query) if name == "eaa" else {}
    assert compare(name, worldcup, query, params) > 100


def test_eaa_rejects_a_promise_the_sample_breaks(worldcup):
    eaa = engine.create("eaa", COUNT, occurrences=2, occurrences_per="window")
    with pytest.raises(ValueError, match="within one window, more than occurrences=2"):
        for batch in engine.slides(worldcup, COUNT):
            eaa.process(batch)


def test_approx_runs_on_repeated_clients(worldcup):
    approx, oracle = engine.create("approx", COUNT), engine.create("oracle-incomplete", COUNT)
    precision = []
    for batch in engine.slides(worldcup, COUNT):
        approx.process(batch)
        oracle.process(batch)
        approx.check()
        precision.append(engine.metrics.precision(oracle.topk(), approx.topk()))
    assert np.mean(precision) >= 0.9


@pytest.mark.parametrize("name", ["eaa", "approx"])
def test_snapshot_mid_sample_continues_exactly(worldcup, name):
    params = eaa_params(worldcup, COUNT) if name == "eaa" else {}
    batches = list(engine.slides(worldcup, COUNT))[:60]
    uninterrupted = engine.create(name, COUNT, **params)
    first = engine.create(name, COUNT, **params)
    for batch in batches[:30]:
        uninterrupted.process(batch)
        first.process(batch)
    resumed = engine.restore(json.loads(json.dumps(first.to_state(), allow_nan=False)), query=COUNT)
    assert resumed.params == first.params and resumed._stats() == first._stats()
    for batch in batches[30:]:
        uninterrupted.process(batch)
        resumed.process(batch)
        assert np.array_equal(uninterrupted.topk().ids, resumed.topk().ids)
        assert np.array_equal(uninterrupted.topk().scores, resumed.topk().scores)
    resumed.check()
