"""The Runs and Benchmarks pages under AppTest, with and without data."""

from __future__ import annotations

import json

import duckdb
import numpy as np
import pyarrow as pa

import pandas as pd
from streamlit.testing.v1 import AppTest

from app import bench_view, data

from .conftest import (DEMO, ENTRY, DEMO_RUN, OTHER_RUN, RUN_QUERY, WORLDCUP_QUERY, demo_trace, oracle_answers,
                       worldcup_trace, write_run)


def chart_titles(at) -> list[str]:
    """Titles of the Altair charts on the page (layers included)."""
    specs = [json.loads(chart.proto.spec) for chart in at.get("vega_lite_chart")]
    titles = [spec.get("title") or spec["layer"][0].get("title") for spec in specs]
    return [t["text"] if isinstance(t, dict) else t for t in titles]


def test_runs_without_database(app, missing_db):
    app.run()
    app.switch_page("views/runs.py").run()
    assert not app.exception
    assert f"No database at `{missing_db}` yet" in app.info[0].value and "make run" in app.info[0].value


def test_runs_with_a_database_but_no_run(app, missing_db):
    with duckdb.connect(str(missing_db)) as con:
        con.execute("CREATE TABLE runs(run_id VARCHAR, dataset VARCHAR, started_at TIMESTAMP, finished_at TIMESTAMP, "
                    "status VARCHAR, shards INTEGER, spark_master VARCHAR)")
        con.execute("CREATE TABLE queries(run_id VARCHAR, query_id INTEGER)")
    app.run()
    app.switch_page("views/runs.py").run()
    assert not app.exception
    assert "No pipeline runs" in app.info[0].value


def test_runs_of_a_database_missing_tables_and_columns_say_so(app, missing_db):
    """A database of an older layout: ``runs`` without ``config``, no ``slide_metrics`` table."""
    with duckdb.connect(str(missing_db)) as con:
        con.execute("CREATE TABLE runs(run_id VARCHAR, dataset VARCHAR, started_at TIMESTAMP, finished_at TIMESTAMP, "
                    "status VARCHAR, shards INTEGER, spark_master VARCHAR)")
        con.execute("CREATE TABLE queries(run_id VARCHAR, query_id INTEGER, weights JSON, k INTEGER, "
                    "\"window\" BIGINT, slide BIGINT, kind VARCHAR)")
        con.execute("INSERT INTO runs VALUES ('r1', 'spy', now(), NULL, 'running', 1, 'local[2]')")
        con.execute("INSERT INTO queries VALUES ('r1', 0, '[1, 0, 0]', 10, 1000, 100, 'count')")
    app.run()
    app.switch_page("views/runs.py").run()
    assert not app.exception, app.exception
    assert "is not filled in yet" in app.info[-1].value and "slide_metrics" in app.info[-1].value


def test_an_empty_file_in_place_of_the_database_is_named(app, missing_db):
    missing_db.touch()
    app.run()
    assert not app.exception
    assert f"`{missing_db}` is not a DuckDB database" in app.info[0].value
    assert "may be writing" not in app.info[0].value  # reloading would not help
    app.switch_page("views/runs.py").run()
    assert not app.exception and "is not a DuckDB database" in app.info[0].value


