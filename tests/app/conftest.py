"""Fixtures for the dashboard tests: an AppTest of the entry file and a small filled database."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

import engine
from app import data

ENTRY = Path(__file__).resolve().parents[2] / "app" / "streamlit_app.py"
RUN_ID = "run-1"
RUN_QUERY = engine.Query(weights=[1.0, -0.5], k=5, window=200, slide=50, kind="count")


def oracle_answers(arrays, query: engine.Query, slides: int | None = None) -> list[engine.Answer]:
    """The oracle's answer after each slide (the first ``slides`` ones), computed with the engine.

    Attribute streams (``(ids, stream, value, t)``) are answered by ``oracle-incomplete``."""
    oracle = engine.create("oracle-incomplete" if len(arrays) == 4 else "oracle", query)
    out = []
    for batch in engine.slides(arrays, query):
        if slides is not None and len(out) == slides:
            break
        oracle.process(batch)
        out.append(oracle.topk())
    return out


@pytest.fixture
def missing_db(tmp_path, monkeypatch) -> Path:
    """``TOPK_DB`` pointing to a file that does not exist, and no benchmark database either (a
    developer's ``var/bench.duckdb`` must not change what the pages show in tests)."""
    path = tmp_path / "absent.duckdb"
    monkeypatch.setenv("TOPK_DB", str(path))
    monkeypatch.setattr(data, "BENCH_DB", tmp_path / "absent-bench.duckdb")
    return path


@pytest.fixture
def app(missing_db) -> AppTest:
    """The dashboard entry file, not run yet, without a database."""
    return AppTest.from_file(ENTRY, default_timeout=60)


@pytest.fixture
def trace() -> data.Trace:
    """A small two-feature stream written as the dataset ``demo``."""
    full = data.synthetic_uniform(rows=1000, dimensions=2, seed=3)
    return data.Trace("demo", full.ids + 10_000, full.t, full.x, ("notional", "size"), "ms")


@pytest.fixture
def filled_db(tmp_path, monkeypatch, trace) -> Path:
    """A database per ``docs/CONTRACTS.md``: dataset ``demo`` and run ``run-1`` of ``RUN_QUERY``.

    The run has the oracle's answers and a ``pretopk`` whose second rank at slide 5 is
    replaced by a wrong object (as an approximate algorithm would return).
    """
    db = tmp_path / "topk.duckdb"
    parquet = tmp_path / "demo.parquet"
    with duckdb.connect(str(db)) as con:
        con.register("trace_rows", pd.DataFrame({"id": trace.ids, "seq": np.arange(len(trace)), "t": trace.t,
                                                 "notional": trace.x[:, 0], "size": trace.x[:, 1]}))
        con.execute(f"COPY trace_rows TO '{parquet}' (FORMAT parquet)")
        con.execute("""CREATE TABLE datasets(name VARCHAR PRIMARY KEY, family VARCHAR, source_files JSON,
            rows_read BIGINT, rows_rejected BIGINT, rejects JSON, features JSON, t_unit VARCHAR,
            t_min BIGINT, t_max BIGINT, ingested_at TIMESTAMP, parquet VARCHAR)""")
        con.execute("INSERT INTO datasets VALUES ('demo', 'synthetic', '[]', ?, 0, '{}', ?, 'ms', ?, ?, "
                    "now(), ?)", [len(trace), json.dumps(list(trace.features)), int(trace.t[0]),
                                  int(trace.t[-1]), str(parquet)])
        con.execute("""CREATE TABLE runs(run_id VARCHAR PRIMARY KEY, dataset VARCHAR, config JSON,
            spark_master VARCHAR, shards INTEGER, started_at TIMESTAMP, finished_at TIMESTAMP, status VARCHAR)""")
        con.execute(f"INSERT INTO runs VALUES ('{RUN_ID}', 'demo', '{{}}', 'local[2]', 2, now(), now(), 'finished')")
        con.execute("""CREATE TABLE queries(run_id VARCHAR, query_id INTEGER, weights JSON, k INTEGER,
            "window" BIGINT, slide BIGINT, kind VARCHAR)""")
        con.execute(f"INSERT INTO queries VALUES ('{RUN_ID}', 0, ?, ?, ?, ?, ?)",
                    [json.dumps(list(RUN_QUERY.weights)), RUN_QUERY.k, RUN_QUERY.window, RUN_QUERY.slide,
                     RUN_QUERY.kind])
        con.execute("""CREATE TABLE answers(run_id VARCHAR, query_id INTEGER, algorithm VARCHAR, slide BIGINT,
            "end" BIGINT, rank INTEGER, object_id BIGINT, score DOUBLE)""")
        con.execute("""CREATE TABLE slide_metrics(run_id VARCHAR, query_id INTEGER, algorithm VARCHAR,
            slide BIGINT, "end" BIGINT, candidates BIGINT, retained BIGINT, bytes BIGINT, seconds DOUBLE,
            "precision" DOUBLE, error DOUBLE)""")
        for slide, answer in enumerate(oracle_answers(trace.arrays, RUN_QUERY)):
            end = (slide + 1) * RUN_QUERY.slide
            for algorithm in ("oracle", "pretopk"):
                ids, scores = answer.ids.copy(), answer.scores.copy()
                if algorithm == "pretopk" and slide == 5:
                    ids[1], scores[1] = -1, -9.0
                con.executemany(f"INSERT INTO answers VALUES ('{RUN_ID}', 0, ?, ?, ?, ?, ?, ?)",
                                [[algorithm, slide, end, rank + 1, int(i), float(s)]
                                 for rank, (i, s) in enumerate(zip(ids, scores))])
                con.execute(f"INSERT INTO slide_metrics VALUES ('{RUN_ID}', 0, ?, ?, ?, ?, ?, ?, 0.001, ?, 0.0)",
                            [algorithm, slide, end, len(answer), len(answer), 8 * len(answer),
                             0.8 if algorithm == "pretopk" and slide == 5 else 1.0])
    monkeypatch.setenv("TOPK_DB", str(db))
    return db


class ApproximateForTests(engine.algorithms.oracle.Oracle):
    """An approximate algorithm for the tests: the oracle's answer with its last rank replaced
    by the window's worst object, and three "layers" (for the layer projection panel)."""

    name = "approx_for_tests"
    summary = "the oracle with a wrong last rank (tests only)"
    exact = False
    defaults = {"layers": 3}

    def topk(self) -> engine.Answer:
        exact = super().topk()
        if len(exact) < 2:
            return exact
        worst = self.query([-w for w in self.q.weights], 1)
        keep = slice(0, len(exact) - 1)
        return engine.Answer(np.append(exact.ids[keep], worst.ids), np.append(exact.scores[keep], -worst.scores),
                             np.append(exact.seq[keep], worst.seq))

    def layers(self) -> list[np.ndarray]:
        seq = np.sort(self.candidates())
        return [part for part in np.array_split(seq, self.params["layers"]) if len(part)]


@pytest.fixture
def approximate():
    """``approx_for_tests`` registered for the duration of one test."""
    from engine import registry
    registry.register(ApproximateForTests)
    yield ApproximateForTests.name
    registry._REGISTRY.pop(ApproximateForTests.name)


class FailsOnDataForTests(engine.algorithms.oracle.Oracle):
    """Refuses slides bigger than its ``most`` parameter while processing (as EAA refuses repeats)."""

    name = "fails_for_tests"
    summary = "the oracle, refusing big slides (tests only)"
    defaults = {"most": 10}

    def process(self, batch) -> None:
        if len(batch) > self.params["most"]:
            raise ValueError(f"{self.name}: a slide of {len(batch)} objects, more than most={self.params['most']}; "
                             "raise the parameter")
        super().process(batch)


@pytest.fixture
def failing():
    """``fails_for_tests`` registered for the duration of one test."""
    from engine import registry
    registry.register(FailsOnDataForTests)
    yield FailsOnDataForTests.name
    registry._REGISTRY.pop(FailsOnDataForTests.name)


DEMO = json.loads((Path(__file__).resolve().parents[2] / "pipelines" / "configs" / "demo.json").read_text())
"""``make run``'s demo config (dataset ``spy``, its query and algorithms)."""
DEMO_RUN = "demo-20261126T090000Z"
OTHER_RUN = "families-20261126T090500Z"
DEMO_ROWS = 12_000


def demo_trace() -> data.Trace:
    """A small stand-in for SPY: trades of one session (ms clock), features notional, price, size."""
    rng = np.random.default_rng(11)
    t = 1381152600000 + np.cumsum(rng.integers(0, 400, DEMO_ROWS)).astype(np.int64)  # 2013-10-07 09:30 New York
    price = 168.0 + np.cumsum(rng.normal(0, 0.01, DEMO_ROWS))
    size = np.round(rng.pareto(1.5, DEMO_ROWS) * 100 + 100)
    x = np.column_stack([price * size, price, size])
    return data.Trace("spy", np.arange(DEMO_ROWS, dtype=np.int64) + 1, t, x, ("notional", "price", "size"), "ms",
                      "stock")


def write_run(con, run_id: str, config: dict, trace: data.Trace, started: str) -> None:
    """A finished run as the replay writes it: every configured algorithm over every query, with real engines."""
    con.execute("INSERT INTO runs (run_id, dataset, config, spark_master, shards, started_at, finished_at, status) "
                "VALUES (?, ?, ?, 'local[*]', 1, ?::TIMESTAMP, ?::TIMESTAMP + INTERVAL 1 MINUTE, 'finished')",
                [run_id, config["dataset"], json.dumps(config), started, started])
    for query_id, spec in enumerate(config["queries"]):
        weights = [float(spec["weights"].get(f, 0.0)) for f in trace.features]
        query = engine.Query(weights=weights, k=spec["k"], window=spec["window"], slide=spec["slide"],
                             kind=spec["kind"])
        con.execute("INSERT INTO queries VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [run_id, query_id, json.dumps(weights), query.k, query.window, query.slide, query.kind])
        engines = {a["name"]: engine.create(a["name"], query, **a.get("params", {})) for a in config["algorithms"]}
        reference, error = (("oracle-incomplete", engine.metrics.absolute_error) if trace.stream == "incomplete"
                            else ("oracle", engine.metrics.relative_error))  # the replay's choice
        answers, metrics_rows = [], []
        for slide, batch in enumerate(engine.slides(trace.arrays, query)):
            exact = None
            for name, alg in engines.items():  # the reference first
                alg.process(batch)
                answer = alg.topk()
                exact = answer if name == reference else exact
                stats = alg.stats()
                answers += [[run_id, query_id, name, slide, batch.end, rank + 1, int(i), float(s)]
                            for rank, (i, s) in enumerate(zip(answer.ids, answer.scores))]
                metrics_rows.append([run_id, query_id, name, slide, batch.end, stats["candidates"], stats["retained"],
                                     stats["bytes"], 0.001, engine.metrics.precision(exact, answer),
                                     error(exact, answer), stats.get("measured_bytes")])
        for table, rows in (("answers", answers), ("slide_metrics", metrics_rows)):
            con.register("incoming", pd.DataFrame(rows))
            con.execute(f"INSERT INTO {table} SELECT * FROM incoming")
            con.unregister("incoming")


@pytest.fixture(scope="session")
def demo_db_file(tmp_path_factory) -> Path:
    """What ``make run`` leaves, in small: datasets ``spy`` and ``taxi``, the demo run on ``spy``
    (``demo.json``'s query and algorithms) and a later ``families`` run on ``taxi``.

    Tables as ``pipelines/store.py`` creates them (the contract of ``docs/CONTRACTS.md``). Built
    once per session; :func:`demo_db` hands each test its own copy.
    """
    from pipelines import store

    tmp_path = tmp_path_factory.mktemp("make-run")
    db = tmp_path / "topk.duckdb"
    spy = demo_trace()
    rng = np.random.default_rng(5)
    taxi = data.Trace("taxi", np.arange(3000, dtype=np.int64) + 7,
                      1546318800000 + np.cumsum(rng.integers(0, 2_000_000, 3000)).astype(np.int64),
                      rng.uniform(1, 60, (3000, 5)), ("duration", "distance", "speed", "fare", "tip"), "ms", "taxi")
    with duckdb.connect(str(db)) as con:
        for statement in store.SCHEMA:
            con.execute(statement)
        for trace in (spy, taxi):
            parquet = tmp_path / f"{trace.name}.parquet"
            con.register("trace_rows", pd.DataFrame({"id": trace.ids, "seq": np.arange(len(trace)), "t": trace.t,
                                                     **{f: trace.x[:, j] for j, f in enumerate(trace.features)}}))
            con.execute(f"COPY trace_rows TO '{parquet}' (FORMAT parquet)")
            con.unregister("trace_rows")
            con.execute("INSERT INTO datasets (name, family, source_files, rows_read, rows_rejected, rejects, "
                        "features, t_unit, t_min, t_max, ingested_at, parquet) "
                        "VALUES (?, ?, '[]', ?, 0, '{}', ?, 'ms', ?, ?, now(), ?)",
                        [trace.name, trace.family, len(trace), json.dumps(list(trace.features)), int(trace.t[0]),
                         int(trace.t[-1]), str(parquet)])
        write_run(con, DEMO_RUN, DEMO, spy, "2026-11-26 09:00:00")
        families = {"name": "families", "dataset": "taxi", "shards": 1,
                    "queries": [{"weights": {"speed": 1.0}, "k": 10, "window": 1000, "slide": 100, "kind": "count"}],
                    "algorithms": [{"name": "oracle"}, {"name": "mintopk"}]}
        write_run(con, OTHER_RUN, families, taxi, "2026-11-26 09:05:00")
    return db


@pytest.fixture
def demo_db(demo_db_file, tmp_path, monkeypatch) -> Path:
    """A copy of :func:`demo_db_file` as ``TOPK_DB``."""
    db = tmp_path / "topk.duckdb"
    shutil.copy(demo_db_file, db)
    monkeypatch.setenv("TOPK_DB", str(db))
    return db


WORLDCUP_RUN = "worldcup-20261126T091000Z"


WORLDCUP_QUERY = engine.Query(weights=[1.0] * 4, k=5, window=500, slide=50)


def worldcup_trace() -> data.Trace:
    """A small attribute stream in the World Cup's shape: four sections, an ms clock in June 1998."""
    rows = data.synthetic_attributes(rows=3000, streams=4, seed=5)
    return data.Trace("worldcup", rows.ids, 898_000_000_000 + rows.t * 1000, rows.x,
                      ("images", "english", "french", "other"), "ms", "worldcup", "incomplete", rows.streams,
                      rows.values)


@pytest.fixture
def worldcup_db(tmp_path, monkeypatch) -> Path:
    """Dataset ``worldcup`` (:func:`worldcup_trace`) and a run of :data:`WORLDCUP_QUERY` over it with
    ``oracle-incomplete`` as the exact reference, as ``pipelines/configs/worldcup.json`` has it."""
    from pipelines import store

    trace = worldcup_trace()
    db, parquet = tmp_path / "topk.duckdb", tmp_path / "worldcup.parquet"
    with duckdb.connect(str(db)) as con:
        for statement in store.SCHEMA:
            con.execute(statement)
        con.register("trace_rows", pd.DataFrame({"id": trace.ids, "seq": np.arange(len(trace)), "t": trace.t,
                                                 "stream": trace.streams, "value": trace.values}))
        con.execute(f"COPY trace_rows TO '{parquet}' (FORMAT parquet)")
        con.unregister("trace_rows")
        con.execute("INSERT INTO datasets (name, family, source_files, rows_read, rows_rejected, rejects, features, "
                    "t_unit, t_min, t_max, ingested_at, parquet) VALUES ('worldcup', 'worldcup', '[]', ?, 0, '{}', ?, "
                    "'ms', ?, ?, now(), ?)", [len(trace), json.dumps(list(trace.features)), int(trace.t[0]),
                                             int(trace.t[-1]), str(parquet)])
        config = {"name": "worldcup", "dataset": "worldcup", "shards": 1,
                  "queries": [{"weights": dict(zip(trace.features, WORLDCUP_QUERY.weights)), "k": WORLDCUP_QUERY.k,
                               "window": WORLDCUP_QUERY.window, "slide": WORLDCUP_QUERY.slide, "kind": "count"}],
                  "algorithms": [{"name": "oracle-incomplete"}, {"name": "approx"}]}
        write_run(con, WORLDCUP_RUN, config, trace, "2026-11-26 09:10:00")
    monkeypatch.setenv("TOPK_DB", str(db))
    return db


@pytest.fixture
def no_rows_db(missing_db, tmp_path) -> Path:
    """``TOPK_DB`` holding one dataset, ``nothing``, without rows."""
    from pipelines import store

    parquet = tmp_path / "empty.parquet"
    with duckdb.connect(str(missing_db)) as con:
        for statement in store.SCHEMA:
            con.execute(statement)
        con.execute(f"COPY (SELECT 1::BIGINT AS id, 0::BIGINT AS seq, 0::BIGINT AS t, 1.0::DOUBLE AS a LIMIT 0) "
                    f"TO '{parquet}' (FORMAT parquet)")
        con.execute("INSERT INTO datasets (name, family, source_files, rows_read, rows_rejected, rejects, features, "
                    "t_unit, ingested_at, parquet) VALUES ('nothing', 'csv', '[]', 0, 0, '{}', '[\"a\"]', 'ms', now(), ?)",
                    [str(parquet)])
    return missing_db
