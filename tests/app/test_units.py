"""Unit tests of the dashboard's modules, without Streamlit running."""

from __future__ import annotations

import doctest
import json

import altair as alt
import numpy as np
import pandas as pd
import pytest

import engine
from app import bench_view, charts, data, live_state, presets, session, tables, units, watchlist_state
from engine import metrics

from .conftest import oracle_answers


def answer(ids, scores) -> engine.Answer:
    return engine.Answer(np.asarray(ids, np.int64), np.asarray(scores, np.float64), np.asarray(ids, np.int64))


@pytest.mark.parametrize("module", [bench_view, charts, data, live_state, presets, session, tables, units,
                                    watchlist_state])
def test_docstring_examples(module):
    result = doctest.testmod(module)
    assert result.failed == 0


# playback pace ----------------------------------------------------------------------------------

def test_a_tick_processes_the_speed_times_its_real_length():
    """A tick lasts as long as the browser takes to draw the last one: at 200 slides/s a 3 s tick owes 600
    slides, not 200 (a heavy setup played at 7 objects/s of the 200 asked)."""
    assert live_state.tick_work(200, 3.0)[0] == 600
    assert live_state.tick_work(200, 0.4) == (200, live_state.BUDGET)  # never less than one tick's worth
    assert live_state.tick_work(0.5, 1.0)[0] == 1
    slides, budget = live_state.tick_work(200, 3600.0)  # a tab shown again after an hour
    assert slides == 200 * live_state.CATCH_UP and budget == live_state.MAX_BUDGET
    assert live_state.tick_work(200, 3.0)[1] == 3.0 * live_state.ENGINE_SHARE  # slow drawing leaves the engines time


def test_the_pace_caption_says_when_the_machine_is_the_limit():
    kept_up = live_state.pace_caption(200, 600, 600, 600, 3.0, 1.2, 1.5)
    assert kept_up.startswith("Playing at 200 slides/s of the 200 asked (200 objects/s;") and "limit" not in kept_up
    short = live_state.pace_caption(200, 150, 600, 150, 3.0, 1.5, 1.5)
    assert short.startswith("Playing at 50 slides/s of the 200 asked (50 objects/s;")
    assert short.endswith("the machine is the limit: the engines processed 150 of the 600 slides due in their 1.50 s.")


# charts ---------------------------------------------------------------------------------------

def test_thinned_history_draws_a_few_hundred_slides_per_line_ending_at_the_latest():
    """Ten algorithms over 1,000 slides were 10,000 points per chart, redrawn by the browser every tick."""
    slides = np.arange(3, 1003)
    history = pd.DataFrame({"slide": np.repeat(slides, 10), "algorithm": np.tile([f"a{i}" for i in range(10)], 1000),
                            "ms": 1.0})
    thinned = charts.thin_slides(history, 150)
    per_line = thinned.groupby("algorithm")["slide"].nunique()
    assert per_line.nunique() == 1 and 100 < per_line.iloc[0] <= 150  # every 7th slide and the latest
    assert thinned["slide"].max() == 1002 and sorted(set(thinned["slide"]))[:2] == [7, 14]
    later = charts.thin_slides(history[history["slide"] > 3], 150)  # one tick later: the same slides stay drawn
    assert set(later["slide"]) - {1002} == set(thinned["slide"]) - {1002}
    assert charts.thin_slides(history[history["slide"] < 100], 150).equals(history[history["slide"] < 100])
    assert charts.thin_slides(history.iloc[:0], 150).empty



HISTORY = pd.DataFrame({"slide": [0, 1, 0, 1], "algorithm": ["oracle", "oracle", "mintopk", "mintopk"],
                        "precision": [1.0, 1.0, 1.0, 0.5], "ms": [0.1, 0.2, 0.05, 0.04],
                        "candidates": [1000, 2000, 12, 0], "bytes": [8000, 16000, 96, 96],
                        "measured_bytes": [9000, 17000, 400, 420]})


def test_over_time_draws_one_line_per_algorithm_with_the_metric_definition():
    chart = charts.over_time(HISTORY, "precision")
    assert isinstance(chart, alt.Chart)
    spec = chart.to_dict()
    assert spec["mark"]["type"] == "line" and spec["title"]["text"] == "Precision"
    assert spec["encoding"]["x"]["field"] == "slide"
    assert spec["encoding"]["y"]["field"] == "precision"
    assert spec["encoding"]["color"]["field"] == "algorithm"
    tips = [t["field"] for t in spec["encoding"]["tooltip"]]
    assert "definition" in tips


