"""The driver side of a replay: bulk-load the segments the tasks staged into DuckDB.

A segment of a query is complete when every (algorithm, shard) task of the query has written
its ``done-<last slide>.json`` marker (:mod:`pipelines.replay_tasks`).  Complete segments are
loaded in one DuckDB transaction per query and call:

- **answers**: DuckDB reads the shards' answer parts (Parquet; a single shard's answers are
  final as they are) and keeps, per algorithm and slide, the top ``k`` of their union with a
  window function
  (``row_number() OVER (PARTITION BY algorithm, slide ORDER BY score DESC, seq DESC)``: the
  engine's total order, so the merge is exact wherever the shards' local top-k contain the
  global one);
- **slide_metrics**: the shards' stats summed (``seconds``: the slowest shard), and precision
  and error of every algorithm against the reference per slide, computed by
  ``engine.metrics`` registered as DuckDB functions over the merged answers.  A join on
  (slide, rank) first finds the slides where an answer differs from the reference's; only
  those are listed and passed to the functions (an equal answer has precision 1 and error 0
  by the metrics' definitions);
- **snapshots**: every task's state at the segment's last slide (read by DuckDB from the
  staged JSON), keeping only the last ``keep_snapshots`` slides per (query, algorithm, shard).

Loaded files are removed from the staging directory after the commit.  The keys of
``answers``, ``slide_metrics`` and ``snapshots`` (:data:`pipelines.store.PRIMARY_KEYS`) make a
load of slides already stored fail, and roll back, rather than store them twice.

Most of a load's time is the answers' primary key: DuckDB inserts every row into the
transaction's own index at the ``INSERT`` and into the table's at the ``COMMIT``.  The parts
already arrive in key order (one algorithm's slides and ranks in turn), DuckDB's cheap case:
sorting them first, ``preserve_insertion_order = false``, one thread or a larger
``checkpoint_threshold`` measured no cheaper, and the same rows in random order about 1.6x
dearer.

The run's own record is written here too: :func:`start_run` (or :func:`resume_run`), the
status ``finished`` with the last load, and :func:`mark` (``failed`` or ``interrupted``, with
the reason) when the replay stops early.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import numpy as np

from engine import Answer, metrics

from . import store
from .errors import StoreError
from .replay_config import ReplayConfig
from .replay_tasks import part_name, task_directory

if TYPE_CHECKING:
    from .replay_plan import ReplayPlan

ERROR_METRICS: dict[str, Callable[[Answer, Answer], float]] = {
    "single": metrics.relative_error,
    "incomplete": metrics.absolute_error,
}
"""``slide_metrics.error`` by stream model: SAO's relative error, or paper 003's ``(1/k) Σ |a_i - b_i|``."""


@dataclass
class ReplaySummary:
    """What a replay did; ``totals`` maps (query, algorithm) to slides, mean precision, error, candidates, seconds/slide."""

    run_id: str
    resumed: bool
    slides_written: int = 0
    answer_rows: int = 0
    load_seconds: float = 0.0
    loads: int = 0
    totals: dict[tuple[int, str], tuple[int, float, float, float, float]] = field(default_factory=dict)


@dataclass
class QueryLoad:
    """Where the loading of one query stands, and the task directories it loads from."""

    query_id: int
    k: int
    next_slide: int
    total_slides: int
    origin: int
    slide: int
    tasks: list[tuple[str, int, Path]]
    """``(algorithm label, shard, staging directory)`` of every task of the query."""
    shards: int = 1
    loaded_this_run: int = 0
    answer_rows: int = 0
    last_seq: Callable[[int], int] = field(default=lambda end: end - 1, repr=False)

    @property
    def done(self) -> bool:
        return self.next_slide >= self.total_slides

    def markers(self) -> list[dict]:
        """The markers of the complete segments not loaded yet, in slide order (first task's view)."""
        finished: dict[int, dict] | None = None
        for _, _, directory in self.tasks:
            mine = {}
            if directory.is_dir():
                for path in directory.glob("done-*.json"):
                    slide = int(path.stem.split("-")[1])
                    if slide >= self.next_slide:
                        mine[slide] = path
            finished = mine if finished is None else {s: p for s, p in finished.items() if s in mine}
        return [json.loads(path.read_text()) for _, path in sorted((finished or {}).items())]

    def replayed(self) -> int:
        """Slides every task of the query has replayed (from the tasks' progress files)."""
        counts = []
        for _, _, directory in self.tasks:
            try:
                counts.append(json.loads((directory / "progress.json").read_text())["slides"])
            except (OSError, ValueError, KeyError):
                counts.append(0)
        return max(self.next_slide, self.next_slide - self.loaded_this_run + min(counts, default=0))


def staged_tasks(staging: Path, query_id: int, labels: list[str], shards: int) -> list[tuple[str, int, Path]]:
    return [(label, shard, task_directory(staging, query_id, index, shard))
            for index, label in enumerate(labels) for shard in range(shards)]


def register_metrics(con, stream: str) -> None:
    """``topk_precision`` and ``topk_error`` in ``con``: ``engine.metrics`` over (ids, scores) lists."""
    error = ERROR_METRICS[stream]

    def answer(ids, scores) -> Answer:
        ids = np.asarray(ids, np.int64)
        return Answer(ids, np.asarray(scores, np.float64), np.zeros(len(ids), np.int64))

    def precision(exact_ids, exact_scores, ids, scores) -> float:
        return metrics.precision(answer(exact_ids, exact_scores), answer(ids, scores))

    def relative(exact_ids, exact_scores, ids, scores) -> float:
        return error(answer(exact_ids, exact_scores), answer(ids, scores))

    types = ["BIGINT[]", "DOUBLE[]", "BIGINT[]", "DOUBLE[]"]
    for name, function in (("topk_precision", precision), ("topk_error", relative)):
        try:
            con.remove_function(name)
        except Exception:  # noqa: BLE001 - not registered on this connection yet
            pass
        con.create_function(name, function, types, "DOUBLE", side_effects=False)


def load(con, run_id: str, progress: QueryLoad, markers: list[dict], *, reference: str, keep_snapshots: int,
         created_at: dt.datetime) -> int:
    """Insert the segments of ``markers`` (one query, all tasks complete) inside the caller's transaction.

    Returns the number of slides loaded; ``progress.next_slide`` moves past them.
    """
    first, last = markers[0]["first_slide"], markers[-1]["slide"]
    if first != progress.next_slide:
        raise RuntimeError(f"query {progress.query_id}: staged segments start at slide {first}, "
                           f"expected {progress.next_slide}")
    answers = [str(path) for _, _, d in progress.tasks for path in staged_parts(d, "answers", first, last)]
    stats = [str(path) for _, _, d in progress.tasks for path in staged_parts(d, "stats", first, last)]
    if progress.shards == 1:
        con.execute("""
            CREATE OR REPLACE TEMP TABLE merged AS
            SELECT algorithm, slide, "end", object_id, score, rank FROM read_parquet(?)""", [answers])
    else:
        con.execute("""
            CREATE OR REPLACE TEMP TABLE merged AS
            SELECT algorithm, slide, "end", object_id, score,
                   row_number() OVER (PARTITION BY algorithm, slide ORDER BY score DESC, seq DESC)::INTEGER AS rank
            FROM (SELECT * EXCLUDE (rank) FROM read_parquet(?)) QUALIFY rank <= ? ORDER BY algorithm, slide, rank""",
                    [answers, progress.k])
    con.execute("""
        INSERT INTO answers (run_id, query_id, algorithm, slide, "end", rank, object_id, score)
        SELECT ?, ?, algorithm, slide, "end", rank, object_id, score FROM merged""", [run_id, progress.query_id])
    answer_rows = con.execute("SELECT count(*) FROM merged").fetchone()[0]
    con.execute("""
        CREATE OR REPLACE TEMP TABLE compared AS
        SELECT a.algorithm, a.slide, count(*) AS answered, count(r.rank) AS matching
        FROM merged a LEFT JOIN merged r ON r.algorithm = ? AND r.slide = a.slide AND r.rank = a.rank
                                           AND r.object_id = a.object_id AND r.score = a.score
        GROUP BY a.algorithm, a.slide""", [reference])
    con.execute("""
        INSERT INTO slide_metrics (run_id, query_id, algorithm, slide, "end", candidates, retained, bytes,
                                   measured_bytes, seconds, precision, error)
        WITH shards AS (
            SELECT algorithm, slide, any_value("end") AS "end", sum(candidates) AS candidates,
                   sum(retained) AS retained, sum(bytes) AS bytes,
                   sum(measured_bytes) AS measured_bytes,
                   max(seconds) AS seconds
            FROM read_parquet(?) GROUP BY algorithm, slide),
        flagged AS (
            SELECT s.*, coalesce(c.answered, 0) = coalesce(r.answered, 0)
                        AND coalesce(c.matching, 0) = coalesce(c.answered, 0) AS same
            FROM shards s
            LEFT JOIN compared c ON c.algorithm = s.algorithm AND c.slide = s.slide
            LEFT JOIN compared r ON r.algorithm = ? AND r.slide = s.slide),
        differing AS (SELECT algorithm, slide FROM flagged WHERE NOT same),
        listed AS (
            SELECT m.algorithm, m.slide, list(m.object_id ORDER BY m.rank) AS ids,
                   list(m.score ORDER BY m.rank) AS scores
            FROM merged m
            WHERE (m.algorithm, m.slide) IN (SELECT (algorithm, slide) FROM differing)
               OR (m.algorithm = ? AND m.slide IN (SELECT slide FROM differing))
            GROUP BY m.algorithm, m.slide)
        SELECT ?, ?, f.algorithm, f.slide, f."end", f.candidates, f.retained, f.bytes, f.measured_bytes, f.seconds,
               CASE WHEN f.same THEN 1.0 ELSE topk_precision(coalesce(r.ids, []::BIGINT[]), coalesce(r.scores, []::DOUBLE[]),
                                                            coalesce(a.ids, []::BIGINT[]), coalesce(a.scores, []::DOUBLE[])) END,
               CASE WHEN f.same THEN 0.0 ELSE topk_error(coalesce(r.ids, []::BIGINT[]), coalesce(r.scores, []::DOUBLE[]),
                                                        coalesce(a.ids, []::BIGINT[]), coalesce(a.scores, []::DOUBLE[])) END
        FROM flagged f
        LEFT JOIN listed a ON NOT f.same AND a.algorithm = f.algorithm AND a.slide = f.slide
        LEFT JOIN listed r ON NOT f.same AND r.algorithm = ? AND r.slide = f.slide
        ORDER BY f.algorithm, f.slide""", [stats, reference, reference, run_id, progress.query_id, reference])
    slides = last - first + 1
    written = con.execute("SELECT count(*) FROM slide_metrics WHERE run_id = ? AND query_id = ? AND slide BETWEEN ? AND ?",
                          [run_id, progress.query_id, first, last]).fetchone()[0]
    if written != slides * len({label for label, _, _ in progress.tasks}):
        raise RuntimeError(f"query {progress.query_id}: slides {first}..{last} staged {written} metric rows, "
                           f"expected {slides} per algorithm")
    kept = markers[-keep_snapshots:]
    for label, shard, directory in progress.tasks:
        for marker in kept:
            slide = marker["slide"]
            end = progress.origin + (slide + 1) * progress.slide
            meta = json.loads((directory / part_name("done", slide, "json")).read_text())
            con.execute("""
                INSERT INTO snapshots (run_id, query_id, algorithm, shard, slide, last_seq, format_version, state,
                                       checksum, created_at)
                SELECT ?, ?, ?, ?, ?, ?, ?, content, ?, ? FROM read_text(?)""",
                        [run_id, progress.query_id, label, shard, slide, progress.last_seq(end),
                         meta["format_version"], meta["checksum"], created_at,
                         str(directory / part_name("state", slide, "json"))])
    con.execute("""
        DELETE FROM snapshots WHERE run_id = ? AND query_id = ? AND slide < (
            SELECT min(slide) FROM (SELECT DISTINCT slide FROM snapshots WHERE run_id = ? AND query_id = ?
                                    ORDER BY slide DESC LIMIT ?))""",
                [run_id, progress.query_id, run_id, progress.query_id, keep_snapshots])
    progress.next_slide = last + 1
    progress.loaded_this_run += slides
    progress.answer_rows += answer_rows
    return slides


def staged_parts(directory: Path, kind: str, first: int, last: int) -> list[Path]:
    """A task's ``kind`` parts (``answers`` or ``stats``) whose first slide is in ``first..last``."""
    return [path for path in sorted(directory.glob(f"{kind}-*.parquet"))
            if first <= int(path.stem.split("-")[1]) <= last]


def remove_loaded(progress: QueryLoad, markers: list[dict]) -> None:
    """Delete the staged files of loaded segments (after the commit)."""
    first, last = markers[0]["first_slide"], markers[-1]["slide"]
    for _, _, directory in progress.tasks:
        paths = staged_parts(directory, "answers", first, last) + staged_parts(directory, "stats", first, last)
        for marker in markers:
            paths += [directory / part_name("state", marker["slide"], "json"),
                      directory / part_name("done", marker["slide"], "json")]
        for path in paths:
            try:
                os.remove(path)
            except FileNotFoundError:
                pass


# --- the run's record and the loads of a running replay -------------------------------------------

def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)


