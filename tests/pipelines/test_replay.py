"""Replay on a real local Spark into a real DuckDB file, checked against the engine run directly."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import engine
from pipelines import ingest, replay, replay_config, replay_job, replay_load, replay_tasks, store
from pipelines.errors import InputError
from tests.pipelines.conftest import small_replay, trade_lines, write_trade_zip

QUERIES = [
    {"weights": {"notional": 1.0}, "k": 4, "window": 60, "slide": 20, "kind": "count"},
    {"weights": {"price": 1.0, "size": -0.001}, "k": 3, "window": 1_800_000, "slide": 600_000, "kind": "time"},
]
ALGORITHMS = [{"name": "oracle"}, {"name": "mintopk"}]
DAY1_ROWS, DAY2_ROWS = 1_203, 900
MAX_GAP_MS = 20_000
SNAPSHOT_EVERY = 25
ANSWER_COLUMNS = 'query_id, algorithm, slide, "end", rank, object_id, score'
METRIC_COLUMNS = 'query_id, algorithm, slide, "end", candidates, retained, bytes, precision, error'
quiet = dict(log=lambda _: None)


def write_config(directory, name, dataset, **extra):
    path = directory / f"{name}.json"
    path.write_text(json.dumps({"name": name, "dataset": dataset, "queries": QUERIES, "algorithms": ALGORITHMS,
                                **extra}))
    return path


def rows_of(db, table, columns, run_id):
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(f"SELECT {columns} FROM {table} WHERE run_id = ? ORDER BY {columns}", [run_id]).fetchall()


def metrics_rows(db, run_id):
    return rows_of(db, "slide_metrics", METRIC_COLUMNS, run_id)


def table_counts(db):
    with duckdb.connect(str(db), read_only=True) as con:
        return {table: con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                for table in ("runs", "queries", "answers", "slide_metrics", "snapshots")}


@pytest.fixture(scope="module")
def trades(tmp_path_factory):
    directory = tmp_path_factory.mktemp("trades")
    return (write_trade_zip(directory, "SPY", "20131007", trade_lines(DAY1_ROWS, seed=7, max_gap_ms=MAX_GAP_MS)),
            write_trade_zip(directory, "SPY", "20131008", trade_lines(DAY2_ROWS, seed=8, max_gap_ms=MAX_GAP_MS)))


@pytest.fixture(scope="module")
def store_dir(spark, trades, tmp_path_factory):
    """A DuckDB file holding dataset ``full`` (both days) and a run of every query over it."""
    directory = tmp_path_factory.mktemp("store")
    ingest.ingest(spark, "stock", trades, db=directory / "topk.duckdb", out=directory, name="full", **quiet)
    return directory


@pytest.fixture(scope="module")
def full_run(spark, store_dir):
    config = write_config(store_dir, "direct", "full", snapshot_every=SNAPSHOT_EVERY)
    return replay.replay(spark, config, db=store_dir / "topk.duckdb", **quiet).run_id


def engine_run(parquet, query_spec):
    """Answers and stats of the oracle run over the dataset directly, slide by slide."""
    table = pq.read_table(parquet)
    features = ["notional", "price", "size"]
    weights = [query_spec["weights"].get(name, 0.0) for name in features]
    query = engine.Query(weights=weights, **{key: query_spec[key] for key in ("k", "window", "slide", "kind")})
    x = np.column_stack([table.column(name).to_numpy() for name in features])
    oracle = engine.create("oracle", query)
    answers, stats = [], []
    for batch in engine.slides((table.column("id").to_numpy(), table.column("t").to_numpy(), x), query):
        oracle.process(batch)
        answer = oracle.topk()
        answers += [(batch.index, batch.end, rank + 1, int(i), float(s))
                    for rank, (i, s) in enumerate(zip(answer.ids, answer.scores))]
        stats.append((batch.index, batch.end, *(oracle.stats()[key] for key in ("candidates", "retained", "bytes"))))
    return answers, stats


def test_replay_writes_what_the_engine_answers(store_dir, full_run):
    db = store_dir / "topk.duckdb"
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT dataset, shards, status, finished_at IS NOT NULL FROM runs WHERE run_id = ?",
                           [full_run]).fetchone() == ("full", 1, "finished", True)
        assert con.execute('SELECT query_id, weights, k, "window", slide, kind FROM queries WHERE run_id = ? '
                           "ORDER BY query_id", [full_run]).fetchall() == [
            (0, "[1.0,0.0,0.0]", 4, 60, 20, "count"), (1, "[0.0,1.0,-0.001]", 3, 1_800_000, 600_000, "time")]
    for query_id, spec in enumerate(QUERIES):
        answers, stats = engine_run(store_dir / "full.parquet", spec)
        assert len(stats) > 20
        for algorithm in ("oracle", "mintopk"):
            stored = [row[2:] for row in rows_of(db, "answers", ANSWER_COLUMNS, full_run)
                      if row[:2] == (query_id, algorithm)]
            assert stored == answers, (query_id, algorithm)
        metrics = [row for row in rows_of(db, "slide_metrics", METRIC_COLUMNS, full_run) if row[0] == query_id]
        assert [row[2:7] for row in metrics if row[1] == "oracle"] == stats
        assert {row[7:] for row in metrics} == {(1.0, 0.0)}
        assert {row[1] for row in metrics} == {"oracle", "mintopk"}
    with duckdb.connect(str(db), read_only=True) as con:  # measured beside modelled bytes, every slide
        assert con.execute("SELECT count(*), count(measured_bytes), min(measured_bytes) > 0 FROM slide_metrics "
                           "WHERE run_id = ?", [full_run]).fetchone()[1:] == (len(metrics_rows(db, full_run)), True)


def test_replay_snapshots_restore_to_the_last_answer(store_dir, full_run):
    db = store_dir / "topk.duckdb"
    with duckdb.connect(str(db), read_only=True) as con:
        snapshots = con.execute("SELECT query_id, algorithm, shard, slide, last_seq, format_version, state, checksum "
                                "FROM snapshots WHERE run_id = ? ORDER BY slide", [full_run]).fetchall()
        last_slides = dict(con.execute("SELECT query_id, max(slide) FROM slide_metrics WHERE run_id = ? "
                                       "GROUP BY query_id", [full_run]).fetchall())
    for query_id, spec in enumerate(QUERIES):
        answers, _ = engine_run(store_dir / "full.parquet", spec)
        last_slide = last_slides[query_id]
        for algorithm in ("oracle", "mintopk"):
            mine = [s for s in snapshots if s[:3] == (query_id, algorithm, 0)]
            segment_ends = sorted({min(end, last_slide) for end in range(SNAPSHOT_EVERY - 1, last_slide + SNAPSHOT_EVERY,
                                                                          SNAPSHOT_EVERY)})
            assert [s[3] for s in mine] == segment_ends[-2:]  # retention: the last two complete snapshots
            *_, slide, last_seq, version, state, checksum = mine[-1]
            restored = engine.restore(json.loads(state))
            assert (slide, version, checksum) == (last_slide, engine.FORMAT_VERSION, json.loads(state)["checksum"])
            assert restored.topk().ids.tolist() == [a[3] for a in answers if a[0] == last_slide]
            if spec["kind"] == "count":
                assert last_seq == (last_slide + 1) * spec["slide"] - 1


def test_sharded_replay_equals_unsharded(spark, store_dir, full_run):
    db = store_dir / "topk.duckdb"
    sharded = replay.replay(spark, write_config(store_dir, "sharded", "full", shards=2), db=db, **quiet).run_id
    assert rows_of(db, "answers", ANSWER_COLUMNS, sharded) == rows_of(db, "answers", ANSWER_COLUMNS, full_run)
    metrics = rows_of(db, "slide_metrics", METRIC_COLUMNS, sharded)
    assert {row[7:] for row in metrics} == {(1.0, 0.0)}
    oracle_sizes = {row[:4]: row[4] for row in rows_of(db, "slide_metrics", METRIC_COLUMNS, full_run)
                    if row[1] == "oracle"}
    assert {row[:4]: row[4] for row in metrics if row[1] == "oracle"} == oracle_sizes
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT DISTINCT shard FROM snapshots WHERE run_id = ? ORDER BY shard",
                           [sharded]).fetchall() == [(0,), (1,)]


def test_resume_after_appended_day_equals_uninterrupted_run(spark, trades, store_dir, full_run, tmp_path):
    db = store_dir / "topk.duckdb"
    ingest.ingest(spark, "stock", [trades[0]], db=db, out=tmp_path, name="growing", **quiet)
    config = write_config(tmp_path, "growing", "growing", snapshot_every=SNAPSHOT_EVERY)
    first = replay.replay(spark, config, db=db, resume=True, **quiet)
    assert not first.resumed and first.slides_written > 0
    ingest.ingest(spark, "stock", [trades[1]], db=db, out=tmp_path, name="growing", append=True, **quiet)
    second = replay.replay(spark, config, db=db, resume=True, **quiet)
    assert second.resumed and second.run_id == first.run_id and second.slides_written > 0

    assert rows_of(db, "answers", ANSWER_COLUMNS, first.run_id) == rows_of(db, "answers", ANSWER_COLUMNS, full_run)
    figures = METRIC_COLUMNS + ", measured_bytes"  # the same after the restore, and in other workers
    assert rows_of(db, "slide_metrics", figures, first.run_id) == rows_of(db, "slide_metrics", figures, full_run)

    before = table_counts(db), rows_of(db, "runs", "status, finished_at", first.run_id)
    third = replay.replay(spark, config, db=db, resume=True, **quiet)
    assert third.slides_written == 0
    assert (table_counts(db), rows_of(db, "runs", "status, finished_at", first.run_id)) == before


def killed_loading_the_second_segment(spark, config, db, monkeypatch, query_ids):
    """Replay ``config`` loading one segment at a time until the load of the second segment of
    one of ``query_ids`` fails, as a replay killed there would."""
    original_markers, original_load = replay_load.QueryLoad.markers, replay_load.load

    def one_segment_at_a_time(self):
        return original_markers(self)[:1]

    def dies_loading_the_second_segment(con, run_id, progress, markers, **kwargs):
        if progress.query_id in query_ids and progress.next_slide >= SNAPSHOT_EVERY:
            raise RuntimeError("killed")
        return original_load(con, run_id, progress, markers, **kwargs)

    monkeypatch.setattr(replay_load.QueryLoad, "markers", one_segment_at_a_time)
    monkeypatch.setattr(replay_load, "load", dies_loading_the_second_segment)
    with pytest.raises(RuntimeError, match="killed"):
        replay.replay(spark, config, db=db, **quiet)
    monkeypatch.undo()


def test_killed_run_resumes_without_losing_or_repeating_a_slide(spark, store_dir, full_run, monkeypatch):
    db = store_dir / "topk.duckdb"
    config = write_config(store_dir, "killed", "full", snapshot_every=SNAPSHOT_EVERY)
    killed_loading_the_second_segment(spark, config, db, monkeypatch, query_ids={0})
    with duckdb.connect(str(db), read_only=True) as con:
        run_id, status, reason = con.execute("SELECT run_id, status, reason FROM runs "
                                             "WHERE run_id LIKE 'killed-%'").fetchone()
        assert (status, reason) == ("failed", "RuntimeError: killed")
        assert con.execute("SELECT DISTINCT slide FROM slide_metrics WHERE run_id = ? AND query_id = 0 "
                           "ORDER BY slide", [run_id]).fetchall() == [(slide,) for slide in range(SNAPSHOT_EVERY)]

    resumed = replay.replay(spark, config, db=db, resume=True, **quiet)
    assert resumed.run_id == run_id
    assert rows_of(db, "answers", ANSWER_COLUMNS, run_id) == rows_of(db, "answers", ANSWER_COLUMNS, full_run)
    assert rows_of(db, "runs", "status, reason", run_id) == [("finished", None)]


def test_a_run_resumed_with_other_segment_settings_goes_on_with_them_and_records_them(spark, store_dir, full_run,
                                                                                    monkeypatch):
    db = store_dir / "topk.duckdb"
    config = write_config(store_dir, "retuned", "full", snapshot_every=SNAPSHOT_EVERY)
    killed_loading_the_second_segment(spark, config, db, monkeypatch, query_ids={0, 1})

    retuned = write_config(store_dir, "retuned", "full", snapshot_every=SNAPSHOT_EVERY + 15, keep_snapshots=1)
    resumed = replay.replay(spark, retuned, db=db, resume=True, **quiet)
    assert resumed.resumed
    assert rows_of(db, "answers", ANSWER_COLUMNS, resumed.run_id) == rows_of(db, "answers", ANSWER_COLUMNS, full_run)
    with duckdb.connect(str(db), read_only=True) as con:
        stored = store.from_json(con.execute("SELECT config FROM runs WHERE run_id = ?",
                                             [resumed.run_id]).fetchone()[0])
        kept = con.execute("SELECT max(n) FROM (SELECT count(DISTINCT slide) AS n FROM snapshots WHERE run_id = ? "
                           "GROUP BY query_id, algorithm, shard)", [resumed.run_id]).fetchone()[0]
    assert (stored["snapshot_every"], stored["keep_snapshots"]) == (SNAPSHOT_EVERY + 15, 1)
    assert kept == 1


def test_resume_refuses_a_dataset_ingested_again_with_other_rows(spark, trades, tmp_path):
    """A count window's boundaries do not depend on the rows: a dataset ingested again under its
    name from another day (as many rows or more) must not be continued as if it were the same."""
    db = tmp_path / "topk.duckdb"
    ingest.ingest(spark, "stock", [trades[0]], db=db, out=tmp_path, name="again", **quiet)
    config = tmp_path / "again.json"
    config.write_text(json.dumps({"name": "again", "dataset": "again", "snapshot_every": SNAPSHOT_EVERY,
                                  "queries": QUERIES[:1], "algorithms": ALGORITHMS}))
    first = replay.replay(spark, config, db=db, **quiet)
    other_day = write_trade_zip(tmp_path, "SPY", "20131009", trade_lines(DAY1_ROWS + 300, seed=9))
    ingest.ingest(spark, "stock", [other_day], db=db, out=tmp_path, name="again", **quiet)
    before = table_counts(db)
    with pytest.raises(InputError, match="dataset again no longer holds the rows its snapshots were taken over"):
        replay.replay(spark, config, db=db, resume=True, run_id=first.run_id, **quiet)
    assert table_counts(db) == before

    ingest.ingest(spark, "stock", [trades[0]], db=db, out=tmp_path, name="again", **quiet)  # the same rows again
    assert replay.replay(spark, config, db=db, resume=True, run_id=first.run_id, **quiet).slides_written == 0


def test_resume_refuses_a_changed_config(store_dir, full_run, tmp_path):
    config = write_config(tmp_path, "direct", "full", snapshot_every=SNAPSHOT_EVERY)
    data = json.loads(config.read_text())
    data["queries"][0]["k"] = 5
    config.write_text(json.dumps(data))
    with pytest.raises(InputError, match="other queries"):
        replay.prepare(config, db=store_dir / "topk.duckdb", resume=True)


@pytest.mark.parametrize("change, message", [
    ({"dataset": "nope"}, "no dataset 'nope'"),
    ({"algorithms": [{"name": "nope"}]}, "unknown algorithm"),
    ({"algorithms": [{"name": "mintopk", "params": {"depth": 3}}]}, "unknown parameter"),
    ({"queries": [{"weights": [1.0], "k": 1, "window": 4, "slide": 2}]}, "1 weight(s) for 3 feature(s)"),
    ({"queries": [{"weights": {"volume": 1.0}, "k": 1, "window": 4, "slide": 2}]}, "unknown feature(s) volume"),
    ({"queries": [{"weights": {"price": 1.0}, "k": 1, "window": 5, "slide": 2}]}, "window must be a multiple"),
    ({"shards": 0}, "shards must be an integer >= 1"),
    ({"keep_snapshots": 0}, "keep_snapshots must be an integer >= 1"),
    ({"queries": [{"weights": {"price": 1.0}, "k": 11, "window": 10, "slide": 5}]},
     "k (11) is larger than the count window (10)"),
    ({"name": "../../elsewhere"}, "config: name '../../elsewhere': use letters"),
    ({"name": ["demo"]}, "'name' must be a string, got ['demo']"),
    ({"name": "é" * 150}, "at most 200 bytes"),  # 300 bytes: its staging directory's name would be too long
    ({"shards": 1_000_000}, "shards must be at most 1,024"),
    ({"queries": [{"weights": {"price": True}, "k": 1, "window": 10, "slide": 5}]}, "weights must be numbers"),
    ({"queries": [{"weights": ["1", 0, 0], "k": 1, "window": 10, "slide": 5}]}, "weights must be numbers"),
    ({"queries": [{"weights": [1, 0, 0], "k": 1, "window": 2**70, "slide": 2**70}]},
     "window must be at most 9,223,372,036,854,775,807"),
    ({"queries": [{"weights": [1, 0, 0], "k": 10**30, "window": 60_000, "slide": 1_000, "kind": "time"}]},
     "k must be at most 2,147,483,647 (a 32-bit integer), got 1,000,000,000,000,000,000,000,000,000,000"),
    # queries.k is a DuckDB INTEGER: this k passed the check, started Spark, then its insert was a traceback
    ({"queries": [{"weights": [1, 0, 0], "k": 2**31, "window": 60_000, "slide": 1_000, "kind": "time"}]},
     "k must be at most 2,147,483,647 (a 32-bit integer), got 2,147,483,648"),
    ({"volume": 1}, "config: top level: unknown key(s) volume"),
    ({"keep_snapshots": 10**30}, "keep_snapshots must be at most 9,223,372,036,854,775,807"),
])
def test_replay_cli_bad_config_is_one_line_and_status_2(store_dir, full_run, tmp_path, capsys, change, message):
    """Refused before Spark starts, leaving the database exactly as it was."""
    db = store_dir / "topk.duckdb"
    config = tmp_path / "bad.json"
    config.write_text(json.dumps({"dataset": "full", "queries": QUERIES, "algorithms": ALGORITHMS, **change}))
    before = table_counts(db)
    assert replay.main(["--config", str(config), "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and message in err
    assert table_counts(db) == before


@pytest.mark.parametrize("run_id", ["..", "../victim", "ABSOLUTE", ".hidden", "a/b"])
def test_a_run_id_that_is_not_one_file_name_is_refused_before_anything_is_deleted(spark, store_dir, tmp_path, run_id):
    """The run id names the staging directory the replay empties and removes: ``..`` or an
    absolute path would have removed the database's own directory, or any other."""
    home, victim = tmp_path / "home", tmp_path / "victim"
    for directory in (home, victim, home / "topk.duckdb.staging"):
        directory.mkdir()
        (directory / "keep.txt").write_text("precious")
    db = home / "topk.duckdb"
    with store.connection(db) as con:
        store.insert_row(con, "datasets", {"name": "full", "family": "stock", "features": ["notional", "price", "size"],
                                           "parquet": str(store_dir / "full.parquet")})
    run_id = str(victim) if run_id == "ABSOLUTE" else run_id
    with pytest.raises(InputError, match=re.escape(f"--run-id {run_id!r}: use letters")):
        replay.replay(spark, write_config(home, "direct", "full"), db=db, run_id=run_id, **quiet)
    for directory in (home, victim, home / "topk.duckdb.staging"):
        assert (directory / "keep.txt").read_text() == "precious"
    assert table_counts(db) == {"runs": 0, "queries": 0, "answers": 0, "slide_metrics": 0, "snapshots": 0}