def test_runs_scrub_to_a_slide_and_mark_disagreements(app, filled_db, trace):
    exact = oracle_answers(trace.arrays, RUN_QUERY)
    app.run()
    app.switch_page("views/runs.py").run()
    assert not app.exception
    assert app.selectbox(key="run_id").value == "run-1"
    # Feature names, not a weight vector, and the same wording for lengths as on Live.
    assert app.selectbox(key="query_id").format_func(0) == \
        "#0 · notional − 0.5·size · k = 5 · last 200 objects, slide 50 (count window)"
    assert app.slider(key="run_slide").value == len(exact) - 1
    frame = app.table[0].value
    assert frame["exact id"].astype(np.int64).tolist() == exact[-1].ids.tolist()
    assert frame["pretopk"].tolist() == ["✓"] * RUN_QUERY.k
    assert [m.label for m in app.metric] == ["precision", "memory", "ms / slide", "candidates"] * 2

    app.slider(key="run_slide").set_value(5).run()
    frame = app.table[0].value
    assert frame["exact id"].astype(np.int64).tolist() == exact[5].ids.tolist()
    assert frame["pretopk"].tolist()[1] == "-1"
    style = app.table[0].proto.arrow_data.styler.styles
    assert "background-color" in style
    assert dict(app.query_params) == {"run": "run-1", "query": "0", "slide": "5"}
    titles = chart_titles(app)
    assert titles[:2] == ["Precision", "Score error"]  # pretopk was wrong at slide 5
    assert {"Candidates", "Retained objects", "Time per slide (ms)"} <= set(titles)
    rule = json.loads(app.get("vega_lite_chart")[0].proto.spec)["layer"][1]
    assert rule["mark"]["type"] == "rule"


def test_a_run_over_an_attribute_stream_is_compared_with_its_exact_reference(app, worldcup_db):
    """The World Cup runs' exact algorithm is oracle-incomplete, not the oracle; an object has a row per value."""
    trace = worldcup_trace()
    app.run()
    app.switch_page("views/runs.py").run()
    app.slider(key="run_slide").set_value(40).run()
    assert not app.exception, app.exception
    assert not any("no oracle answers" in c.value for c in app.caption)
    exact = oracle_answers(trace.arrays, WORLDCUP_QUERY)[40]
    frame = app.table[0].value
    assert frame["exact id"].astype(np.int64).tolist() == exact.ids.tolist()
    np.testing.assert_allclose(frame["exact score"].to_numpy(float), exact.scores, rtol=1e-12)
    end = (40 + 1) * WORLDCUP_QUERY.slide
    last_row = {int(i): row for row, i in enumerate(trace.ids[:end])}  # each object's last value so far
    assert frame["time"].tolist() == [
        pd.Timestamp(int(trace.t[last_row[int(i)]]), unit="ms", tz="UTC").tz_convert("Europe/Paris")
        .strftime("%H:%M:%S.%f")[:-3] for i in exact.ids]
    assert [m.value for m in app.markdown if m.value.startswith("**")][:2] == ["**oracle-incomplete**", "**approx**"]
    assert "approx" in frame.columns and "oracle-incomplete" not in frame.columns


def test_runs_list_snapshots_compare_and_download(app, filled_db):
    with duckdb.connect(str(filled_db)) as con:
        con.execute("""CREATE TABLE snapshots(run_id VARCHAR, query_id INTEGER, algorithm VARCHAR, shard INTEGER,
            slide BIGINT, last_seq BIGINT, format_version INTEGER, state JSON, checksum VARCHAR, created_at TIMESTAMP)""")
        con.execute("INSERT INTO snapshots VALUES ('run-1', 0, 'oracle', 0, 9, 499, 1, '{\"a\": 1}', 'abc', now())")
        con.execute("INSERT INTO runs SELECT 'run-2', dataset, config, spark_master, shards, started_at, finished_at, "
                    "status FROM runs WHERE run_id = 'run-1'")
        con.execute("INSERT INTO queries SELECT 'run-2', query_id, weights, k, \"window\", slide, kind FROM queries")
        con.execute("INSERT INTO slide_metrics SELECT 'run-2', query_id, algorithm, slide, \"end\", candidates, "
                    "retained, bytes, seconds * 2, precision, error FROM slide_metrics")
    app.run()
    app.switch_page("views/runs.py").run()
    assert not app.exception
    snapshots = app.dataframe[0].value
    assert snapshots[["slide", "algorithm", "shard", "last_seq"]].values.tolist() == [[9, "oracle", 0, 499]]
    assert snapshots["size"].tolist() == ["8 B"] and snapshots["checksum"].tolist() == ["abc"]
    app.selectbox(key="compare_with").set_value("run-2|0").run()
    assert not app.exception
    mine, other = app.dataframe[1].value, app.dataframe[2].value
    assert mine["algorithm"].tolist() == other["algorithm"].tolist() == ["oracle", "pretopk"]
    np.testing.assert_allclose(other["ms / slide"], 2 * mine["ms / slide"])
    assert app.get("download_button")


