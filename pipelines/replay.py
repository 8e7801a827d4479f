"""Replay a dataset through the engine's algorithms on Spark and store the results in DuckDB.

``python -m pipelines.replay --config pipelines/configs/demo.json [--db var/topk.duckdb]
[--resume] [--run-id ID] [--master URL]``

Every (query, algorithm, shard) pair is a Spark task (:mod:`pipelines.replay_tasks`). The
replay advances in segments of ``snapshot_every`` slides: each segment is one Spark job whose
tasks start from the previous segment's state; the driver merges the shards' answers per
slide (top ``k`` of the union), measures every algorithm against the oracle, and writes the
segment's answers, metrics and snapshots in one DuckDB transaction. A run therefore
always stops at a complete snapshot, and ``--resume`` continues from it over the rows not
yet replayed (for instance a day appended by ``pipelines.ingest --append``), writing
nothing when there is nothing new.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import fcntl
import json
import math
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np
import pyarrow.parquet as pq
from pyspark.sql import SparkSession

import engine
from engine import Answer, Query

from engine import metrics

from . import store
from .errors import InputError, exit_status
from .replay_config import SEGMENT_ROWS, ReplayConfig, parse_config, read_config
from .replay_tasks import SegmentResult, SegmentTask, run_segment
from .spark import spark_session


@dataclass(frozen=True)
class Dataset:
    """What the driver needs of a dataset: its file, features, row count and times."""

    name: str
    parquet: str
    features: tuple[str, ...]
    t: np.ndarray

    @property
    def rows(self) -> int:
        return len(self.t)


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
class AlgorithmTotals:
    """Running sums for the end-of-run summary of one (query, algorithm)."""

    slides: int = 0
    precision: float = 0.0
    error: float = 0.0
    candidates: int = 0
    seconds: float = 0.0


@dataclass
class ReplaySummary:
    """What a replay did."""

    run_id: str
    resumed: bool
    slides_written: int = 0
    answer_rows: int = 0
    totals: dict[tuple[int, str], AlgorithmTotals] = field(default_factory=lambda: defaultdict(AlgorithmTotals))


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

    def up_to_date_message(self) -> str:
        return f"[replay] run {self.run_id} is up to date with dataset {self.dataset.name}: nothing new to replay"


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
    """Validate the config against its dataset and find where the run starts (no Spark)."""
    raw = read_config(config_path)
    dataset = load_dataset(db, raw["dataset"])
    config = parse_config(raw, dataset.features)
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
            run_segments(spark, config, dataset, run_id, plan.progress, summary, db, log)
        except BaseException:
            with contextlib.suppress(Exception), store.connection(db) as con:
                con.execute("UPDATE runs SET status = 'failed' WHERE run_id = ?", [run_id])
            raise
    return summary


def load_dataset(db: Path, name: str) -> Dataset:
    """The dataset ``name`` recorded in ``db``, with its times read from its Parquet file."""
    if not Path(db).is_file():
        raise InputError(f"no database {db}; run python -m pipelines.ingest first")
    with store.connection(db) as con:
        found = con.execute("SELECT parquet, features FROM datasets WHERE name = ?", [name]).fetchone()
    if found is None:
        raise InputError(f"no dataset {name!r} in {db}; run python -m pipelines.ingest first")
    parquet, features = found
    try:
        t = pq.read_table(parquet, columns=["t"]).column("t").to_numpy()
    except (OSError, ValueError) as error:
        raise InputError(f"dataset {name!r}: cannot read {parquet} ({error})") from None
    return Dataset(name=name, parquet=parquet, features=tuple(store.from_json(features)), t=t)


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
        segment_slides = config.snapshot_every or max(1, math.ceil(SEGMENT_ROWS * total / max(dataset.rows, 1)))
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


def run_segments(spark: SparkSession, config: ReplayConfig, dataset: Dataset, run_id: str,
                 progress: list[QueryProgress], summary: ReplaySummary, db: Path,
                 log: Callable[[str], None]) -> None:
    """Replay every query to the end of the dataset, one segment (Spark job + transaction) at a time."""
    context = spark.sparkContext
    began = time.perf_counter()
    while any(p.remaining for p in progress):
        segment = [(p, min(p.remaining, p.segment_slides)) for p in progress if p.remaining]
        tasks = [task for p, slides in segment for task in segment_tasks(config, dataset, p, slides)]
        results = {r.key: r for r in context.parallelize(tasks, len(tasks)).map(run_segment).collect()}
        last = all(p.remaining == slides for p, slides in segment)
        with store.connection(db) as con, store.transaction(con):
            for p, slides in segment:
                write_segment(con, config, dataset, run_id, p, slides, results, summary)
            if last:
                con.execute("UPDATE runs SET status = 'finished', finished_at = ? WHERE run_id = ?",
                            [utcnow(), run_id])
        for p, slides in segment:
            p.next_slide += slides
            p.states = {(label, shard): results[(p.query_id, label, shard)].state for label, shard in p.states}
            log(f"[replay] query {p.query_id}: slide {p.next_slide:,}/{p.total_slides:,} "
                f"({100 * p.next_slide / max(p.total_slides, 1):.0f}%) | {time.perf_counter() - began:.1f} s")


def segment_tasks(config: ReplayConfig, dataset: Dataset, progress: QueryProgress, slides: int) -> Iterator[SegmentTask]:
    """The tasks replaying the next ``slides`` slides of one query: one per algorithm and shard."""
    query, s = progress.query, progress.query.slide
    start = progress.origin + progress.next_slide * s
    first_row = last_seq_before(query, dataset.t, start) + 1
    stop_row = last_seq_before(query, dataset.t, start + slides * s) + 1
    if query.kind == "time":
        stop_row += 1
    for spec in config.algorithms:
        for shard in range(config.shards):
            yield SegmentTask(query_id=progress.query_id, label=spec.label, algorithm=spec.name,
                              params=spec.params, query=query.to_dict(), shard=shard, shards=config.shards,
                              parquet=dataset.parquet, features=dataset.features,
                              state=progress.states[(spec.label, shard)], rows=(first_row, stop_row),
                              start=start, slides=slides)


@dataclass(frozen=True)
class MergedSlides:
    """One algorithm's answers and stats over a segment, its shards merged."""

    answers: list[Answer]
    candidates: np.ndarray
    retained: np.ndarray
    bytes: np.ndarray
    seconds: np.ndarray