@pytest.mark.parametrize("source, message", [
    ("def broken(:\n", "SyntaxError: "),
    ("raise RuntimeError('no licence server')\n", "RuntimeError: no licence server"),
])
def test_a_plugin_that_fails_to_import_is_refused_naming_it(tmp_path, monkeypatch, source, message):
    (tmp_path / "shaky_plugin.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    config = {"name": "p", "dataset": "d", "plugins": ["shaky_plugin"], "algorithms": [{"name": "oracle"}],
              "queries": [{"weights": [1.0], "k": 1, "window": 4, "slide": 2}]}
    with pytest.raises(InputError, match=re.escape(f"config: plugin 'shaky_plugin' cannot be imported ({message}")):
        replay_config.parse_config(config, ["x"])


@pytest.mark.parametrize("algorithm", ["oracle", "multi"])
@pytest.mark.parametrize("label", [5, False, 0, [], {"a": 1}])
def test_a_label_that_is_not_text_is_refused_naming_it(algorithm, label):
    """It named the algorithm in every result: 5 was stored as "5", false or 0 silently became the default."""
    config = {"name": "p", "dataset": "d", "algorithms": [{"name": algorithm, "label": label}],
              "queries": [{"weights": [1.0], "k": 1, "window": 4, "slide": 2}]}
    with pytest.raises(InputError, match=re.escape(f"config: algorithm 0 ({algorithm}): label must be text, "
                                                   f"got {json.dumps(label)}")):
        replay_config.parse_config(config, ["x"])