def test_answers_csv_holds_every_answer(filled_db, trace):
    csv = data.answers_csv(filled_db, "run-1", 0)
    lines = csv.splitlines()
    assert lines[0] == "algorithm,slide,end,rank,object_id,score"
    assert len(lines) - 1 == 2 * RUN_QUERY.k * len(oracle_answers(trace.arrays, RUN_QUERY))


def test_benchmarks_without_results(app, monkeypatch, tmp_path):
    monkeypatch.setattr(data, "BENCHMARKS", tmp_path / "results")
    app.run()
    app.switch_page("views/benchmarks.py").run()
    assert not app.exception
    assert "No benchmark results" in app.info[0].value and "make bench" in app.info[0].value


def test_benchmarks_show_the_shipped_results_of_every_family(app):
    """A fresh clone: the shipped CSV files, every family with charts, the papers and the runs; no placeholder."""
    app.run()
    app.switch_page("views/benchmarks.py").run()
    assert not app.exception and not app.info
    headers = [h.value for h in app.header]
    assert headers[:4] == [family.title for family in bench_view.FAMILIES]
    specs = [json.loads(chart.proto.spec) for chart in app.get("vega_lite_chart")]
    assert len(specs) >= 12
    text = json.dumps(specs)
    for algorithm in ("mintopk", "sap", "sao", "eaa", "approx"):
        assert algorithm in text
    assert "hollow diamonds: the paper's figures" in text  # the SAP paper's Table 6 beside our candidates
    captions = " ".join(c.value for c in app.caption)
    shipped = pd.read_csv(data.BENCHMARKS / "grid-sap.csv")
    assert f"run `{shipped.run_id[0]}`" in captions and f"commit `{shipped.commit[0][:12]}" in captions
    assert "docs/REPORT.md" in app.markdown[0].value
    expanders = [e.label for e in app.expander]
    assert any("Yang, Shastri, Rundensteiner, Ward" in label for label in expanders)  # papers cited by authors
    assert "What each measure means" in expanders