def merge_shards(results: Sequence[SegmentResult], k: int) -> MergedSlides:
    """Per slide: top ``k`` of the union of the shards' answers; stats summed, time the slowest shard's."""
    per_shard = [split_answers(result) for result in results]
    if len(per_shard) == 1:
        answers = per_shard[0]
    else:
        answers = [Answer.ranked(np.concatenate([a.ids for a in slide]), np.concatenate([a.scores for a in slide]),
                                 np.concatenate([a.seq for a in slide]), k)
                   for slide in zip(*per_shard)]
    return MergedSlides(answers=answers,
                        candidates=sum(r.candidates for r in results), retained=sum(r.retained for r in results),
                        bytes=sum(r.bytes for r in results),
                        seconds=np.max([r.seconds for r in results], axis=0))


def split_answers(result: SegmentResult) -> list[Answer]:
    bounds = np.cumsum(result.counts)[:-1]
    return [Answer(ids, scores, seq) for ids, scores, seq in
            zip(np.split(result.ids, bounds), np.split(result.scores, bounds), np.split(result.seq, bounds))]


def quality(answers: Sequence[Answer], exact: Sequence[Answer]) -> tuple[np.ndarray, np.ndarray]:
    """Per slide: ``engine.metrics`` precision and relative error of ``answers`` against ``exact``."""
    return (np.array([metrics.precision(e, a) for a, e in zip(answers, exact)], np.float64),
            np.array([metrics.relative_error(e, a) for a, e in zip(answers, exact)], np.float64))


