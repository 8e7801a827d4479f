"""The Spark task of a replay: one (query, algorithm, shard) over its whole range, in one pass.

A task starts from the algorithm's JSON state (the last complete snapshot, or a new
algorithm), streams the dataset's rows in ``seq`` order as numpy column chunks straight from
the Parquet files (:func:`read_rows`; a worker keeps a dataset of moderate size decoded for its
next task, :func:`dataset_chunks`), cuts them into the query's slides with
:func:`engine.slides` over the global ``seq`` / ``t``, keeps the rows of its shard, and runs the
algorithm slide after slide to the end of the dataset.  Every ``segment`` slides it writes,
each file atomically (temporary name, then rename), into its staging directory:

1. ``answers-<first slide>.parquet``: the shard's answer (ranked) of every slide of a part of the
   segment (a part holds at most about :data:`PART_ROWS` answer rows);
2. ``stats-<first slide>.parquet``: candidates, retained, bytes, measured bytes, seconds, per
   slide of the same part;
3. ``state-<last slide>.json``: the algorithm's state (``engine`` JSON, with its checksum; restored
   only as the task's algorithm, query and params);
4. ``done-<last slide>.json``: the marker saying 1-3 are complete.

The driver bulk-loads complete segments into DuckDB (:mod:`pipelines.replay_load`) while the
tasks run.  Between markers the task also refreshes ``progress.json`` (slides done so far)
every :data:`PROGRESS_SECONDS`.  Tasks run on the executors and import only the engine,
numpy and pyarrow.
"""

from __future__ import annotations

import importlib
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import engine
from engine import Batch, Query
from engine.cli import column_values
from engine.stream import as_attribute_stream, as_object_stream
from engine.warmup import load_kernels

CHUNK_ROWS = 1 << 16
"""Rows per chunk a task reads at a time (datasets not cached)."""
CACHE_BYTES = 256 * 2 ** 20
"""Largest dataset (decoded columns) a Python worker keeps in memory for the next task."""
PART_ROWS = 100_000
"""Answer rows a task buffers before it writes them as a part of its segment."""
PART_OPTIONS = {"compression": "none", "use_dictionary": ["algorithm"]}
"""Parquet options of the staged parts: files read once, on the same machine or shared storage,
then deleted.  Without compression and dictionaries for the numeric columns (ids, scores and
seq hardly repeat) a 100,000-row part is written in about 7 ms instead of 32 ms."""
PROGRESS_SECONDS = 1.0
"""How often a task refreshes its ``progress.json``."""
ATTRIBUTE_COLUMNS = ("stream", "value")
"""The columns that make a dataset an attribute-stream (incomplete) dataset."""
HASH_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)
"""Fibonacci hashing: object ids that follow a pattern still spread evenly over the shards."""

ANSWER_SCHEMA = pa.schema([("query_id", pa.int32()), ("algorithm", pa.string()), ("shard", pa.int32()),
                           ("slide", pa.int64()), ("end", pa.int64()), ("rank", pa.int32()),
                           ("object_id", pa.int64()), ("score", pa.float64()), ("seq", pa.int64())])
STATS_SCHEMA = pa.schema([("query_id", pa.int32()), ("algorithm", pa.string()), ("shard", pa.int32()),
                          ("slide", pa.int64()), ("end", pa.int64()), ("candidates", pa.int64()),
                          ("retained", pa.int64()), ("bytes", pa.int64()), ("measured_bytes", pa.int64()),
                          ("seconds", pa.float64())])
SLIDE_FIGURES = np.dtype([("slide", np.int64), ("end", np.int64), ("count", np.int64), ("candidates", np.int64),
                          ("retained", np.int64), ("bytes", np.int64), ("measured_bytes", np.int64),
                          ("seconds", np.float64)])
"""What :class:`SegmentWriter` keeps of every slide, in ``add``'s order: the stats part's columns and the answer's length."""


