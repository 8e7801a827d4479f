"""Planning a replay: the config against its dataset, the run, and where each query resumes.

Everything here runs on the driver before Spark starts, and writes nothing but what a killed
ingest left (:func:`pipelines.publish.recover`).  Call :func:`prepare` holding the database's
writer lock (:mod:`pipelines.locks`): the rows and the snapshots it reads must stay as they are
until the replay's last load.

A query resumes from the latest slide at which every one of its tasks holds a snapshot (the
same ``last_seq``, restorable as the algorithm and parameters of the config, the reference's
window the dataset's rows) and every algorithm its metrics up to it; slide ``j``
(counted from the start of the dataset) ends at ``origin + (j + 1) * s``, ``origin`` being 0
for count windows and the slide boundary at or before the first ``t`` for time windows, as
:func:`engine.slides` cuts them.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

import engine
from engine import Query
from engine.ranking import score
from engine.stream import (MAX_SLIDES, SCORE_SAFE, first_overflow, may_overflow, time_margin, time_range_problem,
                           too_many_slides, weighted_sum_limit)

from . import publish, store
from .errors import InputError
from .replay_config import (SEGMENT_ROWS, SHARED, AlgorithmSpec, ReplayConfig, check_run_name, parse_config,
                            read_config)
from .replay_multi import RestoredMember, check_shared_state, group_of, slide_cut, state_position
from .replay_tasks import (ATTRIBUTE_COLUMNS, check_columns, feature_magnitudes, id_shard, is_attribute_dataset,
                          read_rows)


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
    """Where one query of a run stands: the next slide to replay and every task's state."""

    query_id: int
    query: Query
    origin: int
    next_slide: int
    total_slides: int
    segment_slides: int
    states: dict[tuple[str, int], str | None]
    """``(algorithm label, shard) -> snapshot`` (JSON text), ``None`` for a task starting afresh."""
    first_row: int = 0
    """``seq`` of the first row of ``next_slide``."""
    replaced_slides: int = 0
    """Slides from ``next_slide`` on whose results are stored already (their snapshot was deleted):
    deleted before the job, then replayed again."""

    @property
    def remaining(self) -> int:
        return self.total_slides - self.next_slide


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

    def describe(self) -> list[str]:
        """What the replay will do: the run, then (resuming) where each query continues, by task."""
        config, dataset = self.config, self.dataset
        if self.up_to_date:
            head = f"[replay] run {self.run_id} is up to date with dataset {dataset.name}: nothing new to replay"
        else:
            head = (f"[replay] {'resuming' if self.resumed else 'starting'} run {self.run_id}: dataset "
                    f"{dataset.name} ({dataset.rows:,} rows), {len(config.queries)} "
                    f"quer{'y' if len(config.queries) == 1 else 'ies'} x {len(config.algorithms)} algorithms x "
                    f"{config.shards} shard(s), {self.remaining:,} slides to replay")
        if not self.resumed:
            return [head]
        tasks = ", ".join(spec.label for spec in config.algorithms)
        shards = "shard 0" if config.shards == 1 else f"shards 0-{config.shards - 1}"
        lines = [head]
        for p in self.progress:
            where = (f"from their snapshots at slide {p.next_slide - 1:,} (rows up to seq {p.first_row - 1:,})"
                     if p.next_slide else "from the start (no snapshot yet)")
            todo = (f"slides {p.next_slide:,}-{p.total_slides - 1:,} from seq {p.first_row:,}" if p.remaining
                    else "nothing new")
            lines.append(f"[replay]   query {p.query_id}: {tasks} ({shards}) continue {where}: {todo}")
            if p.replaced_slides:
                lines.append(f"[replay]   query {p.query_id}: the stored results of slides {p.next_slide:,}-"
                             f"{p.next_slide + p.replaced_slides - 1:,} miss slides or a snapshot of every task "
                             "after them (deleted?): they are deleted and replayed again")
        return lines


def staging_directory(db: Path, run_id: str) -> Path:
    """``<db dir>/<db file name>.staging/<run>``: per database file and run, so none collide."""
    db = Path(db).resolve()
    return db.parent / f"{db.name}.staging" / run_id