def write_segment(con, config: ReplayConfig, dataset: Dataset, run_id: str, progress: QueryProgress,
                  slides: int, results: dict, summary: ReplaySummary) -> None:
    """Insert one query's segment: answers, slide metrics (against the oracle) and snapshots."""
    query_id, k = progress.query_id, progress.query.k
    slide_numbers = np.arange(progress.next_slide, progress.next_slide + slides, dtype=np.int64)
    ends = progress.origin + (slide_numbers + 1) * progress.query.slide
    for spec in config.algorithms:
        for shard in range(config.shards):
            if not np.array_equal(results[(query_id, spec.label, shard)].ends, ends):
                raise RuntimeError(f"task {(query_id, spec.label, shard)} replayed other slides than planned")
    merged = {spec.label: merge_shards([results[(query_id, spec.label, shard)] for shard in range(config.shards)], k)
              for spec in config.algorithms}
    exact = merged[config.reference].answers
    for label, slides_of in merged.items():
        counts = np.array([len(a) for a in slides_of.answers], np.int64)
        offsets = np.repeat(np.cumsum(counts) - counts, counts)
        store.insert_columns(con, "answers", {
            "run_id": [run_id] * int(counts.sum()), "query_id": np.full(counts.sum(), query_id, np.int32),
            "algorithm": [label] * int(counts.sum()),
            "slide": np.repeat(slide_numbers, counts), "end": np.repeat(ends, counts),
            "rank": (np.arange(counts.sum()) - offsets + 1).astype(np.int32),
            "object_id": np.concatenate([a.ids for a in slides_of.answers]),
            "score": np.concatenate([a.scores for a in slides_of.answers])})
        precision, error = quality(slides_of.answers, exact)
        store.insert_columns(con, "slide_metrics", {
            "run_id": [run_id] * slides, "query_id": np.full(slides, query_id, np.int32),
            "algorithm": [label] * slides, "slide": slide_numbers, "end": ends,
            "candidates": slides_of.candidates, "retained": slides_of.retained, "bytes": slides_of.bytes,
            "seconds": slides_of.seconds, "precision": precision, "error": error})
        totals = summary.totals[(query_id, label)]
        totals.slides += slides
        totals.precision += float(precision.sum())
        totals.error += float(error.sum())
        totals.candidates += int(slides_of.candidates.sum())
        totals.seconds += float(slides_of.seconds.sum())
        summary.answer_rows += int(counts.sum())
    summary.slides_written += slides
    last_seq = last_seq_before(progress.query, dataset.t, int(ends[-1]))
    snapshots = [results[(query_id, spec.label, shard)] for spec in config.algorithms for shard in range(config.shards)]
    store.insert_columns(con, "snapshots", {
        "run_id": [run_id] * len(snapshots), "query_id": np.full(len(snapshots), query_id, np.int32),
        "algorithm": [r.key[1] for r in snapshots], "shard": np.array([r.key[2] for r in snapshots], np.int32),
        "slide": np.full(len(snapshots), slide_numbers[-1], np.int64),
        "last_seq": np.full(len(snapshots), last_seq, np.int64),
        "format_version": np.array([r.format_version for r in snapshots], np.int32),
        "state": [r.state for r in snapshots], "checksum": [r.checksum for r in snapshots],
        "created_at": [utcnow()] * len(snapshots)})


@contextlib.contextmanager
def exclusive_run(db: Path, run_id: str) -> Iterator[None]:
    """Hold a per-run lock file so that two processes never replay the same run at once."""
    lock_dir = Path(db).parent / "locks"
    lock_dir.mkdir(parents=True, exist_ok=True)
    with open(lock_dir / f"{run_id}.lock", "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(f"run {run_id} is being replayed by another process") from None
        yield


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)


def format_summary(summary: ReplaySummary) -> str:
    lines = [f"[replay] run {summary.run_id}: {summary.slides_written:,} slides, "
             f"{summary.answer_rows:,} answer rows written"]
    for (query_id, label), totals in sorted(summary.totals.items()):
        n = max(totals.slides, 1)
        lines.append(f"[replay]   query {query_id} {label:<12} precision {totals.precision / n:.4f}  "
                     f"error {totals.error / n:.4g}  candidates {totals.candidates / n:,.1f}  "
                     f"{1000 * totals.seconds / n:.3f} ms/slide")
    return "\n".join(lines)


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

    def job() -> int:
        prepared = prepare(args.config, db=args.db, resume=args.resume, run_id=args.run_id)
        if prepared.up_to_date:
            print(prepared.up_to_date_message())
            return 0
        with spark_session("topk-replay", args.master) as spark:
            summary = execute(spark, prepared)
        print(format_summary(summary))
        print(f"[replay] done in {time.perf_counter() - began:.1f} s")
        return 0

    return exit_status(job)


if __name__ == "__main__":
    sys.exit(main())
