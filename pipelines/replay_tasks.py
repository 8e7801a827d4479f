"""The Spark task of a replay: one (query, algorithm, shard) over one segment of slides.

A task starts from the algorithm's JSON state at the end of the previous segment (or a new
algorithm), cuts the dataset rows of its segment into the query's slides with
:func:`engine.slides` over the global ``seq`` / ``t``, keeps the rows of its shard
(``seq % shards == shard``), and returns the answer and stats of every slide plus the new
state as JSON text.  It runs on the executors and imports only the engine, numpy and pyarrow.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from itertools import islice
from typing import Any

import numpy as np
import pyarrow.parquet as pq

import engine
from engine import Batch, Query


@dataclass(frozen=True)
class SegmentTask:
    """What one task replays.

    ``rows`` is the half-open range of ``seq`` the slides are cut from: it starts at the
    first row of the segment's first slide and, for time windows, reaches one row past the
    segment so that its trailing empty slides are cut too.  ``start`` is that first slide's
    start boundary (a ``seq`` for count windows, a time for time windows).
    """

    query_id: int
    label: str
    algorithm: str
    params: dict[str, Any]
    query: dict[str, Any]
    shard: int
    shards: int
    parquet: str
    features: tuple[str, ...]
    state: str | None
    rows: tuple[int, int]
    start: int
    slides: int

    @property
    def key(self) -> tuple[int, str, int]:
        return self.query_id, self.label, self.shard


@dataclass(frozen=True)
class SegmentResult:
    """Per slide: ``ends``, answer lengths ``counts`` and stats; answers flattened in slide order."""

    key: tuple[int, str, int]
    ends: np.ndarray
    counts: np.ndarray
    ids: np.ndarray
    scores: np.ndarray
    seq: np.ndarray
    candidates: np.ndarray
    retained: np.ndarray
    bytes: np.ndarray
    seconds: np.ndarray
    state: str
    checksum: str
    format_version: int


_datasets: dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}


def load_dataset(parquet: str, features: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(ids, t, x)`` of a dataset, read once per worker process and file version."""
    stat = os.stat(parquet)
    key = (parquet, stat.st_size, stat.st_mtime_ns, features)
    if key not in _datasets:
        table = pq.read_table(parquet, columns=["id", "seq", "t", *features])
        seq = table.column("seq").to_numpy()
        if not np.array_equal(seq, np.arange(len(seq))):
            raise ValueError(f"{parquet}: seq must be 0..N-1 in row order")
        x = np.column_stack([table.column(name).to_numpy().astype(np.float64) for name in features])
        _datasets.clear()
        _datasets[key] = (table.column("id").to_numpy(), table.column("t").to_numpy(), x)
    return _datasets[key]


def run_segment(task: SegmentTask) -> SegmentResult:
    """Replay ``task.slides`` slides from ``task.state`` and return their answers and stats."""
    ids, t, x = load_dataset(task.parquet, task.features)
    query = Query.from_dict(task.query)
    algorithm = (engine.restore(json.loads(task.state), query) if task.state is not None
                 else engine.create(task.algorithm, query, **task.params))
    lo, hi = task.rows
    stream = (ids[lo:hi], t[lo:hi], x[lo:hi])
    batches = engine.slides(stream, query, seq_start=lo, start=task.start if query.kind == "time" else None)
    ends, counts, answers, stats, seconds = [], [], [], [], []
    for batch in islice(batches, task.slides):
        if task.shards > 1:
            batch = shard_of(batch, task.shard, task.shards)
        began = time.perf_counter()
        algorithm.process(batch)
        answer = algorithm.topk()
        seconds.append(time.perf_counter() - began)
        ends.append(batch.end)
        counts.append(len(answer))
        answers.append(answer)
        stats.append(algorithm.stats())
    if len(ends) != task.slides:
        raise ValueError(f"task {task.key}: rows {task.rows} hold {len(ends)} slides, expected {task.slides}")

    state = algorithm.to_state()

    def flat(name: str, dtype) -> np.ndarray:
        return np.concatenate([getattr(a, name) for a in answers]).astype(dtype) if answers else np.empty(0, dtype)

    def stat(name: str) -> np.ndarray:
        return np.array([s[name] for s in stats], np.int64)

    return SegmentResult(key=task.key, ends=np.array(ends, np.int64), counts=np.array(counts, np.int64),
                         ids=flat("ids", np.int64), scores=flat("scores", np.float64), seq=flat("seq", np.int64),
                         candidates=stat("candidates"), retained=stat("retained"), bytes=stat("bytes"),
                         seconds=np.array(seconds, np.float64),
                         state=json.dumps(state, separators=(",", ":"), allow_nan=False),
                         checksum=state["checksum"], format_version=state["format_version"])


def shard_of(batch: Batch, shard: int, shards: int) -> Batch:
    """The rows of ``batch`` that belong to ``shard`` (``seq % shards``), same slide boundary."""
    mask = batch.seq % shards == shard
    return Batch(ids=batch.ids[mask], seq=batch.seq[mask], t=batch.t[mask], x=batch.x[mask],
                 end=batch.end, index=batch.index)