def test_a_config_name_may_hold_any_letters():
    config = {"name": "démo über 2", "dataset": "d", "algorithms": [{"name": "oracle"}],
              "queries": [{"weights": [1.0], "k": 1, "window": 4, "slide": 2}]}
    assert replay_config.parse_config(config, ["x"]).name == "démo über 2"


def test_a_config_saved_with_a_byte_order_mark_is_read_as_run_many_reads_its_queries(tmp_path):
    """Windows editors start UTF-8 files with a BOM; run-many and run read theirs."""
    config = {"name": "demo", "dataset": "d", "algorithms": [{"name": "oracle"}],
              "queries": [{"weights": [1.0], "k": 1, "window": 4, "slide": 2}]}
    path = tmp_path / "demo.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(config).encode())
    assert replay_config.read_config(path) == config



@pytest.mark.parametrize("text, message", [
    # json keeps the last of two equal keys silently: this query would have weighed notional 2
    ('{"dataset": "d", "queries": [{"weights": {"notional": 1, "notional": 2}, "k": 1, "window": 4, "slide": 2}], '
     '"algorithms": [{"name": "oracle"}]}', "key 'notional' appears twice in one object"),
    ('{"dataset": "d", "dataset": "e", "queries": [], "algorithms": []}', "key 'dataset' appears twice in one object"),
    # json raised RecursionError: a traceback and exit status 1
    ('{"dataset": "d", "queries": ' + "[" * 100_000 + "]" * 100_000 + "}", "lists or objects nested too deeply"),
])
def test_a_config_with_a_repeated_key_or_too_deep_is_one_error_line_as_run_many_says_it(tmp_path, capsys, text,
                                                                                        message):
    """Refused before the dataset is looked up, as run-many refuses its queries file."""
    db, config = tmp_path / "topk.duckdb", tmp_path / "bad.json"
    with store.connection(db):
        pass
    config.write_text(text)
    assert replay.main(["--config", str(config), "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {config}: {message}")
    assert err.count("\n") == 1 and "Traceback" not in err


EDITED_SNAPSHOTS = [
    (lambda state: {**state, "data": {**state["data"], "current": state["data"]["current"] + 1}},
     "state differs in data"),
    (lambda state: engine.jsondata.seal({**state, "params": {"prefilter": False}}),
     r"state differs in params \(prefilter: False saved, True asked\)"),
    (lambda state: engine.jsondata.seal({**state, "algorithm": "pretopk"}),
     r"state differs in algorithm \(pretopk saved, mintopk asked\)"),
    (lambda state: engine.jsondata.seal({**state, "query": {**state["query"], "k": 6}}),
     r"state differs in query \(k: 6 saved, 4 asked\)"),
]
"""A snapshot edited (data as is; params, algorithm and query with a checksum recomputed to match)."""


def test_resume_refuses_an_edited_snapshot_naming_what_differs(spark, store_dir, tmp_path):
    db = store_dir / "topk.duckdb"
    config = write_config(tmp_path, "edited", "full")
    run_id = replay.replay(spark, config, db=db, **quiet).run_id
    where = "WHERE run_id = ? AND query_id = 0 AND algorithm = 'mintopk' AND slide = ?"
    with duckdb.connect(str(db)) as con:
        slide, state = con.execute("SELECT slide, state FROM snapshots WHERE run_id = ? AND query_id = 0 "
                                   "AND algorithm = 'mintopk' ORDER BY slide DESC LIMIT 1", [run_id]).fetchone()
    for edit, message in EDITED_SNAPSHOTS:
        with duckdb.connect(str(db)) as con:
            con.execute(f"UPDATE snapshots SET state = ? {where}", [json.dumps(edit(json.loads(state))), run_id, slide])
        with pytest.raises(InputError, match=f"query 0, mintopk, shard 0 cannot be restored: {message}"):
            replay.prepare(config, db=db, resume=True)
    with duckdb.connect(str(db)) as con:
        con.execute(f"UPDATE snapshots SET state = ? {where}", [state, run_id, slide])
    assert replay.prepare(config, db=db, resume=True).up_to_date


# --- attribute streams (incomplete-stream algorithms), sharded by object id -----------------------

STREAMS = ["images", "english", "french"]
ATTRIBUTE_QUERIES = [
    {"weights": {"images": 1.0, "english": 0.5, "french": 0.25}, "k": 5, "window": 300, "slide": 50, "kind": "count"},
    {"weights": [0.2, 1.0, 1.0], "k": 4, "window": 240, "slide": 60, "kind": "time"},
]


def write_attribute_dataset(db, directory, name, rows=2_400, seed=3):
    """An attribute-stream dataset (docs/CONTRACTS.md) in two date partitions, and its datasets row."""
    rng = np.random.default_rng(seed)
    seq = np.arange(rows)
    ids = rng.integers(0, rows // 6, rows) * 1_000 + 17
    table = {"id": ids, "seq": seq, "t": np.cumsum(rng.integers(0, 3, rows)),
             "stream": rng.integers(0, len(STREAMS), rows), "value": np.round(rng.random(rows), 2)}
    half = rows // 2
    for part, rows_of_part in (("date=1", slice(0, half)), ("date=2", slice(half, rows))):
        (directory / name / part).mkdir(parents=True)
        pq.write_table(pa.table({key: values[rows_of_part] for key, values in table.items()}),
                       directory / name / part / "part-0.parquet")
    with store.connection(db) as con:
        store.insert_row(con, "datasets", {"name": name, "family": "test-attribute", "features": STREAMS,
                                           "parquet": str(directory / name), "t_unit": "s"})
    return table


@pytest.fixture(scope="module")
def attribute_plugin(spark):
    """The test double's module, importable on the driver and on every executor."""
    path = Path(__file__).with_name("incomplete_double.py")
    sys.path.insert(0, str(path.parent))
    spark.sparkContext.addPyFile(str(path))
    import incomplete_double  # noqa: F401

    names = {info.name for info in engine.available() if info.stream == "incomplete"}
    params = {"eaa": {"occurrences": 30}}  # objects repeat within a stream and window here
    yield [{"name": name, "params": params.get(name, {})}
           for name in sorted(names & {"oracle-incomplete", "sla", "eaa"})]  # approx refuses shards > 1
    sys.path.remove(str(path.parent))


def test_attribute_stream_replay_sharded_by_object_equals_unsharded(spark, store_dir, attribute_plugin, tmp_path):
    db = store_dir / "topk.duckdb"
    table = write_attribute_dataset(db, tmp_path, "attributes")
    runs = {}
    for shards in (1, 3):
        config = tmp_path / f"attributes{shards}.json"
        config.write_text(json.dumps({"name": f"attributes{shards}", "dataset": "attributes", "shards": shards,
                                      "snapshot_every": 7, "plugins": ["incomplete_double"],
                                      "queries": ATTRIBUTE_QUERIES, "algorithms": attribute_plugin}))
        runs[shards] = replay.replay(spark, config, db=db, **quiet).run_id
    exact_answers = {shards: rows_of(db, "answers", ANSWER_COLUMNS, run) for shards, run in runs.items()}
    assert exact_answers[3] == exact_answers[1]
    metrics = rows_of(db, "slide_metrics", METRIC_COLUMNS, runs[3])
    assert len({row[1] for row in metrics}) == len(attribute_plugin)
    exact = [row for row in metrics if row[1].split("(")[0] in ("oracle-incomplete", "sla", "eaa")]
    assert {row[7:] for row in exact} == {(1.0, 0.0)}

    # the unsharded oracle equals the engine run directly over the merged stream
    q = engine.Query(weights=[1.0, 0.5, 0.25], k=5, window=300, slide=50)
    oracle = engine.create("oracle-incomplete", q)
    expected = []
    for batch in engine.slides((table["id"], table["stream"], table["value"], table["t"]), q):
        oracle.process(batch)
        answer = oracle.topk()
        expected += [(batch.index, rank + 1, int(i), float(s)) for rank, (i, s) in enumerate(zip(answer.ids, answer.scores))]
    stored = [(slide, rank, object_id, score) for query_id, algorithm, slide, _, rank, object_id, score
              in rows_of(db, "answers", ANSWER_COLUMNS, runs[1]) if (query_id, algorithm) == (0, "oracle-incomplete")]
    assert stored == expected and len(expected) > 100


def test_attribute_datasets_refuse_object_stream_algorithms(store_dir, attribute_plugin, tmp_path):
    db = store_dir / "topk.duckdb"
    write_attribute_dataset(db, tmp_path, "attributes-refused")
    config = tmp_path / "refused.json"
    config.write_text(json.dumps({"dataset": "attributes-refused", "plugins": ["incomplete_double"],
                                  "queries": ATTRIBUTE_QUERIES, "algorithms": [{"name": "mintopk"}]}))
    with pytest.raises(InputError, match="reads single streams, but the dataset holds attribute streams"):
        replay.prepare(config, db=db)


# --- the command in its own process: signals and a real cluster master ---------------------------

def replay_command(*args):
    return [sys.executable, "-m", "pipelines.replay", *map(str, args)]


@pytest.mark.parametrize("signum, to_group", [(signal.SIGTERM, False), (signal.SIGINT, True)])
def test_a_signal_ends_the_replay_with_one_line_and_the_run_resumes_exactly(spark, tmp_path, signum, to_group):
    """SIGTERM to the command, or Ctrl-C as a terminal sends it: to the command's process group."""
    db = tmp_path / "topk.duckdb"
    rows = 60_000
    rng = np.random.default_rng(11)
    pq.write_table(pa.table({"id": np.arange(rows) + 5, "seq": np.arange(rows), "t": np.arange(rows),
                             "price": np.round(rng.random(rows), 3)}), tmp_path / "long.parquet")
    with store.connection(db) as con:
        store.insert_row(con, "datasets", {"name": "long", "family": "test", "features": ["price"],
                                           "parquet": str(tmp_path / "long.parquet")})
    query = {"weights": [1.0], "k": 3, "window": 200, "slide": 2, "kind": "count"}
    config = tmp_path / "long.json"
    config.write_text(json.dumps({"name": "long", "dataset": "long", "snapshot_every": 500, "queries": [query],
                                  "algorithms": [{"name": "oracle"}, {"name": "mintopk"}]}))
    staging = replay.staging_directory(db, "long-run")
    process = subprocess.Popen(replay_command("--config", config, "--db", db, "--run-id", "long-run", "--master",
                                              "local[2]"), cwd=Path(__file__).parents[2], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=to_group)
    deadline = time.monotonic() + 300
    while not any(staging.rglob("done-*.json")) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    if to_group:
        os.killpg(process.pid, signum)
    else:
        process.send_signal(signum)
    out, err = process.communicate(timeout=120)
    name = signal.Signals(signum).name
    assert process.returncode == 128 + signum, (out, err)
    assert "Traceback" not in err and "Traceback" not in out and "\tat " not in err
    assert err.strip().splitlines()[-1] == (f"[replay] stopped by {name}: run long-run marked interrupted; "
                                            "continue it with --resume")
    assert rows_of(db, "runs", "status, reason", "long-run") == [("interrupted", f"stopped by {name}")]
    with duckdb.connect(str(db), read_only=True) as con:
        snapshot_slide, loaded = con.execute("SELECT (SELECT max(slide) FROM snapshots WHERE run_id = 'long-run'), "
                                             "(SELECT max(slide) FROM answers WHERE run_id = 'long-run')").fetchone()
    assert snapshot_slide == loaded  # answers and snapshots are written together

    resumed = replay.replay(spark, config, db=db, resume=True, run_id="long-run", **quiet)
    assert resumed.resumed and rows_of(db, "runs", "status", "long-run") == [("finished",)]
    table = pq.read_table(tmp_path / "long.parquet")
    q = engine.Query(**query)
    oracle, expected = engine.create("oracle", q), []
    for batch in engine.slides((table.column("id").to_numpy(), table.column("t").to_numpy(),
                                table.column("price").to_numpy()), q):
        oracle.process(batch)
        expected += [(batch.index, rank + 1, int(i)) for rank, i in enumerate(oracle.topk().ids)]
    for algorithm in ("oracle", "mintopk"):
        stored = [(slide, rank, object_id) for _, label, slide, _, rank, object_id, _
                  in rows_of(db, "answers", ANSWER_COLUMNS, "long-run") if label == algorithm]
        assert stored == expected, algorithm


def answers_loaded(db, query_id):
    """Answer rows of query ``query_id`` in ``db`` (0 while the replay holds the file for a load)."""
    try:
        with duckdb.connect(str(db), read_only=True) as con:
            return con.execute("SELECT count(*) FROM answers WHERE query_id = ?", [query_id]).fetchone()[0]
    except duckdb.Error:
        return 0


def test_a_replay_killed_by_sigkill_mid_run_resumes_to_the_answers_of_an_uninterrupted_run(spark, tmp_path):
    """A real ``python -m pipelines.replay`` killed with SIGKILL once query 0 has answers loaded and
    query 1 none (its tasks start after query 0's, which have more slides), so mid-run: no handler
    runs, the run stays ``running``, its staging directory and its JVM are left behind. The resumed
    run's answers equal the engine's, slide by slide, and no slide is stored twice."""
    db, rows = tmp_path / "topk.duckdb", 120_000
    rng = np.random.default_rng(5)
    table = pa.table({"id": np.arange(rows) * 3 + 1, "seq": np.arange(rows), "t": np.arange(rows) * 7 // 3,
                      "price": np.round(rng.random(rows), 2)})  # rounded: many tied scores
    pq.write_table(table, tmp_path / "killed.parquet", row_group_size=20_000)
    with store.connection(db) as con:
        store.insert_row(con, "datasets", {"name": "killed", "family": "test", "features": ["price"],
                                           "parquet": str(tmp_path / "killed.parquet")})
    queries = [{"weights": [1.0], "k": 3, "window": 200, "slide": 2, "kind": "count"},
               {"weights": [-1.0], "k": 4, "window": 1_400, "slide": 7, "kind": "time"}]
    config = tmp_path / "killed.json"
    config.write_text(json.dumps({"name": "killed", "dataset": "killed", "shards": 2, "snapshot_every": 400,
                                  "queries": queries, "algorithms": [{"name": "oracle"}, {"name": "mintopk"}]}))
    process = subprocess.Popen(replay_command("--config", config, "--db", db, "--run-id", "killed-run", "--master",
                                              "local[2]"), cwd=Path(__file__).parents[2], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while process.poll() is None and not answers_loaded(db, 0) and time.monotonic() < deadline:
        time.sleep(0.1)
    process.send_signal(signal.SIGKILL)
    assert process.wait(timeout=60) == -signal.SIGKILL
    assert rows_of(db, "runs", "status", "killed-run") == [("running",)]
    stored_before = answers_loaded(db, 0), answers_loaded(db, 1)
    assert stored_before[0] > 0 and stored_before[1] == 0

    resumed = replay.replay(spark, config, db=db, resume=True, run_id="killed-run", **quiet)
    assert resumed.resumed and rows_of(db, "runs", "status", "killed-run") == [("finished",)]
    x = table.column("price").to_numpy()
    for query_id, spec in enumerate(queries):
        query = engine.Query(**spec)
        oracle, expected = engine.create("oracle", query), []
        for batch in engine.slides((table.column("id").to_numpy(), table.column("t").to_numpy(), x), query):
            oracle.process(batch)
            answer = oracle.topk()
            expected += [(batch.index, rank + 1, int(i), float(score))
                         for rank, (i, score) in enumerate(zip(answer.ids, answer.scores))]
        for algorithm in ("oracle", "mintopk"):
            stored = [(slide, rank, object_id, score) for q, label, slide, _, rank, object_id, score
                      in rows_of(db, "answers", ANSWER_COLUMNS, "killed-run") if (q, label) == (query_id, algorithm)]
            assert stored == expected, (query_id, algorithm)
    assert answers_loaded(db, 1) > 0


def test_ctrl_c_marks_the_run_interrupted_stopped_by_sigint(spark, tmp_path, monkeypatch):
    """Spark's own SIGINT handler raises KeyboardInterrupt, not the command's Interrupted: the
    run's reason must still say what stopped it, as for SIGTERM."""
    db, config = small_replay(tmp_path, rows=20, window=4, slide=2)
    plan = replay.prepare(config, db=db, run_id="ctrl-c")

    def pressed_ctrl_c(*_):
        raise KeyboardInterrupt

    monkeypatch.setattr(replay_job, "run_job", pressed_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        replay.execute(spark, plan, **quiet)
    assert rows_of(db, "runs", "status, reason", "ctrl-c") == [("interrupted", "stopped by SIGINT")]


def test_replay_on_a_local_cluster_gives_the_same_answers(store_dir, full_run, tmp_path):
    """``local-cluster[2,1,1024]``: two executor JVMs, as a standalone cluster runs them."""
    db = store_dir / "topk.duckdb"
    config = write_config(tmp_path, "cluster", "full", shards=2, snapshot_every=SNAPSHOT_EVERY)
    done = subprocess.run(replay_command("--config", config, "--db", db, "--run-id", "cluster-run", "--master",
                                         "local-cluster[2,1,1024]"), cwd=Path(__file__).parents[2],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT spark_master, status FROM runs WHERE run_id = 'cluster-run'").fetchone() == (
            "local-cluster[2,1,1024]", "finished")
    assert rows_of(db, "answers", ANSWER_COLUMNS, "cluster-run") == rows_of(db, "answers", ANSWER_COLUMNS, full_run)


# --- scores that overflow, and a task that fails ---------------------------------------------------

def write_object_dataset(db, directory, name, columns, *, statistics=True):
    """An object-stream dataset of ``columns`` (``id``, ``seq``, ``t`` and features), in two files
    (the second without min/max statistics unless ``statistics``), and its datasets row."""
    (directory / name).mkdir()
    rows = len(columns["seq"])
    half = rows // 2
    for part, (rows_of_part, stats) in enumerate(((slice(0, half), True), (slice(half, rows), statistics))):
        pq.write_table(pa.table({key: values[rows_of_part] for key, values in columns.items()}),
                       directory / name / f"part-{part}.parquet", write_statistics=stats)
    features = [key for key in columns if key not in ("id", "seq", "t")]
    with store.connection(db) as con:
        store.insert_row(con, "datasets", {"name": name, "family": "test", "features": features,
                                           "parquet": str(directory / name)})


@pytest.mark.parametrize("statistics", [True, False])
def test_feature_magnitudes_are_the_largest_absolute_values(tmp_path, statistics):
    rng = np.random.default_rng(4)
    columns = {"id": np.arange(50), "seq": np.arange(50), "t": np.arange(50),
               "a": rng.normal(size=50) * 1e5, "b": -rng.random(50) * 1e200}
    db = tmp_path / "topk.duckdb"
    write_object_dataset(db, tmp_path, "magnitudes", columns, statistics=statistics)
    largest = replay_tasks.feature_magnitudes(tmp_path / "magnitudes", ("a", "b"))
    assert largest.tolist() == [float(np.abs(columns["a"]).max()), float(np.abs(columns["b"]).max())]


def test_a_query_whose_score_overflows_is_refused_before_spark_naming_the_row(store_dir, tmp_path, capsys):
    """Finite features whose weighted sum is infinite for one query (row seq 37, in the file
    without statistics) stop the replay with one line; a query whose sum is large but finite
    for every row (``a - b`` with ``a = b = 1.5e308``) is not refused."""
    db = store_dir / "topk.duckdb"
    rows = 60
    a, b = np.linspace(0.0, 1.0, rows), np.linspace(1.0, 0.0, rows)
    a[37] = b[37] = 1.5e308
    write_object_dataset(db, tmp_path, "huge", {"id": np.arange(rows) + 100, "seq": np.arange(rows),
                                                "t": np.arange(rows), "a": a, "b": b}, statistics=False)
    before = table_counts(db)
    refused = tmp_path / "refused.json"
    refused.write_text(json.dumps({"name": "huge", "dataset": "huge", "algorithms": ALGORITHMS, "queries": [
        {"weights": {"a": 1.0, "b": -1.0}, "k": 2, "window": 10, "slide": 5},
        {"weights": {"a": 0.5, "b": 1.0}, "k": 2, "window": 10, "slide": 5}]}))
    assert replay.main(["--config", str(refused), "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: dataset 'huge', row seq 37 (id 137): query 1's score")
    assert "overflows to infinity with weights [0.5, 1.0]" in err
    assert table_counts(db) == before

    accepted = tmp_path / "accepted.json"
    accepted.write_text(json.dumps({"name": "huge-ok", "dataset": "huge", "algorithms": ALGORITHMS, "queries": [
        {"weights": {"a": 1.0, "b": -1.0}, "k": 2, "window": 10, "slide": 5}]}))
    assert replay.prepare(accepted, db=db).remaining > 0



def test_one_pass_names_the_earliest_overflowing_row_and_a_refused_value_before_any_overflow(store_dir, tmp_path):
    """The plan reads the features once for both checks: of two queries overflowing, the one whose
    row comes first is named (query 1 at seq 12, not query 0 at seq 20, in the same chunk read);
    a feature that is not a finite number (seq 55, the other file) is named before any overflow,
    though the overflows come first."""
    db = store_dir / "topk.duckdb"
    rows = 60
    a, b = np.linspace(0.0, 1.0, rows), np.linspace(1.0, 0.0, rows)
    a[20] = 1.5e308
    b[12] = 1.5e308
    write_object_dataset(db, tmp_path, "two", {"id": np.arange(rows) + 100, "seq": np.arange(rows),
                                               "t": np.arange(rows), "a": a, "b": b})
    config = tmp_path / "two.json"
    config.write_text(json.dumps({"name": "two", "dataset": "two", "algorithms": ALGORITHMS, "queries": [
        {"weights": {"a": 2.0, "b": 0.0}, "k": 2, "window": 10, "slide": 5},
        {"weights": {"a": 0.0, "b": 2.0}, "k": 2, "window": 10, "slide": 5}]}))
    with pytest.raises(InputError, match=r"^dataset 'two', row seq 12 \(id 112\): query 1's score x · w overflows"):
        replay.prepare(config, db=db)

    b[55] = np.nan
    write_object_dataset(db, tmp_path, "nan", {"id": np.arange(rows) + 100, "seq": np.arange(rows),
                                               "t": np.arange(rows), "a": a, "b": b})
    config.write_text(config.read_text().replace('"dataset": "two"', '"dataset": "nan"'))
    with pytest.raises(InputError, match=r"^dataset 'nan', row seq 55 \(id 155\): feature b is nan, not a finite"):
        replay.prepare(config, db=db)


def write_client_dataset(path, rows: int, full_values: list[int]) -> None:
    """An attribute stream over 2 streams: 7 clients in turn (client 500 at every seq multiple of
    7), value 0.001 but 1.0 at the seqs ``full_values``, in row groups of 16 rows (chunks of a read)."""
    seq = np.arange(rows)
    value = np.full(rows, 0.001)
    value[full_values] = 1.0
    pq.write_table(pa.table({"id": seq % 7 + 500, "seq": seq, "t": seq, "stream": seq % 2, "value": value}), path,
                   row_group_size=16)


def test_an_attribute_query_whose_summed_values_overflow_is_refused_before_spark(spark, tmp_path, capsys):
    """Weights of 1e308: client 500's values of 1.0 at seq 84 and 98 (in other row groups) sum to
    2e308 in the window of slide 9 (seq 60-99).  With seq 84 only (90 rows) the replay runs; the
    appended seq 98 is refused on --resume (the resumed rows alone sum to 1e308: a task stored
    inf) and for a new run (a task raised), with one line and nothing written."""
    db, data, config = tmp_path / "topk.duckdb", tmp_path / "clients.parquet", tmp_path / "clients.json"
    with store.connection(db) as con:
        store.insert_row(con, "datasets", {"name": "clients", "family": "test", "features": ["a", "b"],
                                           "parquet": str(data)})
    query = {"k": 2, "window": 40, "slide": 10}
    config.write_text(json.dumps({"name": "clients", "dataset": "clients",
                                  "algorithms": [{"name": "oracle-incomplete"}, {"name": "sla"}],
                                  "queries": [{"weights": [1e308, 1e308], **query}]}))
    write_client_dataset(data, 90, [84])
    replay.replay(spark, config, db=db, log=lambda _: None)
    write_client_dataset(data, 100, [84, 98])
    before = table_counts(db)
    for resume in (["--resume"], ["--run-id", "another"]):
        assert replay.main(["--config", str(config), "--db", str(db), *resume]) == 2
        err = capsys.readouterr().err
        assert err == ("error: dataset 'clients', row seq 0 (id 500): query 0's weights [1e+308, 1e+308] times the "
                       "object's values add up to inf over its rows, beyond the largest float, so its score in a "
                       "window may overflow; scale the weights down\n")
        assert table_counts(db) == before

    config.write_text(json.dumps({"name": "clients", "dataset": "clients",
                                  "algorithms": [{"name": "oracle-incomplete"}, {"name": "sla"}],
                                  "queries": [{"weights": [5e307, 5e307], **query}]}))
    assert replay.prepare(config, db=db).remaining == 10  # client 500: about 1.01e308 over its rows

def test_rows_the_engine_refuses_are_refused_before_spark_naming_the_row(spark, tmp_path, capsys):
    """A dataset edited by hand (the ingest admits none of these): a stream beyond the dataset's
    streams, a value outside [0, 1] or NaN in an attribute stream, a feature that is not finite in
    an object stream.  ``--resume`` and a new run stop with one line naming the row by ``seq``, exit
    status 2, nothing written; before, a Spark task failed, naming the row by its place in its chunk."""
    db, data, config = tmp_path / "topk.duckdb", tmp_path / "clients.parquet", tmp_path / "clients.json"
    with store.connection(db) as con:
        store.insert_row(con, "datasets", {"name": "clients", "family": "test", "features": ["a", "b"],
                                           "parquet": str(data)})
    config.write_text(json.dumps({"name": "clients", "dataset": "clients",
                                  "algorithms": [{"name": "oracle-incomplete"}, {"name": "sla"}],
                                  "queries": [{"weights": [1.0, 1.0], "k": 2, "window": 40, "slide": 10}]}))
    write_client_dataset(data, 90, [])
    replay.replay(spark, config, db=db, log=lambda _: None)
    before = table_counts(db)
    for column, bad, problem in [("stream", 2, "stream 2 is not one of its 2 streams (0..1)"),
                                 ("stream", -1, "stream -1 is not one of its 2 streams (0..1)"),
                                 ("value", 1.5, "value 1.5 is outside [0, 1]"),
                                 ("value", float("nan"), "value nan is outside [0, 1]")]:
        write_client_dataset(data, 100, [])
        table = pq.read_table(data).to_pydict()
        table[column] = [bad if seq == 93 else value for seq, value in zip(table["seq"], table[column])]
        pq.write_table(pa.table(table), data)
        for run in (["--resume"], ["--run-id", "another"]):
            assert replay.main(["--config", str(config), "--db", str(db), *run]) == 2
            assert capsys.readouterr().err == (f"error: dataset 'clients', row seq 93 (id 502): {problem}, which the "
                                               "engine refuses; ingest the data again\n")
            assert table_counts(db) == before

    features = {"a": np.linspace(0.0, 1.0, 60), "b": np.linspace(1.0, 0.0, 60)}
    features["b"][41] = np.inf
    write_object_dataset(db, tmp_path, "objects", {"id": np.arange(60) + 100, "seq": np.arange(60),
                                                   "t": np.arange(60), **features})
    objects = tmp_path / "objects.json"
    objects.write_text(json.dumps({"name": "objects", "dataset": "objects", "algorithms": [{"name": "oracle"}],
                                   "queries": [{"weights": [1.0, 0.0], "k": 2, "window": 10, "slide": 5}]}))
    with pytest.raises(InputError, match=r"^dataset 'objects', row seq 41 \(id 141\): feature b is inf, not a finite"):
        replay.prepare(objects, db=db)


FAILING_DOUBLE = '''"""The oracle, raising on its third slide: a plugin for the replay's task-failure test,
written to a temporary directory so that only the replay's processes register it."""

import engine
from engine.algorithms.oracle import Oracle
from engine.registry import register


class FailsAtSlide3(Oracle):
    name = "fails-at-slide-3"
    summary = "test double: the oracle, failing on its third slide"

    def process(self, batch) -> None:
        if batch.index == 2:
            raise RuntimeError("the test double fails on slide 2")
        super().process(batch)


register(FailsAtSlide3)
'''


def test_a_failing_task_ends_the_replay_with_one_line_and_status_1(store_dir, tmp_path):
    """A task that raises (a plugin algorithm failing on its third slide) fails the job: the run
    is marked failed with the task's reason, and the command prints one ``error:`` line naming
    the file that keeps the task's traceback."""
    db = store_dir / "topk.duckdb"
    config = tmp_path / "failing.json"
    config.write_text(json.dumps({"name": "failing", "dataset": "full", "plugins": ["failing_double"],
                                  "queries": QUERIES[:1],
                                  "algorithms": [{"name": "oracle"}, {"name": "fails-at-slide-3"}]}))
    (tmp_path / "failing_double.py").write_text(FAILING_DOUBLE)
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(replay_command("--config", config, "--db", db, "--run-id", "failing-run", "--master",
                                         "local[2]"), cwd=Path(__file__).parents[2], capture_output=True, text=True,
                          env=environment, timeout=300)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout
    details = Path(f"{db}.failures") / "failing-run.txt"
    assert done.stderr.strip().splitlines()[-1] == (
        "error: replay task failed: RuntimeError: the test double fails on slide 2; "
        f"run failing-run marked failed, its complete segments kept; the task's traceback: {details}")
    assert "Traceback" in details.read_text() and "failing_double.py" in details.read_text()
    assert rows_of(db, "runs", "status, reason", "failing-run") == [
        ("failed", "replay task failed: RuntimeError: the test double fails on slide 2")]


def count_and_time_config(db, directory, name: str, t: np.ndarray):
    """A dataset of one feature at times ``t`` and a config of a count and a time query over it."""
    rows = len(t)
    write_object_dataset(db, directory, name, {"id": np.arange(rows), "seq": np.arange(rows), "t": t,
                                               "a": np.linspace(0.0, 1.0, rows)})
    config = directory / f"{name}.json"
    config.write_text(json.dumps({"name": name, "dataset": name, "algorithms": ALGORITHMS, "queries": [
        {"weights": [1.0], "k": 2, "window": 10, "slide": 5, "kind": "count"},
        {"weights": [1.0], "k": 2, "window": 10, "slide": 5, "kind": "time"}]}))
    return config


def test_times_too_near_the_int64_limit_are_refused_by_the_plan(store_dir, tmp_path):
    db = store_dir / "topk.duckdb"
    config = count_and_time_config(db, tmp_path, "late", np.arange(20) + (2**63 - 30))
    with pytest.raises(InputError, match=f"dataset 'late', row seq 19: t = {2**63 - 11} is outside "
                                         f"\\[{-2**63 + 15}, {2**63 - 16}\\]"):
        replay.prepare(config, db=db)


def test_a_time_gap_past_max_slides_is_refused_by_the_plan(store_dir, tmp_path):
    db = store_dir / "topk.duckdb"
    config = count_and_time_config(db, tmp_path, "gap", np.array([0, 1, 2, 10**12]))
    with pytest.raises(InputError, match="dataset 'gap', row seq 3: query 1: t jumps from 2 to 1000000000000 here: "
                                         "a time window with slide 5 passes 200,000,000,000 slide boundaries"):
        replay.prepare(config, db=db)
    assert replay.prepare(config, db=db, max_slides=2 * 10**11).remaining > 0
