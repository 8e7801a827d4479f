"""Algorithms that allocate a row for each of the ``window / slide`` windows an object takes part
in (pretopk, mintopk, the shared executor) refuse a ratio beyond
``engine.query.MAX_WINDOWS_PER_OBJECT`` when they are created, naming the parameter and the
limit: they raised numpy's ``MemoryError`` ("Unable to allocate 7.11 PiB") for window 10**15,
slide 1, and at window / slide = 10**9 allocated 8 to 16 GB before the first object."""

import numpy as np
import pytest

import engine
from engine import cli
from engine.multi import SharedTopK
from engine.query import MAX_WINDOWS_PER_OBJECT

LIMIT_TEXT = f"window / slide must be at most {MAX_WINDOWS_PER_OBJECT:,}"
BEYOND = [(10**15, 1), ((MAX_WINDOWS_PER_OBJECT + 1) * 3, 3), (2**62, 1)]


def rows(n: int = 6):
    return np.arange(n), np.arange(n), np.arange(n, dtype=float)[::-1].copy()


@pytest.mark.parametrize("kind", ["count", "time"])
@pytest.mark.parametrize("window,slide", BEYOND)
@pytest.mark.parametrize("name", ["pretopk", "mintopk"])
def test_an_algorithm_with_a_row_per_window_refuses_a_huge_ratio(name, window, slide, kind):
    query = engine.Query(weights=[1.0], k=2, window=window, slide=slide, kind=kind)
    with pytest.raises(ValueError, match=f"^{name} keeps a row per window .*{LIMIT_TEXT}, got "
                                         f"{window // slide:,} \\(window {window}, slide {slide}\\)"):
        engine.create(name, query)


@pytest.mark.parametrize("name", ["pretopk", "mintopk"])
def test_a_saved_state_of_a_huge_ratio_is_refused_as_a_state_error(name):
    small = engine.Query(weights=[1.0], k=2, window=10, slide=1)
    state = engine.create(name, small).to_state()
    huge = engine.Query(weights=[1.0], k=2, window=10**15, slide=1)
    with pytest.raises(engine.StateError, match=LIMIT_TEXT):
        engine.restore(engine.jsondata.pack(name, huge.to_dict(), state["params"], state["data"]))


@pytest.mark.parametrize("name", ["oracle", "kskyband", "tma", "sma", "sao"])
@pytest.mark.parametrize("kind", ["count", "time"])
def test_algorithms_without_a_row_per_window_still_take_a_huge_ratio(name, kind):
    query = engine.Query(weights=[1.0], k=2, window=10**15, slide=1, kind=kind)
    algorithm = engine.create(name, query)
    for batch in engine.slides(rows(), query):
        algorithm.process(batch)
    assert algorithm.topk().ids.tolist() == [0, 1]


@pytest.mark.parametrize("kind", ["count", "time"])
@pytest.mark.parametrize("window,slide", BEYOND)
def test_the_shared_executor_refuses_a_huge_ratio(window, slide, kind):
    query = engine.Query(weights=[1.0], k=2, window=window, slide=slide, kind=kind)
    with pytest.raises(ValueError, match=f"^the shared executor keeps a row per window .*{LIMIT_TEXT}"):
        SharedTopK([query])


def test_adding_a_huge_ratio_mid_stream_is_refused_and_changes_nothing():
    """Refused before the workload changes: a new weights group was left without queries."""
    small = engine.Query(weights=[1.0], k=2, window=4, slide=2)
    steady, refused = SharedTopK([small]), SharedTopK([small])
    ids, t, x = rows(10)
    steady.process(ids[:5], t[:5], x[:5])
    refused.process(ids[:5], t[:5], x[:5])
    with pytest.raises(ValueError, match=LIMIT_TEXT):
        refused.add(engine.Query(weights=[2.0], k=2, window=10**15, slide=1))
    refused.check()
    assert refused.queries == steady.queries
    assert refused.to_state()["data"] == steady.to_state()["data"]
    later = [(r.query, r.slide, r.answer.ids.tolist()) for r in refused.process(ids[5:], t[5:], x[5:])]
    assert later == [(r.query, r.slide, r.answer.ids.tolist()) for r in steady.process(ids[5:], t[5:], x[5:])]
    assert refused.add(small) == 1


def test_a_saved_workload_with_a_huge_ratio_is_refused_as_a_state_error():
    state = SharedTopK([engine.Query(weights=[1.0], k=2, window=10, slide=1)]).to_state()
    workload = state["query"]
    workload["queries"][0]["window"] = 10**15
    with pytest.raises(engine.StateError, match=LIMIT_TEXT):
        SharedTopK.restore(engine.jsondata.pack("multi", workload, {}, state["data"]))


def refused(capsys, tmp_path, *arguments: str) -> str:
    status = cli.main(list(arguments))
    message = capsys.readouterr().err
    assert status == 2 and message.startswith("error: ") and len(message.splitlines()) == 1, message
    assert not (tmp_path / "out.jsonl").exists()
    return message


@pytest.mark.parametrize("kind", ["count", "time"])
@pytest.mark.parametrize("name", ["pretopk", "mintopk"])
def test_run_refuses_a_huge_ratio_with_one_line(tmp_path, capsys, name, kind):
    source = tmp_path / "data.csv"
    source.write_text("id,t,x\n1,1,0.5\n2,2,0.25\n")
    message = refused(capsys, tmp_path, "run", "--algorithm", name, "--k", "1", "--window", str(10**15),
                      "--slide", "1", "--kind", kind, "--input", str(source), "--output", str(tmp_path / "out.jsonl"))
    assert f"cannot create {name}: {name} keeps a row per window" in message and LIMIT_TEXT in message


@pytest.mark.parametrize("kind", ["count", "time"])
@pytest.mark.parametrize("algorithm", [None, "pretopk", "mintopk"])
def test_run_many_names_the_query_of_a_huge_ratio(tmp_path, capsys, algorithm, kind):
    source = tmp_path / "data.csv"
    source.write_text("id,t,x\n1,1,0.5\n2,2,0.25\n")
    queries = tmp_path / "q.json"
    queries.write_text(f'[{{"weights": [1], "k": 1, "window": 2, "slide": 1, "kind": "{kind}"}},\n'
                       f' {{"weights": [1], "k": 1, "window": {10**15}, "slide": 1, "kind": "{kind}"}}]')
    chosen = ["--algorithm", algorithm] if algorithm else []
    message = refused(capsys, tmp_path, "run-many", "--queries", str(queries), *chosen, "--input", str(source),
                      "--output", str(tmp_path / "out.jsonl"))
    holder = f"cannot create {algorithm}: {algorithm}" if algorithm else "the shared executor"
    assert f"{queries}: query 1: {holder} keeps a row per window" in message and LIMIT_TEXT in message


@pytest.mark.parametrize("name", ["pretopk", "mintopk", "multi"])
def test_a_replay_config_with_a_huge_ratio_is_refused_before_spark_starts(name):
    """The replay's plan creates every algorithm for every query: it passed numpy's MemoryError up."""
    from pipelines.errors import InputError
    from pipelines.replay_config import parse_config

    queries = [{"weights": [1.0], "k": 1, "window": 10**15, "slide": 1, "kind": "count"}]
    with pytest.raises(InputError, match=f"config: algorithm 0 \\({name}\\): .*{LIMIT_TEXT}"):
        parse_config({"name": "x", "dataset": "d", "queries": queries, "algorithms": [{"name": name}]}, ["x"])
