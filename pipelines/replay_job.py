"""Running a planned replay: one Spark job, loaded into DuckDB while it runs.

:func:`execute` records the run (new or resumed), submits one Spark job with a task per
(query, algorithm, shard) (:mod:`pipelines.replay_tasks`), and, while the job runs, loads the
segments the tasks complete (:func:`pipelines.replay_load.load_complete`).  A replay that
stops early marks the run ``interrupted`` (SIGINT, SIGTERM: :class:`Interrupted`) or
``failed``, with the reason, and re-raises.  The caller holds the database's writer lock.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import threading
import time
from pathlib import Path
from typing import Callable

from pyspark.sql import SparkSession

from . import replay_load, store
from .errors import JobFailed
from .replay_config import SHARED
from .replay_load import QueryLoad, ReplaySummary
from .replay_multi import SharedTask, shared_tasks
from .replay_plan import ReplayPlan, last_seq_before
from .replay_tasks import ReplayTask, run_partition

POLL_SECONDS = 0.5
"""How often the driver checks on the job (and a signal) while it runs."""
LOAD_SECONDS = 2.0
"""At most how often the driver loads complete segments while the job runs: each load costs a
connection, a transaction and a checkpoint, and keeps only the last snapshots of its
segments, so loading several segments at once is cheaper than one at a time; loading soon
after a segment completes keeps the load left after the job small."""
PROGRESS_SECONDS = 5.0
"""How often the driver logs progress inside the job."""


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived: the replay stops at its last complete snapshot.

    A ``BaseException``, as ``KeyboardInterrupt``: raised by the signal handler inside a call
    to the JVM, an ``Exception`` would be caught by py4j and reported as a ``Py4JError``.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


received_signals: list[int] = []
"""The signals received while :func:`pipelines.replay.interruptible` is active.  DuckDB turns
the exception the signal handler raises inside a query into ``RuntimeError('Query
interrupted')``, so the signal received, not the exception, says why the replay stopped."""


def stop_signal(error: BaseException) -> int | None:
    """The signal that stopped the replay with ``error``, or ``None`` when none did."""
    if isinstance(error, Interrupted):
        return error.signum
    if isinstance(error, KeyboardInterrupt):  # Spark's own SIGINT handler raises it
        return signal.SIGINT
    return received_signals[0] if received_signals else None


def execute(spark: SparkSession, plan: ReplayPlan, *, log: Callable[[str], None] = print) -> ReplaySummary:
    """Run a prepared replay; a resumed run with nothing new returns at once, writing nothing."""
    summary = ReplaySummary(run_id=plan.run_id, resumed=plan.resumed)
    if plan.up_to_date:
        return summary
    with store.connection(plan.db) as con, store.transaction(con):
        if plan.resumed:
            replay_load.resume_run(con, plan.run_id, plan.config)
            for p in plan.progress:
                if p.replaced_slides:
                    replay_load.drop_slides_from(con, plan.run_id, p.query_id, p.next_slide)
        else:
            replay_load.start_run(con, plan.run_id, plan.config, spark.sparkContext.master,
                                  finished=plan.remaining == 0)
    try:
        run_job(spark, plan, summary, log)
    except BaseException as error:
        signum = stop_signal(error)
        reason = f"stopped by {signal.Signals(signum).name}" if signum else failure_reason(error)
        replay_load.mark(plan.db, plan.run_id, "interrupted" if signum else "failed", reason)
        if signum and not isinstance(error, (Interrupted, KeyboardInterrupt)):
            raise Interrupted(signum) from None
        raise
    return summary


def failure_reason(error: BaseException) -> str:
    """One line: the exception's type and message (a task's failure is already one line)."""
    if isinstance(error, TaskFailed):
        return " ".join(error.reason.split())
    return f"{type(error).__name__}: {store.one_line(error) or '(no message)'}"


class TaskFailed(JobFailed):
    """A replay task raised: ``reason`` is the last line of its Python exception (the run's
    recorded reason), ``details`` the file that holds all of it (Spark's logs of task failures
    are silenced on the console); the message says both and that the run is marked failed."""

    def __init__(self, reason: str, run_id: str, details: Path) -> None:
        super().__init__(f"{reason}; run {run_id} marked failed, its complete segments kept; "
                         f"the task's traceback: {details}")
        self.reason = reason
        self.details = details


def write_failure_details(plan: ReplayPlan, error: BaseException) -> Path:
    """``<db dir>/<db file name>.failures/<run>.txt``: the failed job's whole error, tracebacks included."""
    db = Path(plan.db).resolve()
    path = db.parent / f"{db.name}.failures" / f"{plan.run_id}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{error}\n")
    return path