def test_log_axes_have_readable_ticks_and_drop_zeros():
    spec = charts.over_time(HISTORY, "candidates", log=True).to_dict()
    y = spec["encoding"]["y"]
    assert y["scale"]["type"] == "log" and y["axis"]["values"] == [10, 100, 1000, 10000]
    assert len(spec["datasets"][spec["data"]["name"]]) == 3  # the 0 cannot sit on a log axis
    small = charts.over_time(HISTORY, "ms", log=True).to_dict()["encoding"]["y"]["axis"]
    assert small["format"] == ",~g"  # 0.05 ms, never "50m"


def test_charts_over_time_hold_only_the_columns_they_draw():
    """The Live page hands them its whole history (eleven columns per slide and algorithm, every tick):
    with every column and the metric's definition in every row, each chart was ~250 kB to send."""
    trace = data.synthetic_uniform(rows=2000)
    query = engine.Query(weights=[1.0, 1.0, 1.0], k=5, window=200, slide=1)
    run = session.LiveRun(trace, session.Setup(trace.name, query, ("oracle", "mintopk", "sao")))
    run.step(400)
    history = run.metrics_frame(500)
    for field in ("precision", "error", "candidates", "retained", "ms"):
        spec = charts.over_time(history, field, log=field in ("candidates", "retained", "ms")).to_dict()
        assert set(spec["datasets"][spec["data"]["name"]][0]) == {"slide", "algorithm", field}
        assert {"calculate": json.dumps(charts.METRICS[field][1]), "as": "definition"} in spec["transform"]
    spec = charts.memory_over_time(history).to_dict()
    assert set(spec["datasets"][spec["data"]["name"]][0]) == {"slide", "algorithm", "memory", "KiB"}
    assert {"calculate": json.dumps(charts.METRICS["memory"][1]), "as": "definition"} in spec["transform"]


def test_memory_chart_shows_modelled_and_measured_in_kib():
    spec = charts.memory_over_time(HISTORY).to_dict()
    assert spec["encoding"]["y"]["field"] == "KiB"
    rows = spec["datasets"][spec["data"]["name"]]
    assert {r["memory"] for r in rows} == {"modelled", "measured"}
    assert spec["encoding"]["strokeDash"]["field"] == "memory"
    big = HISTORY.assign(bytes=HISTORY["bytes"] * 1000)
    assert charts.memory_over_time(big).to_dict()["encoding"]["y"]["field"] == "MiB"


def test_over_time_marks_a_slide_with_a_rule():
    spec = charts.over_time(HISTORY, "ms", at=1).to_dict()
    line, rule = spec["layer"]
    assert line["mark"]["type"] == "line" and rule["mark"]["type"] == "rule"
    assert spec["datasets"][rule["data"]["name"]] == [{"slide": 1}]


def test_window_panels_one_per_algorithm():
    window = pd.DataFrame({"t": [0, 1, 2, 3], "score": [0.1, 0.9, 0.4, 0.7]})
    candidates = pd.DataFrame({"algorithm": ["mintopk"] * 3 + ["sma"], "t": [1, 2, 3, 1],
                               "score": [0.9, 0.4, 0.7, 0.9]})
    answers = pd.DataFrame({"algorithm": ["oracle", "mintopk", "sma"], "rank": [1, 1, 1], "t": [1, 1, 1],
                            "score": [0.9, 0.9, 0.9]})
    chart = charts.window_panels(window, candidates, answers, ["mintopk", "sma"])
    spec = chart.to_dict()
    assert spec["facet"]["field"] == "algorithm" and spec["facet"]["sort"] == ["mintopk", "sma"]
    points, kept, marks = spec["spec"]["layer"]
    assert points["mark"]["type"] == "circle" and marks["mark"]["type"] == "point"
    counts = chart.data.groupby(["algorithm", "role"]).size().to_dict()
    assert counts == {("mintopk", "window"): 4, ("mintopk", "candidate"): 3, ("mintopk", "answer"): 1,
                      ("sma", "window"): 4, ("sma", "candidate"): 1, ("sma", "answer"): 1}