@dataclass(frozen=True)
class ReplayTask:
    """What one task replays: ``slides`` slides from global slide ``first_slide`` on.

    ``first_row`` is the ``seq`` of the first row of that slide and ``start`` its start
    boundary (a ``seq`` for count windows, a time for time windows).  ``shard_by`` is ``seq``
    (object streams: ``seq % shards``) or ``id`` (attribute streams: a hash of the object id
    ``% shards``, so that all attributes of an object meet in one shard).  A segment ends after
    every global slide ``j`` with ``(j + 1) % segment == 0`` and after the last slide.
    """

    query_id: int
    algorithm_index: int
    label: str
    algorithm: str
    params: dict[str, Any]
    query: dict[str, Any]
    shard: int
    shards: int
    shard_by: str
    source: str
    columns: tuple[str, ...]
    attribute: bool
    first_slide: int
    first_row: int
    start: int
    slides: int
    segment: int
    staging: str
    plugins: tuple[str, ...] = ()
    state: str | None = field(default=None, repr=False)

    @property
    def key(self) -> tuple[int, str, int]:
        return self.query_id, self.label, self.shard

    @property
    def directory(self) -> Path:
        """Where this task writes its parts: ``<staging>/q<query>/a<algorithm>/s<shard>``."""
        return task_directory(self.staging, self.query_id, self.algorithm_index, self.shard)

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> "ReplayTask":
        data = json.loads(text)
        data["columns"] = tuple(data["columns"])
        data["plugins"] = tuple(data["plugins"])
        return cls(**data)


def task_directory(staging: str | Path, query_id: int, algorithm_index: int, shard: int) -> Path:
    return Path(staging) / f"q{query_id}" / f"a{algorithm_index}" / f"s{shard}"


def part_name(kind: str, slide: int, suffix: str) -> str:
    """``answers-000000000042.parquet``: zero-padded so that names sort like slide numbers."""
    return f"{kind}-{slide:012d}.{suffix}"


# --- reading a dataset in seq order -------------------------------------------------------------

def dataset_files(source: str | Path) -> list[Path]:
    """The Parquet files of a dataset: the file itself, or every ``*.parquet`` under a directory.

    Files and directories whose name starts with ``_`` or ``.`` (Spark's ``_SUCCESS``,
    ``_temporary``, checksums) are skipped.
    """
    source = Path(source)
    if source.is_file():
        return [source]
    if not source.is_dir():
        raise FileNotFoundError(f"{source}: no such dataset file or directory")
    files = [path for path in sorted(source.rglob("*.parquet"))
             if not any(part.startswith(("_", ".")) for part in path.relative_to(source).parts)]
    if not files:
        raise FileNotFoundError(f"{source}: no Parquet files")
    return files


def arrow_numbers(values: np.ndarray) -> pa.Array:
    """A numpy array of numbers as an Arrow array over the same memory (``pa.array`` imports pandas).

    >>> arrow_numbers(np.array([1, 2], np.int32)).type
    DataType(int32)
    """
    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)])


def arrow_repeated(text: str, length: int) -> pa.Array:
    """``length`` times the string ``text`` (``pa.repeat`` imports pandas).

    >>> arrow_repeated("ab", 2).to_pylist()
    ['ab', 'ab']
    """
    data = text.encode()
    offsets = np.arange(length + 1, dtype=np.int32) * len(data)
    return pa.Array.from_buffers(pa.string(), length, [None, pa.py_buffer(offsets), pa.py_buffer(data * length)])


def seq_ranges(path: Path) -> list[tuple[int, int, int]]:
    """``(row group, min seq, max seq)`` of every non-empty row group of one file."""
    metadata = pq.ParquetFile(path).metadata
    column = metadata.schema.names.index("seq")
    ranges = []
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        if row_group.num_rows == 0:
            continue
        stats = row_group.column(column).statistics
        if stats is None or not stats.has_min_max:
            seq = column_values(pq.ParquetFile(path).read_row_group(group, columns=["seq"]).column("seq"))
            ranges.append((group, int(seq.min()), int(seq.max())))
        else:
            ranges.append((group, int(stats.min), int(stats.max)))
    return ranges


def feature_magnitudes(source: str | Path, features: tuple[str, ...]) -> np.ndarray:
    """The largest ``|x|`` of each feature over the whole dataset, from the row groups' min/max
    statistics (``O(row groups)``); a row group without them is read."""
    largest = np.zeros(len(features))
    for path in dataset_files(source):
        file = pq.ParquetFile(path)
        names = file.metadata.schema.names
        for group in range(file.metadata.num_row_groups):
            row_group = file.metadata.row_group(group)
            if row_group.num_rows == 0:
                continue
            for position, name in enumerate(features):
                stats = row_group.column(names.index(name)).statistics
                if stats is None or not stats.has_min_max:
                    values = column_values(file.read_row_group(group, columns=[name]).column(name))
                    low, high = float(np.min(values)), float(np.max(values))
                else:
                    low, high = float(stats.min), float(stats.max)
                largest[position] = max(largest[position], abs(low), abs(high))
    return largest


