"""A replay task stores the same figures whatever ran before it in its Spark Python worker."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import engine
from pipelines.replay_tasks import ReplayTask, run_partition


def test_tasks_run_again_in_a_reused_worker_store_the_same_measured_bytes(spark, tmp_path):
    """One partition runs MinTopK, the oracle, the oracle again and MinTopK again over the same
    query and rows (as query 0, then 1), so the second run of each comes after other instances
    of its class in the same worker: every slide's figures must be the first run's (MinTopK's
    ``measured_bytes`` were 8 B lower in a worker that had run MinTopK before)."""
    rows = 3_000
    rng = np.random.default_rng(5)
    source = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"id": np.arange(rows), "seq": np.arange(rows), "t": np.arange(rows),
                             "x": rng.random(rows)}), source)
    query = engine.Query(weights=[1.0], k=10, window=500, slide=50)
    slides = rows // query.slide

    def task(query_id: int, algorithm_index: int, name: str) -> str:
        return ReplayTask(query_id=query_id, algorithm_index=algorithm_index, label=name, algorithm=name, params={},
                          query=query.to_dict(), shard=0, shards=1, shard_by="seq", source=str(source), columns=("x",),
                          attribute=False, first_slide=0, first_row=0, start=0, slides=slides, segment=slides,
                          staging=str(tmp_path / "staging")).to_json()

    order = [task(0, 0, "mintopk"), task(0, 1, "oracle"), task(1, 1, "oracle"), task(1, 0, "mintopk")]
    spark.sparkContext.parallelize([order], 1).flatMap(lambda tasks: tasks).mapPartitions(run_partition).collect()

    def figures(query_id: int, algorithm_index: int):
        directory = tmp_path / "staging" / f"q{query_id}" / f"a{algorithm_index}" / "s0"
        table = pa.concat_tables([pq.read_table(path) for path in sorted(directory.glob("stats-*.parquet"))])
        return {name: table.column(name).to_pylist() for name in ("slide", "candidates", "bytes", "measured_bytes")}

    for index in (0, 1):
        first, again = figures(0, index), figures(1, index)
        assert len(first["slide"]) == slides
        assert again == first, f"algorithm {index}: the figures differ when run again in the same worker"
