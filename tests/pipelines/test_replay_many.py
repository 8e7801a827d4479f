"""A replay of many queries through the shared executor (algorithm ``multi``): one task per
(weights group, shard), every query's answers equal to the oracle's at every slide."""

from __future__ import annotations

import json

import duckdb
import pytest

from pipelines import ingest, replay
from pipelines.errors import InputError
from pipelines.replay_config import parse_config
from tests.pipelines.conftest import trade_lines, write_trade_zip

NOTIONAL, PRICE_SIZE = {"notional": 1.0}, {"price": 1.0, "size": -0.001}
QUERIES = [
    {"weights": NOTIONAL, "k": 4, "window": 60, "slide": 20, "kind": "count"},
    {"weights": PRICE_SIZE, "k": 5, "window": 1_200_000, "slide": 300_000, "kind": "time"},
    {"weights": NOTIONAL, "k": 10, "window": 200, "slide": 50, "kind": "count"},
    {"weights": NOTIONAL, "k": 3, "window": 1_800_000, "slide": 600_000, "kind": "time"},
    {"weights": PRICE_SIZE, "k": 2, "window": 30, "slide": 30, "kind": "count"},
    {"weights": PRICE_SIZE, "k": 2, "window": 60_000, "slide": 20_000, "kind": "time"},  # empty slides
]
DAY1_ROWS, DAY2_ROWS = 1_203, 900
SNAPSHOT_EVERY = 20
quiet = dict(log=lambda _: None)


def write_config(directory, name, dataset, **extra):
    path = directory / f"{name}.json"
    path.write_text(json.dumps({"name": name, "dataset": dataset, "queries": QUERIES,
                                "algorithms": [{"name": "multi"}], "snapshot_every": SNAPSHOT_EVERY, **extra}))
    return path


def answers(db, run_id, algorithm):
    """``{(query, slide): [(rank, id, score), ...]}`` of one algorithm of a run, with every slide's metrics row."""
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute('SELECT query_id, slide, "end", rank, object_id, score FROM answers '
                           "WHERE run_id = ? AND algorithm = ? ORDER BY ALL", [run_id, algorithm]).fetchall()
        slides = con.execute('SELECT query_id, slide, "end" FROM slide_metrics WHERE run_id = ? AND algorithm = ? '
                             "ORDER BY ALL", [run_id, algorithm]).fetchall()
    found = {(q, j, end): [] for q, j, end in slides}
    for q, j, end, *answer in rows:
        found[(q, j, end)].append(tuple(answer))
    return found


@pytest.fixture(scope="module")
def days(tmp_path_factory):
    directory = tmp_path_factory.mktemp("many-trades")
    return (write_trade_zip(directory, "SPY", "20131007", trade_lines(DAY1_ROWS, seed=7, max_gap_ms=20_000)),
            write_trade_zip(directory, "SPY", "20131008", trade_lines(DAY2_ROWS, seed=8, max_gap_ms=20_000)))


@pytest.fixture(scope="module")
def store_dir(spark, days, tmp_path_factory):
    directory = tmp_path_factory.mktemp("many-store")
    ingest.ingest(spark, "stock", days, db=directory / "topk.duckdb", out=directory, name="full", **quiet)
    return directory


@pytest.fixture(scope="module")
def full_run(spark, store_dir):
    return replay.replay(spark, write_config(store_dir, "many", "full"), db=store_dir / "topk.duckdb", **quiet).run_id


@pytest.mark.parametrize("shards", [1, 2])
def test_shared_replay_equals_the_oracle_for_every_query_and_slide(spark, store_dir, full_run, shards):
    db = store_dir / "topk.duckdb"
    run_id = full_run if shards == 1 else replay.replay(
        spark, write_config(store_dir, "many-sharded", "full", shards=2), db=db, **quiet).run_id
    shared, oracle = answers(db, run_id, "multi"), answers(db, run_id, "oracle")
    assert shared == oracle
    assert {q for q, _, _ in oracle} == set(range(len(QUERIES)))
    assert min(sum(1 for key in oracle if key[0] == q) for q in range(len(QUERIES))) > 10
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT min(precision), max(error), count(DISTINCT shard) FROM slide_metrics "
                           "JOIN snapshots USING (run_id, query_id, algorithm) WHERE run_id = ? AND algorithm = 'multi'",
                           [run_id]).fetchone() == (1.0, 0.0, shards)
        status = con.execute("SELECT status FROM runs WHERE run_id = ?", [run_id]).fetchone()[0]
    assert status == "finished"
    if shards == 2:
        assert shared == answers(db, full_run, "multi")


def test_shared_replay_resumes_after_more_rows_exactly(spark, days, store_dir, full_run, tmp_path):
    db = store_dir / "topk.duckdb"
    ingest.ingest(spark, "stock", [days[0]], db=db, out=tmp_path, name="growing", **quiet)
    config = write_config(tmp_path, "many-growing", "growing", shards=2)
    first = replay.replay(spark, config, db=db, resume=True, **quiet)
    ingest.ingest(spark, "stock", [days[1]], db=db, out=tmp_path, name="growing", append=True, **quiet)
    second = replay.replay(spark, config, db=db, resume=True, **quiet)
    assert second.resumed and second.run_id == first.run_id and second.slides_written > 0
    for algorithm in ("multi", "oracle"):
        assert answers(db, first.run_id, algorithm) == answers(db, full_run, "oracle")
    assert replay.replay(spark, config, db=db, resume=True, **quiet).slides_written == 0


@pytest.mark.parametrize("entry, stream, message", [
    ({"name": "multi", "params": {"prefilter": True}}, "single", "the shared executor takes no params"),
    ({"name": "multi"}, "incomplete", "reads single streams"),
])
def test_shared_entries_that_cannot_run_are_refused(entry, stream, message):
    features = ["notional", "price", "size"]
    with pytest.raises(InputError, match=message):
        parse_config({"name": "x", "dataset": "d", "queries": QUERIES[:1], "algorithms": [entry]}, features, stream)
