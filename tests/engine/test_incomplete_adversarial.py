"""The incomplete-stream family driven as an outside checker would: a plain-Python brute force
written from the definition (not ``oracle-incomplete``) against all four algorithms at every
slide, with a JSON restore mid-stream that must continue as the uninterrupted run (answers and
every ``stats()`` figure, ``measured_bytes`` included), on adversarial attribute streams; and the defects this found."""

from __future__ import annotations

import json

import numpy as np
import pytest

import engine

I64 = np.iinfo(np.int64)


def reference(data, query: engine.Query) -> list[tuple[int, list[int], list[float]]]:
    """``(end, ids, scores)`` per slide from the definition: a slide ends at every multiple of
    ``s`` (count: of the row number; time: of ``t`` from the first row's slide on) that a later
    row passes; the window holds the tuples with key (row number or ``t``) in ``[end - n, end)``;
    an object's attribute ``i`` is the sum of its tuples' values in stream ``i`` in arrival
    order from 0.0, its score ``Σ w_i a_i`` in stream order, its seq that of its newest tuple;
    the answer is the top ``k`` by ``(score, seq)``, best first."""
    ids, stream, value, t = ([x.item() for x in np.asarray(column)] for column in data)
    n, s, k, weights = query.window, query.slide, query.k, query.weights
    keys = list(range(len(ids))) if query.kind == "count" else t
    if query.kind == "count":
        ends = [s * j for j in range(1, len(ids) // s + 1)]
    else:
        ends = list(range(t[0] // s * s + s, t[-1] // s * s + 1, s)) if ids else []
    answers = []
    for end in ends:
        sums: dict[int, list[float]] = {}
        newest: dict[int, int] = {}
        for row, key in enumerate(keys):
            if end - n <= key < end:
                sums.setdefault(ids[row], [0.0] * len(weights))[stream[row]] += value[row]
                newest[ids[row]] = row
        ranked = []
        for oid, attributes in sums.items():
            total = attributes[0] * weights[0]
            for i in range(1, len(weights)):
                total += attributes[i] * weights[i]
            ranked.append((total, newest[oid], oid))
        ranked.sort(reverse=True)
        answers.append((end, [oid for _, _, oid in ranked[:k]], [score for score, _, _ in ranked[:k]]))
    return answers


def most_occurrences_while_valid(data, query: engine.Query) -> int:
    """The most tuples one object sends in one stream while it stays valid (EAA's promise),
    validity checked at every slide boundary as the algorithms expire."""
    newest: dict[int, int] = {}
    counts: dict[tuple[int, int], int] = {}
    most = 1
    for batch in engine.slides(data, query):
        for oid in [oid for oid, key in newest.items() if key < batch.window_start(query)]:
            del newest[oid]
            counts = {pair: count for pair, count in counts.items() if pair[0] != oid}
        for oid, i, key in zip(batch.ids.tolist(), batch.stream.tolist(), batch.keys(query).tolist()):
            newest[oid] = key
            counts[(oid, i)] = counts.get((oid, i), 0) + 1
            most = max(most, counts[(oid, i)])
    return most


def stream_of(shape: str, kind: str, rng: np.random.Generator, m: int = 90):
    """``(ids, stream, value, t)`` and the number of streams of one adversarial shape."""
    d = {"one stream": 1, "many streams": 8}.get(shape, 3)
    ids = rng.integers(0, 12, m)
    stream = rng.integers(0, d, m)
    value = rng.choice([0.0, 0.5, 1.0], m)
    if shape == "constant":
        value = np.full(m, 0.3)
    elif shape == "never complete":
        stream = np.where(ids % 3 == 0, 0, np.where(ids % 3 == 1, 1 + stream % 2, stream))
    elif shape == "reused ids":
        ids = (np.arange(m) // 9) % 3  # three ids, each back after its tuples left the window
    elif shape == "tiny and signed zero":
        value = rng.choice([0.0, -0.0, 5e-324, 2.2e-308, 1.0 - 2.0**-53, 1.0], m)
    elif shape == "extreme ids":
        ids = rng.choice([I64.min, I64.min + 1, -1, 0, I64.max - 1, I64.max], m)
    if kind == "count":
        t = np.arange(m, dtype=np.int64)
    else:
        steps = np.cumsum(np.where(rng.random(m) < 0.1, rng.integers(10, 40, m), rng.integers(0, 2, m)))
        base = {"extreme ids": I64.min + 200, "extreme times": I64.max - 200 - int(steps[-1])}.get(shape, -7)
        t = steps.astype(np.int64) + base
    return (ids.astype(np.int64), stream.astype(np.int64), value.astype(np.float64), t), d


SHAPES = ("ties", "constant", "one stream", "many streams", "never complete", "reused ids", "tiny and signed zero",
          "extreme ids", "extreme times")
WINDOWS = ((1, 6, 1), (3, 12, 4), (100, 8, 8), (2, 9, 3))
"""``(k, n, s)``: k = 1 with s = 1, a plain one, k beyond every window with s = n, another."""


def configurations(data, query: engine.Query):
    most = most_occurrences_while_valid(data, query)
    return [("oracle-incomplete", {}), ("sla", {}), ("sla", {"k_max": query.k}), ("eaa", {"occurrences": most}),
            ("eaa", {"occurrences": query.window if query.kind == "count" else len(data[0]),
                     "occurrences_per": "window"}),
            ("approx", {}), ("approx", {"unseen_value": "max", "bitmaps": 4})]


@pytest.mark.parametrize("k,window,slide", WINDOWS)
@pytest.mark.parametrize("shape,kind", [(shape, kind) for shape in SHAPES for kind in ("count", "time")
                                        if (shape, kind) != ("extreme times", "count")])
def test_every_algorithm_against_the_definition_with_a_restore_midstream(shape, kind, k, window, slide):
    rng = np.random.default_rng(sum(map(ord, shape)) * 7 + window)
    data, d = stream_of(shape, kind, rng)
    weights = [1.0, 0.0, 2.5, 0.5, 1e-300, 3.0, 1.0, 1e300][:d] if d > 1 else [0.7]
    query = engine.Query(weights=weights, k=k, window=window, slide=slide, kind=kind)
    expected = reference(data, query)
    batches = list(engine.slides(data, query))
    assert [batch.end for batch in batches] == [end for end, _, _ in expected]
    cut = len(batches) // 2
    for name, params in configurations(data, query):
        steady, restored = engine.create(name, query, **params), engine.create(name, query, **params)
        for batch, (end, ids, scores) in zip(batches, expected):
            if batch.index in (0, cut):
                restored = engine.restore(json.loads(json.dumps(restored.to_state(), allow_nan=False)), query)
            for algorithm in (steady, restored):
                algorithm.process(batch)
            restored.check()
            where = f"{name} {params} {shape} {query} end {end}"
            answer = steady.topk()
            assert restored.topk().ids.tolist() == answer.ids.tolist(), where
            assert restored.topk().scores.tolist() == answer.scores.tolist(), where
            kept, resumed = steady.stats(), restored.stats()
            assert resumed == kept, where
            assert kept["candidates"] == len(steady.candidates()), where
            if steady.exact:
                assert answer.ids.tolist() == ids and answer.scores.tolist() == scores, where
            else:
                assert len(answer) <= len(ids), where


# ------------------------------------------------------------------ defects found

@pytest.mark.parametrize("name", ["eaa", "approx"])
def test_a_bestscore_beyond_the_largest_float_survives_a_snapshot(name):
    """Weights near the largest float keep every score finite (8.5e307 here) while an
    instance's bound ``current + w · (m - n_i)`` overflows to inf: ``to_state`` raised
    "Out of range float values are not JSON compliant" and no snapshot could be taken."""
    query = engine.Query(weights=[1.7e308, 1.7e308], k=1, window=4, slide=1)
    data = ([1, 2, 1, 3], [0, 1, 1, 0], [0.5, 0.25, 0.125, 0.0], [0, 1, 2, 3])
    steady, restored = engine.create(name, query), engine.create(name, query)
    for batch in engine.slides(data, query):
        restored = engine.restore(json.loads(json.dumps(restored.to_state(), allow_nan=False)), query)
        steady.process(batch)
        restored.process(batch)
        restored.check()
        assert restored.topk().ids.tolist() == steady.topk().ids.tolist()
        assert restored.topk().scores.tolist() == steady.topk().scores.tolist()
        assert np.isfinite(steady.topk().scores).all()
    assert steady.topk().ids.tolist() == [1] and steady.topk().scores.tolist() == [0.5 * 1.7e308 + 0.125 * 1.7e308]


@pytest.mark.parametrize("kind", ["count", "time"])
def test_approx_does_not_allocate_for_every_slide_a_window_could_hold(kind):
    """A window of 10**9 slides (a day in ms, slide 1 ms, is 8.64e7): the counters were
    allocated for ``n / s + 1`` slides at creation, a ``MemoryError`` (7.45 GiB per array)."""
    small = engine.create("approx", engine.Query(weights=[1.0, 1.0], k=2, window=10, slide=1, kind=kind))
    huge = engine.create("approx", engine.Query(weights=[1.0, 1.0], k=2, window=10**9, slide=1, kind=kind))
    for algorithm in (small, huge):
        for batch in engine.slides(([1, 2, 1, 3], [0, 1, 1, 0], [0.5, 0.25, 0.75, 0.0], [0, 3, 7, 8]), algorithm.q):
            algorithm.process(batch)
        algorithm.check()
    assert huge.topk().ids.tolist() == [1, 2] and huge.topk().scores.tolist() == [1.25, 0.25]
    # the sketches' positions follow the count window (12 here, 32 for 10**9): compared without them
    beside_sketches = [algorithm.stats()["measured_bytes"] - sum(array.nbytes for array in algorithm._sketches.arrays())
                       for algorithm in (small, huge)]
    assert beside_sketches[1] <= beside_sketches[0] + 1024


def test_approx_keeps_no_counters_for_empty_slides():
    """A sparse time stream (slide 1, 400 tuples over 10**4 time units, window 5,000): every
    empty slide kept a row of counters that each slide's estimates summed, so the rows grew to
    ``n / s`` and a slide cost ``O(n / s)``.  Now the rows are the window's non-empty slides,
    as the modelled ``sketch_bytes`` shows, and the estimates are unchanged (``check()``)."""
    rng = np.random.default_rng(5)
    m, d = 400, 2
    t = np.sort(rng.integers(0, 10_000, m))
    query = engine.Query(weights=[1.0, 1.0], k=3, window=5_000, slide=1, kind="time")
    approx = engine.create("approx", query)
    sketch = 8 * d * approx.params["bitmaps"] * 32
    for number, batch in enumerate(engine.slides((np.arange(m), rng.integers(0, d, m), rng.random(m), t), query)):
        approx.process(batch)
        if number % 500 == 0:
            approx.check()
        if number % 97 == 0:
            inside = t[(t >= batch.end - query.window) & (t < batch.end)]
            assert approx.stats()["sketch_bytes"] == sketch + 8 * 2 * d * len(np.unique(inside))
    assert approx.stats()["measured_bytes"] < 150_000


@pytest.mark.parametrize("weights", [[1.0], [1.0, 1.0, 1.0]])
def test_the_brute_force_answers_other_weights_only_one_per_stream(weights):
    """``query`` with one weight for two streams ranked by stream 0 alone (object 1, whose
    window sum is 1.0, over object 2's 0.9 in stream 1 only), silently; three weights raised an
    ``IndexError``."""
    query = engine.Query(weights=[1.0, 1.0], k=2, window=4, slide=2)
    oracle = engine.create("oracle-incomplete", query)
    for batch in engine.slides(([1, 2, 1, 3], [0, 1, 1, 0], [0.5, 0.9, 0.5, 0.2], range(4)), query):
        oracle.process(batch)
    with pytest.raises(ValueError, match=f"weights must hold one weight per stream \\(2\\), got {len(weights)}"):
        oracle.query(weights, 1)
    assert oracle.query([0.0, 1.0], 1).ids.tolist() == [2]



def test_the_brute_force_refuses_other_weights_whose_scores_overflow():
    """Object 1's window sums ``(1, 1)`` weighted by ``[1e308, 1e308]`` scored ``inf``, silently:
    the stream was checked with the query's weights only."""
    query = engine.Query(weights=[1.0, 1.0], k=2, window=4, slide=2)
    oracle = engine.create("oracle-incomplete", query)
    for batch in engine.slides(([1, 1, 2, 2], [0, 1, 0, 1], [1.0, 1.0, 0.5, 0.5], range(4)), query):
        oracle.process(batch)
    with pytest.raises(ValueError, match=r"^the score x · w of an object in the window overflows under weights "
                                         r"\[1e\+308, 1e\+308\]; scale the weights down$"):
        oracle.query([1e308, 1e308], 1)
    assert oracle.query([1e307, 1e307], 1).scores.tolist() == [2e307]

def state_after(name: str, kind: str = "count") -> tuple[dict, engine.Query]:
    """A state of ``name`` after 30 slides of a correlated stream, as plain JSON data."""
    from engine.generators import correlated_streams

    query = engine.Query(weights=[1.0, 0.5, 2.0], k=3, window=40, slide=5, kind=kind)
    params = {"occurrences": 50, "occurrences_per": "window"} if name == "eaa" else {}
    algorithm = engine.create(name, query, **params)
    for batch in list(engine.slides(correlated_streams(300, streams=3, seed=3, reuse=0.6, memory=10), query))[:30]:
        algorithm.process(batch)
    return json.loads(json.dumps(algorithm.to_state())), query


def resealed(state: dict, change) -> dict:
    """``state`` with ``change`` applied to its data and its checksum made again (a state edited
    by someone who knows the format: only the structures' checks can refuse it)."""
    from engine.jsondata import seal

    data = json.loads(json.dumps(state["data"]))
    change(data)
    return seal({**{key: value for key, value in state.items() if key != "checksum"}, "data": data})


def set_first_id(data):
    data["ids"][0] = 2**63


def set_counter(data):
    data["counters"]["arrivals"] = 2**63


def set_object_id(data):
    data["records"][0][0] = 2**63


def set_next_uid(data):
    data["next_uid"] = -(2**63) - 1


def set_start(data):
    data["start"] = 2**64


def set_slide_end(data):
    data["slide_counts"][0][0] = 2**63


@pytest.mark.parametrize("name,change", [("oracle-incomplete", set_first_id), ("sla", set_counter),
                                         ("eaa", set_object_id), ("eaa", set_next_uid), ("approx", set_start),
                                         ("approx", set_slide_end)])
def test_a_state_holding_an_integer_beyond_int64_is_refused_as_corrupt(name, change):
    """Such a state raised ``OverflowError`` from numpy, which ``engine.restore`` does not
    report as a corrupt state."""
    state, query = state_after(name)
    with pytest.raises(engine.StateError, match="64-bit integers"):
        engine.restore(resealed(state, change), query)


@pytest.mark.parametrize("kind", ["count", "time"])
def test_an_eaa_object_newer_than_the_window_is_refused(kind):
    """An entry's newest seq or key moved beyond the window passed ``check()`` and was restored;
    its next slide then broke the validity list's order."""
    state, query = state_after("eaa", kind)

    def future(data):
        data["records"][-1][1 if kind == "count" else 4] = 10**6

    with pytest.raises(engine.StateError, match="corrupt"):
        engine.restore(resealed(state, future), query)


def test_approx_refuses_more_streams_than_its_inclusion_exclusion_can_take():
    """62 streams and objects seen in most of them: no slide finished in 10 minutes (2^|I|
    unions per probability), and 64 streams overflow the seen-streams mask."""
    with pytest.raises(ValueError, match="approx takes at most 12 streams, got 13: .*exponential"):
        engine.create("approx", engine.Query(weights=[1.0] * 13, k=2, window=4, slide=2))
    widest = engine.Query(weights=[1.0] * 12, k=2, window=24, slide=4)
    approx = engine.create("approx", widest)
    rng = np.random.default_rng(12)
    for batch in engine.slides((rng.integers(0, 3, 96), np.arange(96) % 12, rng.random(96), np.arange(96)), widest):
        approx.process(batch)
    approx.check()
    assert len(approx.topk()) == 2


# ------------------------------------------------------------------ the command line

def run_cli(capsys, *args: str) -> tuple[int, str]:
    from engine import cli

    status = cli.main(list(args))
    return status, capsys.readouterr().err


@pytest.mark.parametrize("name", ["oracle-incomplete", "sla", "eaa", "approx"])
@pytest.mark.parametrize("shape,kind", [("tiny and signed zero", "count"), ("extreme ids", "time"),
                                        ("extreme times", "time"), ("never complete", "count")])
def test_the_command_line_answers_attribute_files_as_the_definition(tmp_path, capsys, name, shape, kind):
    """A CSV of the stream (``repr`` of every number: ``-0.0``, ``5e-324``, int64 limits) through
    ``python -m engine run``: one line per slide, the exact algorithms' ids and scores those of
    the definition; ``eaa`` with the per-window promise of the window's length."""
    data, d = stream_of(shape, kind, np.random.default_rng(3))
    source, output = tmp_path / "tuples.csv", tmp_path / "answers.jsonl"
    source.write_text("id,stream,value,t\n" + "".join(f"{i!r},{s!r},{v!r},{t!r}\n" for i, s, v, t in
                                                       zip(*(column.tolist() for column in data))))
    weights = ",".join(["1", "0.5", "2"][:d] + ["1"] * (d - 3))
    query = engine.Query(weights=[float(w) for w in weights.split(",")], k=3, window=12, slide=4, kind=kind)
    params = ["--param", "occurrences=90", "--param", "occurrences_per=window"] if name == "eaa" else []
    status, message = run_cli(capsys, "run", "--algorithm", name, "--k", "3", "--window", "12", "--slide", "4",
                              "--kind", kind, "--weights", weights, "--input", str(source), "--output", str(output),
                              *params)
    assert status == 0, message
    lines = [json.loads(line) for line in output.read_text().splitlines()]
    expected = reference(data, query)
    assert [line["end"] for line in lines] == [end for end, _, _ in expected]
    for line, (end, ids, scores) in zip(lines, expected):
        if name == "approx":
            assert len(line["ids"]) <= len(ids)
        else:
            assert (line["ids"], line["scores"]) == (ids, scores), end


def test_a_negative_stream_number_is_refused_with_a_sensible_range(tmp_path, capsys):
    """Every stream number negative: the message said "not a stream number in 0..-1"."""
    source = tmp_path / "tuples.csv"
    source.write_text("id,stream,value,t\n1,-1,0.5,0\n")
    status, message = run_cli(capsys, "run", "--algorithm", "sla", "--k", "1", "--window", "2", "--slide", "1",
                              "--input", str(source), "--output", str(tmp_path / "out.jsonl"))
    assert status == 2 and len(message.splitlines()) == 1
    assert message == f"error: {source} line 2: column stream: -1 is not a stream number in 0..0\n"
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize("name", ["oracle-incomplete", "sla", "eaa", "approx"])
def test_slides_refuses_weights_whose_summed_values_overflow_as_the_command_line_does(name):
    """``python -m engine run`` refused them; ``engine.slides`` fed them to the algorithm,
    which answered a score of inf (not JSON)."""
    query = engine.Query(weights=[1e308, 1e308], k=1, window=4, slide=2)
    data = ([2, 1, 1, 2], [0, 0, 1, 1], [0.5, 1.0, 1.0, 0.5], [0, 1, 2, 3])
    algorithm = engine.create(name, query)
    with pytest.raises(ValueError, match=r"^row 1: object 1: its values weighted by \[1e\+308, 1e\+308\] add up to "
                                         r"inf, beyond the largest float; scale the weights down$"):
        for batch in engine.slides(data, query):
            algorithm.process(batch)
    assert algorithm.topk().ids.tolist() == []


def test_summed_values_within_rounding_of_the_largest_float_are_refused_and_below_it_kept():
    largest = np.finfo(np.float64).max
    data = ([1, 1], [0, 1], [1.0, 1.0], [0, 1])
    near = engine.Query(weights=[largest / 2, largest / 2], k=1, window=2, slide=2)
    with pytest.raises(ValueError, match=r"add up to 1\.79\d*e\+308, within rounding of the largest float"):
        list(engine.slides(data, near))
    below = engine.Query(weights=[largest / 2.001, largest / 2.001], k=1, window=2, slide=2)
    algorithm = engine.create("sla", below)
    for batch in engine.slides(data, below):
        algorithm.process(batch)
    assert np.isfinite(algorithm.topk().scores).all()


@pytest.mark.parametrize("name,parameter", [("eaa", "occurrences"), ("approx", "repeats"),
                                            ("approx", "bitmaps")])
@pytest.mark.parametrize("value", [I64.max + 1, 2**70])
def test_an_integer_parameter_beyond_int64_is_refused_as_a_bad_argument(name, parameter, value):
    """Found by probing: ``occurrences=2**70`` ran until the first slide and failed there with a
    numba ``TypingError``, ``repeats=2**63`` raised ``OverflowError`` and ``bitmaps=2**63`` numpy's
    "Maximum allowed dimension exceeded"; the command line refuses them, the API raised other
    errors than ``ValueError``.  int64's largest is still taken."""
    query = engine.Query(weights=[1.0, 1.0], k=2, window=2, slide=1)
    with pytest.raises(ValueError, match=f"^parameter {parameter} of {name} must fit in int64 \\(at most {I64.max}\\), "
                                         f"got {value}$"):
        algorithm = engine.create(name, query, **{parameter: value})
        for batch in engine.slides((np.array([1, 1, 2]), np.array([0, 1, 0]), np.ones(3), np.arange(3)), query):
            algorithm.process(batch)
    if parameter != "bitmaps":
        largest = engine.create(name, query, **{parameter: int(I64.max)})
        for batch in engine.slides((np.array([1, 1, 2]), np.array([0, 1, 0]), np.ones(3), np.arange(3)), query):
            largest.process(batch)
        assert largest.topk().ids.tolist() == [2, 1] and largest.topk().scores.tolist() == [1.0, 1.0]


@pytest.mark.parametrize("streams", [24, 40])
@pytest.mark.parametrize("kind", ["count", "time"])
@pytest.mark.parametrize("seed", range(3))
def test_dozens_of_streams_most_of_them_never_seen_by_an_object(streams, kind, seed):
    """Many streams (approx takes at most 12): each object reports a few of them, its values
    arrive across slides and windows, some weights are 0 and many tie; SLA, EAA and the brute
    force equal the definition at every slide, with a restore from JSON mid-stream."""
    rng = np.random.default_rng(seed)
    m = 240
    ids = rng.integers(0, 30, m)
    stream = (ids * 7 + rng.integers(0, 4, m)) % streams
    value = rng.choice([0.0, 0.25, 0.5, 1.0], m)
    t = np.arange(m) if kind == "count" else np.cumsum(np.where(rng.random(m) < 0.05, 30, rng.integers(0, 2, m)))
    data = (ids.astype(np.int64), stream.astype(np.int64), value, t.astype(np.int64))
    weights = rng.choice([0.0, 0.5, 1.0], streams).tolist()
    query = engine.Query(weights=weights, k=int(rng.choice([1, 4, 40])), window=20, slide=int(rng.choice([1, 5, 20])),
                         kind=kind)
    expected = reference(data, query)
    batches = list(engine.slides(data, query))
    for name, params in configurations(data, query):
        if name == "approx":
            continue
        algorithm = engine.create(name, query, **params)
        for batch, (end, ids_expected, scores_expected) in zip(batches, expected):
            if batch.index == len(batches) // 2:
                algorithm = engine.restore(json.loads(json.dumps(algorithm.to_state(), allow_nan=False)), query)
            algorithm.process(batch)
            answer = algorithm.topk()
            where = f"{name} {params} {query} end {end}"
            assert answer.ids.tolist() == ids_expected and answer.scores.tolist() == scores_expected, where
        algorithm.check()