def test_window_panels_on_a_clock_use_local_date_times():
    window = pd.DataFrame({"t": [0], "when": [1000], "time": ["00:00:01.000"], "score": [1.0]})
    empty = pd.DataFrame({"algorithm": [], "rank": [], "t": [], "when": [], "time": [], "score": []})
    spec = charts.window_panels(window, empty, empty, ["a"], timed=True, tz="America/New_York").to_dict()
    x = spec["spec"]["layer"][0]["encoding"]["x"]
    assert x["field"] == "when" and x["type"] == "temporal" and x["scale"]["type"] == "utc"
    assert x["title"] == "time (America/New_York, 1970-01-01)"  # one day: the date in the title, times on ticks
    assert x["axis"]["format"] == "%H:%M:%S"


def test_layers_projection_draws_the_query_direction():
    frame = pd.DataFrame({"layer": [1, 1, 2], "seq": [1, 2, 3], "a": [0.9, 0.8, 0.1], "b": [0.9, 0.7, 0.2]})
    spec = charts.layers_projection(frame, (1.0, 0.0), "x_0", "x_1").to_dict()
    points, arrow = spec["layer"]
    line = spec["datasets"][arrow["data"]["name"]]
    assert line[1]["a"] > line[0]["a"] and line[1]["b"] == line[0]["b"]  # along x_0 only


def test_benchmark_family_uses_full_case_labels_and_log_scale_over_decades():
    frame = pd.DataFrame({"algorithm": ["oracle", "mintopk"], "case": ["uniform n=100000 s=10 k=10"] * 2,
                          "objects_per_s": [1e4, 1e7]})
    spec = charts.benchmark_family(frame, "objects_per_s", "Throughput").to_dict()
    assert spec["mark"]["type"] == "bar" and spec["encoding"]["y"]["field"] == "case"
    assert spec["encoding"]["x"]["scale"]["type"] == "log"
    assert spec["encoding"]["y"]["axis"]["labelLimit"] >= 300


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


def test_comparison_marks_cells_that_differ_from_the_exact_answer():
    exact = answer([3, 1, 2], [0.9, 0.5, 0.1])
    frame, wrong = tables.comparison(exact, {"good": exact, "bad": answer([3, 8], [0.9, 0.4])},
                                     time_of=lambda seq: [f"t{s}" for s in seq])
    assert frame.columns.tolist() == ["rank", "exact id", "exact score", "time", "good", "bad"]
    assert frame["bad"].tolist() == ["✓", "8", "–"] and frame["good"].tolist() == ["✓"] * 3
    assert wrong["bad"].tolist() == [False, True, True] and not wrong["good"].any()
    style = tables.styled(frame, wrong).to_html().split("</style>")[0]
    assert "_row1_col5" in style and "_row2_col5" in style and "_row0_col5" not in style
    assert "col4" not in style
    plain, none = tables.comparison(None, {"a": exact})
    assert plain.columns.tolist() == ["rank", "a"] and not none.any().any() and plain["a"].tolist() == ["3", "1", "2"]


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


def test_play_stops_at_the_time_budget():
    q = engine.Query(weights=[1.0, 0.0], k=3, window=40, slide=20)
    run = session.LiveRun(TRACE, session.Setup("t", q, ("mintopk",)))
    ticks = iter(range(100))
    assert run.play(50, budget=3, clock=lambda: next(ticks)) == 3  # clock: 0 at start, 3 after the third slide
    assert run.slide == 3
    assert run.play(2, budget=100) == 2 and run.current == 4


def test_replay_steps_report_progress_and_stop_where_replay_would():
    q = engine.Query(weights=[1.0, 0.0], k=3, window=40, slide=20)
    run = session.LiveRun(TRACE, session.Setup("t", q, ("mintopk",)))
    fractions = list(run.replay_steps(rows=250, chunk=4))
    assert fractions[-1] == run.rows / 250 and run.rows == 240 and fractions == sorted(fractions)


# units, presets and the page state ------------------------------------------------------------

