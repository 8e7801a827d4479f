"""Snapshot mid-stream, restore from JSON text, finish: identical to an uninterrupted run."""

from __future__ import annotations

import copy
import hashlib
import json

import numpy as np
import pytest

import engine
from engine.generators import correlated_streams
from tests.streams import assert_same_answer

ALL = [info.name for info in engine.available()]
STREAM = {info.name: info.stream for info in engine.available()}


def run(alg, batches):
    """The answer and :func:`comparable_stats` after every slide of ``batches``."""
    answers = []
    for batch in batches:
        alg.process(batch)
        answers.append((alg.topk(), comparable_stats(alg)))
    return answers


def two_column_stream(name, m, t, rng):
    """Two features (single stream) or two attribute streams (incomplete streams), ``m`` rows."""
    if STREAM[name] == "incomplete":
        ids, stream, value, _ = correlated_streams(m, streams=2, seed=int(rng.integers(1000)), reuse=0.6, memory=15)
        return ids, stream, np.round(value * 8) / 8, t
    return np.arange(m), t, np.column_stack([rng.random(m), rng.integers(0, 3, m)])


def comparable_stats(alg):
    """Every figure of ``stats()``, ``bytes`` and ``measured_bytes`` included (which depend on
    the arrays' capacities and the cached answer), but SAO's ``measured_bytes``: its state holds
    neither its stale expiry entries nor its containers' spare room (``docs/algorithms/memory.md``)."""
    out = alg.stats()
    if alg.name == "sao":
        del out["measured_bytes"]
    return out


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
    assert comparable_stats(resumed) == comparable_stats(first)
    rest = run(resumed, batches[cut:])
    for index, ((expected, expected_stats), (got, got_stats)) in enumerate(zip(uninterrupted[cut:], rest)):
        assert np.array_equal(expected.ids, got.ids), f"{name}: slide {cut + index} differs after restore"
        assert_same_answer(expected, got, f"{name} slide {cut + index}")
        assert got_stats == expected_stats, f"{name}: stats at slide {cut + index} differ after restore"
    resumed.check()


