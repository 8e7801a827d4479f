"""Replay a dataset through the engine's algorithms on Spark and store the results in DuckDB.

``python -m pipelines.replay --config pipelines/configs/demo.json [--db var/topk.duckdb]
[--resume] [--run-id ID] [--master URL] [--lock-wait SECONDS]``

The replay in four parts, each its own module:

- **plan** (:mod:`pipelines.replay_plan`): the config against its dataset, the run to start
  or resume, and where each query continues (from the run's last complete snapshots);
- **job** (:mod:`pipelines.replay_job`): one Spark job, one task per (query, algorithm,
  shard) (:mod:`pipelines.replay_tasks`; the shared executor ``multi``: one per (weights group,
  shard), :mod:`pipelines.replay_multi`), each replaying its whole range in one pass and
  staging, every segment of slides, its answers, stats and state as files;
- **load** (:mod:`pipelines.replay_load`): while the job runs, the driver bulk-loads every
  complete segment into DuckDB, one transaction per query and load, so the snapshots in
  DuckDB always come with the answers they cover;
- **this command**: the writer lock (:mod:`pipelines.locks`), held from before the plan reads
  the dataset and the snapshots until the last load; signals; the summary.

A run killed or interrupted at any point therefore resumes (``--resume``) from its last
complete snapshot over the rows not yet replayed (for instance a day appended by
``pipelines.ingest --append``), writing nothing when there is nothing new.  Two overlapping
runs of one database file (cron entries, say) run one after the other.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import time
from pathlib import Path
from typing import Callable, Iterator, Sequence

from pyspark.sql import SparkSession

from engine.cli import positive_count
from engine.stream import MAX_SLIDES

from . import locks, store
from .errors import exit_status
from .replay_job import Interrupted, execute, received_signals, stop_signal
from .replay_load import ReplaySummary
from .replay_plan import ReplayPlan, prepare, require_database, staging_directory
from .spark import spark_master, spark_session

__all__ = ["ReplayPlan", "ReplaySummary", "execute", "main", "prepare", "replay", "staging_directory"]


def replay(spark: SparkSession, config_path: Path, *, db: Path = store.DEFAULT_DB, resume: bool = False,
           run_id: str | None = None, lock_wait: float | None = None, max_slides: int = MAX_SLIDES,
           log: Callable[[str], None] = print) -> ReplaySummary:
    """Replay the config's dataset through its algorithms and write the results to ``db``.

    Parameters
    ----------
    spark
        The session whose executors run the tasks.
    config_path
        JSON config (:mod:`pipelines.replay_config`).
    db
        DuckDB file holding the dataset record; results go there too.
    resume
        Continue the run (``run_id``, else the latest run of the config's name and dataset)
        from its snapshots; start a new run if there is none.
    run_id
        Name of the run to start or resume (default: ``<config name>-<UTC time>``).
    lock_wait
        Seconds to wait for another process writing ``db``, or publishing into the dataset's
        directory (:func:`pipelines.locks.wait_seconds`).
    max_slides
        Refuse a time query whose slides outnumber both the dataset's rows and this many
        (a gap in the times; :data:`engine.stream.MAX_SLIDES` by default).

    Raises
    ------
    InputError
        Bad config, unknown dataset, a resumed run whose config or dataset changed.
    StoreError
        ``db`` is being written by another process for longer than ``lock_wait``.
    """
    with writing(db, lock_wait, log):
        plan = prepare(config_path, db=db, resume=resume, run_id=run_id, max_slides=max_slides, lock_wait=lock_wait,
                       log=log)
        for line in plan.describe():
            log(line)
        return execute(spark, plan, log=log)


def writing(db: Path, lock_wait: float | None, log: Callable[[str], None]):
    """The writer lock of ``db``, logging as replay; a missing ``db`` is refused first, leaving no lock directory."""
    require_database(db)
    return locks.writer_lock(db, wait=lock_wait, log=lambda line: log(f"[replay] {line}"))


def format_summary(summary: ReplaySummary) -> str:
    lines = [f"[replay] run {summary.run_id}: {summary.slides_written:,} slides, "
             f"{summary.answer_rows:,} answer rows written in {summary.loads:,} transactions "
             f"({summary.load_seconds:.1f} s of loading on the driver)"]
    for (query_id, label), (_, precision, error, candidates, seconds) in sorted(summary.totals.items()):
        lines.append(f"[replay]   query {query_id} {label:<12} precision {precision:.4f}  "
                     f"error {error:.4g}  candidates {candidates:,.1f}  {1000 * seconds:.3f} ms/slide")
    return "\n".join(lines)


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """SIGINT and SIGTERM raise :class:`Interrupted` once (later signals are ignored while it unwinds)."""
    previous = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}

    def handler(signum, frame):
        for other in previous:
            signal.signal(other, signal.SIG_IGN)
        received_signals.append(signum)
        raise Interrupted(signum)

    received_signals.clear()
    for signum in previous:
        signal.signal(signum, handler)
    try:
        yield
    finally:
        for signum, action in previous.items():
            signal.signal(signum, action)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m pipelines.replay",
                                     description="Replay a dataset through top-k algorithms on Spark into DuckDB.")
    parser.add_argument("--config", type=Path, required=True, help="replay config (JSON)")
    parser.add_argument("--db", type=Path, default=store.DEFAULT_DB, help="DuckDB file (default %(default)s)")
    parser.add_argument("--resume", action="store_true",
                        help="continue the latest run of this config from its last snapshot")
    parser.add_argument("--run-id", help="run to start or resume (default: <config name>-<UTC time>)")
    parser.add_argument("--master", help="Spark master (default: $SPARK_MASTER, else the one spark-submit was "
                                         "given, else local[*])")
    parser.add_argument("--max-slides", type=positive_count, default=MAX_SLIDES, metavar="N",
                        help="refuse a time query whose slides outnumber both the rows and N, nearly all empty, "
                             f"as a gap in t makes them (default: {MAX_SLIDES:,})")
    locks.add_wait_option(parser)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    began = time.perf_counter()
    executing: list[ReplayPlan] = []

    def job() -> int:
        master = spark_master(args.master)  # refused before the run is announced or the database locked
        with writing(args.db, args.lock_wait, print):  # before Spark: a waiting or refused run starts no JVM
            plan = prepare(args.config, db=args.db, resume=args.resume, run_id=args.run_id,
                           max_slides=args.max_slides, lock_wait=args.lock_wait)
            print("\n".join(plan.describe()))
            if plan.up_to_date:
                return 0
            with spark_session("topk-replay", master, light_jvm=True) as spark:
                started = time.perf_counter()
                print(f"[replay] Spark {spark.sparkContext.master} started in {started - began:.1f} s")
                executing.append(plan)
                summary = execute(spark, plan)
                replayed = time.perf_counter() - started
        print(format_summary(summary))
        print(f"[replay] done in {time.perf_counter() - began:.1f} s (the replay itself, from Spark ready to the run "
              f"finished in DuckDB: {replayed:.1f} s)")
        return 0

    try:
        with interruptible():
            return exit_status(job)
    except BaseException as stop:  # noqa: BLE001 - a signal surfaces as whatever the call it hit raises (DuckDB's)
        signum = stop_signal(stop)
        if signum is None:
            raise
        where = (f"run {executing[0].run_id} marked interrupted; continue it with --resume" if executing
                 else "nothing was written")
        print(f"[replay] stopped by {signal.Signals(signum).name}: {where}", file=sys.stderr)
        return 128 + signum
    finally:
        received_signals.clear()


if __name__ == "__main__":
    sys.exit(main())
