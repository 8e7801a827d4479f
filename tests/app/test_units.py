"""Unit tests of the dashboard's modules, without Streamlit running."""

from __future__ import annotations

import doctest

import altair as alt
import numpy as np
import pandas as pd
import pytest

import engine
from app import charts, data, session, tables
from engine import metrics

from .conftest import oracle_answers


def answer(ids, scores) -> engine.Answer:
    return engine.Answer(np.asarray(ids, np.int64), np.asarray(scores, np.float64), np.asarray(ids, np.int64))


@pytest.mark.parametrize("module", [charts, data, session, tables])
def test_docstring_examples(module):
    result = doctest.testmod(module)
    assert result.failed == 0


# charts ---------------------------------------------------------------------------------------

HISTORY = pd.DataFrame({"slide": [0, 1, 0, 1], "algorithm": ["oracle", "oracle", "mintopk", "mintopk"],
                        "precision": [1.0, 1.0, 1.0, 0.5], "ms": [0.1, 0.2, 0.05, 0.04]})


def test_over_time_draws_one_line_per_algorithm():
    chart = charts.over_time(HISTORY, "precision", "Precision")
    assert isinstance(chart, alt.Chart)
    spec = chart.to_dict()
    assert spec["mark"]["type"] == "line" and spec["title"] == "Precision"
    assert spec["encoding"]["x"]["field"] == "slide"
    assert spec["encoding"]["y"]["field"] == "precision"
    assert spec["encoding"]["color"]["field"] == "algorithm"


def test_over_time_marks_a_slide_with_a_rule():
    spec = charts.over_time(HISTORY, "ms", "Time", at=1).to_dict()
    line, rule = spec["layer"]
    assert line["mark"]["type"] == "line" and rule["mark"]["type"] == "rule"
    assert spec["datasets"][rule["data"]["name"]] == [{"slide": 1}]


def test_window_scores_layers_points_candidates_and_answers():
    window = pd.DataFrame({"t": [0, 1, 2, 3], "score": [0.1, 0.9, 0.4, 0.7]})
    candidates = pd.DataFrame({"algorithm": ["mintopk"] * 3, "t": [1, 2, 3], "score": [0.9, 0.4, 0.7]})
    answers = pd.DataFrame({"algorithm": ["oracle", "mintopk"], "rank": [1, 1], "t": [1, 1], "score": [0.9, 0.9]})
    spec = charts.window_scores(window, candidates, answers, "t (ms)").to_dict()
    points, kept, marks = spec["layer"]
    assert points["mark"]["type"] == "circle" and marks["mark"]["type"] == "point"
    assert len(spec["datasets"][kept["data"]["name"]]) == 3
    assert marks["encoding"]["shape"]["field"] == "algorithm"
    assert points["encoding"]["x"]["title"] == "t (ms)"
    assert len(spec["datasets"][marks["data"]["name"]]) == 2


def test_benchmark_bars_group_algorithms_per_case():
    frame = pd.DataFrame({"algorithm": ["oracle", "mintopk"], "case": ["stock", "stock"],
                          "objects_per_s": [1e4, 1e6], "avg_candidates": [1000.0, 12.0]})
    spec = charts.benchmark_bars(frame, "objects_per_s", "Throughput").to_dict()
    assert spec["mark"]["type"] == "bar"
    assert spec["encoding"]["x"]["field"] == "case" and spec["encoding"]["xOffset"]["field"] == "algorithm"


# metrics and tables -------------------------------------------------------------------------

def test_metrics_of_an_exact_answer():
    exact = answer([3, 1, 2], [0.9, 0.5, 0.1])
    assert metrics.precision(exact, exact) == 1.0
    assert metrics.relative_error(exact, exact) == 0.0
    assert not metrics.disagreements(exact, exact).any()


def test_equal_scores_with_other_ids_agree():
    exact = answer([3, 1], [0.9, 0.5])
    tied = answer([3, 7], [0.9, 0.5 * (1 + 1e-14)])
    assert not metrics.disagreements(exact, tied).any()
    assert metrics.precision(exact, tied) == 0.5


def test_short_and_empty_answers():
    exact = answer([3, 1], [0.9, 0.5])
    assert metrics.disagreements(exact, answer([3, 1, 4], [0.9, 0.5, 0.2])).tolist() == [False, False, True]
    assert metrics.precision(exact, engine.Answer.empty()) == 0.0
    assert metrics.relative_error(exact, engine.Answer.empty()) == 1.0
    assert metrics.precision(engine.Answer.empty(), engine.Answer.empty()) == 1.0


def test_answer_frame_marks_disagreements_and_styles_them():
    exact = answer([3, 1], [0.9, 0.5])
    frame = tables.answer_frame(answer([3, 8, 4], [0.9, 0.4, 0.2]), exact)
    assert frame.columns.tolist() == ["rank", "id", "score", "exact"]
    assert frame["exact"].tolist() == ["✓", "✗ 1", "✗ none"]
    style = tables.styled(frame).to_html().split("</style>")[0]
    assert "_row1_col0" in style and "_row2_col3" in style and "_row0_" not in style
    assert tables.answer_frame(exact, None)["exact"].tolist() == ["", ""]