def read_rows(source: str | Path, columns: tuple[str, ...], first_row: int = 0,
              chunk_rows: int = CHUNK_ROWS) -> Iterator[dict[str, np.ndarray]]:
    """The rows ``seq >= first_row`` of a dataset, in ``seq`` order, as chunks of ``seq`` + ``columns`` arrays.

    Row groups are ordered by their ``seq`` statistics; row groups whose ranges overlap (the
    symbols of one date, say) are read together and merged by ``seq``, the others are
    streamed.  Every file is written in ``seq`` order, so the merge is a stable argsort over
    a few sorted runs (about ``O(n)``) and one gather per column.  Memory is one row group (or
    one overlapping group) at a time, ``O(chunk_rows)`` beyond that.  A gap or repeat in
    ``seq`` raises ``ValueError``.
    """
    pieces = sorted((low, high, path, group) for path in dataset_files(source)
                    for group, low, high in seq_ranges(path) if high >= first_row)
    wanted = ["seq", *columns]
    expected = None
    clusters: list[list[tuple]] = []
    for piece in pieces:
        if clusters and piece[0] <= max(p[1] for p in clusters[-1]):
            clusters[-1].append(piece)
        else:
            clusters.append([piece])
    for cluster in clusters:
        tables = [pq.ParquetFile(path).read_row_group(group, columns=wanted) for _, _, path, group in cluster]
        arrays = {name: np.concatenate([column_values(table.column(name)) for table in tables]) for name in wanted}
        if len(tables) > 1:
            order = np.argsort(arrays["seq"], kind="stable")
            arrays = {name: values[order] for name, values in arrays.items()}
        skip = int(np.searchsorted(arrays["seq"], first_row, side="left"))
        for offset in range(skip, len(arrays["seq"]), chunk_rows):
            chunk = {name: values[offset:offset + chunk_rows] for name, values in arrays.items()}
            chunk_seq = chunk["seq"]
            if expected is None:
                expected = first_row
            if not np.array_equal(chunk_seq, np.arange(expected, expected + len(chunk_seq))):
                raise ValueError(f"{source}: seq must run 0..N-1 without gaps (expected {expected}, "
                                 f"found {int(chunk_seq[0])}..{int(chunk_seq[-1])})")
            expected += len(chunk_seq)
            yield chunk


def dataset_chunks(source: str | Path, columns: tuple[str, ...], first_row: int = 0,
                   features: tuple[str, ...] = ()) -> Iterator[dict[str, np.ndarray]]:
    """The rows ``seq >= first_row`` as chunks of ``seq`` + ``columns`` arrays, in ``seq`` order.

    With ``features`` (object streams), every chunk holds those columns as ``x``, one
    ``(rows, d)`` matrix, the form the engine takes, instead of one array each.

    Spark reuses a Python worker for the next task, and the tasks of a replay read the same
    dataset: a worker therefore keeps the decoded columns (the features as one matrix) of the last
    dataset it read, when they take at most :data:`CACHE_BYTES`, and later tasks start from
    memory instead of decoding (and, for partitioned datasets, merging) the Parquet files
    again.  The cache is keyed by every file's path, size and modification time, so a dataset
    that grew (``ingest --append``) or was rewritten is read afresh.  Larger datasets stream
    from disk (:func:`read_rows`).
    """
    global _cache
    files = dataset_files(source)
    key = (tuple((str(path), *_size_and_time(path)) for path in files), tuple(columns), tuple(features))
    if _cache is not None and _cache[0] == key:
        arrays = _cache[1]
        yield {name: values[first_row:] for name, values in arrays.items()}
        return
    rows = sum(pq.read_metadata(path).num_rows for path in files)
    if rows * 8 * (1 + len(columns)) > CACHE_BYTES:
        for chunk in read_rows(source, columns, first_row):
            yield with_matrix(chunk, features)
        return
    _cache = None
    chunks = list(read_rows(source, columns, 0, chunk_rows=max(rows, 1)))
    arrays = {name: np.concatenate([chunk[name] for chunk in chunks]) if len(chunks) > 1
              else chunks[0][name] if chunks else np.empty(0, np.int64) for name in ("seq", *columns)}
    arrays = with_matrix(arrays, features)
    _cache = (key, arrays)
    yield {name: values[first_row:] for name, values in arrays.items()}