def prepare(config_path: Path, *, db: Path = store.DEFAULT_DB, resume: bool = False,
            run_id: str | None = None, max_slides: int = MAX_SLIDES, lock_wait: float | None = None,
            log: Callable[[str], None] = print) -> ReplayPlan:
    """Validate the config against its dataset and find where the run starts (no Spark; hold the
    writer lock).  A time query whose slides outnumber both the rows and ``max_slides`` is refused.
    ``lock_wait`` bounds the wait for an ingest publishing beside the dataset (:func:`load_dataset`)."""
    raw = read_config(config_path)
    if run_id is not None:
        check_run_name(run_id, "--run-id")
    dataset = load_dataset(db, raw["dataset"], lock_wait=lock_wait, log=log)
    config = parse_config(raw, dataset.features, dataset.stream)
    check_time_range(dataset, config.queries)
    check_slide_count(dataset, config.queries, max_slides)
    check_rows(dataset, config.queries)
    with store.connection(db) as con:
        previous = find_run(con, config, run_id) if resume else None
        if previous is None:
            run_id = run_id or new_run_id(con, config.name)
            if con.execute("SELECT 1 FROM runs WHERE run_id = ?", [run_id]).fetchone():
                raise InputError(f"run {run_id} exists already; use --resume to continue it")
        progress = query_progress(con, config, dataset, previous)
    return ReplayPlan(config=config, dataset=dataset, db=Path(db), run_id=previous or run_id,
                      resumed=previous is not None, progress=progress)


def require_database(db: Path) -> None:
    """Refuse a ``db`` that is not a file: a replay reads its dataset there, so it creates nothing."""
    if not Path(db).is_file():
        raise InputError(f"no database {db}; run python -m pipelines.ingest first")


def load_dataset(db: Path, name: str, *, lock_wait: float | None = None,
                 log: Callable[[str], None] = print) -> Dataset:
    """The dataset ``name`` recorded in ``db``, with its times (in ``seq`` order) read from its Parquet.

    What a killed ingest of it left is settled first (:func:`pipelines.publish.settle`, holding
    the dataset directory's lock at most ``lock_wait`` seconds): an ingest into another database
    file may be publishing there, and the settling removes the journal's temporary file that it
    is writing.
    """
    require_database(db)
    with store.connection(db) as con:
        found = con.execute("SELECT parquet, features FROM datasets WHERE name = ?", [name]).fetchone()
    if found is None:
        raise InputError(f"no dataset {name!r} in {db}; run python -m pipelines.ingest first")
    parquet, features = found
    publish.settle(parquet, Path(db), name, wait=lock_wait, log=lambda line: log(f"[replay] {line}"))
    try:
        attribute = is_attribute_dataset(parquet)
        check_columns(parquet, ("id", "seq", "t", *(ATTRIBUTE_COLUMNS if attribute else store.from_json(features))))
        chunks = [chunk["t"] for chunk in read_rows(parquet, ("t",), chunk_rows=1 << 22)]
    except (OSError, ValueError) as error:
        raise InputError(f"dataset {name!r}: cannot read {parquet} ({error})") from None
    t = np.concatenate(chunks) if chunks else np.empty(0, np.int64)
    return Dataset(name=name, parquet=str(parquet), features=tuple(store.from_json(features)), t=t,
                   attribute=attribute)


def check_time_range(dataset: Dataset, queries: tuple[Query, ...]) -> None:
    """Refuse a dataset whose times come within a time query's window + slide of the int64
    limits (:func:`engine.stream.time_range_problem`, ``O(queries)``)."""
    margin = time_margin(queries)
    problem = None if margin is None else time_range_problem(dataset.t, margin)
    if problem is not None:
        raise InputError(f"dataset {dataset.name!r}, row seq {problem[0]}: {problem[1]}")


def check_slide_count(dataset: Dataset, queries: tuple[Query, ...], limit: int) -> None:
    """Refuse a time query whose slides outnumber both the rows and ``limit`` (a gap in the
    times; :func:`engine.stream.too_many_slides`), naming the row after the widest gap."""
    excess = too_many_slides(dataset.t, queries, limit)
    if excess is not None:
        position, row, problem = excess
        raise InputError(f"dataset {dataset.name!r}, row seq {row}: query {position}: {problem}")


