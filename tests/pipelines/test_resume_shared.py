"""``--resume`` of a run of many queries through the shared executor (``multi``) whose
snapshots hold another state than their group's at their slide: refused before Spark starts
with one line naming the snapshot, as a single query's stale snapshot is."""

from __future__ import annotations

import json

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines import replay, store
from pipelines.errors import InputError

ROWS, MORE_ROWS = 300, 360
QUERIES = [{"weights": [1.0, 0.5], "k": 3, "window": 40, "slide": 10},
           {"weights": [1.0, 0.5], "k": 2, "window": 60, "slide": 20, "kind": "time"},
           {"weights": [1.0, 0.5], "k": 4, "window": 30, "slide": 15},
           {"weights": [-1.0, 1.0], "k": 2, "window": 20, "slide": 10}]
quiet = dict(log=lambda _: None)


def write_rows(path, rows):
    rng = np.random.default_rng(3)
    x, t = rng.normal(size=(MORE_ROWS, 2)), np.cumsum(rng.integers(0, 5, MORE_ROWS))
    pq.write_table(pa.table({"id": np.arange(rows), "seq": np.arange(rows), "t": t[:rows],
                             "a": x[:rows, 0], "b": x[:rows, 1]}), path)


def replay_setup(directory, rows):
    """A database holding the dataset ``rows`` (its first ``rows`` rows written) and the replay
    config of :data:`QUERIES` over it: ``(db, data, config)``."""
    db, data, config = directory / "topk.duckdb", directory / "rows.parquet", directory / "many.json"
    write_rows(data, rows)
    with store.connection(db) as con:
        store.insert_row(con, "datasets", {"name": "rows", "family": "test", "features": ["a", "b"],
                                           "parquet": str(data)})
    config.write_text(json.dumps({"name": "many", "dataset": "rows", "queries": QUERIES, "shards": 2,
                                  "snapshot_every": 3, "algorithms": [{"name": "oracle"}, {"name": "multi"}]}))
    return db, data, config


def later_state_over_earlier(con, run_id):
    """Query 2's earlier snapshot replaced by its later one, the later deleted: the state is ahead of its slide."""
    first, last = (row[0] for row in con.execute("SELECT DISTINCT slide FROM snapshots WHERE run_id = ? "
                                                 "AND query_id = 2 ORDER BY slide", [run_id]).fetchall())
    con.execute("UPDATE snapshots s SET state = (SELECT state FROM snapshots o WHERE o.run_id = s.run_id "
                "AND o.query_id = 2 AND o.algorithm = 'multi' AND o.shard = s.shard AND o.slide = ?) "
                "WHERE run_id = ? AND query_id = 2 AND algorithm = 'multi' AND slide = ?", [last, run_id, first])
    con.execute("DELETE FROM snapshots WHERE run_id = ? AND query_id = 2 AND slide = ?", [run_id, last])
    return f"query 2, multi, shard 0 at slide {first} "


def shards_swapped(con, run_id):
    """Every snapshot of the first weights group holds the other shard's state (at the right position)."""
    con.execute("UPDATE snapshots s SET state = (SELECT state FROM snapshots o WHERE o.run_id = s.run_id "
                "AND o.query_id = s.query_id AND o.algorithm = s.algorithm AND o.shard = 1 - s.shard "
                "AND o.slide = s.slide) WHERE run_id = ? AND query_id < 3 AND algorithm = 'multi'", [run_id])
    return "query 0, multi, shards 0, 1 at slide 29 "


@pytest.mark.parametrize("tamper", [later_state_over_earlier, shards_swapped])
def test_resume_refuses_a_shared_snapshot_that_is_not_its_groups_state_at_its_slide(spark, tmp_path, tamper):
    db, data, config = replay_setup(tmp_path, ROWS)
    run_id = replay.replay(spark, config, db=db, **quiet).run_id
    with duckdb.connect(str(db)) as con:
        named = tamper(con, run_id)
    write_rows(data, MORE_ROWS)
    with pytest.raises(InputError, match=f"snapshot of {named}does not give the answer stored"):
        replay.replay(spark, config, db=db, resume=True, **quiet)
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT status FROM runs WHERE run_id = ?", [run_id]).fetchone()[0] == "finished"


METRICS = 'query_id, algorithm, slide, "end", candidates, retained, bytes, precision, error'


def slide_metrics(db, run_id):
    """Every slide's metrics but its time and ``measured_bytes`` (the multi executor's Python objects
    measure a few hundred bytes apart from one Spark worker to another, resumed or not)."""
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(f"SELECT {METRICS} FROM slide_metrics WHERE run_id = ? ORDER BY ALL", [run_id]).fetchall()


def test_resumed_shared_runs_store_the_slide_metrics_of_a_run_from_the_start(spark, tmp_path):
    """After more rows, and after the latest slides were deleted by hand: every slide's metrics
    are there, equal to those of one run over all the rows."""
    runs = {}
    for name in ("whole", "grown", "deleted"):
        directory = tmp_path / name
        directory.mkdir()
        db, data, config = replay_setup(directory, ROWS if name == "grown" else MORE_ROWS)
        run_id = replay.replay(spark, config, db=db, **quiet).run_id
        if name == "grown":
            write_rows(data, MORE_ROWS)
        elif name == "deleted":
            with duckdb.connect(str(db)) as con:
                for table in ("answers", "slide_metrics", "snapshots"):
                    con.execute(f"DELETE FROM {table} WHERE slide >= 12")
        if name != "whole":
            assert replay.replay(spark, config, db=db, resume=True, **quiet).slides_written > 0
        runs[name] = slide_metrics(db, run_id)
    assert len({(q, algorithm) for q, algorithm, *_ in runs["whole"]}) == 2 * len(QUERIES)
    assert runs["grown"] == runs["whole"] and runs["deleted"] == runs["whole"]