def test_durations_and_counts_as_typed():
    assert units.parse_duration("30 min", "ms") == 1_800_000
    assert units.parse_duration("1 h", "ms") == 3_600_000
    assert units.parse_duration("500 ms", "ms") == 500
    assert units.parse_duration("2 s", "ms") == 2000
    assert units.parse_count("10,000") == 10_000 and units.parse_count("10k") == 10_000
    with pytest.raises(ValueError, match="unknown unit"):
        units.parse_duration("3 min", "ordinal")
    with pytest.raises(ValueError, match="not a duration"):
        units.parse_duration("soon", "ms")
    assert units.format_duration(1_800_000, "ms") == "30 min"
    assert units.format_bytes(3 * 1024 * 1024) == "3 MiB"


def test_stock_times_in_new_york():
    assert units.format_time(1381152600000, "ms", "America/New_York") == "2013-10-07 09:30:00.000 EDT"
    shifted = units.wall_clock_ms(np.array([1381152600000]), "ms", "America/New_York")
    assert pd.to_datetime(shifted, unit="ms")[0].strftime("%H:%M") == "09:30"


def test_the_stock_default_preset_is_the_make_run_query():
    prof = presets.profile("spy", "stock", ("notional", "price", "size"), "ms")
    default = prof.default_preset
    assert default.name == "largest notional, last 10,000 trades (make run)"
    values = live_state.preset_values(default, prof)
    assert live_state.query_of(values, prof) == engine.Query(weights=[1.0, 0.0, 0.0], k=10, window=10_000, slide=500)
    names = [p.name for p in prof.presets]
    assert "largest notional, last 30 min" in names and "largest trades by size, last 10,000 trades" in names
    thirty = live_state.query_of(live_state.preset_values(prof.preset("largest notional, last 30 min"), prof), prof)
    assert (thirty.kind, thirty.window, thirty.slide) == ("time", 1_800_000, 60_000)
    assert prof.tz == "America/New_York" and prof.defaults("time") == ("30 min", "1 min")


def test_problems_suggest_the_nearest_valid_values():
    prof = presets.profile("spy", "stock", ("notional", "price", "size"), "ms")
    _, _, problems = live_state.lengths({"kind": "time", "window": "30 min", "slide": "7 min"}, prof)
    assert problems[0].field == "slide" and problems[0].suggestions == ("6 min", "10 min")
    _, _, problems = live_state.lengths({"kind": "time", "window": "30 parsecs", "slide": "1 min"}, prof)
    assert problems[0].field == "window" and problems[0].suggestions == ("30 min",)



def test_a_negative_length_is_told_to_be_positive_not_a_non_number():
    with pytest.raises(ValueError, match=r"^window must be positive, got -5$"):
        units.parse_count("-5", "window")
    with pytest.raises(ValueError, match=r"^slide must be positive, got -2 min$"):
        units.parse_duration("-2 min", "ms", "slide")


def test_a_slide_that_is_not_a_length_is_offered_slides_dividing_the_window():
    """Not the stock default (500 objects, 1 min), which divides neither window, nor "10000 or 10k"."""
    prof = presets.profile("spy", "stock", ("notional", "price", "size"), "ms")
    _, _, problems = live_state.lengths({"kind": "count", "window": "999", "slide": "ten"}, prof)
    assert problems == [live_state.Problem("slide", 'slide: "ten" is not a number of objects (try 333 or 999)',
                                           ("333", "999"))]
    _, _, problems = live_state.lengths({"kind": "time", "window": "90 s", "slide": "soon"}, prof)
    assert problems == [live_state.Problem("slide", 'slide: "soon" is not a duration (try 45 s or 90 s)',
                                           ("45 s", "90 s"))]


def test_url_parameters_round_trip():
    prof = presets.profile("x", "synthetic", ("a", "b"), "ordinal")
    q = engine.Query(weights=[0.5, -1.0], k=4, window=600, slide=30, kind="time")
    params = live_state.to_url("x", ["oracle", "tma"], q, {"tma": {"cells_per_dim": 4}}, "ordinal", 12)
    values = live_state.from_url(params, prof)
    assert live_state.query_of(values, prof) == q
    assert values["param_tma_cells_per_dim"] == 4
    assert live_state.from_url({"k": "-3", "w": "1", "kind": "sideways", "p.tma.bogus": "1"}, prof) == {}


