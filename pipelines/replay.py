"""Replay a dataset through the engine's algorithms on Spark and store the results in DuckDB.

``python -m pipelines.replay --config pipelines/configs/demo.json [--db var/topk.duckdb]
[--resume] [--run-id ID] [--master URL]``

One Spark job runs one task per (query, algorithm, shard) (:mod:`pipelines.replay_tasks`):
each task replays its whole range in one pass and stages, every segment of slides, its
answers, stats and state as files.  While the job runs, the driver bulk-loads every complete
segment into DuckDB (:mod:`pipelines.replay_load`: the shard merge is a window function,
precision and error come from ``engine.metrics``), one transaction per query and load, so
the snapshots in DuckDB always come with the answers they cover.  A run killed or
interrupted at any point therefore resumes (``--resume``) from its last complete snapshot
over the rows not yet replayed (for instance a day appended by ``pipelines.ingest
--append``), writing nothing when there is nothing new.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import shutil
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np
from pyspark.sql import SparkSession

import engine
from engine import Query

from . import replay_load, store
from .errors import InputError, exit_status
from .replay_config import SEGMENT_ROWS, ReplayConfig, parse_config, read_config
from .replay_load import QueryLoad
from .replay_tasks import ReplayTask, is_attribute_dataset, read_rows, run_partition
from .spark import spark_session

POLL_SECONDS = 0.5
"""How often the driver checks on the job (and a signal) while it runs."""
LOAD_SECONDS = 2.0
"""At most how often the driver loads complete segments while the job runs: each load costs a
connection, a transaction and a checkpoint, and keeps only the last snapshots of its
segments, so loading several segments at once is cheaper than one at a time; loading soon
after a segment completes keeps the load left after the job small."""
PROGRESS_SECONDS = 5.0
"""How often the driver logs progress inside the job."""


class Interrupted(Exception):
    """SIGINT or SIGTERM arrived: the replay stops at its last complete snapshot."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@dataclass(frozen=True)
class Dataset:
    """What the driver needs of a dataset: its Parquet, features (or streams), times, stream model."""

    name: str
    parquet: str
    features: tuple[str, ...]
    t: np.ndarray
    attribute: bool = False

    @property
    def rows(self) -> int:
        return len(self.t)

    @property
    def stream(self) -> str:
        """``incomplete`` for attribute streams, else ``single``."""
        return "incomplete" if self.attribute else "single"


@dataclass
class QueryProgress:
    """Where one query of a run stands: the next slide to replay and every task's state.

    Slide ``j`` (counted from the start of the dataset) ends at ``origin + (j + 1) * s``:
    ``origin`` is 0 for count windows and the slide boundary at or before the first ``t``
    for time windows, as :func:`engine.slides` cuts them.
    """

    query_id: int
    query: Query
    origin: int
    next_slide: int
    total_slides: int
    segment_slides: int
    states: dict[tuple[str, int], str | None]

    @property
    def remaining(self) -> int:
        return self.total_slides - self.next_slide


@dataclass
class ReplaySummary:
    """What a replay did; ``totals`` maps (query, algorithm) to mean precision, error, candidates, ms/slide."""

    run_id: str
    resumed: bool
    slides_written: int = 0
    answer_rows: int = 0
    load_seconds: float = 0.0
    loads: int = 0
    totals: dict[tuple[int, str], tuple[int, float, float, float, float]] = field(default_factory=dict)


@dataclass
class ReplayPlan:
    """Everything decided before Spark starts: config, dataset, run and where each query stands."""

    config: ReplayConfig
    dataset: Dataset
    db: Path
    run_id: str
    resumed: bool
    progress: list[QueryProgress]

    @property
    def remaining(self) -> int:
        """Slides still to replay, over every query."""
        return sum(p.remaining for p in self.progress)

    @property
    def up_to_date(self) -> bool:
        """A resumed run with no new complete slide: there is nothing to do or write."""
        return self.resumed and self.remaining == 0

    @property
    def staging(self) -> Path:
        return staging_directory(self.db, self.run_id)

    def up_to_date_message(self) -> str:
        return f"[replay] run {self.run_id} is up to date with dataset {self.dataset.name}: nothing new to replay"


def staging_directory(db: Path, run_id: str) -> Path:
    """``<db dir>/<db file name>.staging/<run>``: per database file and run, so none collide."""
    db = Path(db).resolve()
    return db.parent / f"{db.name}.staging" / run_id


def lock_path(db: Path, run_id: str) -> Path:
    """``<db dir>/<db file name>.locks/<run>.lock``: two database files never share a lock."""
    db = Path(db).resolve()
    return db.parent / f"{db.name}.locks" / f"{run_id}.lock"