def with_matrix(arrays: dict[str, np.ndarray], features: tuple[str, ...]) -> dict[str, np.ndarray]:
    """``arrays`` with the ``features`` columns replaced by ``x``, one ``(rows, d)`` matrix (as
    they are without features)."""
    if not features:
        return arrays
    return {**{name: values for name, values in arrays.items() if name not in features},
            "x": np.column_stack([arrays[name] for name in features])}


def _size_and_time(path: Path) -> tuple[int, int]:
    status = path.stat()
    return status.st_size, status.st_mtime_ns


_cache: tuple[tuple, dict[str, np.ndarray]] | None = None
"""The worker's cached dataset: ``(key, columns)`` (see :func:`dataset_chunks`)."""


def check_columns(source: str | Path, columns: tuple[str, ...]) -> None:
    """Raise ``ValueError`` naming the first dataset file without one of ``columns`` or holding
    one that is not numbers (a part dropped in by hand): the plan reads them all."""
    for path in dataset_files(source):
        schema = pq.ParquetFile(path).schema_arrow
        for name in columns:
            if name not in schema.names:
                raise ValueError(f"{path}: column {name} is missing")
            kind = schema.field(name).type
            if not (pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_decimal(kind)):
                raise ValueError(f"{path}: column {name} has type {kind}; expected numbers")


def is_attribute_dataset(source: str | Path) -> bool:
    """Whether the dataset's files have the attribute-stream columns ``stream`` and ``value``."""
    names = pq.ParquetFile(dataset_files(source)[0]).schema_arrow.names
    return all(name in names for name in ATTRIBUTE_COLUMNS)


# --- cutting slides over chunks of rows -------------------------------------------------------

def stream_slides(chunks: Iterator[dict[str, np.ndarray]], query: Query, task_columns: tuple[str, ...], attribute: bool,
                  first_row: int, start: int, keep: Callable[[dict[str, np.ndarray]], np.ndarray] | None = None,
                  ) -> Iterator[Batch]:
    """The global slides of the rows ``chunks`` hold, cut by :func:`engine.slides` one chunk at a time.

    A chunk maps ``seq``, ``id``, ``t`` and the task's columns to arrays of consecutive rows
    (:func:`dataset_chunks`); an object stream's chunk may hold its feature matrix ``x``
    already (else the task's columns are stacked).

    Rows of an incomplete slide at the end of a chunk are carried to the next chunk, so the
    batches are exactly those of one :func:`engine.slides` call over all rows.  ``index`` of
    each batch is its ordinal in this call.  ``keep`` (a shard's filter: the chunk's columns to
    a boolean mask) is applied once per chunk: the slides stay the global ones, holding only
    the rows kept.
    """
    carry: dict[str, np.ndarray] | None = None
    seq_start, boundary, index = first_row, start, 0
    for arrays in chunks:
        if carry is not None:
            arrays = {name: np.concatenate([carry[name], arrays[name]]) for name in arrays}
        if attribute:
            data = as_attribute_stream(arrays["id"], arrays["stream"], arrays["value"], arrays["t"],
                                       dimensions=query.dimensions)
        else:
            x = arrays["x"] if "x" in arrays else np.column_stack([arrays[name] for name in task_columns])
            data = as_object_stream(arrays["id"], arrays["t"], x, dimensions=query.dimensions)
        if keep is not None:
            mask = keep(arrays)
            kept_before = np.concatenate([[0], np.cumsum(mask)])
            kept = Batch(ids=data[0][mask], seq=arrays["seq"][mask], t=data[-1 if attribute else 1][mask],
                         x=np.empty((int(kept_before[-1]), 0)) if attribute else data[2][mask], end=0, index=0,
                         stream=data[1][mask] if attribute else None, value=data[2][mask] if attribute else None)
        consumed = 0
        for batch in engine.slides(data, query, seq_start=seq_start, start=boundary if query.kind == "time" else None,
                                   first_index=index, max_slides=None):
            rows = len(batch)
            boundary = batch.end
            if keep is None:
                yield batch
            else:
                part = slice(int(kept_before[consumed]), int(kept_before[consumed + rows]))
                yield Batch(ids=kept.ids[part], seq=kept.seq[part], t=kept.t[part], x=kept.x[part], end=batch.end,
                            index=batch.index, stream=None if kept.stream is None else kept.stream[part],
                            value=None if kept.value is None else kept.value[part])
            consumed += rows
            index += 1
        seq_start += consumed
        carry = {name: values[consumed:] for name, values in arrays.items()}