def test_benchmarks_tolerate_unknown_files_and_missing_columns(app, monkeypatch, tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    pd.DataFrame({"bench": ["grid-sap"] * 2, "workload": ["time-u"] * 2, "sweep": ["k", "k"], "k": [10, 100],
                  "algorithm": ["mintopk", "mintopk"], "objects_per_s": [1e6, 2e5]}).to_csv(folder / "grid-sap.csv",
                                                                                            index=False)
    pd.DataFrame({"case": ["a"], "algorithm": ["newalg"], "objects_per_s": [5.0], "novel_column": [1]}).to_csv(
        folder / "bench_core.csv", index=False)
    pd.DataFrame({"what": ["x"], "seconds": [3.5]}).to_csv(folder / "bench_multi.csv", index=False)
    (folder / "empty.csv").write_text("")
    monkeypatch.setattr(data, "BENCHMARKS", folder)
    app.run()
    app.switch_page("views/benchmarks.py").run()
    assert not app.exception
    assert [h.value for h in app.header][:2] == [bench_view.FAMILIES[0].title, "Other benchmarks"]
    assert [s.value for s in app.subheader] == ["`bench_core`", "`bench_multi`"]
    assert "empty.csv" in app.warning[0].value
    assert "not recorded" in " ".join(c.value for c in app.caption)
    assert app.dataframe[-1].value["seconds"].tolist() == [3.5]


def test_runs_opens_on_the_latest_demo_run(app, demo_db):
    app.run()
    app.switch_page("views/runs.py").run()
    assert not app.exception
    assert app.selectbox(key="run_id").value == DEMO_RUN  # not the later taxi run
    assert app.selectbox(key="query_id").format_func(0).startswith("#0 · largest notional · k = 10")
    spec = json.loads(app.get("vega_lite_chart")[0].proto.spec)
    x = spec["layer"][0]["encoding"]["x"]
    assert x["field"] == "when" and x["title"] == "time (America/New_York, 2013-10-07)"  # trades of one day


def chart_slides(chart) -> list[set[int]]:
    """The slides in each dataset a chart sends to the browser."""
    return [set(pa.ipc.open_stream(d.data.data).read_all().column("slide").to_pylist()) for d in chart.proto.datasets]


def test_a_long_runs_charts_draw_a_few_hundred_slides_per_line_and_mark_the_slide_shown_at_its_time(app, demo_db):
    """demo.json's query over its whole trace is 500+ slides per algorithm, families.json's more: every scrub
    sent each chart every slide of every line up to 1,000 slides. A line now draws at most 300 slides, and
    the slide shown among them: thinned out, its dashed rule fell back to a slide number on a time axis."""
    long_run = "long-20261126T091500Z"
    config = {**DEMO, "queries": [{"weights": {"notional": 1.0}, "k": 10, "window": 2000, "slide": 10,
                                   "kind": "count"}], "algorithms": [{"name": "oracle"}, {"name": "mintopk"}]}
    with duckdb.connect(str(demo_db)) as con:
        write_run(con, long_run, config, demo_trace(), "2026-11-26 09:15:00")  # slides 0 to 1,199
    app.switch_page("views/runs.py")
    app.query_params.update(run=long_run, slide="777")
    app.run()
    assert not app.exception, app.exception
    charts_sent = app.get("vega_lite_chart")
    assert len(charts_sent) >= 4
    for chart in charts_sent:
        lines, rule = chart_slides(chart)
        assert 150 < len(lines) <= 301 and 777 in lines and max(lines) == 1199  # at most 300 evenly spaced, and the one shown
        assert rule == {777}
        assert json.loads(chart.proto.spec)["layer"][1]["encoding"]["x"]["field"] == "when"
    assert "Charts show 242 of the 1,200 slides, evenly spaced, and slide 777." in [c.value for c in app.caption]


def test_runs_url_picks_the_run_and_scores_carry_their_unit(app, demo_db):
    app.switch_page("views/runs.py")
    app.query_params["run"] = OTHER_RUN
    app.run()
    assert not app.exception
    assert app.selectbox(key="run_id").value == OTHER_RUN
    styler = app.table[0].proto.arrow_data.styler
    assert b" mph" in styler.display_values  # the taxi speed query's scores (Arrow bytes)


def test_a_runs_link_to_what_is_not_there_says_what_is_shown_instead(app, demo_db):
    for params, shown, note in [
            ({"run": "nope"}, (DEMO_RUN, 0, 23), "This link's run `nope` is not in"),
            ({"run": DEMO_RUN, "query": "7"}, (DEMO_RUN, 0, 23), f"query #7 is not one of run `{DEMO_RUN}`'s"),
            ({"run": DEMO_RUN, "query": "²", "slide": "²"}, (DEMO_RUN, 0, 23), "query #² is not one of"),
            ({"run": DEMO_RUN, "query": "0", "slide": "999999"}, (DEMO_RUN, 0, 23),
             "slide 999999 is not one of this query's (0 to 23)"),
            ({"run": DEMO_RUN, "query": "9" * 5000, "slide": "9" * 5000}, (DEMO_RUN, 0, 23),  # beyond int()'s digits
             f"query #{'9' * 40}… (5,000 characters) is not one of"),
            ({"run": DEMO_RUN, "query": "0", "slide": "9" * 5000}, (DEMO_RUN, 0, 23),
             f"slide {'9' * 40}… (5,000 characters) is not one of this query's (0 to 23)"),
            ({"run": DEMO_RUN, "query": "0", "slide": "１２"}, (DEMO_RUN, 0, 23), "slide １２ is not one of"),
            ({"run": OTHER_RUN, "query": "0", "slide": "5"}, (OTHER_RUN, 0, 5), None)]:
        page = AppTest.from_file(ENTRY, default_timeout=60)
        page.switch_page("views/runs.py")
        page.query_params.update(params)
        page.run()
        assert not page.exception
        assert (page.query_params["run"], int(page.query_params["query"]), int(page.query_params["slide"])) == shown
        warned = " | ".join(w.value for w in page.warning)
        assert note in warned if note else not warned, warned


def test_the_report_can_be_read_on_the_page(app):
    app.run()
    app.switch_page("views/benchmarks.py").run()
    app.toggle(key="show_report").set_value(True).run()
    assert not app.exception
    assert any(m.value.startswith("# Top-k Watch: benchmark and paper-reproduction report") for m in app.markdown)


def test_a_failed_run_shows_its_reason(app, filled_db):
    """Older databases have no ``runs.reason`` (the fixture's); a database that records it shows it."""
    app.run()
    app.switch_page("views/runs.py").run()
    assert not app.exception and not app.warning
    with duckdb.connect(str(filled_db)) as con:
        con.execute("ALTER TABLE runs ADD COLUMN reason VARCHAR")
        con.execute("UPDATE runs SET status = 'failed', reason = 'task 3 failed: disk full' WHERE run_id = 'run-1'")
    app.run()
    assert not app.exception
    assert "failed" in app.warning[0].value and "task 3 failed: disk full" in app.warning[0].value


def test_a_folder_or_an_older_schema_in_place_of_the_database_is_named(app, missing_db, tmp_path):
    missing_db.mkdir()
    app.run()
    assert not app.exception
    assert f"`{missing_db}` is a folder, not a DuckDB database file" in app.info[0].value
    missing_db.rmdir()
    with duckdb.connect(str(missing_db)) as con:  # datasets as written before family and t_unit were recorded
        con.execute("CREATE TABLE datasets(name VARCHAR, rows_read BIGINT, features JSON, parquet VARCHAR)")
        con.execute(f"INSERT INTO datasets VALUES ('old', 10, '[\"a\"]', '{tmp_path / 'old.parquet'}')")
    page = AppTest.from_file(ENTRY, default_timeout=60)
    page.run()
    assert not page.exception
    assert "lacks a column the dashboard reads" in page.warning[0].value
    assert "written by an older version of the pipelines" in page.warning[0].value
    assert "not filled in yet" not in page.warning[0].value


def test_a_runs_link_repeating_a_parameter_says_which_value_is_used(app, demo_db):
    app.switch_page("views/runs.py")
    app.query_params.update({"run": [DEMO_RUN, OTHER_RUN]})
    app.run()
    assert not app.exception and app.query_params["run"] == OTHER_RUN
    assert f"run is given 2 times: the last ({OTHER_RUN}) is used" in app.warning[0].value


def test_back_and_a_link_from_another_page_show_the_run_of_the_address(app, demo_db):
    app.switch_page("views/runs.py").run()
    assert app.selectbox(key="run_id").value == DEMO_RUN
    earlier = dict(app.query_params)
    app.selectbox(key="run_id").set_value(OTHER_RUN).run()
    assert app.query_params["run"] == OTHER_RUN
    app.query_params.clear()
    app.query_params.update(earlier)  # Back
    app.run()
    assert app.selectbox(key="run_id").value == DEMO_RUN and dict(app.query_params) == earlier
    app.query_params.clear()
    app.query_params.update({"run": OTHER_RUN, "query": "0"})  # the Live page's "See its run" link
    app.run()
    assert app.selectbox(key="run_id").value == OTHER_RUN
