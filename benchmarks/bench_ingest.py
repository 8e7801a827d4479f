"""Ingest throughput (issue 9 (d)): the 10 stock files (SPY + BAC, 7-11 Oct 2013, one market
stream) and the 12 taxi months, rows read per second, end to end (extract, Spark transform,
partitioned Parquet, DuckDB record) in one warm local SparkSession.

Spark's start-up is measured once and reported apart. Quick mode ingests one shipped taxi
month only. The full data is read from the benchmarks' data directory
(``benchmarks.common.data_dir()``: ``$TOPK_DATA`` or ``--data-dir``), falling back to the shipped
samples for what they hold.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from benchmarks.common import data_dir
from pipelines import ingest
from pipelines.spark import PROJECT_ROOT, start_spark

SAMPLES = PROJECT_ROOT / "sample_data"


def cases(quick: bool) -> list[tuple[str, str, list[Path]]]:
    data = Path(data_dir())
    taxi = sorted((data / "taxi").glob("*.csv.gz")) or sorted((SAMPLES / "taxi").glob("*.csv.gz"))
    if quick:
        return [("taxi, 1 month", "taxi", taxi[:1])]
    stock = sorted((data / "stock").glob("*_trade.zip"))
    return [("stock, SPY + BAC, 10 files", "stock", stock), ("taxi, 12 months", "taxi", taxi)]


def run(quick: bool = False) -> list[dict]:
    started = time.perf_counter()
    spark = start_spark("bench-ingest", os.environ.get("SPARK_MASTER", "local[*]"))
    spark_start = time.perf_counter() - started
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="bench-ingest-") as scratch:
            for case, family, inputs in cases(quick):
                began = time.perf_counter()
                summary = ingest.ingest(spark, family, inputs, db=Path(scratch) / "topk.duckdb",
                                        out=Path(scratch) / "datasets", log=lambda _: None)
                seconds = time.perf_counter() - began
                rows.append({"bench": "ingest", "case": case, "files": len(inputs), "rows_read": summary.rows_read,
                             "rows_rejected": summary.rows_rejected, "rows_written": summary.rows_written,
                             "seconds": seconds, "rows_per_s": summary.rows_read / seconds,
                             "spark_start_s": spark_start, "master": spark.sparkContext.master})
    finally:
        spark.stop()
    return rows


COLUMNS = ["case", "files", "rows_read", "rows_rejected", "rows_written", "seconds", "rows_per_s", "spark_start_s"]