def test_links_give_back_the_weights_bit_for_bit():
    """A weight a slider or a typed value gives (0.15000000000000002, 0.123456789, -0.0) comes back
    from the link as the same float: rounded, it was another query, scored otherwise."""
    prof = presets.profile("x", "synthetic", ("a", "b", "c"), "ordinal")
    weights = [0.1 + 0.05, 0.123456789, -0.0]
    q = engine.Query(weights=weights, k=4, window=600, slide=30)
    params = live_state.to_url("x", ["oracle"], q, {}, "ordinal", None)
    back = live_state.query_of(live_state.from_url(params, prof), prof)
    shared = watchlist_state.from_url(watchlist_state.to_url([q]), 3)
    for got in (back.weights, shared[0].weights):
        assert np.array(got).view(np.int64).tolist() == np.array(weights).view(np.int64).tolist()


def test_cancel_puts_back_the_values_of_the_setup_shown():
    prof = presets.profile("spy", "stock", ("notional", "price", "size"), "ms")
    q = engine.Query(weights=[0.0, 1.0, -0.5], k=3, window=600_000, slide=30_000, kind="time")
    values = live_state.setup_values(q, ["oracle", "sma"], {"sma": {"cells_per_dim": 2}}, prof.features, "ms")
    assert live_state.query_of(values, prof) == q
    assert values["window"] == "10 min" and values["slide"] == "30 s" and values["algorithms"] == ["oracle", "sma"]
    assert values["param_sma_cells_per_dim"] == 2


def test_partitioned_parquet_folders_are_read_in_seq_order(tmp_path, monkeypatch):
    import duckdb
    rows = pd.DataFrame({"id": [10, 11, 12, 13], "seq": [0, 1, 2, 3], "t": [5, 6, 7, 8],
                         "notional": [1.0, 2.0, 3.0, 4.0], "price": [1.0] * 4, "size": [1.0, 2.0, 3.0, 4.0],
                         "symbol": ["spy", "spy", "bac", "spy"], "date": ["d1", "d1", "d1", "d2"]})
    folder = tmp_path / "spy"
    with duckdb.connect() as con:
        con.register("rows", rows)
        con.execute(f"COPY rows TO '{folder}' (FORMAT parquet, PARTITION_BY (symbol, date))")
    columns = data.read_parquet(str(folder), ("notional", "price", "size"))
    assert columns["id"].tolist() == [10, 11, 12, 13]
    assert columns["x"][:, 0].tolist() == [1.0, 2.0, 3.0, 4.0] and columns["x"].shape == (4, 3)


def test_attribute_dataset_parquet_becomes_an_incomplete_trace(tmp_path):
    import duckdb, json
    db, parquet = tmp_path / "topk.duckdb", tmp_path / "wc.parquet"
    with duckdb.connect(str(db)) as con:
        con.register("rows", pd.DataFrame({"id": [7, 8, 7], "seq": [0, 1, 2], "t": [0, 0, 5], "stream": [0, 1, 1],
                                           "value": [0.5, 0.25, 1.0]}))
        con.execute(f"COPY rows TO '{parquet}' (FORMAT parquet)")
        con.execute("CREATE TABLE datasets(name VARCHAR, family VARCHAR, features JSON, t_unit VARCHAR, "
                    "parquet VARCHAR)")
        con.execute("INSERT INTO datasets VALUES ('wc', 'worldcup', ?, 'ms', ?)",
                    [json.dumps(["images", "english"]), str(parquet)])
    trace = data.load_trace(db, "wc")
    assert (trace.stream, trace.features, trace.family) == ("incomplete", ("images", "english"), "worldcup")
    ids, stream, value, t = trace.arrays
    assert ids.tolist() == [7, 8, 7] and stream.tolist() == [0, 1, 1] and value.tolist() == [0.5, 0.25, 1.0]


def test_objects_frame_bounds_every_valid_object():
    trace = data.synthetic_attributes(rows=400)
    q = engine.Query(weights=[1.0, 0.5, 0.0], k=3, window=100, slide=50)
    run = session.LiveRun(trace, session.Setup("a", q, ("eaa",)))
    run.step(4)
    objects = run.objects_frame()
    valid = set(trace.ids[100:200].tolist())
    assert set(objects["id"]) == valid
    assert (objects["best"] >= objects["current"]).all()
    top = objects.sort_values(["current", "seq"], ascending=False).head(3)
    assert top["id"].tolist() == run.exact.ids.tolist()
    assert run.reference == "oracle-incomplete"