def check_rows(dataset: Dataset, queries: tuple[Query, ...]) -> None:
    """Refuse, before any task runs, a dataset holding a row the engine refuses, else a config one
    of whose queries may score some row as infinity, naming the first such row.

    One pass over the stream and value (or feature) columns (``O(n d)``) does both checks
    (:class:`RowValues`, then :class:`ScoreOverflow` or :class:`AttributeOverflow`); a row the
    engine refuses is reported first, wherever it is.
    """
    overflow = (AttributeOverflow if dataset.attribute else ScoreOverflow)(dataset, queries)
    values = RowValues(dataset)
    for chunk in read_rows(dataset.parquet, values.columns, chunk_rows=1 << 22):
        read = values.check(chunk)
        overflow.add(chunk, read)
    overflow.refuse()


class RowValues:
    """Refuses a row the engine refuses (its stream and value outside ``0..streams - 1`` and
    ``[0, 1]``, or a feature that is not a finite number: a dataset written or edited by hand, the
    ingest admits neither), naming it: a task would fail on it after Spark started, naming the row
    by its place in the task's chunk."""

    def __init__(self, dataset: Dataset) -> None:
        self.dataset = dataset
        self.columns = ("id", *ATTRIBUTE_COLUMNS) if dataset.attribute else ("id", *dataset.features)

    def check(self, chunk: dict[str, np.ndarray]) -> tuple[np.ndarray, ...]:
        """The chunk's ``(stream, value)`` (attribute streams) or ``(x,)`` as float64; raises on a bad row."""
        dataset = self.dataset
        streams = len(dataset.features)
        if dataset.attribute:
            stream, value = chunk["stream"], chunk["value"].astype(np.float64)
            bad = (stream < 0) | (stream >= streams) | ~((value >= 0.0) & (value <= 1.0))
            read = (stream, value)
        else:
            x = np.column_stack([chunk[name] for name in dataset.features]).astype(np.float64)
            bad = ~np.isfinite(x).all(axis=1)
            read = (x,)
        if not bad.any():
            return read
        row = int(np.argmax(bad))
        if not dataset.attribute:
            name = dataset.features[int(np.argmin(np.isfinite(x[row])))]
            problem = f"feature {name} is {float(chunk[name][row])!r}, not a finite number"
        elif not 0 <= stream[row] < streams:
            problem = f"stream {int(stream[row])} is not one of its {streams} streams (0..{streams - 1})"
        else:
            problem = f"value {float(value[row])!r} is outside [0, 1]"
        raise InputError(f"dataset {dataset.name!r}, row seq {int(chunk['seq'][row])} (id {int(chunk['id'][row])}): "
                         f"{problem}, which the engine refuses; ingest the data again")


class ScoreOverflow:
    """Finds the first row some query scores as infinity (finite features times the weights can
    exceed ``1.8e308``): the row of least ``seq``, the query of least index there.

    Nothing to do (``O(row groups)`` from the Parquet statistics) when no query may overflow
    (:func:`engine.stream.may_overflow`); otherwise every chunk read is checked
    (:func:`engine.stream.first_overflow`)."""

    def __init__(self, dataset: Dataset, queries: tuple[Query, ...]) -> None:
        self.dataset = dataset
        largest = feature_magnitudes(dataset.parquet, dataset.features)
        self.risky = [(index, query) for index, query in enumerate(queries) if may_overflow(query.weights, largest)]
        self.found: str | None = None

    def add(self, chunk: dict[str, np.ndarray], read: tuple[np.ndarray, ...]) -> None:
        if self.found is not None or not self.risky:
            return
        (x,) = read
        chunk_largest = np.abs(x).max(axis=0, initial=0.0)
        first = min(((row, index, query) for index, query in self.risky
                     for row in [first_overflow(x, query.weights, chunk_largest)] if row is not None),
                    key=lambda found: found[:2], default=None)
        if first is not None:
            row, index, query = first
            dataset = self.dataset
            self.found = (f"dataset {dataset.name!r}, row seq {int(chunk['seq'][row])} (id {int(chunk['id'][row])}): "
                          f"query {index}'s score x · w overflows to infinity with weights {list(query.weights)} "
                          f"over {', '.join(dataset.features)}; scale the features or the weights down")

    def refuse(self) -> None:
        if self.found is not None:
            raise InputError(self.found)