@pytest.mark.parametrize("name", ALL)
def test_a_restored_time_window_continued_past_its_next_slide_is_refused_naming_the_boundary(name):
    """The rows after the state's slide begin a gap later (here 60 time units, 12 slides):
    ``engine.slides`` of them alone starts at their first time, and the algorithm answered from
    there on, silently without the empty slides between, which a run that never stopped answers.
    It refuses, naming the boundary; continued from there, it gives that run's every answer."""
    rng = np.random.default_rng(3)
    m, s = 300, 5
    t = np.sort(np.concatenate([rng.integers(0, 100, m // 2), rng.integers(160, 260, m - m // 2)]))
    q = engine.Query(weights=[1.0, 0.25], k=3, window=40, slide=s, kind="time")
    data = two_column_stream(name, m, t, rng)
    batches = list(engine.slides(data, q))
    uninterrupted = run(engine.create(name, q), batches)
    saved = next(index for index, batch in enumerate(batches) if batch.end == 100)
    first = engine.create(name, q)
    run(first, batches[:saved + 1])
    resumed = engine.restore(json.loads(json.dumps(first.to_state())), query=q)
    assert resumed.last_end() == 100
    rows = int(np.searchsorted(t, 100))
    rest = tuple(column[rows:] for column in data)
    state = resumed.to_state()
    late = next(iter(engine.slides(rest, q, seq_start=rows)))
    assert late.end == 165
    with pytest.raises(ValueError, match=rf"^{name}: the slide ending at 165 skips 12 slide\(s\): the last slide ended at "
                                         rf"100, the next one ends at 105; .*engine\.slides\(data, query, start=100\)"):
        resumed.process(late)
    assert resumed.to_state() == state
    continued = run(resumed, engine.slides(rest, q, seq_start=rows, start=100))
    assert len(continued) == len(uninterrupted) - saved - 1
    for index, ((expected, expected_stats), (got, got_stats)) in enumerate(zip(uninterrupted[saved + 1:], continued)):
        assert_same_answer(expected, got, f"{name} slide {saved + 1 + index}")
        assert got_stats == expected_stats, f"{name}: stats at slide {saved + 1 + index} differ"


def sample_state(name="mintopk", **params):
    q = engine.Query(weights=[1.0], k=3, window=20, slide=5)
    alg = engine.create(name, q, **params)
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


def test_restore_refuses_a_newer_format_as_such():
    _, state = sample_state()
    state["format_version"] = engine.FORMAT_VERSION + 1
    with pytest.raises(engine.StateError, match=f"written by a newer Top-k Watch: format {engine.FORMAT_VERSION + 1}, "
                                                f"this engine reads 1-{engine.FORMAT_VERSION}"):
        engine.restore(state)


@pytest.mark.parametrize("version", [0, "2", None, True])
def test_restore_refuses_an_unknown_format(version):
    _, state = sample_state()
    state["format_version"] = version
    with pytest.raises(engine.StateError, match=f"format version {version!r} is not supported"):
        engine.restore(state)


def as_format_1(state):
    """The same state as the engine before format 2 wrote it: the checksum covers ``data`` only."""
    return {**state, "format_version": 1, "checksum": engine.jsondata.checksum(state["data"])}


def test_the_checksum_covers_the_whole_document():
    _, state = sample_state()
    assert state["checksum"] == hashlib.sha256(json.dumps(
        {key: state[key] for key in ("algorithm", "data", "format_version", "params", "query")},
        sort_keys=True, separators=(",", ":")).encode()).hexdigest()


@pytest.mark.parametrize("name", ALL)
def test_a_format_1_state_is_migrated_and_continues_like_the_current_one(name):
    q, state = sample_state(name)
    old = engine.restore(as_format_1(state), q, algorithm=name, params={})
    new = engine.restore(state, q, algorithm=name, params={})
    assert old._stats() == new._stats()
    assert_same_answer(new.topk(), old.topk(), name)
    broken = as_format_1(state)
    broken["checksum"] = "0" * 64
    with pytest.raises(engine.StateError, match="format 1.*checksum does not match its data"):
        engine.restore(broken)


def edited(state, field, value, reseal):
    """``state`` with one field changed, and (``reseal``) a checksum recomputed to match."""
    changed = copy.deepcopy(state)
    if field == "data":
        changed["data"] = value(changed["data"])
    else:
        changed[field] = value
    return engine.jsondata.seal(changed) if reseal else changed


def bump_first_number(data):
    """``data`` with its first integer (depth first, keys in order) incremented."""
    def walk(node):
        items = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
        for key, value in items:
            if isinstance(value, int) and not isinstance(value, bool):
                node[key] = value + 1
                return True
            if isinstance(value, (dict, list)) and walk(value):
                return True
        return False

    assert walk(data)
    return data


# (algorithm, params it runs with, field edited, new value, what the refusal names)
EDITS = [
    ("mintopk", {}, "query", {"weights": [1.0], "k": 6, "window": 20, "slide": 5, "kind": "count"},
     r"differs in query \(k: 6 saved, 3 asked\)"),
    ("sao", {"memory": 40}, "params", {"memory": 400}, r"differs in params \(memory: 400 saved, 40 asked\)"),
    ("sap", {}, "algorithm", "sap-equal", r"differs in algorithm \(sap-equal saved, sap asked\)"),
    ("mintopk", {}, "data", bump_first_number, r"differs in data"),
]


@pytest.mark.parametrize("name, params, field, value, message", EDITS, ids=[edit[2] for edit in EDITS])
def test_an_edited_state_is_refused_naming_what_differs(name, params, field, value, message):
    q, state = sample_state(name, **params)
    engine.restore(state, q, algorithm=name, params=params)
    with pytest.raises(engine.StateError, match=message):
        engine.restore(edited(state, field, value, reseal=False), q, algorithm=name, params=params)
    with pytest.raises(engine.StateError, match="does not match its checksum"):  # nothing asked: the checksum
        engine.restore(edited(state, field, value, reseal=False))
    if field != "data":  # a consistent checksum does not help: the comparison still names the field
        with pytest.raises(engine.StateError, match=message):
            engine.restore(edited(state, field, value, reseal=True), q, algorithm=name, params=params)


def test_params_are_compared_with_their_defaults_filled_in():
    q, state = sample_state("sao")
    default = engine.restore(state, q, algorithm="sao", params={})
    assert engine.restore(state, q, algorithm="sao", params=dict(default.params)).params == default.params
    with pytest.raises(engine.StateError, match="cannot compare the state's params: unknown parameter"):
        engine.restore(state, q, algorithm="sao", params={"depth": 3})


@pytest.mark.parametrize("name", ALL)
def test_restore_rejects_inconsistent_data_even_with_a_matching_checksum(name):
    _, state = sample_state(name)
    broken = copy.deepcopy(state)
    data = broken["data"]
    key = next(k for k, v in data.items() if isinstance(v, list) and v)
    data[key] = data[key][:-1] if len(data[key]) > 1 else [["not", "a", "record"]]
    with pytest.raises(engine.StateError, match=f"state of {name} is corrupt"):
        engine.restore(engine.jsondata.seal(broken))


@pytest.mark.parametrize("state", [None, [], {"format_version": 1}, {"format_version": 2}, {
    "format_version": 2, "algorithm": "nope", "query": {}, "params": {}, "data": {}, "checksum": ""}])
def test_restore_rejects_garbage(state):
    with pytest.raises(engine.StateError):
        engine.restore(state)


SINGLE_EXACT = [info.name for info in engine.available() if info.exact and info.stream == "single"]


def without_measured(stats):
    return {key: value for key, value in stats.items() if key != "measured_bytes"}


@pytest.mark.parametrize("name", SINGLE_EXACT)
@pytest.mark.parametrize("kind", ["count", "time"])
def test_a_run_restored_at_every_slide_keeps_every_figure_of_stats(name, kind):
    """Restored again and again (a restored run snapshotted once more), every figure of
    ``stats()`` but the measured one, the modelled ``bytes`` among them, stays the
    uninterrupted run's: SAP shares a partition's top with the unit it came from."""
    rng = np.random.default_rng(5)
    m = 600
    t = np.sort(rng.integers(0, 400, m)) if kind == "time" else np.arange(m)
    q = engine.Query(weights=[1.0, -0.5], k=5, window=60, slide=6 if kind == "count" else 4, kind=kind)
    data = (np.arange(m), t, np.column_stack([rng.random(m), rng.integers(0, 3, m)]))
    uninterrupted, chained = engine.create(name, q), engine.create(name, q)
    for batch in engine.slides(data, q):
        uninterrupted.process(batch)
        chained.process(batch)
        for when in ("before", "after"):
            assert without_measured(chained.stats()) == without_measured(uninterrupted.stats()), \
                f"{name}: slide {batch.index}, {when} restoring"
            assert np.array_equal(chained.topk().ids, uninterrupted.topk().ids)
            if when == "before":
                chained = engine.restore(json.loads(chained.to_state_text()[0]), q, algorithm=name, params={})


def first_leaves(value, path=()):
    """The path to every field of a state's data, following the first item of each list."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from first_leaves(item, (*path, key))
    elif isinstance(value, list) and value:
        yield from first_leaves(value[0], (*path, 0))
    else:
        yield path


@pytest.mark.parametrize("name", SINGLE_EXACT)
@pytest.mark.parametrize("bad", [2**70, -2**70, 1e300, [], {}, "x"])
def test_restore_refuses_data_edited_field_by_field_with_a_state_error(name, bad):
    """A field beyond int64 (``1e300`` is a float that ``int`` would take), or of another type,
    resealed so that the checksum matches, is a StateError naming the algorithm, never a raw
    OverflowError or AttributeError (a mapping replaced by a list); a state it does not refuse
    continues without one."""
    q, state = sample_state(name)
    more = list(engine.slides((np.arange(40), np.arange(40), np.cos(np.arange(40.0))), q, seq_start=60))
    paths = [path for path in first_leaves(state["data"]) if path] + [(key,) for key in state["data"]]
    for path in paths:
        broken = copy.deepcopy(state)
        *parents, last = path
        holder = broken["data"]
        for key in parents:
            holder = holder[key]
        holder[last] = bad
        try:
            restored = engine.restore(json.loads(json.dumps(engine.jsondata.seal(broken))))
        except engine.StateError as error:
            assert f"state of {name} is corrupt" in str(error)
            continue
        for batch in more:
            restored.process(batch)


@pytest.mark.parametrize("name, field", [("pretopk", "current"), ("mintopk", "current"), ("sap-equal", "slide"),
                                         ("sap-equal", "serial"), ("sap", "serial")])
def test_restore_refuses_a_slide_number_that_is_not_an_integer(name, field):
    _, state = sample_state(name)
    for bad in (True, 12.0):
        broken = copy.deepcopy(state)
        broken["data"][field] = bad
        with pytest.raises(engine.StateError, match=f"state of {name} is corrupt: ValueError: {field} must be"):
            engine.restore(engine.jsondata.seal(broken))


@pytest.mark.parametrize("kind", ["count", "time"])
@pytest.mark.parametrize("shift", [-100, -12, -2, 1])
def test_a_pretopk_state_whose_slide_number_disagrees_with_its_objects_is_refused(kind, shift):
    """``current`` (the last slide) edited and resealed was restored, and the next slides
    answered from the wrong windows (-1 for 12: the next slide gave only its own arrivals)."""
    q = engine.Query(weights=[1.0], k=3, window=20, slide=5, kind=kind)
    pretopk = engine.create("pretopk", q)
    for batch in engine.slides((np.arange(60), np.arange(60), np.sin(np.arange(60.0))), q):
        pretopk.process(batch)
    state = pretopk.to_state()
    current = state["data"]["current"] + shift
    broken = copy.deepcopy(state)
    broken["data"]["current"] = current
    with pytest.raises(engine.StateError, match=r"state of pretopk is corrupt: AssertionError: window -?\d+ holds an "
                                                rf"object outside \[-?\d+, -?\d+\) \(current slide {current}\)"):
        engine.restore(engine.jsondata.seal(broken))


# (algorithm, window kind, path to the field in the data, edit) that restore passed, resealed,
# and the next slides' check() or process() refused
SAP_EDITS = [
    ("sap-equal", "count", ("candidates", 0, 1), lambda seq: seq + 1000),  # a candidate's seq
    ("sap", "count", ("candidates", 1, 1), lambda seq: seq + 1000),
    ("sap", "time", ("open_top", 0, 0), lambda score: -score),  # a score in P_m^k, no longer its slides'
    ("sap-equal", "time", ("filling", "top", 0, 0), lambda score: score + 1.0),
    ("sap-equal", "time", ("serial",), lambda serial: -1),  # the next partition's serial
]


@pytest.mark.parametrize("name, kind, path, edit", SAP_EDITS)
def test_an_edited_sap_state_that_the_next_slides_refused_is_refused_on_restore(name, kind, path, edit):
    rng = np.random.default_rng(1)
    q = engine.Query(weights=[1.0, 0.5], k=3, window=40, slide=5, kind=kind)
    sap = engine.create(name, q)
    for batch in engine.slides((np.arange(300), np.arange(300), rng.random((300, 2))), q):
        sap.process(batch)
    broken = copy.deepcopy(sap.to_state())
    *parents, last = path
    holder = broken["data"]
    for key in parents:
        holder = holder[key]
    holder[last] = edit(holder[last])
    with pytest.raises(engine.StateError, match=f"state of {name} is corrupt: AssertionError"):
        engine.restore(engine.jsondata.seal(broken))