# session ------------------------------------------------------------------------------------

TRACE = data.synthetic_uniform(rows=600, dimensions=2, seed=11)


@pytest.mark.parametrize("kind", ["count", "time"])
def test_live_run_matches_the_oracle_and_replays_to_the_same_rows(kind):
    q = engine.Query(weights=[0.5, -1.0], k=4, window=60, slide=20, kind=kind)
    run = session.LiveRun(TRACE, session.Setup("t", q, ("mintopk", "pretopk")))
    exact = oracle_answers(TRACE.arrays, q)
    assert run.step(5) == 5
    for name in ("mintopk", "pretopk"):
        assert run.answers[name].ids.tolist() == exact[4].ids.tolist()
    frame = run.metrics_frame(last=3)
    assert frame["slide"].tolist() == [2, 2, 3, 3, 4, 4] and (frame["precision"] == 1.0).all()
    assert (frame["ms"] == frame["seconds"] * 1e3).all()

    again = session.LiveRun(TRACE, session.Setup("t", q.with_weights([1.0, 1.0]), ("mintopk",)))
    assert again.replay(run.rows) == 5 and again.rows == run.rows and again.end == run.end


def test_live_run_to_the_end_and_window_frame():
    q = engine.Query(weights=[1.0, 0.0], k=3, window=200, slide=100)
    run = session.LiveRun(TRACE, session.Setup("t", q, ("oracle",)))
    assert run.window_frame(limit=10).empty
    assert run.step(100) == 6 and run.done and run.rows == 600
    window = run.window_frame(limit=50)
    assert len(window) == 50 and window["seq"].iloc[0] == 400 and window["seq"].iloc[-1] == 599
    np.testing.assert_array_equal(window["score"], TRACE.x[window["seq"], 0])
    marks = run.answers_frame()
    assert marks["seq"].tolist() == run.answers["oracle"].seq.tolist()
    np.testing.assert_array_equal(marks["t"], TRACE.t[marks["seq"]])
    assert run.candidates_frame(limit=50).empty


def test_candidates_frame_shows_each_algorithms_candidates_but_not_the_oracles():
    q = engine.Query(weights=[1.0, 0.0], k=3, window=200, slide=100)
    run = session.LiveRun(TRACE, session.Setup("t", q, ("oracle", "mintopk")))
    run.step(4)
    frame = run.candidates_frame(limit=1000)
    assert set(frame["algorithm"]) == {"mintopk"}
    assert sorted(frame["seq"].tolist()) == sorted(run.engines["mintopk"].candidates().tolist())
    np.testing.assert_array_equal(frame["score"], TRACE.x[frame["seq"], 0])


def test_live_run_rejects_unknown_parameters():
    q = engine.Query(weights=[1.0, 0.0], k=3, window=200, slide=100)
    with pytest.raises(ValueError, match="unknown parameter"):
        session.LiveRun(TRACE, session.Setup("t", q, ("mintopk",), {"mintopk": {"bogus": 1}}))


# data ---------------------------------------------------------------------------------------

def test_db_path_precedence(monkeypatch):
    monkeypatch.delenv("TOPK_DB", raising=False)
    assert str(data.db_path([])) == data.DEFAULT_DB
    monkeypatch.setenv("TOPK_DB", "/tmp/env.duckdb")
    assert str(data.db_path(["-q"])) == "/tmp/env.duckdb"
    assert str(data.db_path(["--db", "/tmp/arg.duckdb"])) == "/tmp/arg.duckdb"
    assert str(data.db_path(["--d", "/tmp/abbrev.duckdb"])) == "/tmp/env.duckdb"


def test_load_trace_reads_the_dataset_parquet(filled_db, trace):
    loaded = data.load_trace(filled_db, "demo")
    assert loaded.features == ("notional", "size") and loaded.t_unit == "ms"
    np.testing.assert_array_equal(loaded.ids, trace.ids)
    np.testing.assert_array_equal(loaded.t, trace.t)
    np.testing.assert_array_equal(loaded.x, trace.x)
    assert data.load_trace(filled_db, data.SYNTHETIC).name == data.SYNTHETIC


def test_missing_things_raise_friendly_messages(filled_db, tmp_path):
    with pytest.raises(data.MissingData, match="No database at .* `make run`"):
        data.datasets(tmp_path / "nope.duckdb")
    with pytest.raises(data.MissingData, match="Dataset `other` is not in"):
        data.load_trace(filled_db, "other")
    with pytest.raises(data.MissingData, match="not filled in yet.*snapshots"):
        data.query(filled_db, "SELECT * FROM snapshots")
    (tmp_path / "demo.parquet").unlink()
    with pytest.raises(data.MissingData, match="Parquet file .* of dataset `demo` is missing"):
        data.load_trace(filled_db, "demo")