def shard_filter(shard: int, shards: int, shard_by: str) -> Callable[[dict[str, np.ndarray]], np.ndarray]:
    """The rows of a shard among a chunk's columns: ``seq % shards`` or a hash of the object id ``% shards``."""
    if shard_by == "seq":
        return lambda arrays: arrays["seq"] % shards == shard
    return lambda arrays: id_shard(arrays["id"], shards) == shard


def id_shard(ids: np.ndarray, shards: int) -> np.ndarray:
    """The shard of every object id (Fibonacci hashing, then ``% shards``).

    >>> id_shard(np.array([0, 1, 2, 3]), 3).tolist()
    [0, 0, 2, 0]
    """
    mixed = (np.asarray(ids, np.int64).astype(np.uint64) * HASH_MULTIPLIER) >> np.uint64(32)
    return (mixed % np.uint64(shards)).astype(np.int64)


# --- the task ------------------------------------------------------------------------------------

def write_atomically(path: Path, write) -> None:
    """``write(temporary path)``, then rename: readers never see a half-written file."""
    temporary = path.with_name(f".{path.name}.tmp")
    write(temporary)
    os.replace(temporary, path)


class SegmentWriter:
    """Collects a segment's per-slide answers and stats and writes them as parts, then its state.

    A part (``answers-<first slide>.parquet`` and ``stats-<first slide>.parquet``) is written
    whenever :data:`PART_ROWS` answer rows are buffered, so memory stays bounded however long a
    segment is; :meth:`flush` writes the last part, the state and the marker.  ``task`` needs
    ``query_id``, ``label``, ``shard`` and ``directory`` only (a shared executor's task has one
    writer per query, :mod:`pipelines.replay_multi`).

    :meth:`add` keeps a slide as one tuple of its figures (:data:`SLIDE_FIGURES`) and its
    answer's arrays; the part's columns are built from them once, when it is written (one
    structured array for the figures, one concatenation per answer column).
    """

    def __init__(self, task: ReplayTask) -> None:
        self.task = task
        self.directory = task.directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self._start_segment()
        self._start_part()

    def _start_segment(self) -> None:
        self.segment_first: int | None = None
        self.segment_slides = 0
        self.segment_rows = 0

    def _start_part(self) -> None:
        self.figures: list[tuple] = []
        self.answers: list[engine.Answer] = []
        self.rows = 0

    def add(self, slide: int, end: int, answer: engine.Answer, stats: dict[str, Any], measured: int,
            seconds: float) -> None:
        count = len(answer.ids)
        self.figures.append((slide, end, count, stats["candidates"], stats["retained"], stats["bytes"], measured,
                             seconds))
        self.answers.append(answer)
        self.rows += count
        if self.rows >= PART_ROWS:
            self._write_part()

    def _write_part(self) -> None:
        task = self.task
        figures = np.array(self.figures, SLIDE_FIGURES)
        counts = figures["count"]
        rows, n, first = int(counts.sum()), len(figures), int(figures["slide"][0])
        if self.segment_first is None:
            self.segment_first = first

        def number(value, length):
            return arrow_numbers(np.full(length, value, np.int32))

        def label(length):
            return arrow_repeated(task.label, length)

        def answer_column(name, kind):
            return arrow_numbers(np.concatenate([getattr(answer, name) for answer in self.answers]).astype(kind, copy=False))

        answers = pa.table([
            number(task.query_id, rows), label(rows), number(task.shard, rows),
            arrow_numbers(np.repeat(figures["slide"], counts)), arrow_numbers(np.repeat(figures["end"], counts)),
            arrow_numbers((np.arange(rows) - np.repeat(np.cumsum(counts) - counts, counts) + 1).astype(np.int32)),
            answer_column("ids", np.int64), answer_column("scores", np.float64), answer_column("seq", np.int64)],
            schema=ANSWER_SCHEMA)
        stats = pa.table([
            number(task.query_id, n), label(n), number(task.shard, n),
            *(arrow_numbers(figures[name]) for name in STATS_SCHEMA.names[3:])],
            schema=STATS_SCHEMA)
        write_atomically(self.directory / part_name("answers", first, "parquet"),
                         lambda path: pq.write_table(answers, path, **PART_OPTIONS))
        write_atomically(self.directory / part_name("stats", first, "parquet"),
                         lambda path: pq.write_table(stats, path, **PART_OPTIONS))
        self.segment_slides += n
        self.segment_rows += rows
        self._start_part()

    def flush(self, state: str, digest: str) -> dict[str, Any]:
        """End the segment: its last part, the state (JSON text, checksum ``digest``), then the marker."""
        if self.figures:
            self._write_part()
        task, first = self.task, self.segment_first
        last = first + self.segment_slides - 1
        write_atomically(self.directory / part_name("state", last, "json"), lambda path: path.write_text(state))
        marker = {"query_id": task.query_id, "algorithm": task.label, "shard": task.shard, "first_slide": first,
                  "slide": last, "slides": self.segment_slides, "answer_rows": self.segment_rows, "checksum": digest,
                  "format_version": engine.FORMAT_VERSION}
        write_atomically(self.directory / part_name("done", last, "json"), lambda path: path.write_text(json.dumps(marker)))
        self._start_segment()
        return marker


