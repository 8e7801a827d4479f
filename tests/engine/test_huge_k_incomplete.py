"""Incomplete-stream algorithms with a ``k`` far beyond what any window holds (``k > window``):
``sla``, ``eaa``, ``approx`` and ``oracle-incomplete`` with ``k`` = 10**12 and the largest int64
run exactly, restore from JSON and keep their memory to what they hold, not to ``k``.

Attribute streams with few objects (ids repeat, within a stream too), tied values and, in time
windows, gaps that leave whole slides empty.  The expected answers come from
``oracle-incomplete``; the memory bound is a constant."""

from __future__ import annotations

import json

import numpy as np
import pytest

import engine
from tests.streams import assert_same_answer, time_stamps, traced_run

HUGE = (10**12, 2**63 - 1)
MEMORY_BOUND = 10 * 2**20
KINDS = ("count", "time")


def tied_stream(m: int, streams: int, objects: int, kind: str, seed: int):
    """``m`` tuples of ``objects`` ids in ``streams`` streams, values among four, and times
    (gaps in a time window leave slides empty)."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, objects, m) - objects // 2
    stream = rng.integers(0, streams, m)
    value = rng.choice([0.0, 0.25, 0.5, 1.0], m)
    t = np.arange(m, dtype=np.int64) if kind == "count" else time_stamps("gaps", m, rng)
    return ids, stream, value, t


def params_for(name: str, data) -> dict:
    """EAA's occurrence promise made sound for repeated ids: a window never holds more of one
    object's tuples in one stream than the stream has tuples."""
    if name == "eaa":
        return {"occurrences": len(data[0]), "occurrences_per": "window"}
    return {}


def empty_time_slides(data, query: engine.Query) -> int:
    """Slides without a tuple, counted with numpy from the times (time windows only)."""
    t = data[3]
    ends = np.arange(t[0] // query.slide * query.slide + query.slide, t[-1] // query.slide * query.slide + query.slide
                     + 1, query.slide)
    return int(np.sum(np.searchsorted(t, ends, "left") == np.searchsorted(t, ends - query.slide, "left")))


def run(name: str, query: engine.Query, data, restore_at: int | None = None):
    """``name`` beside ``oracle-incomplete`` at every slide: ``check()``, the exact ones' answer
    equal to the oracle's, the measured bytes under the bound; at slide ``restore_at`` it
    continues from its JSON state.  Returns the algorithm and the slides seen."""
    params = params_for(name, data)
    algorithm, oracle = engine.create(name, query, **params), engine.create("oracle-incomplete", query)
    slides = 0
    for batch in engine.slides(data, query):
        if batch.index == restore_at:
            algorithm = engine.restore(json.loads(json.dumps(algorithm.to_state(), allow_nan=False)), query=query)
        algorithm.process(batch)
        oracle.process(batch)
        where = f"{name} {query} slide {batch.index}"
        algorithm.check()
        answer = algorithm.topk()
        if name == "approx":
            assert set(answer.seq.tolist()) <= set(algorithm.candidates().tolist()), where
        else:
            assert_same_answer(oracle.topk(), answer, where)
            assert answer.ids.tolist() == oracle.topk().ids.tolist(), where
        assert algorithm.stats()["measured_bytes"] < MEMORY_BOUND, where
        slides += 1
    return algorithm, slides


