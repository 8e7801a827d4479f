"""``--resume`` of a run whose latest snapshots were deleted by hand, their answers kept: it
continues after the latest slide at which every task holds a snapshot and replaces what was
stored after it, ending with the answers of the uninterrupted run."""

from __future__ import annotations

import json

import duckdb

from pipelines import replay
from tests.pipelines.conftest import small_replay

ROWS, WINDOW, SLIDE, SNAPSHOT_EVERY = 120, 20, 10, 3
STORED = {"answers": 'query_id, algorithm, slide, "end", rank, object_id, score',
          "slide_metrics": 'query_id, algorithm, slide, "end", candidates, retained, bytes, precision, error',
          "snapshots": "query_id, algorithm, shard, slide, last_seq, state"}
quiet = dict(log=lambda _: None)


def stored(db, run_id):
    with duckdb.connect(str(db), read_only=True) as con:
        return {table: con.execute(f"SELECT {columns} FROM {table} WHERE run_id = ? ORDER BY ALL", [run_id]).fetchall()
                for table, columns in STORED.items()}


def delete_snapshots(db, where: str):
    with duckdb.connect(str(db)) as con:
        con.execute(f"DELETE FROM snapshots WHERE {where}")


def delete_results(db, where: str):
    with duckdb.connect(str(db)) as con:
        for table in ("answers", "slide_metrics"):
            con.execute(f"DELETE FROM {table} WHERE {where}")


def test_resume_replaces_the_results_stored_after_the_last_snapshot_of_every_task(spark, tmp_path):
    db, config = small_replay(tmp_path, ROWS, WINDOW, SLIDE)
    data = json.loads(config.read_text())
    config.write_text(json.dumps({**data, "shards": 2, "snapshot_every": SNAPSHOT_EVERY,
                                  "algorithms": [{"name": "oracle"}, {"name": "mintopk"}]}))
    run_id = replay.replay(spark, config, db=db, **quiet).run_id
    uninterrupted = stored(db, run_id)
    last = ROWS // SLIDE - 1
    assert sorted({row[3] for row in uninterrupted["snapshots"]}) == [8, last]  # keep_snapshots = 2

    lines = []
    delete_snapshots(db, f"slide = {last}")  # every task's latest: continue after slide 8
    summary = replay.replay(spark, config, db=db, resume=True, log=lines.append)
    assert summary.run_id == run_id and summary.slides_written == last - 8
    assert f"[replay]   query 0: the stored results of slides 9-{last} miss slides or a snapshot of every task " \
           "after them (deleted?): they are deleted and replayed again" in lines
    assert stored(db, run_id) == uninterrupted

    delete_snapshots(db, f"slide = {last} AND algorithm = 'mintopk' AND shard = 1")  # one task's latest only
    assert replay.replay(spark, config, db=db, resume=True, **quiet).slides_written == last - 8
    assert stored(db, run_id) == uninterrupted

    delete_snapshots(db, "algorithm = 'oracle'")  # no slide at which every task holds one: from the start
    assert replay.replay(spark, config, db=db, resume=True, **quiet).slides_written == last + 1
    assert stored(db, run_id) == uninterrupted
    assert replay.replay(spark, config, db=db, resume=True, **quiet).slides_written == 0


def test_resume_replays_again_from_before_results_deleted_under_its_snapshots(spark, tmp_path):
    """Answers and metrics of slides deleted by hand, the snapshots after them kept: the resume
    goes back to the latest snapshot before the first missing slide (else to the start)."""
    db, config = small_replay(tmp_path, ROWS, WINDOW, SLIDE)
    data = json.loads(config.read_text())
    config.write_text(json.dumps({**data, "snapshot_every": SNAPSHOT_EVERY,
                                  "algorithms": [{"name": "oracle"}, {"name": "mintopk"}]}))
    run_id = replay.replay(spark, config, db=db, **quiet).run_id
    uninterrupted = stored(db, run_id)
    last = ROWS // SLIDE - 1

    delete_results(db, "slide = 10 AND algorithm = 'mintopk'")  # after the snapshot at slide 8
    assert replay.replay(spark, config, db=db, resume=True, **quiet).slides_written == last - 8
    assert stored(db, run_id) == uninterrupted

    delete_results(db, "slide BETWEEN 2 AND 4")  # before every snapshot kept
    assert replay.replay(spark, config, db=db, resume=True, **quiet).slides_written == last + 1
    assert stored(db, run_id) == uninterrupted
