"""The shared executor (engine.multi, MTopList): every query equals the brute-force answer at
every slide, with queries added and removed mid-stream; snapshots; the run-many CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import engine
from engine.jsondata import StateError, pack
from engine.multi import NAME, SharedTopK
from tests.nojit import run_script
from tests.streams import COLUMNS, SHAPES, TIMES_ALL, adversarial_scores, random_column, random_times, time_stamps

ROOT = Path(__file__).resolve().parents[2]


class Expected:
    """Brute force, independent of the executor: for every query, the boundaries it must pass
    (from the first one after it was added) and, at each, the top k of the objects with
    ``seq >= since`` inside ``[end - n, end)``, ranked by ``(score, seq)``."""

    def __init__(self, ids, t, x):
        self.ids, self.t, self.x = ids, t, x

    def answer(self, query: engine.Query, since: int, end: int) -> tuple[list[int], list[float]]:
        scores = engine.score(self.x, query.weights)
        seq = np.arange(len(self.ids))
        key = seq if query.kind == "count" else self.t
        inside = np.flatnonzero((seq >= since) & (key >= end - query.window) & (key < end))
        ranked = sorted(inside.tolist(), key=lambda i: (scores[i], i), reverse=True)[:query.k]
        return [int(self.ids[i]) for i in ranked], [float(scores[i]) for i in ranked]

    def boundaries(self, query: engine.Query, added_at: int, upto: int) -> list[int]:
        """Ends the query passes between its addition (after ``added_at`` arrivals) and ``upto``."""
        s = query.slide
        if query.kind == "count":
            return list(range((added_at // s + 1) * s, upto + 1, s))
        if upto == added_at:
            return []
        last_t = self.t[added_at - 1] if added_at else self.t[0]
        first = (int(last_t) // s + 1) * s
        return list(range(first, int(self.t[upto - 1]) + 1, s))


def run_and_compare(executor: SharedTopK, ids, t, x, cuts, events=None, snapshot_at=None) -> int:
    """Feed the stream in pieces ending at ``cuts``; ``events[cut]`` adds / removes queries
    there.  Every result is checked against :class:`Expected`, and every expected boundary must
    be answered, in order.  Returns the number of answers checked."""
    expected = Expected(ids, t, x)
    added = {h: (0, q) for h, q in executor.queries.items()}
    seen: dict[int, list[tuple[int, int]]] = {h: [] for h in added}
    checked, lo = 0, 0
    for cut in cuts:
        for action, arg in (events or {}).get(lo, []):
            if action == "add":
                handle = executor.add(arg)
                added[handle] = (lo, arg)
                seen[handle] = []
            else:
                executor.remove(arg)
                added.pop(arg)
        if snapshot_at == lo:
            executor = SharedTopK.restore(json.loads(json.dumps(executor.to_state())))
        results = executor.process(ids[lo:cut], t[lo:cut], x[lo:cut])
        order = [(r.position, r.query, r.slide) for r in results]
        assert order == sorted(order), "results out of stream order"
        for r in results:
            _, query = added[r.query]
            want_ids, want_scores = expected.answer(query, executor.since(r.query), r.end)
            context = f"query {r.query} {query} end {r.end}"
            np.testing.assert_allclose(r.answer.scores, want_scores, rtol=1e-12, atol=0, err_msg=context)
            assert r.answer.ids.tolist() == want_ids, context
            seen[r.query].append((r.slide, r.end))
            checked += 1
        executor.check()
        lo = cut
    for handle, (added_at, query) in added.items():
        ends = expected.boundaries(query, added_at, lo)
        assert seen[handle] == list(enumerate(ends)), f"query {handle} {query}: boundaries {seen[handle]} not {ends}"
    return checked


def mixed_workload(d: int = 2) -> list[engine.Query]:
    """Mixed k, windows, slides (s = 1, s = n, k > window) and both kinds, over two weights."""
    a, b = (1.0,) + (0.0,) * (d - 1), (0.5,) * d
    return [engine.Query(a, k=3, window=20, slide=5), engine.Query(a, k=1, window=20, slide=5),
            engine.Query(a, k=6, window=20, slide=5), engine.Query(a, k=4, window=40, slide=10),
            engine.Query(a, k=2, window=7, slide=7), engine.Query(a, k=30, window=12, slide=1),
            engine.Query(b, k=3, window=20, slide=5), engine.Query(b, k=5, window=60, slide=4),
            engine.Query(a, k=3, window=30, slide=6, kind="time"), engine.Query(a, k=5, window=30, slide=6, kind="time"),
            engine.Query(b, k=2, window=10, slide=10, kind="time"), engine.Query(a, k=40, window=9, slide=3, kind="time")]


def stream(shape: str, times: str, m: int, seed: int):
    rng = np.random.default_rng(seed)
    x = np.column_stack([adversarial_scores(shape, m, rng), adversarial_scores("ties", m, rng)])
    return np.arange(m, dtype=np.int64) + 1000, time_stamps(times, m, rng), x


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("times", ["steady", "bursts", "gaps"])
def test_every_query_equals_brute_force_at_every_slide(shape, times):
    ids, t, x = stream(shape, times, 400, seed=len(shape) + len(times))
    cuts = [1, 2, 50, 51, 173, 300, 400]
    assert run_and_compare(SharedTopK(mixed_workload()), ids, t, x, cuts) > 500


@pytest.mark.parametrize("shape", ["uniform", "ties", "decreasing", "increasing"])
def test_queries_added_and_removed_mid_stream(shape):
    ids, t, x = stream(shape, "bursts", 600, seed=7)
    workload = mixed_workload()
    a = workload[0].weights
    executor = SharedTopK(workload[:4] + workload[8:9])
    events = {
        50: [("add", workload[6]), ("add", engine.Query(a, k=2, window=20, slide=5)),   # joins a family: whole window
             ("add", engine.Query(a, k=9, window=20, slide=5)),                          # k above it: a new family
             ("add", workload[9])],
        120: [("remove", 1), ("remove", 0), ("add", workload[11]), ("add", workload[5])],
        121: [("remove", 2), ("add", engine.Query((0.25, 2.0), k=3, window=15, slide=3, kind="time"))],
        300: [("remove", 3), ("remove", 4), ("remove", 5), ("add", workload[10])],
        450: [("remove", 11), ("add", engine.Query(a, k=2, window=20, slide=5))],
    }
    cuts = [20, 50, 77, 120, 121, 200, 300, 450, 451, 600]
    assert run_and_compare(executor, ids, t, x, cuts, events) > 300


@pytest.mark.parametrize("shape", ["uniform", "increasing"])
def test_windows_far_longer_than_the_stream_equal_brute_force(shape):
    """window / slide = 3,000 over 300 rows: every arrival joins or evicts from thousands of
    future windows of each family, and records leave the list from that loop (the path the
    per-window eviction is inlined in); families of one group share records, time families
    and queries added mid-stream included."""
    ids, t, x = stream(shape, "steady", 300, seed=11)
    a, b = (1.0, 0.0), (0.5, 0.5)
    long = 3000
    executor = SharedTopK([engine.Query(a, k=3, window=long, slide=1),
                           engine.Query(a, k=5, window=2 * long, slide=2),
                           engine.Query(a, k=2, window=long, slide=1, kind="time")])
    events = {
        40: [("add", engine.Query(a, k=4, window=long, slide=1)),                    # k above its family's
             ("add", engine.Query(b, k=3, window=long, slide=1, kind="time"))],
        150: [("remove", 0), ("add", engine.Query(a, k=1, window=long, slide=1))],
        151: [("add", engine.Query(b, k=6, window=3 * long, slide=3))],
    }
    cuts = [1, 40, 97, 150, 151, 230, 300]
    assert run_and_compare(executor, ids, t, x, cuts, events) > 1200


def test_a_query_joining_its_family_answers_over_the_whole_window():
    ids, t, x = stream("uniform", "steady", 200, seed=3)
    executor = SharedTopK([engine.Query([1.0, 0.0], k=5, window=50, slide=10)])
    executor.process(ids[:97], t[:97], x[:97])
    joined = executor.add(engine.Query([1.0, 0.0], k=2, window=50, slide=10))
    fresh = executor.add(engine.Query([1.0, 0.0], k=6, window=50, slide=10))
    assert (executor.since(joined), executor.since(fresh)) == (0, 97)
    first = [r for r in executor.process(ids[97:], t[97:], x[97:]) if r.end == 100]
    answers = {r.query: r.answer.ids.tolist() for r in first}
    top = Expected(ids, t, x).answer(engine.Query([1.0, 0.0], k=6, window=50, slide=10), 0, 100)[0]
    assert answers[joined] == top[:2]
    assert answers[fresh] == Expected(ids, t, x).answer(engine.Query([1.0, 0.0], k=6, window=50, slide=10), 97, 100)[0]
    assert len(answers[fresh]) == 3


def test_queries_of_one_family_share_records_and_windows():
    q = [engine.Query([1.0], k=k, window=100, slide=10) for k in (1, 5, 10)]
    executor = SharedTopK(q + [engine.Query([1.0], k=10, window=100, slide=10)])
    rng = np.random.default_rng(0)
    executor.process(np.arange(1000), np.arange(1000), rng.random(1000))
    stats = executor.stats()
    assert (stats["groups"], stats["families"], stats["windows"]) == (1, 1, 10)
    alone = engine.create("mintopk", q[2])
    for batch in engine.slides((np.arange(1000), np.arange(1000), np.random.default_rng(0).random(1000)), q[2]):
        alone.process(batch)
    assert set(executor.candidates().tolist()) <= set(alone.candidates().tolist())
    assert stats["candidates"] >= 10


@pytest.mark.parametrize("kind", ["count", "time"])
@pytest.mark.parametrize("window, slide", [(10, 10), (12, 4), (12, 1)])
def test_candidates_at_each_boundary_are_those_mintopk_holds_for_the_query(kind, window, slide):
    """The executor answers a window and takes its records out of the list at once: a query
    whose slide is its window then held nothing at every boundary, and reported 0 candidates
    (the replay's slide metrics of a shared query said so at every slide).  Its candidates are
    the records it answers from, as MinTopK's: ``k`` for slide = window; the same as MinTopK
    at every boundary otherwise, and the same after a restore."""
    rng = np.random.default_rng(4)
    m = 120
    ids, t, x = np.arange(m), np.arange(m) * 2 if kind == "time" else np.arange(m), rng.random(m)
    query = engine.Query([1.0], k=3, window=window, slide=slide, kind=kind)
    alone, held = engine.create("mintopk", query), []
    for batch in engine.slides((ids, t, x), query):
        alone.process(batch)
        held.append(alone.stats()["candidates"])
    executor, reported = SharedTopK([query]), []
    for batch in engine.slides((ids, t, x), query):  # a call per slide, ending at its boundary
        results = executor.process(batch.ids, batch.t, batch.x, time_now=batch.end if kind == "time" else None)
        assert [result.end for result in results] == [batch.end]
        reported.append(executor.stats()["candidates"])
        assert SharedTopK.restore(executor.to_state()).stats() == executor.stats()
    if window == slide:
        assert set(reported) == {3}
    assert reported == held


@pytest.mark.parametrize("at", [0, 133, 250])
def test_snapshot_restore_continues_exactly(at):
    ids, t, x = stream("ties", "gaps", 400, seed=11)
    executor = SharedTopK(mixed_workload())
    events = {100: [("add", engine.Query([0.5, 0.5], k=2, window=9, slide=3, kind="time")), ("remove", 0)]}
    run_and_compare(executor, ids, t, x, [100, at or 100, 250, 400] if at else [0, 100, 250, 400], events,
                    snapshot_at=at)


def test_engine_restore_of_a_shared_state_names_the_shared_executors_restore():
    executor = SharedTopK(mixed_workload())
    ids, t, x = stream("ties", "gaps", 60, seed=3)
    executor.process(ids, t, x)
    with pytest.raises(StateError, match=r"shared executor \(run-many\).*SharedTopK\.restore"):
        engine.restore(executor.to_state())


@pytest.mark.parametrize("start", [-400, -(10 ** 15)])
@pytest.mark.parametrize("at", [None, 173])
def test_times_before_zero_give_negative_windows_answered_exactly(start, at):
    """Window indices below zero (times before zero) are windows like any other: a time family
    whose newest window is -1 is not one that has seen no arrival, and a record's window -1
    is not a mark of a family it is not alive in (both sentinels were -1 once)."""
    ids, t, x = stream("ties", "steady", 400, seed=5)
    t = t + start
    events = {100: [("add", engine.Query([0.5, 0.5], k=2, window=9, slide=3, kind="time"))]}
    cuts = [1, 50, 100, 173, 300, 400]
    assert run_and_compare(SharedTopK(mixed_workload()), ids, t, x, cuts, events, snapshot_at=at) > 500


@pytest.mark.parametrize("start", [0, -(10 ** 15)])
def test_a_state_written_with_minus_one_marks_restores(start):
    """States written before ``NEVER`` moved below every window index stored ``-1`` as the end
    mark of a record in a family it is not alive in; they restore and continue exactly."""
    ids, t, x = stream("uniform", "steady", 400, seed=6)
    t = t + start
    executor = SharedTopK(mixed_workload())
    executor.process(ids[:100], t[:100], x[:100])
    executor.add(engine.Query([0.5, 0.5], k=2, window=9, slide=3, kind="time"))
    state = executor.to_state()
    old_marks = 0
    for group in state["data"]["groups"]:
        for record in group["objects"]:
            for mark in record[3]:
                if mark[1] is None:
                    mark[1] = -1
                    old_marks += 1
    assert old_marks > 0, "no record outside a family: the case tests nothing"
    old_state = pack(NAME, state["query"], state["params"], state["data"])
    restored = SharedTopK.restore(json.loads(json.dumps(old_state)))
    assert restored.to_state() == executor.to_state()
    for lo, hi in ((100, 250), (250, 400)):
        got, want = restored.process(ids[lo:hi], t[lo:hi], x[lo:hi]), executor.process(ids[lo:hi], t[lo:hi], x[lo:hi])
        assert [(r.query, r.end, r.answer.ids.tolist()) for r in got] == [(r.query, r.end, r.answer.ids.tolist()) for r in want]


def test_snapshot_is_plain_json_and_refuses_corruption():
    ids, t, x = stream("uniform", "steady", 300, seed=5)
    executor = SharedTopK(mixed_workload())
    executor.process(ids[:150], t[:150], x[:150])
    text, digest = executor.to_state_text()
    state = json.loads(text)
    assert state == executor.to_state() and state["checksum"] == digest and state["algorithm"] == "multi"
    restored = SharedTopK.restore(state)
    assert restored.stats() == executor.stats()
    assert [r.answer.ids.tolist() for r in restored.process(ids[150:], t[150:], x[150:])] == \
        [r.answer.ids.tolist() for r in executor.process(ids[150:], t[150:], x[150:])]
    tampered = json.loads(text)
    tampered["data"]["groups"][0]["objects"][0][0] += 1
    with pytest.raises(StateError, match="checksum"):
        SharedTopK.restore(tampered)
    broken = json.loads(text)
    broken["data"]["groups"][0]["families"][0]["windows"][0][0] += 1
    broken["checksum"] = engine.jsondata.pack("multi", broken["query"], broken["params"], broken["data"])["checksum"]
    with pytest.raises(StateError, match="corrupt"):
        SharedTopK.restore(broken)
    with pytest.raises(StateError, match="not of the shared executor"):
        SharedTopK.restore(engine.create("mintopk", engine.Query([1.0], 1, 2, 1)).to_state())


def test_bad_calls_are_refused():
    executor = SharedTopK([engine.Query([1.0, 2.0], k=1, window=4, slide=2, kind="time")])
    with pytest.raises(ValueError, match="2 feature"):
        executor.add(engine.Query([1.0], k=1, window=4, slide=2))
    with pytest.raises(ValueError, match="no query"):
        executor.remove(7)
    with pytest.raises(ValueError, match="row 2: t decreases"):
        executor.process([1, 2, 3], [5, 6, 4], np.ones((3, 2)))
    executor.process([1], [5], np.ones((1, 2)))
    with pytest.raises(ValueError, match="row 0: t decreases"):
        executor.process([2], [4], np.ones((1, 2)))
    with pytest.raises(ValueError, match="row 1: t = 9223372036854775802 is outside"):
        executor.process([2, 3], [6, 2**63 - 6], np.ones((2, 2)))
    with pytest.raises(ValueError, match="time_now: t = 9223372036854775802 is outside"):
        executor.process([2], [6], np.ones((1, 2)), time_now=2**63 - 6)


NO_JIT_SCRIPT = """
import json, numpy as np, engine
from engine.multi import NAME, SharedTopK
from tests.engine.test_multi import small_case
queries, (ids, t, x) = small_case()
executor = SharedTopK(queries)
out = []
for lo in range(0, len(ids), 37):
    out += [[r.query, r.slide, r.end, r.answer.ids.tolist(), r.answer.scores.tolist()]
            for r in executor.process(ids[lo:lo + 37], t[lo:lo + 37], x[lo:lo + 37])]
executor.check()
print(json.dumps({"answers": out, "stats": executor.stats()}))
"""


def small_case():
    return mixed_workload(), stream("sawtooth", "bursts", 160, seed=2)


def run_small_case(no_jit: bool) -> dict:
    return run_script(NO_JIT_SCRIPT, no_jit=no_jit)


def test_plain_python_kernels_equal_the_compiled_ones_and_brute_force():
    plain, compiled = run_small_case(no_jit=True), run_small_case(no_jit=False)
    assert plain == compiled
    queries, (ids, t, x) = small_case()
    expected = Expected(ids, t, x)
    assert len(plain["answers"]) > 100
    for handle, _, end, got_ids, _ in plain["answers"]:
        assert got_ids == expected.answer(queries[handle], 0, end)[0]


# ------------------------------------------------------------------------------------ CLI

def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def write_stream(path: Path, ids, t, x) -> Path:
    lines = ["id,t,a,b"] + [f"{i},{s},{u!r},{v!r}" for i, s, (u, v) in zip(ids.tolist(), t.tolist(), x.tolist())]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_run_many_writes_every_answer_and_equals_the_unshared_reference(tmp_path):
    ids, t, x = stream("ties", "bursts", 300, seed=4)
    source = write_stream(tmp_path / "s.csv", ids, t, x)
    queries = mixed_workload()
    spec = tmp_path / "q.json"
    spec.write_text(json.dumps([q.to_dict() for q in queries]))
    shared, unshared = tmp_path / "shared.jsonl", tmp_path / "unshared.jsonl"
    done = run_cli("run-many", "--queries", str(spec), "--input", str(source), "--output", str(shared))
    assert done.returncode == 0, done.stderr
    done = run_cli("run-many", "--queries", str(spec), "--input", str(source), "--output", str(unshared),
                   "--algorithm", "mintopk")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in shared.read_text().splitlines()]
    assert shared.read_text() == unshared.read_text()
    expected = Expected(ids, t, x)
    per_query = {i: [] for i in range(len(queries))}
    for line in lines:
        assert set(line) == {"query", "slide", "end", "ids", "scores"}
        want_ids, want_scores = expected.answer(queries[line["query"]], 0, line["end"])
        assert line["ids"] == want_ids and line["scores"] == pytest.approx(want_scores, rel=1e-12)
        per_query[line["query"]].append((line["slide"], line["end"]))
    for i, q in enumerate(queries):
        assert per_query[i] == list(enumerate(expected.boundaries(q, 0, len(ids)))), f"query {i}"


@pytest.mark.parametrize("entries, message", [
    ({"weights": [1, 0]}, "expected a non-empty JSON list of queries"),
    ([], "expected a non-empty JSON list of queries, got an empty list"),
    ([{"weights": [1, 0], "k": 1, "window": 4, "slide": 2}, 3], "query 1: expected an object"),
    ([{"weights": [1, 0], "k": 1, "window": 4}], "query 0: missing field(s) slide"),
    ([{"weights": [1, 0], "k": 1, "window": 4, "slide": 2, "size": 3}], "query 0: unknown field(s) size"),
    ([{"weights": [1, 0], "k": 0, "window": 4, "slide": 2}], "query 0: k must be an integer >= 1, got 0"),
    ([{"weights": [1, 0], "k": 1, "window": 4, "slide": 2},
      {"weights": [1, 0], "k": 1, "window": 10, "slide": 3}], "query 1: window must be a multiple of slide"),
    ([{"weights": [1, 0], "k": 1, "window": 4, "slide": 2, "kind": "rows"}], "query 0: kind must be one of"),
    ([{"weights": "1,0", "k": 1, "window": 4, "slide": 2}], "query 0: weights must be a list of numbers"),
    ([{"weights": [1, True], "k": 1, "window": 4, "slide": 2}], "query 0: weights must be a list of numbers"),
    ([{"weights": [1, 0, 2], "k": 1, "window": 4, "slide": 2}], "query 0: 3 weight(s), but"),
])
def test_run_many_refuses_bad_queries_before_any_output(tmp_path, entries, message):
    source = write_stream(tmp_path / "s.csv", *stream("uniform", "steady", 20, seed=1))
    spec = tmp_path / "q.json"
    spec.write_text(json.dumps(entries))
    output = tmp_path / "out.jsonl"
    done = run_cli("run-many", "--queries", str(spec), "--input", str(source), "--output", str(output))
    assert done.returncode == 2 and message in done.stderr and done.stderr.startswith("error: ")
    assert "Traceback" not in done.stderr and not output.exists()


def test_run_many_refuses_bad_files_and_arguments(tmp_path):
    ids, t, x = stream("uniform", "steady", 20, seed=1)
    source = write_stream(tmp_path / "s.csv", ids, t, x)
    spec = tmp_path / "q.json"
    spec.write_text(json.dumps([{"weights": [1, 0], "k": 1, "window": 4, "slide": 2, "kind": "time"}]))
    output = tmp_path / "out.jsonl"
    cases = [
        (["--queries", str(tmp_path / "none.json")], "none.json: cannot read"),
        (["--algorithm", "nosuch"], "--algorithm: unknown algorithm 'nosuch'"),
        (["--algorithm", "sla"], "--algorithm: sla is an incomplete-stream algorithm"),
        (["--param", "prefilter=true"], "--param: the shared executor takes no parameters"),
        (["--algorithm", "mintopk", "--param", "depth=3"], "--param: unknown parameter 'depth'"),
    ]
    bad_json = tmp_path / "bad.json"
    bad_json.write_text('[{"weights": [1, 0],\n "k": }]')
    cases.append((["--queries", str(bad_json)], "bad.json line 2: not JSON"))
    unsorted = write_stream(tmp_path / "unsorted.csv", ids, t[::-1].copy(), x)
    cases.append((["--input", str(unsorted)], "unsorted.csv line 3: column t"))
    broken = tmp_path / "broken.csv"
    broken.write_text("id,t,a,b\n1,0,0.5,x\n")
    cases.append((["--input", str(broken)], "broken.csv line 2: column b: 'x' is not a number"))
    cases.append((["--output", str(spec)], "is the --queries file; the answers would replace it"))
    cases.append((["--output", str(source)], "is the --input file; the answers would replace it"))
    huge = tmp_path / "huge.csv"
    huge.write_text("id,t,a,b\n1,0,0.5,0.5\n2,1,1e308,1e308\n")
    huge_spec = tmp_path / "huge.json"
    huge_spec.write_text(json.dumps([{"weights": [1, 0], "k": 1, "window": 2, "slide": 1},
                                     {"weights": [1, 1], "k": 1, "window": 2, "slide": 1}]))
    cases.append((["--input", str(huge), "--queries", str(huge_spec)],
                  "huge.csv line 3: query 1: the score x · w overflows (inf)"))
    edge = tmp_path / "edge.csv"
    edge.write_text("id,t,a,b\n1,-9223372036854775803,0.5,0.5\n2,0,0.5,0.5\n")
    cases.append((["--input", str(edge)], "edge.csv line 2: column t = -9223372036854775803 is outside "
                                          "[-9223372036854775802,"))
    gap = tmp_path / "gap.csv"
    gap.write_text("id,t,a,b\n1,0,0.5,0.5\n2,1,0.5,0.5\n3,1000000000,0.5,0.5\n")
    cases.append((["--input", str(gap)], "gap.csv line 4: query 0: column t jumps from 1 to 1000000000 here: a time "
                                         "window with slide 2 passes 500,000,000 slide boundaries"))
    cases.append((["--max-slides", "0"], "argument --max-slides: must be a whole number >= 1, got '0'"))
    for extra, message in cases:
        args = {"--queries": str(spec), "--input": str(source), "--output": str(output)}
        rest = []
        for i in range(0, len(extra), 2):
            if extra[i] in args:
                args[extra[i]] = extra[i + 1]
            else:
                rest += extra[i:i + 2]
        done = run_cli("run-many", *[item for pair in args.items() for item in pair], *rest)
        assert done.returncode == 2 and message in done.stderr, (extra, done.stderr)
        assert "Traceback" not in done.stderr and not output.exists()


@pytest.mark.parametrize("times", ["steady", "gaps"])
def test_shards_over_global_seq_merge_to_the_whole_answer(times):
    """A Spark task's view: each shard sees only its rows, with their global seq, the stream's
    row count and latest time; the top k of the shards' answers is the whole stream's."""
    ids, t, x = stream("ties", times, 500, seed=9)
    queries = mixed_workload()
    shards = [SharedTopK(queries) for _ in range(3)]
    merged: dict[tuple[int, int], list] = {}
    for lo, hi in [(0, 64), (64, 65), (65, 300), (300, 500)]:
        for shard, executor in enumerate(shards):
            mine = np.flatnonzero(ids[lo:hi] % 3 == shard) + lo
            for r in executor.process(ids[mine], t[mine], x[mine], seq=mine, stream_end=hi, time_now=int(t[hi - 1])):
                merged.setdefault((r.query, r.end), []).append(r.answer)
            executor.check()
    expected = Expected(ids, t, x)
    for i, query in enumerate(queries):
        ends = expected.boundaries(query, 0, len(ids))
        assert sorted(end for q, end in merged if q == i) == ends
        for end in ends:
            parts = merged[(i, end)]
            assert len(parts) == 3
            union = engine.Answer.ranked(np.concatenate([p.ids for p in parts]), np.concatenate([p.scores for p in parts]),
                                         np.concatenate([p.seq for p in parts]), query.k)
            assert union.ids.tolist() == expected.answer(query, 0, end)[0], f"query {i} end {end}"


def test_prefilter_kernel_equals_top_indices():
    """``best_of_piece`` (compiled) against ``engine.top_indices`` on pieces with many ties."""
    from engine.kernels.multi import best_of_piece
    rng = np.random.default_rng(3)
    for _ in range(200):
        m = int(rng.integers(1, 40))
        values = rng.integers(0, 4, m).astype(np.float64)
        lo, hi = sorted(rng.integers(0, m + 1, 2).tolist())
        if lo == hi:
            continue
        k = int(rng.integers(1, 12))
        chosen = np.empty(m, np.int64)
        n = best_of_piece(values, lo, hi, k, chosen)
        want = engine.top_indices(values[lo:hi], np.arange(lo, hi), k) + lo
        assert chosen[:n].tolist() == want.tolist()


def test_skip_list_kernels_keep_the_ranked_order():
    """``link`` / ``unlink`` (compiled) against a plain sorted list of ``(score, seq)`` keys."""
    from engine.kernels import multi as kernel
    from engine.multi import _Group
    group = _Group((1.0,), 0)
    group.grow_nodes(600)
    rng = np.random.default_rng(8)
    update = np.empty(kernel.LEVELS, np.int64)
    live: dict[int, tuple[float, int]] = {}
    for seq in range(500):
        value = float(rng.integers(0, 20))
        node = kernel.link(group.scores, group.nodes, group.forward, group.free, group.meta, value, seq, seq, 0, update)
        live[node] = (value, seq)
        if rng.random() < 0.4:
            gone = list(live)[int(rng.integers(0, len(live)))]
            kernel.unlink(group.nodes, group.forward, group.free, group.meta, gone)
            del live[gone]
    ranked = group.ranked_nodes()
    assert [live[n] for n in ranked] == sorted(live.values(), reverse=True)
    assert [group.nodes[n, kernel.ABOVE] for n in ranked] == [kernel.HEAD] + ranked[:-1]
    for level in range(1, kernel.LEVELS):
        chain, node = [], group.forward[kernel.HEAD, level]
        while node != kernel.NONE:
            chain.append(int(node))
            node = group.forward[node, level]
        assert chain == [n for n in ranked if group.nodes[n, kernel.LEVEL] > level]


def test_answer_columns_write_the_lines_json_dumps_writes():
    """``run-many``'s bulk lines (``column_lines``, from ``SharedTopK.answers``) and the unshared
    path's per-answer lines are the text ``json.dumps`` gives for every result, with ties, empty
    answers, prefixes shared by one family's queries and scores ``0.0`` beside ``-0.0``."""
    from engine.cli import AnswerLines, column_lines

    x = np.array([0.0, -0.0, 0.5, -0.0, 0.0, 0.25, 0.5, -0.0, 0.0, 1e-300, -2.5, 0.0])
    ids = np.arange(len(x)) * 7
    queries = [engine.Query([1.0], k=3, window=4, slide=2), engine.Query([1.0], k=1, window=4, slide=2),
               engine.Query([1.0], k=2, window=3, slide=1, kind="time"), engine.Query([-1.0], k=5, window=6, slide=3)]
    t = np.array([0, 0, 1, 3, 3, 3, 4, 9, 9, 9, 10, 14])
    columns, plain, lines = SharedTopK(queries), SharedTopK(queries), AnswerLines()
    written, expected, one_by_one = [], [], []
    for lo, hi in ((0, 5), (5, 5), (5, 12)):
        written += column_lines(columns.answers(ids[lo:hi], t[lo:hi], x[lo:hi]))
        for r in plain.process(ids[lo:hi], t[lo:hi], x[lo:hi]):
            expected.append(json.dumps({"query": r.query, "slide": r.slide, "end": r.end,
                                        "ids": r.answer.ids.tolist(), "scores": r.answer.scores.tolist()}) + "\n")
            one_by_one.append(lines.line(r.query, r.slide, r.end, r.answer.ids, r.answer.scores))
    assert len(expected) > 10 and any('"scores": []' in line for line in expected)
    assert any("-0.0" in line for line in expected) and any("[0.0" in line for line in expected)
    assert written == expected
    assert one_by_one == expected


def add_remove_events(rng, starts, queries: int, query, events_per_piece=(0, 3), chance: float | None = None) -> dict:
    """Queries added and removed before pieces: at each piece start (drawn with probability
    ``chance`` when given), ``rng.integers(*events_per_piece)`` events, each removing a live query
    (45 %) or adding ``query()``; ``{start: [("add", Query) or ("remove", handle), ...]}``."""
    alive, next_handle, events = list(range(queries)), queries, {}
    for lo in starts:
        if chance is not None and rng.random() >= chance:
            continue
        for _ in range(rng.integers(*events_per_piece)):
            if alive and rng.random() < 0.45:
                events.setdefault(lo, []).append(("remove", alive.pop(rng.integers(len(alive)))))
            else:
                events.setdefault(lo, []).append(("add", query()))
                alive.append(next_handle)
                next_handle += 1
    return events


def stress_workload(seed: int):
    """A random workload (up to 15 queries over up to 3 weight vectors: mixed k, windows, slides
    and kinds), an adversarial stream cut in random pieces, queries added and removed between
    pieces, and where to snapshot."""
    rng = np.random.default_rng(seed)
    d = int(rng.integers(1, 4))
    weights = [tuple(float(rng.choice([-1.0, -0.25, 0.0, 0.5, 1.0, 2.0])) for _ in range(d)) for _ in range(rng.integers(1, 4))]

    def query():
        s = int(rng.choice([1, 1, 2, 3, 4, 5]))
        n = s * int(rng.choice([1, 1, 2, 3, 4]))
        k = int(rng.integers(1, n + 5)) if rng.random() < 0.5 else int(rng.integers(1, 4))
        return engine.Query(weights[rng.integers(len(weights))], k=k, window=n, slide=s, kind=str(rng.choice(["count", "time"])))

    queries = [query() for _ in range(rng.integers(0, 16))]
    m = int(rng.choice([1, 10, 40, 120, 250]))
    x = np.column_stack([random_column(str(rng.choice(COLUMNS)), m, rng) for _ in range(d)])
    t = random_times(str(rng.choice(TIMES_ALL)), m, rng)
    cuts = sorted(set(rng.integers(1, m + 1, rng.integers(1, 25)).tolist()) | {m})
    starts = [0] + cuts[:-1]
    events = add_remove_events(rng, starts, len(queries), query)
    snapshot_at = starts[rng.integers(len(starts))] if rng.random() < 0.6 else None
    return queries, (np.arange(m, dtype=np.int64) + 1000, t, x), cuts, events, snapshot_at


def test_seeded_stress_random_workloads_against_brute_force():
    """Fixed seeds: every answer of random workloads, with queries added and removed mid-stream
    and a snapshot restored from JSON, equals brute force; ``check()`` after every piece."""
    for seed in range(40):
        queries, (ids, t, x), cuts, events, snapshot_at = stress_workload(seed)
        run_and_compare(SharedTopK(queries), ids, t, x, cuts, events, snapshot_at)


def test_an_overflowing_score_is_refused_before_any_group_changes():
    workload = SharedTopK([engine.Query([1.0, 0.0], k=1, window=2, slide=1),
                           engine.Query([1.0, 1.0], k=1, window=2, slide=1)])
    workload.process([1, 2], [0, 1], [[0.5, 0.5], [0.25, 0.75]])
    before = workload.dump_state()
    with pytest.raises(ValueError, match="row 1: the score x · w overflows"):
        workload.process([3, 4], [2, 3], [[0.5, 0.5], [1e308, 1e308]])
    assert workload.dump_state() == before
    workload.check()