@pytest.mark.parametrize("name", ["sla", "eaa", "approx", "oracle-incomplete"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("k", HUGE)
def test_huge_k_runs_exactly_in_bounded_memory(name, kind, k):
    data = tied_stream(160, 2, 7, kind, seed=k % 1000)
    query = engine.Query(weights=[1.0, 1.0], k=k, window=10, slide=5, kind=kind)
    _, slides = run(name, query, data)
    assert slides > 0
    if kind == "time":
        assert empty_time_slides(data, query) > 0, "the stream leaves no slide empty"


@pytest.mark.parametrize("name", ["sla", "eaa", "approx"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("k", HUGE)
def test_huge_k_restores_mid_stream_and_continues_exactly(name, kind, k):
    data = tied_stream(240, 3, 12, kind, seed=7)
    query = engine.Query(weights=[1.0, 0.5, 2.0], k=k, window=24, slide=4, kind=kind)
    steady, slides = run(name, query, data)
    restored, _ = run(name, query, data, restore_at=slides // 2)
    assert restored.topk().ids.tolist() == steady.topk().ids.tolist()
    assert restored.topk().scores.tolist() == steady.topk().scores.tolist()
    assert restored.to_state()["data"] == steady.to_state()["data"]


@pytest.mark.parametrize("name", ["sla", "eaa", "approx"])
@pytest.mark.parametrize("kind", KINDS)
def test_memory_and_state_follow_what_is_held_not_k(name, kind):
    """Past the number of objects a window holds, ``k`` changes nothing.  The stream has 300
    distinct ids, so ``k`` = 300 already never prunes nor evicts: the same answers for it as
    for ``k`` = 4096 (more rows than any table of this stream reaches), 10**12 and the largest
    int64, and the same state JSON (its dominator lists and view are narrower) but over count
    windows, where ``k`` past the window's 400 tuples leaves dominance untracked (no dominator
    lists, no dominations counted); the same measured bytes for the last three (but for the few
    bytes of the larger Python ints kept for ``k``); a window of 400 tuples stays under the bound."""
    data = tied_stream(1200, 3, 300, kind, seed=3)
    assert len(set(data[0].tolist())) <= 300
    measured, states, answers = set(), [], []
    for k in (300, 4096, *HUGE):
        query = engine.Query(weights=[1.0, 1.0, 1.0], k=k, window=400, slide=100, kind=kind)
        algorithm = engine.create(name, query, **params_for(name, data))
        answers.append([])
        for batch in engine.slides(data, query):
            algorithm.process(batch)
            answers[-1].append(algorithm.topk())
        algorithm.check()
        states.append(algorithm.to_state()["data"])
        if k != 300:
            measured.add(algorithm.stats()["measured_bytes"])
    for got in answers[1:]:
        for slide, (expected, answer) in enumerate(zip(answers[0], got, strict=True)):
            assert_same_answer(expected, answer, f"slide {slide}")
    same = states[1:] if kind == "count" else states
    assert all(state == same[0] for state in same)
    if kind == "count" and name in ("eaa", "approx"):
        assert states[1]["counters"]["dominations"] == 0
    assert max(measured) - min(measured) <= 64 and max(measured) < MEMORY_BOUND


@pytest.mark.parametrize("kind", KINDS)
def test_eaa_keeps_its_promise_check_with_a_huge_k(kind):
    """With the default promise (each object at most once per stream while valid) a huge ``k``
    still refuses the tuple that breaks it, and runs exactly on a stream that keeps it."""
    query = engine.Query(weights=[1.0, 1.0], k=2**63 - 1, window=10, slide=5, kind=kind)
    broken = engine.create("eaa", query)
    with pytest.raises(ValueError, match="occurred 2 times in stream 0"):
        for batch in engine.slides(([1, 1, *range(2, 10)], [0] * 10, [0.5] * 10, range(10)), query):
            broken.process(batch)
    pairs = np.array([(o, s) for o in range(40) for s in range(2)])
    chosen = pairs[np.random.default_rng(5).permutation(len(pairs))]
    t = np.arange(len(chosen)) if kind == "count" else time_stamps("gaps", len(chosen), np.random.default_rng(5))
    data = (chosen[:, 0], chosen[:, 1], np.random.default_rng(6).choice([0.0, 0.5, 1.0], len(chosen)), t)
    algorithm, oracle = engine.create("eaa", query), engine.create("oracle-incomplete", query)
    for batch in engine.slides(data, query):
        algorithm.process(batch)
        oracle.process(batch)
        algorithm.check()
        assert_same_answer(oracle.topk(), algorithm.topk(), f"eaa slide {batch.index}")


@pytest.mark.parametrize("k", HUGE)
def test_sla_k_max_beyond_int64_is_clamped(k):
    """``k_max`` (``2k`` by default) only bounds the view: above the int64 range it is clamped,
    and the view still lists every valid object when fewer than ``k`` are.  A ``k_max`` given
    beyond int64 is refused, as every integer parameter is."""
    query = engine.Query(weights=[1.0, 1.0], k=k, window=10, slide=5)
    data = tied_stream(60, 2, 7, "count", seed=1)
    algorithm = engine.create("sla", query)
    for batch in engine.slides(data, query):
        algorithm.process(batch)
        algorithm.check()
    held = len(set(data[0][-10:].tolist()))
    assert algorithm.stats()["view"] == len(algorithm.topk()) == held
    with pytest.raises(ValueError, match=r"^parameter k_max of sla must fit in int64 \(at most 9223372036854775807\), "
                                         r"got 18446744073709551616$"):
        engine.create("sla", query, k_max=2**64)


@pytest.mark.parametrize("name", ["sla", "eaa", "approx"])
def test_measured_bytes_with_a_huge_k_is_within_a_quarter_of_tracemalloc(name):
    query = engine.Query(weights=[1.0, 1.0, 1.0], k=2**63 - 1, window=300, slide=30, kind="time")
    data = tied_stream(1500, 3, 200, "time", seed=11)
    algorithm, live = traced_run(lambda: engine.create(name, query, **params_for(name, data)),
                                 list(engine.slides(data, query)))
    assert 0.75 * live <= algorithm.measured_bytes() <= 1.25 * live


@pytest.mark.parametrize("name", ["eaa", "approx"])
@pytest.mark.parametrize("k", [3_000, 10**6])
def test_a_count_window_of_fewer_tuples_than_k_tracks_no_dominance(name, k):
    """No instance can have ``k`` dominators when the window holds fewer than ``k`` tuples, so
    the dominator lists are not kept: 1,000 objects of three tuples each in a window, answer
    as the oracle at every slide (EAA), with no domination counted and no ``O(window)`` list per
    instance (at this window the lists measured about 100 MB and took seconds per run)."""
    m, window = 9_000, 3_000
    rng = np.random.default_rng(8)
    data = (np.repeat(np.arange(m), 3)[:m], np.tile(np.arange(3), m)[:m], rng.random(m), np.arange(m))
    query = engine.Query(weights=[1.0, 0.5, 2.0], k=k, window=window, slide=300)
    algorithm, oracle = engine.create(name, query), engine.create("oracle-incomplete", query)
    for batch in engine.slides(data, query):
        algorithm.process(batch)
        oracle.process(batch)
        if name == "eaa":
            assert_same_answer(oracle.topk(), algorithm.topk(), f"slide {batch.index}")
    algorithm.check()
    stats = algorithm.stats()
    assert stats["dominations"] == stats["entries_scanned"] == 0 and stats["retained"] == window
    assert stats["measured_bytes"] < MEMORY_BOUND