def replay_tasks(plan: ReplayPlan) -> list[ReplayTask | SharedTask]:
    """One task per (query, algorithm, shard) with slides left, most slides first; the shared
    executor (``multi``) has one per (weights group, shard) instead (:mod:`pipelines.replay_multi`).

    Spark hands the tasks to free executor cores in this order; a task's cost grows with its
    slides (every task reads the same rows), so the longest tasks start first and the short
    ones fill in at the end.
    """
    config, dataset = plan.config, plan.dataset
    columns = ("stream", "value") if dataset.attribute else dataset.features
    tasks = []
    for p in plan.progress:
        if not p.remaining:
            continue
        start = p.origin + p.next_slide * p.query.slide
        for index, spec in enumerate(config.algorithms):
            if spec.name == SHARED:
                continue
            for shard in range(config.shards):
                tasks.append(ReplayTask(
                    query_id=p.query_id, algorithm_index=index, label=spec.label, algorithm=spec.name,
                    params=spec.params, query=p.query.to_dict(), shard=shard, shards=config.shards,
                    shard_by="id" if dataset.attribute else "seq", source=dataset.parquet, columns=columns,
                    attribute=dataset.attribute, first_slide=p.next_slide, first_row=p.first_row, start=start,
                    slides=p.remaining, segment=p.segment_slides,
                    plugins=config.plugins, staging=str(plan.staging), state=p.states[(spec.label, shard)]))
    for index, spec in enumerate(config.algorithms):
        if spec.name == SHARED:
            tasks += shared_tasks(plan, index, spec)
    return sorted(tasks, key=lambda task: -task.slides)


def query_loads(plan: ReplayPlan) -> list[QueryLoad]:
    labels = [spec.label for spec in plan.config.algorithms]
    return [QueryLoad(query_id=p.query_id, k=p.query.k, next_slide=p.next_slide, total_slides=p.total_slides,
                      origin=p.origin, slide=p.query.slide,
                      tasks=replay_load.staged_tasks(plan.staging, p.query_id, labels, plan.config.shards),
                      shards=plan.config.shards,
                      last_seq=lambda end, q=p.query: last_seq_before(q, plan.dataset.t, end))
            for p in plan.progress]


def run_job(spark: SparkSession, plan: ReplayPlan, summary: ReplaySummary, log: Callable[[str], None]) -> None:
    """One Spark job for every task; the driver loads complete segments into DuckDB as they appear."""
    shutil.rmtree(plan.staging, ignore_errors=True)
    plan.staging.mkdir(parents=True)
    tasks = replay_tasks(plan)
    loads = query_loads(plan)
    if not tasks:  # no query has a complete slide: the run was recorded as finished
        return
    context = spark.sparkContext
    outcome: dict[str, BaseException] = {}

    def job() -> None:
        try:
            context.setJobGroup(f"replay-{plan.run_id}", f"replay {plan.run_id}", interruptOnCancel=True)
            context.parallelize([task.to_json() for task in tasks], len(tasks)).mapPartitions(run_partition).collect()
        except BaseException as error:  # noqa: BLE001 - reported by the driver thread below
            outcome["error"] = error

    began = time.perf_counter()
    reporter = ProgressReporter(loads, log, began)
    thread = threading.Thread(target=job, name="replay-job", daemon=True)
    thread.start()
    last_load = time.perf_counter()
    try:
        while thread.is_alive():
            thread.join(POLL_SECONDS)
            if time.perf_counter() - last_load >= LOAD_SECONDS:
                replay_load.load_complete(plan, loads, summary, job_running=True)
                last_load = time.perf_counter()
            reporter.maybe_report()
    except BaseException:
        with contextlib.suppress(Exception):  # the job may have ended already; the first error is the one to report
            context.cancelJobGroup(f"replay-{plan.run_id}")
        thread.join(30)
        raise
    while replay_load.load_complete(plan, loads, summary, job_running=False):
        pass
    if "error" in outcome:
        raise TaskFailed(f"replay task failed: {task_failure(outcome['error'])}", plan.run_id,
                         write_failure_details(plan, outcome["error"])) from None
    if not all(load.done for load in loads):
        raise RuntimeError("the replay job ended but some segments were never staged")
    reporter.report()
    shutil.rmtree(plan.staging, ignore_errors=True)
    replay_load.summarize(plan, loads, summary)


def task_failure(error: BaseException) -> str:
    """The last line of a task's Python exception (Spark wraps it in a Java stack trace)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    python = [line for line in lines if line.split(":")[0].endswith(("Error", "Exception"))
              and not line.startswith(("org.", "py4j", "java."))]
    return python[-1] if python else (lines[0] if lines else type(error).__name__)


class ProgressReporter:
    """Logs, every :data:`PROGRESS_SECONDS`, each query's slides replayed and loaded, and the rate."""

    def __init__(self, loads: list[QueryLoad], log: Callable[[str], None], began: float) -> None:
        self.loads, self.log, self.began = loads, log, began
        self.first = {load.query_id: load.next_slide for load in loads}
        self.last_report = began

    def maybe_report(self) -> None:
        if time.perf_counter() - self.last_report >= PROGRESS_SECONDS:
            self.report()

    def report(self) -> None:
        elapsed = time.perf_counter() - self.began
        for load in self.loads:
            replayed = load.replayed()
            rate = (replayed - self.first[load.query_id]) / max(elapsed, 1e-9)
            self.log(f"[replay] query {load.query_id}: slide {replayed:,}/{load.total_slides:,} "
                     f"({100 * replayed / max(load.total_slides, 1):.0f}%) replayed, {load.next_slide:,} loaded"
                     f" | {rate:,.0f} slides/s | {elapsed:.1f} s")
        self.last_report = time.perf_counter()