@pytest.mark.parametrize("kind", ["count", "time"])
@pytest.mark.parametrize("trace", [TRACE, data.synthetic_attributes(rows=600)], ids=["objects", "attributes"])
def test_a_warm_start_one_window_back_answers_like_a_full_replay(kind, trace):
    exact = [i.name for i in engine.available() if i.exact and i.stream == trace.stream]
    weights = [0.5, 1.0] if trace.stream == "single" else [0.5, 1.0, 0.25]
    q = engine.Query(weights=weights, k=4, window=60, slide=20, kind=kind)
    full = session.LiveRun(trace, session.Setup("t", q, tuple(exact)))
    full.replay(450)
    first = session.warm_start_slide(trace, q, 450)
    assert first > 0
    warm = session.LiveRun(trace, session.Setup("t", q, tuple(exact)), first)
    assert warm.slide == first and warm.rows <= 450
    warm.replay(450)
    assert (warm.slide, warm.rows, warm.end) == (full.slide, full.rows, full.end)
    for name in exact:
        assert warm.answers[name].ids.tolist() == full.answers[name].ids.tolist(), name
    assert warm.history[0]["slide"] == first


# issue 20: charts read at a glance, tables that mark only misses, defaults from make run ----------------

def colours(spec) -> dict[str, str]:
    scale = spec["encoding"]["color"]["scale"]
    return dict(zip(scale["domain"], scale["range"]))


def test_an_algorithm_keeps_its_colour_whatever_else_is_shown():
    four = ["oracle", "mintopk", "sap", "sao"]
    ten = [info.name for info in engine.available() if info.stream == "single"]
    frames = [pd.DataFrame({"slide": 0, "algorithm": names, "ms": 1.0}) for names in (four, ten)]
    small, large = (colours(charts.over_time(f, "ms").to_dict()) for f in frames)
    assert small["sao"] == large["sao"] == charts.ALGORITHM_COLOURS["sao"]
    assert len(set(large.values())) == len(ten)  # ten algorithms, ten colours
    bars = charts.benchmark_family(pd.DataFrame({"algorithm": ["sao"], "case": ["c"], "objects_per_s": [1.0]}),
                                   "objects_per_s", "objects/s").to_dict()
    assert colours(bars)["sao"] == small["sao"]


def test_one_huge_score_puts_the_window_on_a_log_axis_with_its_unit():
    scores = np.r_[np.linspace(1e6, 3e6, 99), 126e6]  # one 126M trade among 1-3M ones: a 126x span
    window = pd.DataFrame({"t": np.arange(100), "score": scores})
    empty = pd.DataFrame({"algorithm": [], "rank": [], "t": [], "score": []})
    spec = charts.window_panels(window, empty, empty, ["mintopk"], score_title="score ($)").to_dict()
    y = spec["spec"]["layer"][0]["encoding"]["y"]
    assert y["scale"]["type"] == "log" and y["title"] == "score ($) (log scale)"
    assert charts.choose_scale(np.linspace(1e6, 3e6, 100)) == "linear"


def test_clients_near_zero_and_a_few_heavy_ones_are_spread_out():
    frame = pd.DataFrame({"id": range(6), "current": [0.001, 0.002, 0.001, 0.003, 0.9, 2.5],
                          "best": [0.5, 0.6, 0.5, 0.7, 1.4, 3.0], "status": ["cannot enter"] * 6})
    spec = charts.current_vs_best(frame, 0.9, "× largest chunk").to_dict()
    x = spec["layer"][0]["encoding"]["x"]
    assert x["scale"]["type"] == "log" and "× largest chunk" in x["title"]


def test_over_time_plots_against_time_with_dates_over_days():
    day = 86_400_000
    frame = pd.DataFrame({"slide": [0, 1, 2], "algorithm": ["oracle"] * 3, "ms": [1.0, 2.0, 1.5],
                          "when": [0, 20 * day, 400 * day]})
    spec = charts.over_time(frame, "ms", at=1).to_dict()
    line, rule = spec["layer"]
    assert line["encoding"]["x"]["field"] == "when" and line["encoding"]["x"]["axis"]["format"] == "%Y-%m-%d"
    assert spec["datasets"][rule["data"]["name"]] == [{"when": 20 * day, "slide": 1}]
    assert line["encoding"]["y"]["title"] == "time per slide (ms)"
    assert units.time_texts(np.array([0, 400 * day]), "ms", None, True) == ["1970-01-01 00:00:00",
                                                                           "1971-02-05 00:00:00"]