def run_task(task: ReplayTask) -> Iterator[dict[str, Any]]:
    """Replay the task's range in one pass; yield the marker of every segment written."""
    for module in task.plugins:
        importlib.import_module(module)
    query = Query.from_dict(task.query)
    load_kernels(task.algorithm, len(query.weights))    # untimed: no slide's seconds pays numba's load
    algorithm = (engine.restore(json.loads(task.state), query, algorithm=task.algorithm, params=task.params)
                 if task.state is not None else engine.create(task.algorithm, query, **task.params))
    chunks = dataset_chunks(task.source, ("id", "t", *task.columns), task.first_row,
                            features=() if task.attribute else task.columns)
    keep = shard_filter(task.shard, task.shards, task.shard_by) if task.shards > 1 else None
    writer = SegmentWriter(task)
    progress_file, last_progress = task.directory / "progress.json", time.perf_counter()
    done, slides, first_slide, segment = 0, task.slides, task.first_slide, task.segment
    process, topk, stats_of, add, clock = algorithm.process, algorithm.topk, algorithm.stats, writer.add, time.perf_counter
    for batch in stream_slides(chunks, query, task.columns, task.attribute, task.first_row, task.start, keep):
        if done == slides:
            break
        slide = first_slide + batch.index
        began = clock()
        process(batch)
        answer = topk()
        seconds = clock() - began
        stats = stats_of()
        add(slide, batch.end, answer, stats, stats["measured_bytes"], seconds)
        done += 1
        if (slide + 1) % segment == 0 or done == slides:
            yield writer.flush(*algorithm.to_state_text())
        if clock() - last_progress >= PROGRESS_SECONDS or done == slides:
            write_atomically(progress_file, lambda path: path.write_text(json.dumps({"slides": done})))
            last_progress = clock()
    if done != task.slides:
        raise ValueError(f"task {task.key}: the dataset holds {done} slides from slide {task.first_slide}, "
                         f"expected {task.slides} (was it changed during the replay?)")


def run_partition(rows: Iterator) -> Iterator[str]:
    """Spark ``mapPartitions`` body: every element is a task's JSON (a :class:`ReplayTask`, or a
    shared executor's :class:`pipelines.replay_multi.SharedTask`); yields segment markers as JSON."""
    from .replay_multi import SharedTask, run_shared_task  # it builds on this module
    for text in rows:
        data = json.loads(text)
        markers = run_shared_task(SharedTask.from_dict(data)) if "members" in data else \
            run_task(ReplayTask.from_json(text))
        for marker in markers:
            yield json.dumps(marker)