class AttributeOverflow:
    """Finds an object of an attribute dataset whose score a query may score as infinity, naming
    its first row (a task's :func:`engine.slides` would raise on the rows it cuts, or, when the
    rows summed in a window are split between the rows replayed before and after a ``--resume``,
    store ``inf`` scores).

    An object's score in a window is its values in each stream summed over the window's rows,
    weighted; the bound checked is :func:`engine.stream.attribute_overflow`'s over every row of
    the dataset: ``Σ w[stream] · value`` over all of the object's rows (weights are ``>= 0`` in
    this family), which bounds the object's score in every window, and the bound of every
    task's rows, so that no task refuses what the plan let through.  Nothing to do (``O(1)``
    from the Parquet statistics) when the weights times the rows cannot come near the largest
    float; otherwise a running bound per object over the chunks read.
    """

    def __init__(self, dataset: Dataset, queries: tuple[Query, ...]) -> None:
        self.dataset = dataset
        largest = float(feature_magnitudes(dataset.parquet, ("value",))[0])
        self.risky = [(index, query) for index, query in enumerate(queries)
                      if not max(map(abs, query.weights)) * largest * dataset.rows < SCORE_SAFE]
        self.objects = {index: np.empty(0, np.int64) for index, _ in self.risky}
        self.bounds = {index: np.empty(0) for index, _ in self.risky}
        self.first_seq = {index: np.empty(0, np.int64) for index, _ in self.risky}

    def add(self, chunk: dict[str, np.ndarray], read: tuple[np.ndarray, ...]) -> None:
        if not self.risky:
            return
        stream, value = read[0].astype(np.int64), read[1]
        for index, query in self.risky:
            weights = np.asarray(query.weights, np.float64)
            known = (stream >= 0) & (stream < len(weights))  # other streams are the tasks' to refuse
            with np.errstate(over="ignore", invalid="ignore"):
                weighted = np.where(known, weights[np.where(known, stream, 0)] * value, 0.0)
            ids, first, inverse = np.unique(np.concatenate([self.objects[index], chunk["id"]]), return_index=True,
                                            return_inverse=True)
            with np.errstate(over="ignore", invalid="ignore"):
                self.bounds[index] = np.bincount(inverse.reshape(-1),
                                                 weights=np.concatenate([self.bounds[index], weighted]))
            self.first_seq[index] = np.concatenate([self.first_seq[index], chunk["seq"]])[first]
            self.objects[index] = ids

    def refuse(self) -> None:
        if not self.risky:
            return
        dataset = self.dataset
        limit = weighted_sum_limit(dataset.rows, max(len(query.weights) for _, query in self.risky))
        for index, query in self.risky:
            overflowing = np.flatnonzero(~(self.bounds[index] < limit))
            if len(overflowing):
                culprit = overflowing[np.argmin(self.first_seq[index][overflowing])]
                bound = float(self.bounds[index][culprit])
                raise InputError(f"dataset {dataset.name!r}, row seq {int(self.first_seq[index][culprit])} "
                                 f"(id {int(self.objects[index][culprit])}): query {index}'s weights "
                                 f"{list(query.weights)} times the object's values add up to {bound} over its rows, "
                                 f"{'beyond' if np.isinf(bound) else 'within rounding of'} the largest float, "
                                 "so its score in a window may overflow; scale the weights down")


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


