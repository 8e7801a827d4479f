"""The Runs and Benchmarks pages under AppTest, with and without data."""

from __future__ import annotations

import json

import duckdb
import numpy as np

from app import data

from .conftest import RUN_QUERY, oracle_answers


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
    monkeypatch.setattr(data, "BENCHMARKS", tmp_path / "latest.json")
    app.run()
    app.switch_page("views/benchmarks.py").run()
    assert not app.exception
    assert "No benchmark results" in app.info[0].value and "make bench" in app.info[0].value


def test_benchmarks_with_a_broken_file(app, monkeypatch, tmp_path):
    path = tmp_path / "latest.json"
    path.write_text('{"algorithm": "mintopk"}')
    monkeypatch.setattr(data, "BENCHMARKS", path)
    app.run()
    app.switch_page("views/benchmarks.py").run()
    assert not app.exception
    assert "is not a list of benchmark results" in app.info[0].value


def test_benchmarks_plot_one_chart_per_workload_family(app, monkeypatch, tmp_path):
    rows = [{"bench": b, "algorithm": a, "case": c, "objects_per_s": float(10 ** n), "avg_candidates": n / 10,
             "when": "2026-11-25T22:11:50+00:00", "machine": "x86_64"}
            for n, (b, a, c) in enumerate([("mintopk", "oracle", "uniform n=100000 s=10 k=10"),
                                           ("mintopk", "mintopk", "uniform n=100000 s=10 k=10"),
                                           ("competitors", "tma", "decreasing n=100000 s=10 k=100")], 1)]
    path = tmp_path / "latest.json"
    path.write_text(json.dumps(rows))
    monkeypatch.setattr(data, "BENCHMARKS", path)
    app.run()
    app.switch_page("views/benchmarks.py").run()
    assert not app.exception
    assert chart_titles(app) == ["Throughput (objects/s)", "Average candidates"] * 2
    assert [h.value for h in app.subheader] == ["Workload: mintopk", "Workload: competitors"]
    assert "run 2026-11-25T22:11:50+00:00 · machine x86_64 · commit not recorded" in app.caption[0].value
    assert np.array_equal(app.dataframe[0].value["objects_per_s"], [10.0, 100.0])


def test_benchmarks_read_the_new_results_format(tmp_path):
    path = tmp_path / "latest.json"
    path.write_text(json.dumps({"when": "2026-11-26T01:00:00Z", "machine": "ci", "commit": "abc123",
                                "results": [{"workload": "sap", "algorithm": "sap", "objects_per_s": 5.0,
                                             "n": 10, "s": 2, "k": 1}]}))
    frame = data.benchmark_results(path)
    row = frame.iloc[0]
    assert (row.family, row.case, row.commit, row.machine) == ("sap", "10 2 1", "abc123", "ci")
