"""The replay's pure steps without Spark: reading rows in seq order, cutting slides chunk by chunk,
sharding, and the DuckDB load that merges shards per slide and measures against the oracle."""

from __future__ import annotations

import datetime as dt
import doctest
import json
import subprocess
import sys

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import engine
from engine import Answer
from pipelines import locks, publish, replay_load, replay_plan, replay_tasks, stock, store
from pipelines.errors import StoreError
from pipelines.replay_tasks import ReplayTask, SegmentWriter


def write_rows(path, seq, rng):
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": seq + 1000, "seq": seq, "t": seq // 3, "x": rng.random(len(seq))}), path,
                   row_group_size=7)


def test_read_rows_orders_partitioned_files_by_seq(tmp_path):
    rng = np.random.default_rng(0)
    seq = np.arange(100)
    # two "dates", the second split over two "symbols" whose seq ranges interleave
    write_rows(tmp_path / "date=2/symbol=B/part-0.parquet", seq[40:][seq[40:] % 2 == 1], rng)
    write_rows(tmp_path / "date=1/symbol=A/part-0.parquet", seq[:40], rng)
    write_rows(tmp_path / "date=2/symbol=A/part-0.parquet", seq[40:][seq[40:] % 2 == 0], rng)
    (tmp_path / "_SUCCESS").write_text("")
    chunks = list(replay_tasks.read_rows(tmp_path, ("id", "t"), 0, 16))
    got = {name: np.concatenate([chunk[name] for chunk in chunks]) for name in ("seq", "id", "t")}
    assert got["seq"].tolist() == list(range(100))
    assert got["id"].tolist() == list(range(1000, 1100)) and got["t"].tolist() == (np.arange(100) // 3).tolist()
    assert max(len(chunk["seq"]) for chunk in chunks) <= 16
    tail = np.concatenate([c["seq"] for c in replay_tasks.read_rows(tmp_path, ("t",), 55, 16)])
    assert tail.tolist() == list(range(55, 100))


def test_read_rows_refuses_a_gap_in_seq(tmp_path):
    write_rows(tmp_path / "a.parquet", np.array([0, 1, 3]), np.random.default_rng(0))
    with pytest.raises(ValueError, match="without gaps"):
        list(replay_tasks.read_rows(tmp_path / "a.parquet", ("t",)))


@pytest.mark.parametrize("kind, window, slide", [("count", 20, 5), ("time", 12, 4)])
def test_slides_cut_chunk_by_chunk_equal_one_engine_slides_call(tmp_path, kind, window, slide):
    rng = np.random.default_rng(1)
    seq = np.arange(203)
    t = np.cumsum(rng.integers(0, 3, len(seq)))
    pq.write_table(pa.table({"id": seq + 7, "seq": seq, "t": t, "x": rng.random(len(seq))}), tmp_path / "d.parquet")
    q = engine.Query(weights=[1.0], k=3, window=window, slide=slide, kind=kind)
    expected = [(b.index, b.end, b.seq.tolist()) for b in engine.slides((seq + 7, t, rng.random(len(seq))), q)]
    chunks = replay_tasks.read_rows(tmp_path / "d.parquet", ("id", "t", "x"), 0, chunk_rows=17)
    start = int(t[0]) // slide * slide if kind == "time" else 0
    got = [(b.index, b.end, b.seq.tolist()) for b in replay_tasks.stream_slides(chunks, q, ("x",), False, 0, start)]
    assert got == expected


@pytest.mark.parametrize("shard_by", ["seq", "id"])
@pytest.mark.parametrize("kind, window, slide", [("count", 20, 5), ("time", 12, 4)])
def test_a_shards_slides_are_the_global_slides_holding_its_rows(tmp_path, shard_by, kind, window, slide):
    rng = np.random.default_rng(2)
    seq = np.arange(211)
    ids = rng.integers(0, 40, len(seq))
    t = np.cumsum(rng.integers(0, 3, len(seq)))
    x = rng.random(len(seq))
    pq.write_table(pa.table({"id": ids, "seq": seq, "t": t, "x": x}), tmp_path / "d.parquet")
    q = engine.Query(weights=[1.0], k=3, window=window, slide=slide, kind=kind)
    start = int(t[0]) // slide * slide if kind == "time" else 0
    for shard in range(3):
        owner = seq % 3 if shard_by == "seq" else replay_tasks.id_shard(ids, 3)
        expected = [(b.index, b.end, b.seq[owner[b.seq] == shard].tolist(), b.x[owner[b.seq] == shard, 0].tolist())
                    for b in engine.slides((ids, t, x), q)]
        chunks = replay_tasks.read_rows(tmp_path / "d.parquet", ("id", "t", "x"), 0, chunk_rows=17)
        keep = replay_tasks.shard_filter(shard, 3, shard_by)
        got = [(b.index, b.end, b.seq.tolist(), b.x[:, 0].tolist())
               for b in replay_tasks.stream_slides(chunks, q, ("x",), False, 0, start, keep)]
        assert got == expected


def test_a_worker_reads_a_dataset_once_and_again_when_it_changes(tmp_path, monkeypatch):
    rng = np.random.default_rng(3)
    directory = tmp_path / "d"
    directory.mkdir()
    write_rows(directory / "a.parquet", np.arange(0, 50), rng)
    monkeypatch.setattr(replay_tasks, "_cache", None)
    first = list(replay_tasks.dataset_chunks(directory, ("t",), 10))
    assert [chunk["seq"].tolist() for chunk in first] == [list(range(10, 50))]
    reads = []
    monkeypatch.setattr(replay_tasks, "read_rows", lambda *args, **kwargs: reads.append(args) or iter(()))
    again = list(replay_tasks.dataset_chunks(directory, ("t",), 45))
    assert reads == [] and [chunk["seq"].tolist() for chunk in again] == [list(range(45, 50))]
    monkeypatch.undo()
    monkeypatch.setattr(replay_tasks, "_cache", replay_tasks._cache)
    write_rows(directory / "b.parquet", np.arange(50, 60), rng)
    grown = list(replay_tasks.dataset_chunks(directory, ("t",), 45))
    assert [chunk["seq"].tolist() for chunk in grown] == [list(range(45, 60))]
    monkeypatch.setattr(replay_tasks, "CACHE_BYTES", 8)
    streamed = list(replay_tasks.dataset_chunks(directory, ("t",), 5))
    assert np.concatenate([chunk["seq"] for chunk in streamed]).tolist() == list(range(5, 60))


def test_id_shards_are_balanced_and_stable():
    shards = replay_tasks.id_shard(np.arange(30_000) * 1000, 3)
    assert set(np.bincount(shards).tolist()) and np.bincount(shards).min() > 9_000
    assert replay_tasks.id_shard(np.array([42]), 3).tolist() == replay_tasks.id_shard(np.array([42]), 3).tolist()


def stage(staging, label, index, shard, slides, answers, stats, state=None):
    """Write one task's segment the way a task does."""
    task = ReplayTask(query_id=0, algorithm_index=index, label=label, algorithm=label, params={},
                      query={}, shard=shard, shards=2, shard_by="seq", source="", columns=(), attribute=False,
                      first_slide=slides[0], first_row=0, start=0, slides=len(slides), segment=len(slides),
                      staging=str(staging))
    writer = SegmentWriter(task)
    for slide, (ids, scores, seq), (candidates, measured, seconds) in zip(slides, answers, stats):
        writer.add(slide, 10 * (slide + 1), Answer(np.array(ids, np.int64), np.array(scores, np.float64),
                                                   np.array(seq, np.int64)),
                   {"candidates": candidates, "retained": candidates, "bytes": 8 * candidates}, measured, seconds)
    state = state or {"checksum": f"c{label}{shard}", "format_version": 1, "data": {}}
    return writer.flush(json.dumps(state), state["checksum"])


def test_load_merges_shards_per_slide_and_measures_against_the_oracle(tmp_path):
    staging = tmp_path / "staging"
    # slide 0: oracle shards hold 5.0 (seq 1) and 5.0 (seq 0): equal scores, newer first
    stage(staging, "oracle", 0, 0, [0, 1], [([10, 12], [5.0, 1.0], [0, 2]), ([14], [7.0], [4])],
          [(3, 100, 0.1), (4, 110, 0.4)])
    stage(staging, "oracle", 0, 1, [0, 1], [([11, 13], [5.0, 3.0], [1, 3]), ([], [], [])],
          [(2, 100, 0.3), (1, 90, 0.2)])
    stage(staging, "alg", 1, 0, [0, 1], [([10], [5.0], [0]), ([], [], [])], [(1, 50, 0.0), (1, 50, 0.0)])
    stage(staging, "alg", 1, 1, [0, 1], [([13], [3.0], [3]), ([], [], [])], [(1, 50, 0.0), (1, 50, 0.0)])
    db = tmp_path / "t.duckdb"
    load = replay_load.QueryLoad(query_id=0, k=2, next_slide=0, total_slides=2, origin=0, slide=10,
                                 tasks=replay_load.staged_tasks(staging, 0, ["oracle", "alg"], 2), shards=2)
    markers = load.markers()
    assert [m["slide"] for m in markers] == [1]
    with store.connection(db) as con, store.transaction(con):
        replay_load.register_metrics(con, "single")
        assert replay_load.load(con, "r", load, markers, reference="oracle", keep_snapshots=2,
                                created_at=dt.datetime(2026, 1, 1)) == 2
    replay_load.remove_loaded(load, markers)
    assert load.done and not any(staging.rglob("*.parquet"))
    with duckdb.connect(str(db), read_only=True) as con:
        answers = con.execute('SELECT algorithm, slide, rank, object_id, score FROM answers ORDER BY ALL').fetchall()
        metrics = con.execute('SELECT algorithm, slide, "end", candidates, bytes, measured_bytes, seconds, '
                              'precision, error FROM slide_metrics ORDER BY ALL').fetchall()
        snapshots = con.execute("SELECT algorithm, shard, slide, checksum FROM snapshots ORDER BY ALL").fetchall()
    assert answers == [("alg", 0, 1, 10, 5.0), ("alg", 0, 2, 13, 3.0),
                       ("oracle", 0, 1, 11, 5.0), ("oracle", 0, 2, 10, 5.0), ("oracle", 1, 1, 14, 7.0)]
    exact = Answer(np.array([11, 10]), np.array([5.0, 5.0]), np.zeros(2, np.int64))
    got = Answer(np.array([10, 13]), np.array([5.0, 3.0]), np.zeros(2, np.int64))
    assert metrics == [
        ("alg", 0, 10, 2, 16, 100, 0.0, engine.metrics.precision(exact, got), engine.metrics.relative_error(exact, got)),
        ("alg", 1, 20, 2, 16, 100, 0.0, 0.0, 1.0),
        ("oracle", 0, 10, 5, 40, 200, 0.3, 1.0, 0.0),
        ("oracle", 1, 20, 5, 40, 200, 0.4, 1.0, 0.0)]
    assert snapshots == [("alg", 0, 1, "calg0"), ("alg", 1, 1, "calg1"), ("oracle", 0, 1, "coracle0"),
                         ("oracle", 1, 1, "coracle1")]


def test_snapshot_retention_keeps_the_last_complete_snapshots(tmp_path):
    staging, db = tmp_path / "staging", tmp_path / "t.duckdb"
    load = replay_load.QueryLoad(query_id=0, k=1, next_slide=0, total_slides=4, origin=0, slide=10,
                                 tasks=replay_load.staged_tasks(staging, 0, ["oracle"], 1))
    for slide in range(4):
        stage(staging, "oracle", 0, 0, [slide], [([slide], [1.0], [slide])], [(1, 1, 0.0)],
              state={"checksum": f"s{slide}", "format_version": 1, "data": {"slide": slide}})
        if slide == 1:
            continue  # two segments staged before the driver looks
        with store.connection(db) as con, store.transaction(con):
            replay_load.register_metrics(con, "single")
            replay_load.load(con, "r", load, load.markers(), reference="oracle", keep_snapshots=2,
                             created_at=dt.datetime(2026, 1, 1))
        with duckdb.connect(str(db), read_only=True) as con:
            kept = con.execute("SELECT slide, checksum, state FROM snapshots ORDER BY slide").fetchall()
        assert [row[0] for row in kept] == [max(0, slide - 1), slide][-(slide + 1):]
        assert all(json.loads(state)["data"]["slide"] == s and checksum == f"s{s}" for s, checksum, state in kept)


@pytest.mark.parametrize("module", [stock, replay_plan, replay_tasks], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    failures, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert tried and not failures


def test_a_long_lived_reader_gets_a_one_line_message_naming_it(tmp_path):
    db = tmp_path / "held.duckdb"
    store.connect(db).close()
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys, time; con = duckdb.connect(sys.argv[1]); "
                               "print('ready', flush=True); time.sleep(60)", str(db)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(StoreError) as refused:
            store.connect(db, wait_seconds=0.5)
    finally:
        holder.kill()
        holder.wait()
    message = str(refused.value)
    assert "\n" not in message and f"process {holder.pid}" in message and "long-lived reader" in message


def test_two_database_files_never_share_a_lock_or_staging(tmp_path):
    a, b = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    assert locks.lock_path(a) != locks.lock_path(b)
    assert replay_plan.staging_directory(a, "run") != replay_plan.staging_directory(b, "run")
    with locks.writer_lock(a, wait=0), locks.writer_lock(b, wait=0):
        pass


def test_load_measures_every_kind_of_difference_from_the_reference(tmp_path):
    """Slide by slide: equal; a prefix; same ids in another order; same ids, other scores; an extra
    answer where the reference is empty; a missing answer where the reference has one."""
    staging = tmp_path / "staging"
    exact = [([1, 2, 3], [9.0, 8.0, 7.0]), ([1, 2, 3], [9.0, 8.0, 7.0]), ([1, 2], [9.0, 8.0]),
             ([1, 2], [9.0, 8.0]), ([], []), ([4], [6.0])]
    got = [([1, 2, 3], [9.0, 8.0, 7.0]), ([1, 2], [9.0, 8.0]), ([2, 1], [9.0, 8.0]),
           ([1, 2], [9.0, 7.5]), ([5], [1.0]), ([], [])]
    slides = list(range(len(exact)))

    def staged(answers):
        return [(ids, scores, list(range(len(ids)))) for ids, scores in answers]

    stage(staging, "oracle", 0, 0, slides, staged(exact), [(3, 10, 0.0)] * len(slides))
    stage(staging, "alg", 1, 0, slides, staged(got), [(3, 10, 0.0)] * len(slides))
    load = replay_load.QueryLoad(query_id=0, k=3, next_slide=0, total_slides=len(slides), origin=0, slide=10,
                                 tasks=replay_load.staged_tasks(staging, 0, ["oracle", "alg"], 1), shards=1)
    with store.connection(tmp_path / "t.duckdb") as con, store.transaction(con):
        replay_load.register_metrics(con, "single")
        replay_load.load(con, "r", load, load.markers(), reference="oracle", keep_snapshots=2,
                         created_at=dt.datetime(2026, 1, 1))
        measured = con.execute("SELECT precision, error FROM slide_metrics WHERE algorithm = 'alg' "
                               "ORDER BY slide").fetchall()

    def answer(ids, scores):
        return Answer(np.array(ids, np.int64), np.array(scores, np.float64), np.zeros(len(ids), np.int64))

    expected = [(engine.metrics.precision(answer(*e), answer(*g)), engine.metrics.relative_error(answer(*e), answer(*g)))
                for e, g in zip(exact, got)]
    assert [value for row in measured for value in row] == pytest.approx([value for row in expected for value in row])


@pytest.mark.parametrize("cache_bytes", [replay_tasks.CACHE_BYTES, 8])
def test_chunks_carry_the_feature_matrix_cached_or_streamed(tmp_path, monkeypatch, cache_bytes):
    rng = np.random.default_rng(4)
    write_rows(tmp_path / "a.parquet", np.arange(0, 40), rng)
    monkeypatch.setattr(replay_tasks, "_cache", None)
    monkeypatch.setattr(replay_tasks, "CACHE_BYTES", cache_bytes)
    chunks = list(replay_tasks.dataset_chunks(tmp_path / "a.parquet", ("t", "x"), 5, features=("x", "t")))
    x = np.concatenate([chunk["x"] for chunk in chunks])
    assert x.shape == (35, 2)
    assert x[:, 1].tolist() == (np.arange(5, 40) // 3).tolist()
    assert x[:, 0].tolist() == pq.read_table(tmp_path / "a.parquet").column("x").to_numpy()[5:].tolist()


def test_a_task_restores_its_snapshot_only_as_its_own_algorithm_and_params():
    query = engine.Query(weights=[1.0], k=2, window=4, slide=2)
    state = engine.create("mintopk", query, prefilter=False).to_state_text()[0]
    task = ReplayTask(query_id=0, algorithm_index=0, label="mintopk", algorithm="mintopk", params={}, query=query.to_dict(),
                      shard=0, shards=1, shard_by="seq", source="", columns=("x",), attribute=False, first_slide=1,
                      first_row=2, start=2, slides=1, segment=1, staging="", state=state)
    with pytest.raises(engine.StateError, match=r"differs in params \(prefilter: False saved, True asked\)"):
        next(replay_tasks.run_task(task))


def test_marking_a_run_says_what_it_could_not_record(tmp_path):
    db = tmp_path / "t.duckdb"
    with store.connection(db) as con:
        con.execute("INSERT INTO runs (run_id, status) VALUES ('r', 'running')")
    replay_load.mark(db, "r", "failed", "ValueError: bad slide")
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT status, reason FROM runs").fetchall() == [("failed", "ValueError: bad slide")]
    broken = tmp_path / "broken.duckdb"
    broken.write_text("not a database")
    with pytest.raises(StoreError, match=r"run r stopped \(failed: ValueError: bad slide\) but could not be marked "
                                         "failed in .*broken.duckdb: cannot open"):
        replay_load.mark(broken, "r", "failed", "ValueError: bad slide")