def replay(spark: SparkSession, config_path: Path, *, db: Path = store.DEFAULT_DB, resume: bool = False,
           run_id: str | None = None, log: Callable[[str], None] = print) -> ReplaySummary:
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

    Raises
    ------
    InputError
        Bad config, unknown dataset, a resumed run whose config or dataset changed, or a run
        being replayed by another process.
    """
    return execute(spark, prepare(config_path, db=db, resume=resume, run_id=run_id), log=log)


def prepare(config_path: Path, *, db: Path = store.DEFAULT_DB, resume: bool = False,
            run_id: str | None = None) -> ReplayPlan:
    """Validate the config against its dataset and find where the run starts (no Spark, no write)."""
    raw = read_config(config_path)
    dataset = load_dataset(db, raw["dataset"])
    config = parse_config(raw, dataset.features, dataset.stream)
    with store.connection(db) as con:
        previous = find_run(con, config, run_id) if resume else None
        if previous is None:
            run_id = run_id or new_run_id(con, config.name)
            if con.execute("SELECT 1 FROM runs WHERE run_id = ?", [run_id]).fetchone():
                raise InputError(f"run {run_id} exists already; use --resume to continue it")
        progress = plan(con, config, dataset, previous)
    return ReplayPlan(config=config, dataset=dataset, db=Path(db), run_id=previous or run_id,
                      resumed=previous is not None, progress=progress)


def execute(spark: SparkSession, plan: ReplayPlan, *, log: Callable[[str], None] = print) -> ReplaySummary:
    """Run a prepared replay; a resumed run with nothing new returns at once, writing nothing."""
    config, dataset, db, run_id = plan.config, plan.dataset, plan.db, plan.run_id
    summary = ReplaySummary(run_id=run_id, resumed=plan.resumed)
    remaining = plan.remaining
    if plan.up_to_date:
        log(plan.up_to_date_message())
        return summary
    with exclusive_run(db, run_id):
        with store.connection(db) as con, store.transaction(con):
            if plan.resumed:
                con.execute("UPDATE runs SET status = 'running', finished_at = NULL WHERE run_id = ?", [run_id])
            else:
                start_run(con, run_id, config, spark.sparkContext.master, finished=remaining == 0)
        verb = "resuming" if plan.resumed else "starting"
        log(f"[replay] {verb} run {run_id}: dataset {dataset.name} ({dataset.rows:,} rows), "
            f"{len(config.queries)} quer{'y' if len(config.queries) == 1 else 'ies'} x "
            f"{len(config.algorithms)} algorithms x {config.shards} shard(s), {remaining:,} slides to replay")
        try:
            run_job(spark, plan, summary, log)
        except Interrupted:
            mark(db, run_id, "interrupted")
            raise
        except BaseException:
            mark(db, run_id, "failed")
            raise
    return summary


def mark(db: Path, run_id: str, status: str) -> None:
    """Set the run's status, if the database can be opened at all."""
    with contextlib.suppress(Exception), store.connection(db, wait_seconds=5.0) as con:
        con.execute("UPDATE runs SET status = ? WHERE run_id = ?", [status, run_id])


def load_dataset(db: Path, name: str) -> Dataset:
    """The dataset ``name`` recorded in ``db``, with its times (in ``seq`` order) read from its Parquet."""
    if not Path(db).is_file():
        raise InputError(f"no database {db}; run python -m pipelines.ingest first")
    with store.connection(db) as con:
        found = con.execute("SELECT parquet, features FROM datasets WHERE name = ?", [name]).fetchone()
    if found is None:
        raise InputError(f"no dataset {name!r} in {db}; run python -m pipelines.ingest first")
    parquet, features = found
    try:
        attribute = is_attribute_dataset(parquet)
        chunks = [chunk["t"] for chunk in read_rows(parquet, ("t",), chunk_rows=1 << 22)]
    except (OSError, ValueError) as error:
        raise InputError(f"dataset {name!r}: cannot read {parquet} ({error})") from None
    t = np.concatenate(chunks) if chunks else np.empty(0, np.int64)
    return Dataset(name=name, parquet=str(parquet), features=tuple(store.from_json(features)), t=t,
                   attribute=attribute)


def find_run(con, config: ReplayConfig, run_id: str | None) -> str | None:
    """The run to resume: ``run_id`` if it exists, else the latest run of this config name."""
    if run_id:
        found = con.execute("SELECT run_id, config FROM runs WHERE run_id = ?", [run_id]).fetchone()
    else:
        found = con.execute(
            "SELECT run_id, config FROM runs WHERE dataset = ? AND json_extract_string(config, '$.name') = ? "
            "ORDER BY started_at DESC LIMIT 1", [config.dataset, config.name]).fetchone()
    if found is None:
        return None
    if not config.same_work(store.from_json(found[1])):
        raise InputError(f"run {found[0]} was started with other queries, algorithms, shards or dataset; "
                         "start a new run (without --resume) or restore its config")
    return found[0]


