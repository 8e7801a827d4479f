"""``--resume`` of a run whose latest snapshots were deleted by hand, their answers kept: it
continues after the latest slide at which every task holds a snapshot and replaces what was
stored after it, ending with the answers of the uninterrupted run."""

from __future__ import annotations

import json

import duckdb
import pytest

from pipelines import replay
from pipelines.errors import InputError
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


def state_of(db, algorithm: str, shard: int, slide: int) -> str:
    with duckdb.connect(str(db)) as con:
        return con.execute("SELECT state FROM snapshots WHERE algorithm = ? AND shard = ? AND slide = ?",
                           [algorithm, shard, slide]).fetchone()[0]


def replace_state(db, algorithm: str, shard: int, slide: int, state: str):
    with duckdb.connect(str(db)) as con:
        con.execute("UPDATE snapshots SET state = ? WHERE algorithm = ? AND shard = ? AND slide = ?",
                    [state, algorithm, shard, slide])


def copy_older_state(db, algorithm: str, shard: int, older: int, latest: int):
    """Overwrite a task's snapshot at ``latest`` with its own older, still valid state at ``older``."""
    replace_state(db, algorithm, shard, latest, state_of(db, algorithm, shard, older))


def test_resume_refuses_a_snapshot_holding_an_older_state_of_its_task(spark, tmp_path):
    """A task's latest snapshot replaced by its older state restores (the checksum is its own),
    but would continue from the wrong slide: the answers stored for that slide tell, for exact
    (mintopk) and approximate (sao) algorithms; deleting that slide's snapshots, as the
    message says, resumes from the one before."""
    db, config = small_replay(tmp_path, ROWS, WINDOW, SLIDE)
    data = json.loads(config.read_text())
    config.write_text(json.dumps({**data, "shards": 2, "snapshot_every": SNAPSHOT_EVERY,
                                  "algorithms": [{"name": "oracle"}, {"name": "mintopk"},
                                                 {"name": "sao", "params": {"memory": 4}}]}))
    run_id = replay.replay(spark, config, db=db, **quiet).run_id
    uninterrupted = stored(db, run_id)
    last = ROWS // SLIDE - 1
    assert replay.prepare(config, db=db, resume=True).up_to_date

    copy_older_state(db, "mintopk", 1, 8, last)
    with pytest.raises(InputError, match=rf"^run {run_id}: the snapshot of query 0, mintopk, shard 1 at slide {last} "
                                         r"does not give the answer stored for that slide .*; delete the snapshots of "
                                         rf"that slide \(DELETE FROM snapshots WHERE run_id = '{run_id}' AND "
                                         rf"query_id = 0 AND slide = {last}\) to resume from the one before, "
                                         "or start a new run$"):
        replay.prepare(config, db=db, resume=True)
    delete_snapshots(db, f"slide = {last}")
    assert replay.replay(spark, config, db=db, resume=True, **quiet).slides_written == last - 8
    assert stored(db, run_id) == uninterrupted

    latest = state_of(db, "mintopk", 0, last)
    copy_older_state(db, "mintopk", 0, 8, last)  # hidden by the merge: shard 1 holds the top 1
    with pytest.raises(InputError, match=rf"the snapshot of query 0, mintopk, shard 0 at slide {last} "):
        replay.prepare(config, db=db, resume=True)
    replace_state(db, "mintopk", 0, last, latest)
    assert replay.prepare(config, db=db, resume=True).up_to_date

    copy_older_state(db, "sao(memory=4)", 1, 8, last)
    with pytest.raises(InputError, match=rf"the snapshot of query 0, sao\(memory=4\), shard 1 at slide {last} "):
        replay.prepare(config, db=db, resume=True)
