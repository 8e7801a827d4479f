"""Progress of long Spark stages, reported from the driver while the job runs.

Spark's status tracker knows, for every active stage, how many of its tasks have finished.
A daemon thread polls it and logs one line per stage every few seconds, turning the share
of finished tasks into an estimate of the rows done and the rows per second (the input is
split evenly over the tasks of the stages that read it).
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Callable, Iterator

from pyspark.sql import SparkSession

POLL_SECONDS = 0.5
REPORT_EVERY_SECONDS = 5.0
QUIET_REPORT_SECONDS = 30.0
"""A stage whose finished tasks did not change is reported again only after this long."""


@contextlib.contextmanager
def stage_progress(spark: SparkSession, log: Callable[[str], None], *, rows: int, what: str = "rows cleaned",
                   every: float = REPORT_EVERY_SECONDS) -> Iterator[None]:
    """Log ``[spark] stage N: done/total tasks, ~R rows cleaned, X rows/s`` while the block runs.

    Parameters
    ----------
    spark
        The session whose jobs run inside the block.
    log
        Where the lines go.
    rows
        Rows the block's stages work through (the estimate scales the share of finished tasks).
    what
        What a row is, for the message.
    every
        Seconds between two lines of the same stage (a stage shorter than this is not
        reported); a line comes when more tasks have finished, or every
        :data:`QUIET_REPORT_SECONDS` while none does.
    """
    tracker = spark.sparkContext.statusTracker()
    stop = threading.Event()
    first_seen: dict[int, float] = {}
    last_report: dict[int, tuple[float, int]] = {}

    def poll() -> None:
        while not stop.wait(POLL_SECONDS):
            now = time.monotonic()
            for stage_id in tracker.getActiveStageIds():
                info = tracker.getStageInfo(stage_id)
                if info is None or info.numTasks == 0:
                    continue
                started = first_seen.setdefault(stage_id, now)
                reported_at, reported_done = last_report.get(stage_id, (started, 0))
                changed = info.numCompletedTasks != reported_done
                if now - reported_at < every or not (changed or now - reported_at >= QUIET_REPORT_SECONDS):
                    continue
                last_report[stage_id] = (now, info.numCompletedTasks)
                done = rows * info.numCompletedTasks / info.numTasks
                rate = done / max(now - started, 1e-9)
                log(f"[spark] stage {stage_id}: {info.numCompletedTasks}/{info.numTasks} tasks, "
                    f"~{done:,.0f} {what}, {rate:,.0f} {what.split()[0]}/s")

    thread = threading.Thread(target=poll, name="spark-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
