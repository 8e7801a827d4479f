"""The shared executor (engine.multi) driven as an outside checker would: every query against
its own ``engine.create("oracle", query)`` at every slide boundary it passes, with queries
added and removed while the stream runs, snapshots restored at every piece, tampered states,
and the memory figures against tracemalloc."""

from __future__ import annotations

import copy
import gc
import json
import tracemalloc

import numpy as np
import pytest

import engine
from engine.jsondata import StateError, pack
from engine.multi import NAME, SharedTopK, group_key
from tests.engine.test_multi import add_remove_events, run_cli, write_stream
from tests.streams import COLUMNS, TIMES_ALL, random_column, random_times

Q = engine.Query


def boundaries(query: engine.Query, t: np.ndarray, added_at: int, upto: int) -> list[int]:
    """The slide ends a query added after ``added_at`` arrivals passes until ``upto`` arrivals:
    count ends once their last object has arrived, time ends ``T`` once an object with ``t >= T``
    has (the first one after the slide of the last object before the addition)."""
    s = query.slide
    if query.kind == "count":
        return list(range((added_at // s + 1) * s, upto + 1, s))
    if upto <= added_at:
        return []
    before = int(t[added_at - 1]) if added_at else int(t[0])
    return list(range((before // s + 1) * s, int(t[upto - 1]) + 1, s))


def oracle_answers(query, ids, t, x, since, ends) -> list[engine.Answer]:
    """``engine.create("oracle", query)`` fed the slides ending at ``ends`` of the arrivals from
    ``since`` on (the windows the docs promise a query that started a family mid-stream)."""
    oracle = engine.create("oracle", query)
    seq = np.arange(len(ids), dtype=np.int64)
    key = seq if query.kind == "count" else t
    answers, previous = [], None
    for index, end in enumerate(ends):
        rows = np.flatnonzero((seq >= since) & (key < end) & (True if previous is None else key >= previous))
        oracle.process(engine.Batch(ids=ids[rows], seq=seq[rows], t=t[rows], x=x[rows], end=end, index=index))
        answers.append(oracle.topk())
        previous = end
    return answers


class Families:
    """The docs' rule for where a query goes, kept apart from the executor: it joins the oldest
    family of its weights (bit for bit), kind, window and slide whose ``k`` is at least its own,
    else one that has seen no arrival yet (its ``k`` raised), else starts one at the current
    arrival; a family goes with its last query.  ``add`` returns the query's ``since``."""

    def __init__(self) -> None:
        self.families: dict[tuple, list[list]] = {}

    def add(self, handle: int, query: engine.Query, now: int) -> int:
        matching = self.families.setdefault((group_key(query.weights), query.kind, query.window, query.slide), [])
        for family in sorted(matching, key=lambda f: f[1]):
            if family[0] >= query.k:
                family[2].add(handle)
                return family[1]
        for family in matching:
            if family[1] == now:
                family[0] = query.k
                family[2].add(handle)
                return now
        matching.append([query.k, now, {handle}])
        return now

    def remove(self, handle: int) -> None:
        for matching in self.families.values():
            for family in matching:
                if handle in family[2]:
                    family[2].discard(handle)
                    if not family[2]:
                        matching.remove(family)
                    return


def without_measured(stats: dict) -> dict:
    return {key: value for key, value in stats.items() if key != "measured_bytes"}


def drive(queries, ids, t, x, cuts, events=None, restore_every_piece=False) -> int:
    """Feed the stream in pieces ending at ``cuts`` (``events[start]``: adds and removes before
    the piece starting there) and compare every answer with the oracle of its query, ids and
    score bits; a query that started a family mid-stream must equal the whole stream's oracle
    from its slide ``window / slide`` on.  With ``restore_every_piece``, a twin executor is
    restored from its JSON state before every piece and must give the same results and stats.
    Returns the number of answers checked."""
    executor = SharedTopK(queries)
    twin = SharedTopK(queries) if restore_every_piece else None
    families = Families()
    added = {h: [q, 0, families.add(h, q, 0), None] for h, q in executor.queries.items()}
    results = {h: [] for h in added}
    lo = 0
    for cut in cuts:
        for action, arg in (events or {}).get(lo, []):
            if action == "add":
                handle = executor.add(arg)
                added[handle] = [arg, lo, families.add(handle, arg, lo), None]
                results[handle] = []
                assert executor.since(handle) == added[handle][2], f"query {handle} {arg} added at {lo}: since"
                if twin is not None:
                    assert twin.add(arg) == handle
            else:
                executor.remove(arg)
                families.remove(arg)
                added[arg][3] = lo
                if twin is not None:
                    twin.remove(arg)
        if twin is not None:
            twin = SharedTopK.restore(json.loads(json.dumps(twin.to_state())))
            assert without_measured(twin.stats()) == without_measured(executor.stats()), f"stats at {lo}"
        got = executor.process(ids[lo:cut], t[lo:cut], x[lo:cut])
        if twin is not None:
            again = twin.process(ids[lo:cut], t[lo:cut], x[lo:cut])
            assert [(r.query, r.slide, r.end, r.position, r.answer.ids.tolist(), r.answer.scores.tobytes())
                    for r in again] == [(r.query, r.slide, r.end, r.position, r.answer.ids.tolist(),
                                         r.answer.scores.tobytes()) for r in got], f"restored at {lo}"
        for r in got:
            results[r.query].append(r)
        executor.check()
        lo = cut
    checked = 0
    for handle, (query, added_at, since, removed_at) in added.items():
        ends = boundaries(query, t, added_at, lo if removed_at is None else removed_at)
        mine = results[handle]
        assert [(r.slide, r.end) for r in mine] == list(enumerate(ends)), f"query {handle} {query}: slides"
        expected = oracle_answers(query, ids, t, x, since, ends)
        whole = oracle_answers(query, ids, t, x, 0, ends) if since else expected
        for r, want, exact in zip(mine, expected, whole):
            context = f"query {handle} {query} added at {added_at} since {since}, end {r.end}"
            assert r.answer.ids.tolist() == want.ids.tolist(), context
            assert r.answer.scores.tobytes() == want.scores.tobytes(), f"{context}: score bits"
            if r.slide >= query.window // query.slide:
                assert want.ids.tolist() == exact.ids.tolist(), f"{context}: not exact after its warm-up"
            checked += 1
        if removed_at is None and mine:
            latest = executor.topk(handle)
            assert (latest.slide, latest.end, latest.answer.ids.tolist()) == \
                (mine[-1].slide, mine[-1].end, mine[-1].answer.ids.tolist()), f"query {handle}: topk"
    return checked


# ------------------------------------------------------------------------ workloads

def adversarial_stream(m: int, seed: int, times: str = "bursts"):
    """Two features: ties with signed zeros, and a sawtooth; times with bursts or empty slides."""
    rng = np.random.default_rng(seed)
    x = np.column_stack([random_column("signed-zeros", m, rng), random_column("sawtooth", m, rng)])
    return np.arange(m, dtype=np.int64) + 500, random_times(times, m, rng), x


WEIGHTS = [(1.0, 0.0), (1.0, -0.0), (0.0, 0.0), (-1.0, 0.5), (-0.0, -2.0)]
"""Equal vectors written differently ([1, 0] beside [1.0, -0.0]), the zero vector (every score
0: ties everywhere), negative weights."""


def mixed_queries() -> list[engine.Query]:
    """k from 1 to past the window, s = 1 and s = n, windows that are not multiples of each other."""
    return [Q([1, 0], 3, 10, 5), Q((1.0, -0.0), 3, 10, 5), Q((1.0, -0.0), 2, 12, 4, "time"),
            Q((0.0, 0.0), 4, 6, 2), Q((-1.0, 0.5), 50, 9, 3), Q((-0.0, -2.0), 1, 7, 7, "time"),
            Q((1.0, 0.0), 20, 20, 1), Q((1.0, 0.0), 1, 14, 14), Q((-1.0, 0.5), 2, 15, 5, "time")]


@pytest.mark.parametrize("times", ["bursts", "sparse", "equal", "negative"])
def test_every_query_equals_its_oracle_with_equal_weights_written_differently(times):
    """[1, 0] and [1.0, -0.0] rank alike but score 0.0 against -0.0: every answer's scores are
    its own weights' to the bit (they were the first query's of a shared group)."""
    ids, t, x = adversarial_stream(240, seed=len(times), times=times)
    cuts = [1, 3, 10, 11, 12, 50, 97, 100, 101, 180, 240]
    assert drive(mixed_queries(), ids, t, x, cuts) > 200


def test_one_group_per_weights_bit_pattern():
    executor = SharedTopK([Q([1, 0], 1, 4, 2), Q((1.0, 0.0), 2, 4, 2), Q((1.0, -0.0), 1, 4, 2)])
    assert executor.stats()["groups"] == 2 and executor.stats()["families"] == 2


def test_queries_added_and_removed_at_before_and_after_slide_boundaries():
    """Adds and removes at a count boundary (60), one before (59) and one after (61), between
    time boundaries; the last query of a group removed and an identical one added again (a new
    family, warm-up); a window larger than any the group kept (warm-up, then exact from its
    slide window / slide on); a query joining a family (whole window at once)."""
    ids, t, x = adversarial_stream(400, seed=4, times="sparse")
    events = {
        59: [("add", Q((1.0, 0.0), 2, 10, 5)),                   # joins query 0's family: k 2 <= 3
             ("add", Q((1.0, 0.0), 4, 40, 8))],                  # a window larger than the group kept
        60: [("remove", 3), ("add", Q((0.0, 0.0), 4, 6, 2))],    # the zero group's last query, added again
        61: [("remove", 0), ("add", Q((1.0, -0.0), 5, 12, 4, "time"))],   # k above its family's
        150: [("remove", 1), ("remove", 9), ("add", Q((1.0, 0.0), 3, 10, 5))],
        151: [("remove", 10), ("add", Q((-1.0, 0.5), 1, 9, 3))],
        300: [("remove", 2), ("remove", 12), ("add", Q((1.0, -0.0), 2, 12, 4, "time"))],
    }
    cuts = [30, 59, 60, 61, 62, 100, 150, 151, 152, 200, 300, 301, 400]
    assert drive(mixed_queries(), ids, t, x, cuts, events, restore_every_piece=True) > 500


def random_case(seed: int):
    """Up to 8 queries over up to 2 weight vectors (signed zeros among the weights), adds and
    removes before random pieces (every arrival a piece in half the cases)."""
    rng = np.random.default_rng(seed)
    d = int(rng.integers(1, 3))
    vectors = [tuple(float(rng.choice([-1.0, -0.5, 0.0, -0.0, 0.5, 1.0, 2.0])) for _ in range(d))
               for _ in range(rng.integers(1, 3))]

    def query():
        s = int(rng.choice([1, 1, 2, 3, 4, 5, 7]))
        n = s * int(rng.choice([1, 1, 2, 3, 5]))
        k = int(rng.integers(1, n + 5)) if rng.random() < 0.5 else int(rng.integers(1, 4))
        kind = str(rng.choice(["count", "time"]))
        return Q(vectors[rng.integers(len(vectors))], k=k, window=n, slide=s, kind=kind)

    queries = [query() for _ in range(rng.integers(0, 8))]
    m = int(rng.choice([5, 40, 120, 250]))
    x = np.column_stack([random_column(str(rng.choice(COLUMNS)), m, rng) for _ in range(d)])
    t = random_times(str(rng.choice(TIMES_ALL)), m, rng)
    if rng.random() < 0.5:
        cuts = list(range(1, m + 1))
    else:
        cuts = sorted(set(rng.integers(1, m + 1, rng.integers(1, 30)).tolist()) | {m})
    events = add_remove_events(rng, [0] + cuts[:-1], len(queries), query, events_per_piece=(1, 3), chance=0.3)
    return queries, (np.arange(m, dtype=np.int64) + 1000, t, x), cuts, events


def test_restored_at_every_piece_continues_with_equal_answers_and_stats():
    """These seeds remove a family and add one later: the new one took the freed slot, which a
    restored executor (families rebuilt in the state's order) did not, so it visited families
    in another order and its answer_skips and lbp_skips drifted from the uninterrupted run's."""
    for seed in (10, 26, 32, 44, 46, 50, 52):
        queries, (ids, t, x), cuts, events = random_case(seed)
        drive(queries, ids, t, x, cuts, events, restore_every_piece=True)


def test_seeded_random_workloads_against_the_oracle():
    for seed in range(100, 130):
        queries, (ids, t, x), cuts, events = random_case(seed)
        drive(queries, ids, t, x, cuts, events, restore_every_piece=seed % 3 == 0)


def test_k_far_beyond_the_window_and_monotone_scores():
    m = 150
    ids, t = np.arange(m, dtype=np.int64), np.arange(m, dtype=np.int64) // 4
    for column in (np.arange(m, dtype=np.float64), -np.arange(m, dtype=np.float64), np.zeros(m)):
        x = column[:, None]
        queries = [Q([1.0], 10 ** 12, 12, 3), Q([1.0], 2 ** 63 - 1, 8, 8, "time"), Q([-1.0], 1, 1, 1),
                   Q([1.0], 13, 12, 12)]
        assert drive(queries, ids, t, x, [1, 2, 48, 49, 100, 150], restore_every_piece=True) > 150


# ------------------------------------------------------------------------ tampered states

def sample_state() -> dict:
    rng = np.random.default_rng(1)
    m = 120
    executor = SharedTopK([Q([1, 0], 3, 10, 5), Q([1, 0], 5, 12, 4, "time"), Q([0.5, 0.5], 2, 6, 3)])
    executor.process(np.arange(m)[:77], np.sort(rng.integers(0, 40, m))[:77], rng.random((m, 2))[:77])
    return executor.to_state()


def family(state: dict) -> dict:
    return state["data"]["groups"][0]["families"][0]


def group(state: dict) -> dict:
    return state["data"]["groups"][0]


TAMPERED = {  # each was accepted, or raised something else than StateError, before
    "slide 0": (lambda s: family(s).update(slide=0), "another kind, window or slide"),
    "a window of 10**15 slides": (lambda s: family(s).update(window=10 ** 15), "another kind, window or slide"),
    "a window that is not its queries'": (lambda s: family(s).update(window=20), "another kind, window or slide"),
    "current beyond int64": (lambda s: family(s).update(current=2 ** 70), "OverflowError"),
    "a mark beyond int64": (lambda s: group(s)["objects"][0][3][0].__setitem__(1, 2 ** 70), "OverflowError"),
    "since below 0": (lambda s: family(s).update(since=-1), "since arrival -1, outside 0..77"),
    "next_seq below the records'": (lambda s: s["data"].update(next_seq=5), "seq out of range"),
    "a count boundary left unanswered": (lambda s: family(s).update(current=10), "count boundary left unanswered"),
    "dimensions": (lambda s: s["data"].update(dimensions=5), "dimensions"),
    "a negative answer count": (lambda s: s["data"]["answered"].update({"0": -1}), "query 0: answers"),
    "a latest answer of no query": (lambda s: s["data"]["last"].update({"9": s["data"]["last"]["0"]}),
                                    "a latest answer of no query"),
    "next_handle at an existing handle": (lambda s: s["data"].update(next_handle=2), "at or above the next one"),
    "a group twice": (lambda s: s["data"]["groups"].append(copy.deepcopy(group(s))), "two groups"),
    "a query twice in its family": (lambda s: family(s).update(queries=[0, 0]), "out of order or twice"),
    "a query listed twice": (lambda s: s["query"]["queries"].append(s["query"]["queries"][0]), "listed twice"),
    "parameters": (lambda s: s.update(params={"prefilter": True}), "takes no parameters"),
    "an infinite score": (lambda s: group(s)["scores"].__setitem__(0, "inf"), "score or seq out of range"),
    "a negative lbp rank": (lambda s: family(s)["windows"][0].__setitem__(1, -1), "lowest record is not in the list"),
    "objects truncated": (lambda s: group(s).update(objects=group(s)["objects"][:-1]), "differ in number"),
}


@pytest.mark.parametrize("case", sorted(TAMPERED))
def test_a_tampered_state_is_refused_with_a_state_error(case):
    mutate, message = TAMPERED[case]
    state = sample_state()
    assert SharedTopK.restore(copy.deepcopy(state)).to_state() == state
    mutate(state)
    state["checksum"] = pack(NAME, state["query"], state["params"], state["data"])["checksum"]
    with pytest.raises(StateError, match="corrupt") as error:
        SharedTopK.restore(json.loads(json.dumps(state)))
    assert message in str(error.value)


def test_a_truncated_state_is_refused():
    state = sample_state()
    for key in ("data", "checksum", "query"):
        broken = {name: value for name, value in state.items() if name != key}
        with pytest.raises(StateError, match=f"missing {key}"):
            SharedTopK.restore(broken)
    data = dict(state["data"])
    del data["groups"]
    broken = {**state, "data": data}
    broken["checksum"] = pack(NAME, broken["query"], broken["params"], data)["checksum"]
    with pytest.raises(StateError, match="KeyError: 'groups'"):
        SharedTopK.restore(broken)


def test_a_state_mixing_zero_signs_in_one_group_still_restores():
    """States written before groups were keyed by the weights' bits may hold a [1, -0.0] query
    in the [1, 0] group; they restore and continue as written, and a query added since goes to
    a group of its own weights."""
    rng = np.random.default_rng(2)
    ids, t, x = np.arange(60), np.arange(60), np.column_stack([rng.choice([0.0, -0.0, 1.0], 60), rng.random(60)])
    executor = SharedTopK([Q([1.0, 0.0], 2, 6, 3), Q([1.0, 0.0], 1, 6, 3)])
    executor.process(ids[:30], t[:30], x[:30])
    state = executor.to_state()
    state["query"]["queries"][1]["weights"] = [1.0, -0.0]
    state = pack(NAME, state["query"], state["params"], state["data"])
    restored = SharedTopK.restore(json.loads(json.dumps(state)))
    assert restored.queries[1].weights == (1.0, -0.0) and restored.stats()["groups"] == 1
    added = restored.add(Q([1.0, -0.0], 2, 6, 3))
    assert restored.stats()["groups"] == 2
    got = restored.process(ids[30:], t[30:], x[30:])
    want = executor.process(ids[30:], t[30:], x[30:])
    assert [(r.query, r.end, r.answer.ids.tolist()) for r in got if r.query != added] == \
        [(r.query, r.end, r.answer.ids.tolist()) for r in want]
    restored.check()


def test_since_of_an_unknown_handle_is_a_value_error():
    executor = SharedTopK([Q([1.0], 1, 2, 1)])
    executor.remove(0)
    with pytest.raises(ValueError, match="no query with handle 0"):
        executor.since(0)


# ------------------------------------------------------------------------ memory

def traced(queries, ids, t, x):
    """The executor's stats after one call and the bytes tracemalloc sees it hold (the call's
    answers, returned to the caller, dropped)."""
    SharedTopK(queries).process(ids[:50], t[:50], x[:50])
    gc.collect()
    tracemalloc.start()
    try:
        executor = SharedTopK(queries)
        executor.answers(ids, t, x)
        gc.collect()
        alive = tracemalloc.get_traced_memory()[0]
        stats = executor.stats()
        del executor
        gc.collect()
        return stats, alive - tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("count", [1, 48, 1000])
def test_measured_bytes_is_within_a_quarter_of_tracemalloc(count):
    """The latest answers are kept in arrays of their own: as views, they kept the whole call's
    answers alive (here 20,000 slides of k = 20: 9.6 MB against the executor's own 0.1 MB),
    uncounted; the workload's Python objects are counted too (1,000 queries: 0.8 MB)."""
    rng = np.random.default_rng(5)
    m = 20_000
    ids, t, x = np.arange(m), np.arange(m) // 3, rng.random((m, 2))
    windows = [(40, 1), (60, 20), (90, 30), (200, 100)]
    queries = [Q([(1.0, 0.5), (0.25, 1.0)][i % 2], k=[20, 1, 5, 40][i % 4], window=windows[i % 4][0],
                 slide=windows[i % 4][1], kind="count" if i % 3 else "time") for i in range(count)]
    stats, held = traced(queries, ids, t, x)
    assert abs(stats["measured_bytes"] - held) <= 0.25 * held, (stats["measured_bytes"], held)


# ------------------------------------------------------------------------ the command line

def test_run_many_equals_the_unshared_run_with_equal_weights_written_differently(tmp_path):
    """Through ``run-many``, [1, 0] and [1.0, -0.0] wrote the first query's zero signs for both;
    one MinTopK per query writes each query's own."""
    rng = np.random.default_rng(3)
    m = 40
    x = np.column_stack([rng.choice([0.0, -0.0, 1.0], m), rng.choice([0.0, -0.0, -1.0], m)])
    source = write_stream(tmp_path / "s.csv", np.arange(m), np.arange(m), x)
    spec = tmp_path / "q.json"
    spec.write_text(json.dumps([{"weights": [1, 0], "k": 2, "window": 4, "slide": 1},
                                {"weights": [1.0, -0.0], "k": 3, "window": 4, "slide": 2},
                                {"weights": [-0.0, 1], "k": 2, "window": 6, "slide": 3, "kind": "time"},
                                {"weights": [0, 1], "k": 2, "window": 6, "slide": 3, "kind": "time"}]))
    outputs = []
    for algorithm in ("shared", "mintopk"):
        output = tmp_path / f"{algorithm}.jsonl"
        done = run_cli("run-many", "--queries", str(spec), "--input", str(source), "--output", str(output),
                       "--algorithm", algorithm)
        assert done.returncode == 0, done.stderr
        outputs.append(output.read_text())
    assert "-0.0" in outputs[1] and outputs[0] == outputs[1]


def test_stats_count_the_rows_once_and_the_work_per_group():
    """``arrivals`` is the rows taken (it was summed over the groups: 300 for 100 rows and three
    weight vectors, and 0 once every query was removed); ``scored`` is the groups' share."""
    rng = np.random.default_rng(6)
    executor = SharedTopK([Q([1.0, 0.0], 3, 10, 5), Q([0.0, 1.0], 2, 6, 3), Q([1.0, 1.0], 1, 4, 4, "time")])
    executor.process(np.arange(100), np.arange(100), rng.random((100, 2)))
    stats = executor.stats()
    assert (stats["arrivals"], stats["scored"]) == (100, 300)
    assert stats["scored"] == stats["prefiltered"] + stats["discarded"] + stats["inserted"]
    executor.remove(1)
    executor.process(np.arange(100, 150), np.arange(100, 150), rng.random((50, 2)))
    assert (executor.stats()["arrivals"], executor.stats()["scored"]) == (150, 300)  # the groups present
    restored = SharedTopK.restore(json.loads(json.dumps(executor.to_state())))
    assert restored.stats() == executor.stats()
    for handle in (0, 2):
        executor.remove(handle)
    assert executor.stats()["arrivals"] == 150


def test_a_state_written_before_arrivals_was_kept_restores():
    rng = np.random.default_rng(7)
    executor = SharedTopK([Q([1.0], 2, 6, 3), Q([-1.0], 1, 4, 2)])
    executor.process(np.arange(40), np.arange(40), rng.random(40))
    state = executor.to_state()
    del state["data"]["arrivals"]
    state = pack(NAME, state["query"], state["params"], state["data"])
    restored = SharedTopK.restore(json.loads(json.dumps(state)))
    assert restored.stats() == executor.stats() and restored.stats()["arrivals"] == 40


@pytest.mark.parametrize("call,message", [
    (lambda s: s.process([4], [2**64], [1.0]), "t must be int64 integers"),
    (lambda s: s.process([2**64], [3], [1.0]), "ids must be int64 integers"),
    (lambda s: s.process([4], [3], [1.0], seq=[2**64]), "seq must be int64 integers"),
    (lambda s: s.process([4], [3], [object()]), "features must be numbers"),
    (lambda s: s.process([4], [3], [1.0], stream_end=2**63), "stream_end must be an int64 integer, got 9223372036854775808"),
    (lambda s: s.process([4], [3], [1.0], stream_end=True), "stream_end must be an int64 integer, got True"),
    (lambda s: s.process([4], [3], [1.0], time_now="5"), "time_now must be an int64 integer, got '5'"),
])
def test_values_numpy_cannot_convert_are_value_errors_that_change_nothing(call, message):
    """They raised OverflowError, TypeError or numpy's UFuncTypeError (the engine's contract:
    bad arguments raise ValueError)."""
    executor = SharedTopK([Q([1.0], 2, 4, 2), Q([1.0], 1, 6, 3, "time")])
    executor.process([1, 2, 3], [0, 1, 2], [1.0, 2.0, 3.0])
    before = executor.to_state()
    with pytest.raises(ValueError, match=message):
        call(executor)
    assert executor.to_state() == before


@pytest.mark.parametrize("rows,message", [
    (([1], [2**63], [1.0]), "t must be int64 integers"),
    (([-2**63 - 1], [0], [1.0]), "ids must be int64 integers"),
    (([1], [0], [[object()]]), "features must be numbers"),
])
def test_engine_slides_refuses_them_as_value_errors_too(rows, message):
    with pytest.raises(ValueError, match=message):
        list(engine.slides(rows, Q([1.0], 1, 2, 1)))