def query_progress(con, config: ReplayConfig, dataset: Dataset, resumed_run: str | None) -> list[QueryProgress]:
    """Every query's progress: from the start, or from the resumed run's snapshots.

    A query of a resumed run continues after the latest slide at which every one of its tasks
    holds a snapshot and up to which every algorithm has the metrics of every slide stored.
    Results stored after that slide (a later snapshot, or some earlier slides, deleted by hand)
    are counted in ``replaced_slides``: the job deletes them and replays them again, as a run
    killed right after that snapshot would.
    """
    held: dict[int, dict[tuple[str, int], dict[int, int]]] = {}  # query -> task -> {slide: last_seq}
    if resumed_run:
        for query_id, label, shard, slide, last_seq in con.execute(
                "SELECT query_id, algorithm, shard, slide, last_seq FROM snapshots WHERE run_id = ?",
                [resumed_run]).fetchall():
            held.setdefault(query_id, {}).setdefault((label, shard), {})[slide] = last_seq
    specs = {spec.label: spec for spec in config.algorithms}
    progress = []
    for query_id, query in enumerate(config.queries):
        origin, total = slide_range(query, dataset.t)
        keys = [(spec.label, shard) for spec in config.algorithms for shard in range(config.shards)]
        snapshots = held.get(query_id, {})
        common = set.intersection(*(set(snapshots.get(key, ())) for key in keys))
        if common:
            complete = complete_slides(con, resumed_run, query_id, [spec.label for spec in config.algorithms])
            common = {slide for slide in common if slide < complete}
        next_slide, states = 0, {key: None for key in keys}
        if common:
            slide = max(common)
            next_slide = slide + 1
            expected_last_seq = last_seq_before(query, dataset.t, origin + next_slide * query.slide)
            if any(snapshots[key][slide] != expected_last_seq for key in keys) or next_slide > total:
                raise InputError(f"run {resumed_run}: dataset {dataset.name} no longer holds the rows its "
                                 "snapshots were taken over (was it re-ingested?); start a new run")
            states.update({(label, shard): state for label, shard, state in con.execute(
                "SELECT algorithm, shard, state FROM snapshots WHERE run_id = ? AND query_id = ? AND slide = ?",
                [resumed_run, query_id, slide]).fetchall() if (label, shard) in states})
            windows, restored_tasks = {}, {}
            for (label, shard), state in states.items():
                where = f"run {resumed_run}: snapshot of query {query_id}, {label}, shard {shard}"
                if specs[label].name == SHARED:
                    group = group_of(config.queries, query_id)
                    executor = check_shared_state(state, [config.queries[i] for i in group], where)
                    if state_position(state) != slide_cut(query, origin, slide, dataset.t):
                        raise stale_snapshot(resumed_run, query_id, label, [shard], slide)
                    restored_tasks.setdefault(label, {})[shard] = RestoredMember(executor, group.index(query_id))
                else:
                    restored = check_state(state, query, specs[label], where)
                    restored_tasks.setdefault(label, {})[shard] = restored
                    if label == config.reference:
                        windows[shard] = restored
            check_rows_unchanged(con, resumed_run, query_id, query, config.reference, dataset, origin, next_slide - 1,
                                 windows, config.shards)
            check_restored_answers(con, resumed_run, query_id, query, slide, restored_tasks, config.reference,
                                   dataset.attribute)
        last_stored = last_stored_slide(con, resumed_run, query_id) if resumed_run else -1
        if last_stored >= total:
            raise InputError(f"run {resumed_run}: query {query_id} has results up to slide {last_stored:,} but dataset "
                             f"{dataset.name} now holds {total:,} slides of it (was it re-ingested?); start a new run")
        segment_slides = config.snapshot_every or max(1, -(-SEGMENT_ROWS * total // max(dataset.rows, 1)))
        first_row = last_seq_before(query, dataset.t, origin + next_slide * query.slide) + 1
        progress.append(QueryProgress(query_id=query_id, query=query, origin=origin, next_slide=next_slide,
                                      total_slides=total, segment_slides=segment_slides, states=states,
                                      first_row=first_row, replaced_slides=max(0, last_stored + 1 - next_slide)))
    return progress


def complete_slides(con, run_id: str, query_id: int, labels: list[str]) -> int:
    """How many slides from slide 0 on have their metrics stored for every algorithm of ``labels``
    (a slide deleted by hand ends the count)."""
    first_missing = dict(con.execute(
        "SELECT algorithm, coalesce(min(position) FILTER (WHERE slide <> position), count(*)) FROM ("
        "SELECT algorithm, slide, row_number() OVER (PARTITION BY algorithm ORDER BY slide) - 1 AS position "
        "FROM slide_metrics WHERE run_id = ? AND query_id = ?) GROUP BY algorithm", [run_id, query_id]).fetchall())
    return min(first_missing.get(label, 0) for label in labels)


def last_stored_slide(con, run_id: str, query_id: int) -> int:
    """The last slide of the query with an answer, metrics or a snapshot stored (-1 when none is)."""
    return con.execute(
        "SELECT coalesce(max(slide), -1) FROM (SELECT slide FROM answers WHERE run_id = $1 AND query_id = $2 "
        "UNION ALL SELECT slide FROM slide_metrics WHERE run_id = $1 AND query_id = $2 "
        "UNION ALL SELECT slide FROM snapshots WHERE run_id = $1 AND query_id = $2)", [run_id, query_id]).fetchone()[0]


def check_rows_unchanged(con, run_id: str, query_id: int, query: Query, reference: str, dataset: Dataset,
                         origin: int, slide: int, windows: dict[int, engine.Algorithm] | None = None,
                         shards: int = 1) -> None:
    """Refuse to resume over a dataset that no longer holds the rows the snapshots covered.

    A count window's boundaries do not depend on the rows, so a dataset ingested again under
    its name (other rows, as many or more) would pass the ``last_seq`` check and be continued
    silently. The reference's stored answer at the snapshots' slide must therefore still be
    the dataset's: each of its objects among the rows of that slide's window, scoring as stored.
    ``windows`` (the reference's restored snapshot per shard: ``oracle`` or ``oracle-incomplete``,
    both of which hold their whole window) must moreover hold exactly the dataset's rows of that
    window and shard (:func:`window_rows`): a row changed, added or removed inside the window,
    even one outside the answer, or moved in time, would make the continued answers differ from
    a run over the dataset (``O(window · d)``).
    """
    answer = con.execute("SELECT object_id, score FROM answers WHERE run_id = ? AND query_id = ? AND algorithm = ? "
                         "AND slide = ? ORDER BY rank", [run_id, query_id, reference, slide]).fetchall()
    if not answer and not windows:
        return
    end = origin + (slide + 1) * query.slide
    if query.kind == "count":
        first, stop = max(0, end - query.window), end
    else:
        first = int(np.searchsorted(dataset.t, end - query.window - 1, side="left"))  # a row more each side:
        stop = int(np.searchsorted(dataset.t, end, side="right"))                    # a superset is enough
    columns = ("id", "t", *ATTRIBUTE_COLUMNS) if dataset.attribute else ("id", "t", *dataset.features)
    scores: dict[int, float] = {}
    pieces: list[dict[str, np.ndarray]] = []  # the rows inside the window, as window_rows gives them
    for chunk in read_rows(dataset.parquet, columns, first_row=first):
        inside = chunk["seq"] < stop
        rows = {"seq": chunk["seq"][inside], "id": chunk["id"][inside], "t": chunk["t"][inside]}
        if dataset.attribute:
            rows.update(stream=chunk["stream"][inside], value=chunk["value"][inside].astype(np.float64))
            scores.update(zip(rows["id"].tolist(), [0.0] * len(rows["id"])))
        else:
            rows["score"] = score(np.column_stack([chunk[name][inside] for name in dataset.features])
                                  .astype(np.float64), query.weights)
            scores.update(zip(rows["id"].tolist(), rows["score"].tolist()))
        kept = (rows["seq"] >= end - query.window) if query.kind == "count" else \
            (rows["t"] >= end - query.window) & (rows["t"] < end)
        pieces.append({name: values[kept] for name, values in rows.items()})
        if not inside.all():
            break
    for object_id, stored in answer:
        found = scores.get(object_id)
        if found is None or not (dataset.attribute or np.isclose(found, stored, rtol=1e-12, atol=0.0)):
            _refuse_changed_rows(run_id, dataset, f"object {object_id} of query {query_id}'s answer at slide {slide} "
                                                  "is not in that slide's window, or scores otherwise")
    if not windows:
        return
    names = ("seq", "id", "t", *ATTRIBUTE_COLUMNS) if dataset.attribute else ("seq", "id", "t", "score")
    window = {name: np.concatenate([piece[name] for piece in pieces] or [np.empty(0, np.int64)]) for name in names}
    in_shard = window["seq"] % shards if not dataset.attribute else id_shard(window["id"], shards)
    for shard, reference_state in sorted(windows.items()):
        held = window_rows(reference_state, query, dataset.attribute)
        mine = {name: values[in_shard == shard] for name, values in window.items()}
        differing = first_difference(held, mine)
        if differing is not None:
            _refuse_changed_rows(run_id, dataset, f"the window of query {query_id} at slide {slide} (shard {shard}) "
                                                  f"holds other rows than the reference's snapshot of it, "
                                                  f"from row seq {differing} on")


def check_restored_answers(con, run_id: str, query_id: int, query: Query, slide: int,
                           restored: dict[str, dict[int, engine.Algorithm]], reference: str, attribute: bool) -> None:
    """Refuse a snapshot whose state is not the one its task held at its slide (an older state of
    the same task copied over it, say: it restores, but the task would continue from the wrong
    slide and store wrong answers from then on).

    Every restored task's answer (``topk()``), merged across shards as the load merges them
    (:func:`merged_answer`), must be the answer stored for the algorithm at that slide: the
    same ids and the same scores, in rank order.  This holds for exact and approximate
    algorithms alike, since a snapshot is taken right after the answer of its slide is stored
    and restores the whole state.  The merge hides a stale shard whose answer ranks below the
    other shards', so an exact algorithm whose stored answer is the reference's must moreover
    give, in every shard, the restored reference's answer of that shard.

    ``restored`` maps each algorithm label to its restored task per shard; the reference's
    (whose windows :func:`check_rows_unchanged` checked) tells which shard is wrong.  One
    ``topk()`` per task, ``O(shards · k)`` per algorithm, and one query of the stored answers.
    """
    stored: dict[str, tuple[list[int], list[float]]] = {label: ([], []) for label in restored}
    for label, object_id, score in con.execute(
            "SELECT algorithm, object_id, score FROM answers WHERE run_id = ? AND query_id = ? AND slide = ? "
            "ORDER BY algorithm, rank", [run_id, query_id, slide]).fetchall():
        if label in stored:
            stored[label][0].append(object_id)
            stored[label][1].append(score)
    answers = {label: {shard: algorithm.topk() for shard, algorithm in sorted(tasks.items())}
               for label, tasks in restored.items()}
    for label, tasks in sorted(restored.items()):
        ids, scores = merged_answer(answers[label], query.k)
        if not (np.array_equal(ids, stored[label][0]) and np.array_equal(scores, stored[label][1])):
            wrong = wrong_shards(answers[label], stored[label], restored[reference], query, attribute)
        elif next(iter(tasks.values())).exact and stored[label] == stored[reference]:
            wrong = [shard for shard, answer in answers[label].items()
                     if not same_answer(answer, answers[reference][shard])]
        else:
            wrong = []
        if wrong:
            raise stale_snapshot(run_id, query_id, label, wrong, slide)


def stale_snapshot(run_id: str, query_id: int, label: str, wrong: list[int], slide: int) -> InputError:
    """The refusal of snapshots (of the ``wrong`` shards) that do not hold their task's state at ``slide``."""
    shards = f"shard {wrong[0]}" if len(wrong) == 1 else f"shards {', '.join(map(str, wrong))}"
    return InputError(f"run {run_id}: the snapshot of query {query_id}, {label}, {shards} at slide {slide} "
                      f"does not give the answer stored for that slide (an older state copied over it?); "
                      f"delete the snapshots of that slide (DELETE FROM snapshots WHERE run_id = '{run_id}' "
                      f"AND query_id = {query_id} AND slide = {slide}) to resume from the one before, "
                      "or start a new run")


def wrong_shards(answers: dict[int, engine.Answer], stored: tuple[list[int], list[float]],
                 reference: dict[int, engine.Algorithm], query: Query, attribute: bool) -> list[int]:
    """The shards whose restored answer cannot be theirs at the slide of the ``stored`` (merged)
    answer: one lacks a stored object of its shard, or holds an object the stored answer lacks
    though it scores above the stored answer's last (every shard, when none is evidently wrong).

    A stored object's shard is the hash of its id (attribute streams), else the shard whose
    reference window holds a row of that id and score."""
    entries = list(zip(*stored))
    expected = set(entries)
    if attribute:
        shard_of = dict(zip(entries, id_shard(np.asarray(stored[0], np.int64), len(answers)).tolist()))
    else:
        shard_of = {}
        for shard, algorithm in reference.items():
            rows = window_rows(algorithm, query, attribute=False)
            shard_of.update({entry: shard for entry in zip(rows["id"].tolist(), rows["score"].tolist())
                             if entry in expected})
    lowest = stored[1][-1] if len(entries) == query.k else -np.inf
    wrong = []
    for shard, answer in sorted(answers.items()):
        held = set(zip(np.asarray(answer.ids).tolist(), np.asarray(answer.scores, np.float64).tolist()))
        lacks = any(shard_of.get(entry) == shard and entry not in held for entry in entries)
        extra = any(entry not in expected and entry[1] > lowest for entry in held)
        if lacks or extra:
            wrong.append(shard)
    return wrong or sorted(answers)


def same_answer(answer: engine.Answer, other: engine.Answer) -> bool:
    """The same ids and scores, in rank order."""
    return np.array_equal(answer.ids, other.ids) and np.array_equal(answer.scores, other.scores)


def merged_answer(answers: dict[int, engine.Answer], k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(ids, scores)`` of the top ``k`` of the shards' answers by the engine's
    total order, score then ``seq`` descending, as :func:`pipelines.replay_load.load` ranks them."""
    ids = np.concatenate([np.asarray(answer.ids, np.int64) for answer in answers.values()])
    scores = np.concatenate([np.asarray(answer.scores, np.float64) for answer in answers.values()])
    seq = np.concatenate([np.asarray(answer.seq, np.int64) for answer in answers.values()])
    order = np.lexsort((-seq, -scores))[:k]
    return ids[order], scores[order]


def window_rows(reference: engine.Algorithm, query: Query, attribute: bool) -> dict[str, np.ndarray]:
    """The rows a restored reference holds, in ``seq`` order: ``seq``, ``id``, ``t`` and the
    row's ``score`` under ``query`` (``oracle``) or its ``stream`` and ``value`` (``oracle-incomplete``)."""
    state = reference.dump_state()
    rows = {"seq": np.asarray(state["seq"], np.int64), "id": np.asarray(state["ids"], np.int64),
            "t": np.asarray(state["t"], np.int64)}
    if attribute:
        rows.update(stream=np.asarray(state["stream"], np.int64), value=np.asarray(state["value"], np.float64))
    else:
        rows["score"] = score(np.asarray(state["x"], np.float64).reshape(len(rows["seq"]), query.dimensions),
                              query.weights)
    return rows


def first_difference(held: dict[str, np.ndarray], dataset: dict[str, np.ndarray]) -> int | None:
    """The first ``seq`` at which two sets of window rows (:func:`window_rows`) differ, ``None``
    when they are the same rows: the scores to 12 significant digits, every other column exactly."""
    length = min(len(held["seq"]), len(dataset["seq"]))
    same = np.ones(length, bool)
    for name, values in held.items():
        theirs = dataset[name][:length]
        same &= np.isclose(values[:length], theirs, rtol=1e-12, atol=0.0) if name == "score" else \
            values[:length] == theirs
    if same.all():
        if len(held["seq"]) == len(dataset["seq"]):
            return None
        longer = held if len(held["seq"]) > length else dataset
        return int(longer["seq"][length])
    position = int(np.argmin(same))
    return int(min(held["seq"][position], dataset["seq"][position]))


def _refuse_changed_rows(run_id: str, dataset: Dataset, what: str) -> None:
    raise InputError(f"run {run_id}: dataset {dataset.name} no longer holds the rows its snapshots were taken over "
                     f"({what}); was it ingested again? start a new run")


def check_state(state: str, query: Query, spec: AlgorithmSpec, where: str) -> engine.Algorithm:
    """Restore a snapshot once on the driver, as the task will, so that a bad one stops the run before Spark does."""
    try:
        return engine.restore(json.loads(state), query, algorithm=spec.name, params=spec.params)
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