def start_run(con, run_id: str, config: ReplayConfig, master: str, *, finished: bool) -> None:
    """Record a new run and its queries (``finished`` when the dataset holds no complete slide)."""
    now = utcnow()
    store.insert_row(con, "runs", {
        "run_id": run_id, "dataset": config.dataset, "config": config.to_dict(), "spark_master": master,
        "shards": config.shards, "started_at": now, "finished_at": now if finished else None,
        "status": "finished" if finished else "running"})
    store.insert_columns(con, "queries", {
        "run_id": [run_id] * len(config.queries),
        "query_id": list(range(len(config.queries))),
        "weights": [list(q.weights) for q in config.queries],
        "k": [q.k for q in config.queries],
        "window": [q.window for q in config.queries],
        "slide": [q.slide for q in config.queries],
        "kind": [q.kind for q in config.queries]})


def resume_run(con, run_id: str, config: ReplayConfig) -> None:
    """A resumed run is ``running`` again, its earlier end and reason cleared.  Its stored config
    becomes the one it resumes with: the work is the same (:meth:`ReplayConfig.same_work`), but
    ``snapshot_every``, ``keep_snapshots`` and the rest of how it runs may have changed, and the
    run goes on with them."""
    con.execute("UPDATE runs SET status = 'running', finished_at = NULL, reason = NULL, config = ? WHERE run_id = ?",
                [store.to_json(config.to_dict()), run_id])


