"""A sharded replay's stored answers against a brute force computed here from the dataset's rows
with numpy alone (no engine code): count and time windows, s = 1, s = n, k larger than a time
window's objects, empty time slides, negative times, ties and bursts of equal times, weights all 0."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipelines import replay, store

QUERIES = [
    {"weights": [1.0, 0.5], "k": 4, "window": 60, "slide": 6, "kind": "count"},
    {"weights": [1.0, 0.5], "k": 3, "window": 3, "slide": 1, "kind": "count"},
    {"weights": [0.0, -1.0], "k": 50, "window": 30, "slide": 30, "kind": "time"},
    {"weights": [1.0, 0.0], "k": 9, "window": 100, "slide": 25, "kind": "time"},
]
ALGORITHMS = ["oracle", "sap", "multi"]


def stream(rows=700, seed=3):
    """Scores exact in binary (quarters and small integers): no rounding to disagree on; a gap
    of 5,000 in the times makes 200 empty slides of query 3."""
    rng = np.random.default_rng(seed)
    gaps = rng.choice([0, 0, 0, 1, 2, 5, 40], rows)
    gaps[rows // 2] = 5_000
    return {"id": rng.permutation(10**6)[:rows] - 500_000, "seq": np.arange(rows),
            "t": -1_000_003 + np.cumsum(gaps), "a": rng.integers(0, 5, rows) / 4, "b": rng.integers(-3, 3, rows) * 1.0}


def brute_force(rows, query):
    """``{slide: [(id, score), ...]}``: every window's rows sorted by (score, seq) descending, top k."""
    x = np.column_stack([rows["a"], rows["b"]])
    scores = x @ np.asarray(query["weights"])
    n, s, k, t = query["window"], query["slide"], query["k"], rows["t"]
    if query["kind"] == "count":
        bounds = [(max(0, end - n), end) for end in range(s, len(t) + 1, s)]
    else:
        origin = t[0] // s * s
        ends = range(origin + s, t[-1] // s * s + 1, s)
        bounds = [(np.searchsorted(t, end - n), np.searchsorted(t, end)) for end in ends]
    answers = {}
    for slide, (first, stop) in enumerate(bounds):
        order = sorted(range(first, stop), key=lambda i: (scores[i], i), reverse=True)[:k]
        answers[slide] = [(int(rows["id"][i]), float(scores[i])) for i in order]
    return answers


def replay_stored_the_brute_force_answers(spark, tmp_path, queries, algorithms) -> tuple[Path, str]:
    """Replay ``queries`` through ``algorithms`` over :func:`stream`'s rows in 3 shards, check
    every stored answer against :func:`brute_force`: ``(db, run id)``."""
    rows = stream()
    db, data, config = tmp_path / "topk.duckdb", tmp_path / "bursts.parquet", tmp_path / "bursts.json"
    pq.write_table(pa.table(rows), data, row_group_size=128)
    with store.connection(db) as con:
        store.insert_row(con, "datasets", {"name": "bursts", "family": "test", "features": ["a", "b"],
                                           "parquet": str(data)})
    config.write_text(json.dumps({"dataset": "bursts", "shards": 3, "snapshot_every": 13, "queries": queries,
                                  "algorithms": [{"name": name} for name in algorithms]}))
    run_id = replay.replay(spark, config, db=db, log=lambda _: None).run_id
    with duckdb.connect(str(db), read_only=True) as con:
        for query_id, query in enumerate(queries):
            expected = brute_force(rows, query)
            for algorithm in algorithms:
                stored = {slide: [] for slide in expected}
                for slide, object_id, score in con.execute(
                        "SELECT slide, object_id, score FROM answers WHERE run_id = ? AND query_id = ? "
                        "AND algorithm = ? ORDER BY slide, rank", [run_id, query_id, algorithm]).fetchall():
                    stored.setdefault(slide, []).append((object_id, score))
                slides = con.execute("SELECT count(*) FROM slide_metrics WHERE run_id = ? AND query_id = ? "
                                     "AND algorithm = ?", [run_id, query_id, algorithm]).fetchone()[0]
                assert (slides, stored) == (len(expected), expected), (query_id, algorithm)
    return db, run_id


def test_a_sharded_replay_stores_the_brute_force_answers(spark, tmp_path):
    rows = stream()
    assert sum(not answer for answer in brute_force(rows, QUERIES[3]).values()) >= 190  # the gap's empty slides
    assert all(len(answer) < 50 for answer in brute_force(rows, QUERIES[2]).values())  # k past every window
    replay_stored_the_brute_force_answers(spark, tmp_path, QUERIES, ALGORITHMS)


def test_weights_that_are_all_zero_replay_the_newest_objects_of_every_window(spark, tmp_path):
    """Every object scores 0 and equal scores rank the newer first, as ``engine run``,
    ``run-many`` and the dashboard answer it; the replay refused such a config."""
    queries = [{"weights": [0.0, 0.0], "k": 4, "window": 60, "slide": 6, "kind": "count"},
               {"weights": [-0.0, 0], "k": 5, "window": 100, "slide": 25, "kind": "time"}]
    db, run_id = replay_stored_the_brute_force_answers(spark, tmp_path, queries, ["oracle", "mintopk", "sao", "multi"])
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT DISTINCT score FROM answers WHERE run_id = ?", [run_id]).fetchall() == [(0.0,)]
        assert con.execute("SELECT DISTINCT precision, error FROM slide_metrics WHERE run_id = ?",
                           [run_id]).fetchall() == [(1.0, 0.0)]
