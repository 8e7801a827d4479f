"""Snapshot mid-stream, restore from JSON text, finish: identical to an uninterrupted run."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

import engine
from engine.generators import correlated_streams
from tests.streams import assert_same_answer

ALL = [info.name for info in engine.available()]
STREAM = {info.name: info.stream for info in engine.available()}


def run(alg, batches):
    answers = []
    for batch in batches:
        alg.process(batch)
        answers.append(alg.topk())
    return answers


def two_column_stream(name, m, t, rng):
    """Two features (single stream) or two attribute streams (incomplete streams), ``m`` rows."""
    if STREAM[name] == "incomplete":
        ids, stream, value, _ = correlated_streams(m, streams=2, seed=int(rng.integers(1000)), reuse=0.6, memory=15)
        return ids, stream, np.round(value * 8) / 8, t
    return np.arange(m), t, np.column_stack([rng.random(m), rng.integers(0, 3, m)])


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("kind", ["count", "time"])
@pytest.mark.parametrize("cut", [0, 1, 17, 39])
def test_snapshot_restore_continues_exactly(name, kind, cut):
    rng = np.random.default_rng(11)
    m = 400
    t = np.sort(rng.integers(0, 300, m)) if kind == "time" else np.arange(m)
    q = engine.Query(weights=[1.0, 0.25], k=4, window=40, slide=8 if kind == "count" else 5, kind=kind)
    batches = list(engine.slides(two_column_stream(name, m, t, rng), q))
    uninterrupted = run(engine.create(name, q), batches)

    first = engine.create(name, q)
    run(first, batches[:cut])
    text = json.dumps(first.to_state(), allow_nan=False)
    resumed = engine.restore(json.loads(text), query=q)
    assert resumed._stats() == first._stats()  # measured_bytes depends on buffer capacity
    rest = run(resumed, batches[cut:])
    for index, (expected, got) in enumerate(zip(uninterrupted[cut:], rest)):
        assert np.array_equal(expected.ids, got.ids), f"{name}: slide {cut + index} differs after restore"
        assert_same_answer(expected, got, f"{name} slide {cut + index}")
    resumed.check()


def sample_state(name="mintopk"):
    q = engine.Query(weights=[1.0], k=3, window=20, slide=5)
    alg = engine.create(name, q)
    if STREAM[name] == "incomplete":
        data = (np.arange(60) % 23, np.zeros(60), np.abs(np.sin(np.arange(60.0))), np.arange(60))
    else:
        data = (np.arange(60), np.arange(60), np.sin(np.arange(60.0)))
    for batch in engine.slides(data, q):
        alg.process(batch)
    return q, alg.to_state()


@pytest.mark.parametrize("name", ALL)
def test_state_is_plain_json_with_a_version(name):
    _, state = sample_state(name)
    assert state["format_version"] == engine.FORMAT_VERSION
    assert json.loads(json.dumps(state, allow_nan=False)) == state


def test_restore_rejects_a_wrong_version():
    _, state = sample_state()
    state["format_version"] = 99
    with pytest.raises(engine.StateError, match="format version 99"):
        engine.restore(state)


def test_restore_rejects_another_query():
    q, state = sample_state()
    with pytest.raises(engine.StateError, match="saved for"):
        engine.restore(state, query=q.with_weights([2.0]))


def test_restore_rejects_tampered_data():
    _, state = sample_state()
    state["data"]["windows"][0][0] += 1
    with pytest.raises(engine.StateError, match="checksum"):
        engine.restore(state)


@pytest.mark.parametrize("name", ALL)
def test_restore_rejects_inconsistent_data_even_with_a_matching_checksum(name):
    _, state = sample_state(name)
    broken = copy.deepcopy(state)
    data = broken["data"]
    key = next(k for k, v in data.items() if isinstance(v, list) and v)
    data[key] = data[key][:-1] if len(data[key]) > 1 else [["not", "a", "record"]]
    broken["checksum"] = engine.jsondata.checksum(data)
    with pytest.raises(engine.StateError):
        engine.restore(broken)


@pytest.mark.parametrize("state", [None, [], {"format_version": 1}, {"format_version": 1, "algorithm": "nope",
                                   "query": {}, "params": {}, "data": {}, "checksum": ""}])
def test_restore_rejects_garbage(state):
    with pytest.raises(engine.StateError):
        engine.restore(state)