def drop_slides_from(con, run_id: str, query_id: int, slide: int) -> None:
    """Delete the query's answers, metrics and snapshots of ``slide`` and later (to replay them again)."""
    for table in ("answers", "slide_metrics", "snapshots"):
        con.execute(f"DELETE FROM {table} WHERE run_id = ? AND query_id = ? AND slide >= ?", [run_id, query_id, slide])


def mark(db: Path, run_id: str, status: str, reason: str) -> None:
    """Set the run's status (``failed`` or ``interrupted``) and its reason.

    Raises :class:`StoreError` (naming the status and reason it could not record) when the
    database cannot be written.
    """
    try:
        with store.connection(db) as con:
            con.execute("UPDATE runs SET status = ?, reason = ? WHERE run_id = ?", [status, reason, run_id])
    except Exception as error:  # noqa: BLE001 - any failure to record is reported with what was to be recorded
        raise StoreError(f"run {run_id} stopped ({status}: {reason}) but could not be marked {status} in {db}: "
                         f"{store.one_line(error)}") from error


def load_complete(plan: "ReplayPlan", loads: list[QueryLoad], summary: ReplaySummary, *, job_running: bool) -> bool:
    """Load every complete segment not loaded yet, one transaction per query; whether any was.

    While the job runs, its tasks use the same cores (on a local master): a load then takes
    one DuckDB thread, not all.  The last load also marks the run ``finished``.
    """
    pending = [(load, markers) for load in loads if not load.done for markers in [load.markers()] if markers]
    if not pending:
        return False
    began = time.perf_counter()
    config = plan.config
    with store.connection(plan.db) as con:
        register_metrics(con, config.stream)
        if job_running:
            con.execute("SET threads = 1")
        for query_load, markers in pending:
            with store.transaction(con):
                slides = load(con, plan.run_id, query_load, markers, reference=config.reference,
                              keep_snapshots=config.keep_snapshots, created_at=utcnow())
                if all(other.done for other in loads):
                    con.execute("UPDATE runs SET status = 'finished', finished_at = ? WHERE run_id = ?",
                                [utcnow(), plan.run_id])
            remove_loaded(query_load, markers)
            summary.slides_written += slides
            summary.loads += 1
    summary.load_seconds += time.perf_counter() - began
    return True


def summarize(plan: "ReplayPlan", loads: list[QueryLoad], summary: ReplaySummary) -> None:
    """Mean precision, error, candidates and seconds/slide of the slides this replay wrote."""
    summary.answer_rows = sum(query_load.answer_rows for query_load in loads)
    with store.connection(plan.db) as con:
        for query_load, progress in zip(loads, plan.progress):
            rows = con.execute(
                "SELECT algorithm, count(*), avg(precision), avg(error), avg(candidates), avg(seconds) "
                "FROM slide_metrics WHERE run_id = ? AND query_id = ? AND slide >= ? GROUP BY algorithm",
                [plan.run_id, query_load.query_id, progress.next_slide]).fetchall()
            for label, *values in rows:
                summary.totals[(query_load.query_id, label)] = tuple(values)
