"""The Runs and Benchmarks pages under AppTest, with and without data."""

from __future__ import annotations

import json

import duckdb
import numpy as np

from app import data

from .conftest import RUN_QUERY, oracle_answers, table_ids


def chart_titles(at) -> list[str]:
    """Titles of the Altair charts on the page (layers included)."""
    specs = [json.loads(chart.proto.spec) for chart in at.get("vega_lite_chart")]
    return [spec.get("title") or spec["layer"][0].get("title") for spec in specs]


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
    assert app.slider(key="run_slide").value == len(exact) - 1
    oracle, pretopk = app.table
    assert table_ids(oracle) == table_ids(pretopk) == exact[-1].ids.tolist()

    app.slider(key="run_slide").set_value(5).run()
    oracle, pretopk = app.table
    assert table_ids(oracle) == exact[5].ids.tolist()
    assert set(oracle.value["exact"]) == {"✓"}
    assert pretopk.value["exact"].tolist() == ["✓", f"✗ {exact[5].ids[1]}"] + ["✓"] * (RUN_QUERY.k - 2)
    assert chart_titles(app) == ["Precision", "Error", "Candidates (log scale)", "Retained (log scale)", "Bytes (log scale)",
                                 "Processing time per slide (ms)"]
    rule = json.loads(app.get("vega_lite_chart")[0].proto.spec)["layer"][1]
    assert rule["mark"]["type"] == "rule"


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
    assert "is not a JSON list of result rows" in app.info[0].value


def test_benchmarks_plot_the_latest_results(app, monkeypatch, tmp_path):
    rows = [{"algorithm": a, "case": c, "objects_per_s": float(n), "avg_candidates": n / 10, "ratio": 1.0}
            for n, (a, c) in enumerate([("oracle", "stock"), ("mintopk", "stock"), ("oracle", "time-u")], 1)]
    path = tmp_path / "latest.json"
    path.write_text(json.dumps(rows))
    monkeypatch.setattr(data, "BENCHMARKS", path)
    app.run()
    app.switch_page("views/benchmarks.py").run()
    assert not app.exception
    assert chart_titles(app) == ["Throughput (objects/s)", "Average candidates"]
    assert np.array_equal(app.dataframe[0].value["objects_per_s"], [1.0, 2.0, 3.0])