def test_reordered_or_tied_answers_are_not_marked_only_missing_objects_are():
    exact = answer(range(1, 21), np.arange(20, 0, -1, dtype=float))
    rng = np.random.default_rng(0)
    kept = rng.permutation(np.arange(1, 21))[:13]  # 13 of the exact objects, in another order
    got_ids = np.r_[kept, np.arange(101, 108)]  # and 7 others
    got = answer(got_ids, [21.0 - i if i <= 20 else 0.5 for i in got_ids])
    _, wrong = tables.comparison(exact, {"sao": got})
    assert metrics.precision(exact, got) == 13 / 20
    assert wrong["sao"].sum() == 7
    assert wrong["sao"].tolist() == [bool(i > 20) for i in got_ids]


def test_table_scores_carry_the_unit():
    frame, wrong = tables.comparison(answer([1], [558.0]), {})
    assert "558 mph" in tables.styled(frame, wrong, "mph").to_html()


def test_score_units_per_dataset_family():
    assert presets.score_unit("taxi", {"speed": 1.0}) == ("mph", "score (mph)")
    assert presets.score_unit("stock", {"notional": 1.0, "price": 0.0, "size": 0.0}) == ("$", "score ($)")
    assert presets.score_unit("worldcup", {"images": 1.0})[0] == "× largest chunk"


def test_make_run_demo_decides_the_defaults():
    demo = json.loads((presets.CONFIGS / "demo.json").read_text())
    assert presets.demo() == {**demo, "_file": "demo.json"}
    assert list(presets.replayed_algorithms(demo["dataset"])) == [a["name"] for a in demo["algorithms"]]
    assert presets.replayed_algorithms("nothing-replays-this") == {}



def test_a_demo_config_saved_by_a_windows_editor_still_decides_the_defaults(tmp_path):
    """The replay reads a config with a byte order mark and names an unnamed one by its file;
    the dashboard left such a demo.json out, and Live lost the demo's dataset and algorithms."""
    config = {"dataset": "spy", "queries": [{"weights": {"notional": 1.0}, "k": 10, "window": 10000, "slide": 500}],
              "algorithms": [{"name": "oracle"}, {"name": "sao", "params": {"memory": 500}}], "note": "détail"}
    (tmp_path / "demo.json").write_bytes(b"\xef\xbb\xbf" + json.dumps(config, ensure_ascii=False).encode())
    assert presets.demo(tmp_path) == {"name": "demo", **config, "_file": "demo.json"}
    assert presets.replayed_algorithms("spy", tmp_path) == {"oracle": {}, "sao": {"memory": 500}}


def test_sao_answers_any_weights_against_the_exact_answers():
    trace = data.synthetic_uniform(rows=3000)
    q = engine.Query(weights=[1.0, 1.0, 1.0], k=10, window=1000, slide=100)
    run = session.LiveRun(trace, session.Setup("x", q, ("sao",), {"sao": {"memory": 200}}))
    run.step(12)
    vectors = session.weight_vectors(5, 3)
    frame = run.any_weights_frame("sao", vectors, q.k)
    lo, hi = run.window_rows()
    for number, weights in enumerate(vectors, 1):
        scores = trace.x[lo:hi] @ weights
        exact_ids = set(trace.ids[lo:hi][np.argsort(-scores, kind="stable")[:q.k]].tolist())
        got = run.engines["sao"].query(list(weights), q.k)
        row = frame[(frame["query"] == number) & (frame["algorithm"] == "sao")].iloc[0]
        assert row["precision"] == len(exact_ids & set(got.ids.tolist())) / q.k
    assert set(frame["algorithm"]) == {"oracle", "sao"} and (frame["ms"] >= 0).all()


def test_end_times_of_count_and_time_slides():
    trace = data.synthetic_uniform(rows=100)
    assert data.end_times(trace, "count", [50, 100]).tolist() == [trace.t[49], trace.t[99]]
    assert data.end_times(trace, "time", [70]).tolist() == [70]


SHIPPED = data.benchmark_tables()[0]


def test_every_family_of_the_shipped_results_has_sweeps_to_draw():
    for family in bench_view.FAMILIES:
        if family.grid is None:
            continue
        frame = SHIPPED[family.grid]
        names = bench_view.sweeps(frame)
        assert family.defaults["sweep"] in names
        rows = bench_view.sweep_rows(frame, frame["workload"].iloc[0], family.defaults["sweep"])
        column = bench_view.sweep_column(rows, family.defaults["sweep"])
        assert column is not None and rows[column].nunique() >= 2, family.key