def new_run_id(con, name: str) -> str:
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    run_id, attempt = f"{name}-{stamp}", 1
    while con.execute("SELECT 1 FROM runs WHERE run_id = ?", [run_id]).fetchone():
        attempt += 1
        run_id = f"{name}-{stamp}-{attempt}"
    return run_id


def plan(con, config: ReplayConfig, dataset: Dataset, resumed_run: str | None) -> list[QueryProgress]:
    """Every query's progress: from the start, or from the resumed run's latest snapshots."""
    snapshots = {}
    if resumed_run:
        rows = con.execute(
            "SELECT query_id, algorithm, shard, slide, last_seq, state FROM snapshots WHERE run_id = ? "
            "QUALIFY row_number() OVER (PARTITION BY query_id, algorithm, shard ORDER BY slide DESC) = 1",
            [resumed_run]).fetchall()
        snapshots = {(q, label, shard): (slide, last_seq, state) for q, label, shard, slide, last_seq, state in rows}
    progress = []
    for query_id, query in enumerate(config.queries):
        origin, total = slide_range(query, dataset.t)
        keys = [(spec.label, shard) for spec in config.algorithms for shard in range(config.shards)]
        found = {key: snapshots[(query_id, *key)] for key in keys if (query_id, *key) in snapshots}
        next_slide, states = 0, {key: None for key in keys}
        if found:
            slides = {slide for slide, _, _ in found.values()}
            if len(found) != len(keys) or len(slides) != 1:
                raise InputError(f"run {resumed_run}: the snapshots of query {query_id} disagree; "
                                 "start a new run")
            next_slide = slides.pop() + 1
            expected_last_seq = last_seq_before(query, dataset.t, origin + next_slide * query.slide)
            if any(last_seq != expected_last_seq for _, last_seq, _ in found.values()) or next_slide > total:
                raise InputError(f"run {resumed_run}: dataset {dataset.name} no longer holds the rows its "
                                 "snapshots were taken over (was it re-ingested?); start a new run")
            states = {key: state for key, (_, _, state) in found.items()}
            for (label, shard), state in states.items():
                check_state(state, query, f"run {resumed_run}: snapshot of query {query_id}, {label}, shard {shard}")
        segment_slides = config.snapshot_every or max(1, -(-SEGMENT_ROWS * total // max(dataset.rows, 1)))
        progress.append(QueryProgress(query_id=query_id, query=query, origin=origin, next_slide=next_slide,
                                      total_slides=total, segment_slides=segment_slides, states=states))
    return progress


def check_state(state: str, query: Query, where: str) -> None:
    """Restore a snapshot once on the driver so that a corrupt one stops the run before Spark does."""
    try:
        engine.restore(json.loads(state), query)
    except (ValueError, TypeError) as error:
        raise InputError(f"{where} cannot be restored: {error}") from None


def slide_range(query: Query, t: np.ndarray) -> tuple[int, int]:
    """``(origin, number of complete slides)`` of ``query`` over a dataset with times ``t``.

    Examples
    --------
    >>> q = Query(weights=[1.0], k=1, window=10, slide=5, kind="time")
    >>> slide_range(q, np.array([7, 8, 21]))
    (5, 3)
    >>> slide_range(Query(weights=[1.0], k=1, window=10, slide=5, kind="count"), np.arange(12))
    (0, 2)
    """
    s = query.slide
    if query.kind == "count":
        return 0, len(t) // s
    if len(t) == 0:
        return 0, 0
    origin = int(t[0]) // s * s
    return origin, (int(t[-1]) // s * s - origin) // s


def last_seq_before(query: Query, t: np.ndarray, boundary: int) -> int:
    """``seq`` of the last row before slide boundary ``boundary`` (-1 when there is none)."""
    if query.kind == "count":
        return boundary - 1
    return int(np.searchsorted(t, boundary, side="left")) - 1


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


def replay_tasks(plan: ReplayPlan) -> list[ReplayTask]:
    """One task per (query, algorithm, shard) with slides left, most slides first.

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
        first_row = last_seq_before(p.query, dataset.t, start) + 1
        for index, spec in enumerate(config.algorithms):
            for shard in range(config.shards):
                tasks.append(ReplayTask(
                    query_id=p.query_id, algorithm_index=index, label=spec.label, algorithm=spec.name,
                    params=spec.params, query=p.query.to_dict(), shard=shard, shards=config.shards,
                    shard_by="id" if dataset.attribute else "seq", source=dataset.parquet, columns=columns,
                    attribute=dataset.attribute, first_slide=p.next_slide, first_row=first_row, start=start,
                    slides=p.remaining, segment=p.segment_slides,
                    plugins=config.plugins, staging=str(plan.staging), state=p.states[(spec.label, shard)]))
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
                load_complete(plan, loads, summary, job_running=True)
                last_load = time.perf_counter()
            reporter.maybe_report()
    except BaseException:
        with contextlib.suppress(Exception):
            context.cancelJobGroup(f"replay-{plan.run_id}")
        thread.join(30)
        raise
    while load_complete(plan, loads, summary, job_running=False):
        pass
    if "error" in outcome:
        raise RuntimeError(f"replay task failed: {task_failure(outcome['error'])}") from None
    if not all(load.done for load in loads):
        raise RuntimeError("the replay job ended but some segments were never staged")
    reporter.report()
    shutil.rmtree(plan.staging, ignore_errors=True)
    summarize(plan, loads, summary)


def task_failure(error: BaseException) -> str:
    """The last line of a task's Python exception (Spark wraps it in a Java stack trace)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    python = [line for line in lines if line.split(":")[0].endswith(("Error", "Exception"))
              and not line.startswith(("org.", "py4j", "java."))]
    return python[-1] if python else (lines[0] if lines else type(error).__name__)


def load_complete(plan: ReplayPlan, loads: list[QueryLoad], summary: ReplaySummary, *, job_running: bool) -> bool:
    """Load every complete segment not loaded yet, one transaction per query; whether any was.

    While the job runs, its tasks use the same cores (on a local master): a load then takes
    one DuckDB thread, not all.
    """
    pending = [(load, markers) for load in loads if not load.done for markers in [load.markers()] if markers]
    if not pending:
        return False
    began = time.perf_counter()
    config = plan.config
    with store.connection(plan.db) as con:
        replay_load.register_metrics(con, config.stream)
        if job_running:
            con.execute("SET threads = 1")
        for load, markers in pending:
            with store.transaction(con):
                slides = replay_load.load(con, plan.run_id, load, markers, reference=config.reference,
                                          keep_snapshots=config.keep_snapshots, created_at=utcnow())
                if all(other.done for other in loads):
                    con.execute("UPDATE runs SET status = 'finished', finished_at = ? WHERE run_id = ?",
                                [utcnow(), plan.run_id])
            replay_load.remove_loaded(load, markers)
            summary.slides_written += slides
            summary.loads += 1
    summary.load_seconds += time.perf_counter() - began
    return True


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


def summarize(plan: ReplayPlan, loads: list[QueryLoad], summary: ReplaySummary) -> None:
    """Mean precision, error, candidates and ms/slide of the slides this replay wrote."""
    summary.answer_rows = sum(load.answer_rows for load in loads)
    with store.connection(plan.db) as con:
        for load, progress in zip(loads, plan.progress):
            rows = con.execute(
                "SELECT algorithm, count(*), avg(precision), avg(error), avg(candidates), avg(seconds) "
                "FROM slide_metrics WHERE run_id = ? AND query_id = ? AND slide >= ? GROUP BY algorithm",
                [plan.run_id, load.query_id, progress.next_slide]).fetchall()
            for label, *values in rows:
                summary.totals[(load.query_id, label)] = tuple(values)


@contextlib.contextmanager
def exclusive_run(db: Path, run_id: str) -> Iterator[None]:
    """Hold a lock file per database file and run so that two processes never replay the same run."""
    import fcntl

    path = lock_path(db, run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(f"run {run_id} of {db} is being replayed by another process") from None
        yield


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)


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
        raise Interrupted(signum)

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
    parser.add_argument("--master", help="Spark master (default: $SPARK_MASTER, else local[*])")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    began = time.perf_counter()
    prepared: list[ReplayPlan] = []

    def job() -> int:
        plan = prepare(args.config, db=args.db, resume=args.resume, run_id=args.run_id)
        prepared.append(plan)
        if plan.up_to_date:
            print(plan.up_to_date_message())
            return 0
        with spark_session("topk-replay", args.master, light_jvm=True) as spark, interruptible():
            started = time.perf_counter()
            print(f"[replay] Spark {spark.sparkContext.master} started in {started - began:.1f} s")
            summary = execute(spark, plan)
            replayed = time.perf_counter() - started
        print(format_summary(summary))
        print(f"[replay] done in {time.perf_counter() - began:.1f} s (the replay itself, from Spark ready to the run "
              f"finished in DuckDB: {replayed:.1f} s)")
        return 0

    try:
        with interruptible():
            return exit_status(job)
    except (Interrupted, KeyboardInterrupt) as stop:
        signum = getattr(stop, "signum", signal.SIGINT)
        where = (f"run {prepared[0].run_id} marked interrupted; continue it with --resume" if prepared
                 else "nothing was written")
        print(f"[replay] stopped by {signal.Signals(signum).name}: {where}", file=sys.stderr)
        return 128 + signum


if __name__ == "__main__":
    sys.exit(main())