def test_the_sap_papers_table_6_is_put_beside_our_candidates():
    papers = data.paper_figures()["papers"]
    rows = bench_view.sweep_rows(SHIPPED["grid-sap"], "time-u", "k")
    paper = bench_view.paper_points("single", papers, "time-u", "k", "avg_candidates", rows)
    table = papers["sap"]["table6_candidates"]
    assert paper[paper.algorithm == "sap"]["avg_candidates"].tolist() == table["TIME-U"]["sap"]["k"]
    assert paper[paper.algorithm == "sap"]["k"].tolist() == table["columns"]["k"]
    s_rows = bench_view.sweep_rows(SHIPPED["grid-sap"], "time-u", "s")
    at_s = bench_view.paper_points("single", papers, "time-u", "s", "avg_candidates", s_rows)
    assert at_s["s"].iloc[0] == table["columns"]["s_pct_of_n"][0] / 100 * 100_000  # % of n, at our n
    assert bench_view.paper_points("single", papers, "stock", "k", "avg_candidates", rows) is None
    chart = charts.sweep_chart(rows, "k", "k", "avg_candidates", "candidates", paper).to_dict()
    assert [layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"] for layer in chart["layer"]] \
        == ["line", "point"]


def test_runs_caption_names_run_commit_and_machine():
    text = bench_view.runs_caption(SHIPPED["grid-sao"])
    row = SHIPPED["grid-sao"].iloc[0]
    assert f"run `{row.run_id}`" in text and f"commit `{row.commit[:12]}`" in text and str(row.cpu_model) in text
    assert bench_view.runs_caption(pd.DataFrame({"x": [1]})) == "The run and commit of these figures are not recorded."


def test_ingest_counts_say_what_was_rejected_and_merged(tmp_path):
    import duckdb
    from pipelines import store

    db = tmp_path / "topk.duckdb"
    with duckdb.connect(str(db)) as con:
        for statement in store.SCHEMA:
            con.execute(statement)
        con.execute("INSERT INTO datasets (name, family, rows_read, rows_rejected, rejects, params, rows_merged) "
                    "VALUES ('worldcup', 'worldcup', 200000, 3, '{\"bad_size\": 3, \"bad_time\": 0}', "
                    "'{\"delta_t_ms\": 5000}', 40293)")
    assert data.ingest_counts(db, "worldcup") == ("200,000 rows read, 3 rejected (bad_size 3), 40,293 merged into one "
                                                  "tuple per client, section and 5 s chunk.")
    assert data.ingest_counts(db, "absent") == ""


def test_a_live_run_keeps_the_metrics_of_its_last_slides_only():
    query = engine.Query(weights=[1.0, 0.0, 0.0], k=2, window=2, slide=1)
    setup = session.Setup(data.SYNTHETIC, query, ("oracle", "mintopk"))
    run = session.LiveRun(data.synthetic_uniform(rows=3 * session.HISTORY_SLIDES), setup)
    assert run.step(3 * session.HISTORY_SLIDES) == 3 * session.HISTORY_SLIDES
    assert len(run.history) == 2 * session.HISTORY_SLIDES  # one row per algorithm and slide
    frame = run.metrics_frame(20)
    assert frame["slide"].tolist() == [s for s in range(run.current - 19, run.current + 1) for _ in range(2)]
    assert (frame["precision"] == 1.0).all()


def test_parquet_data_unlike_its_catalogue_row_raises_friendly_messages(filled_db, tmp_path):
    import duckdb

    with duckdb.connect(str(filled_db)) as con:  # the demo's features renamed since its Parquet was written
        con.execute("UPDATE datasets SET features = '[\"notional\", \"volume\"]'")
    with pytest.raises(data.MissingData, match=r"lacks the column\(s\) volume that its dataset names \(it holds "
                                               r"id, seq, t, notional, size\)"):
        data.load_trace(filled_db, "demo")
    (tmp_path / "demo.parquet").write_text("not Parquet")
    with pytest.raises(data.MissingData, match="demo.parquet` cannot be read"):
        data.load_trace(filled_db, "demo")
