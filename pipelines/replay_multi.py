"""The shared executor's replay task: one (weights group, shard) for every query of the group.

A config whose algorithms list ``multi`` (:data:`pipelines.replay_config.SHARED`) runs its
queries through :class:`engine.multi.SharedTopK`: the queries are grouped by weights
(:func:`weight_groups`) and each group runs as one task per shard instead of one task per
(query, shard).  The task restores the group's executor (or builds it), streams the dataset's
rows of its shard in ``seq`` order with their global ``seq`` (:func:`SharedTopK.process`, given
the whole stream's ``stream_end`` and ``time_now``, so the windows are the whole stream's), and
writes each query's answers, stats, state and markers into that query's staging directory
exactly as a per-algorithm task does (:class:`pipelines.replay_tasks.SegmentWriter`), so the
driver loads, merges shards and resumes them unchanged.

**Cuts.**  A query's segment ends after its slide ``j`` (``(j + 1) % segment == 0``, or its
last slide).  The group's state stored with that segment must be the state *at* that
boundary, so the driver computes every member's segment ends as *cuts* of the global stream,
``(position, time)``: rows ``seq < position`` fed, the stream's time at ``time`` (a count
boundary ``E``: ``(E, t[E - 1])``; a time boundary ``T``: ``(first seq with t >= T, T)``).  The
task feeds the executor up to each cut exactly, then writes the segment of every query that
ends there with the executor's state.

**Resume.**  The members' latest snapshots may lie at different cuts.  The task restores the
earliest (by ``(next_seq, t_last)`` of the state) and drops every answer of a member before
that member's ``next_slide``: those slides are stored already, and the executor is exact
however its rows are fed, so it repeats them identically.  A member with no snapshot makes the
group start from the first row.

A time family on a shard starts at the slide of the shard's first row
(``docs/algorithms/multi.md``): the slides before it hold none of the shard's rows, and the
task writes them as empty answers, as a per-algorithm task on that shard does.
"""

from __future__ import annotations

import importlib
import json
import time
from collections import deque
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np

from engine import Answer, Query
from engine.multi import SharedTopK

from .errors import InputError
from .replay_config import AlgorithmSpec
from .replay_tasks import PROGRESS_SECONDS, SegmentWriter, dataset_chunks, shard_filter, task_directory, \
    write_atomically

if TYPE_CHECKING:
    from .replay_plan import QueryProgress, ReplayPlan

EMPTY = Answer(np.empty(0, np.int64), np.empty(0), np.empty(0, np.int64))


def weight_groups(queries: tuple[Query, ...]) -> list[list[int]]:
    """Query ids grouped by weights, each group in config order, groups by their first query.

    >>> q = lambda w, k: Query(weights=w, k=k, window=4, slide=2)
    >>> weight_groups((q([1.0], 1), q([2.0], 1), q([1.0], 2)))
    [[0, 2], [1]]
    """
    groups: dict[tuple[float, ...], list[int]] = {}
    for query_id, query in enumerate(queries):
        groups.setdefault(query.weights, []).append(query_id)
    return list(groups.values())


def group_of(queries: tuple[Query, ...], query_id: int) -> list[int]:
    """The query ids of ``query_id``'s weights group (the executor's handles are their positions)."""
    return next(group for group in weight_groups(queries) if query_id in group)


def check_shared_state(state: str, queries: list[Query], where: str) -> SharedTopK:
    """Restore a group's snapshot as its task will; it must hold exactly the group's queries."""
    try:
        executor = SharedTopK.restore(json.loads(state))
    except ValueError as error:  # StateError and JSON errors
        raise InputError(f"{where} cannot be restored: {error}") from None
    if executor.queries != dict(enumerate(queries)):
        raise InputError(f"{where} cannot be restored: it holds other queries than the config's weights group")
    return executor


class RestoredMember:
    """One query of a restored group executor, answering as a restored exact algorithm does
    (``topk()``: its latest answer, empty before its first), so that
    :func:`pipelines.replay_plan.check_restored_answers` checks it like any task."""

    exact = True

    def __init__(self, executor: SharedTopK, handle: int) -> None:
        self.executor, self.handle = executor, handle

    def topk(self) -> Answer:
        latest = self.executor.topk(self.handle)
        return EMPTY if latest is None else latest.answer


def slide_cut(query: Query, origin: int, slide: int, t: np.ndarray) -> tuple[int, int]:
    """The cut of the global stream at the end of the query's ``slide``: ``(position, time)``,
    where a group task stops feeding to take that slide's snapshot (a count boundary ``E``:
    ``(E, t[E - 1])``; a time boundary ``T``: ``(first seq with t >= T, T)``)."""
    boundary = origin + (slide + 1) * query.slide
    if query.kind == "count":
        return boundary, int(t[boundary - 1])
    return int(np.searchsorted(t, boundary, side="left")), boundary


@dataclass(frozen=True)
class Member:
    """One query of a group task: where its answers go and which slides it writes."""

    query_id: int
    query: dict[str, Any]
    origin: int
    next_slide: int
    total_slides: int


@dataclass(frozen=True)
class SharedTask:
    """One (weights group, shard): ``members`` in handle order, fed from row ``first_row`` on.

    ``cuts`` are ``[position, time, [[member, slide], ...]]``, ascending: feed the rows
    ``seq < position`` with the stream's time at ``time``, then end the segment of every listed
    member at its ``slide``.  ``slides`` (the members' remaining slides) orders the tasks.
    """

    label: str
    algorithm_index: int
    members: tuple[Member, ...]
    shard: int
    shards: int
    source: str
    columns: tuple[str, ...]
    first_row: int
    cuts: tuple[tuple[int, int, tuple[tuple[int, int], ...]], ...]
    slides: int
    staging: str
    plugins: tuple[str, ...] = ()
    state: str | None = field(default=None, repr=False)

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SharedTask":
        data = dict(data)
        data["members"] = tuple(Member(**member) for member in data["members"])
        data["columns"] = tuple(data["columns"])
        data["plugins"] = tuple(data["plugins"])
        data["cuts"] = tuple((int(p), int(t), tuple((int(m), int(j)) for m, j in ends)) for p, t, ends in data["cuts"])
        return cls(**data)


@dataclass(frozen=True)
class MemberOutput:
    """What a :class:`SegmentWriter` needs of a task: one member's staging directory and names."""

    query_id: int
    label: str
    shard: int
    directory: Path


# --- the driver's side ---------------------------------------------------------------------------

def shared_tasks(plan: "ReplayPlan", index: int, spec: AlgorithmSpec) -> list[SharedTask]:
    """The shared executor's tasks of a plan: one per (weights group with slides left, shard)."""
    config, t = plan.config, plan.dataset.t
    progress = {p.query_id: p for p in plan.progress}
    tasks = []
    for group in weight_groups(config.queries):
        members = [progress[query_id] for query_id in group]
        remaining = sum(p.remaining for p in members)
        if not remaining:
            continue
        cuts = segment_cuts(members, t)
        for shard in range(config.shards):
            states = [p.states[(spec.label, shard)] for p in members]
            state = None if any(s is None for s in states) else min(states, key=state_position)
            tasks.append(SharedTask(
                label=spec.label, algorithm_index=index,
                members=tuple(Member(query_id=p.query_id, query=p.query.to_dict(), origin=p.origin,
                                     next_slide=p.next_slide, total_slides=p.total_slides) for p in members),
                shard=shard, shards=config.shards, source=plan.dataset.parquet, columns=plan.dataset.features,
                first_row=0 if state is None else state_position(state)[0], cuts=cuts, slides=remaining,
                staging=str(plan.staging), plugins=config.plugins, state=state))
    return tasks


def state_position(state: str) -> tuple[int, int]:
    """``(next_seq, t_last)`` of a shared executor's state: where its stream stands."""
    data = json.loads(state)["data"]
    return int(data["next_seq"]), -2 ** 63 if data["t_last"] is None else int(data["t_last"])


def segment_cuts(members: list["QueryProgress"], t: np.ndarray) -> tuple[tuple[int, int, tuple], ...]:
    """Every member's segment ends from its ``next_slide`` on, as cuts of the global stream, ascending."""
    ends: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for handle, p in enumerate(members):
        for slide in range(p.next_slide, p.total_slides):
            if (slide + 1) % p.segment_slides and slide != p.total_slides - 1:
                continue
            ends.setdefault(slide_cut(p.query, p.origin, slide, t), []).append((handle, slide))
    return tuple((position, now, tuple(ends[(position, now)])) for position, now in sorted(ends))


# --- the task ------------------------------------------------------------------------------------

def run_shared_task(task: SharedTask) -> Iterator[dict[str, Any]]:
    """Replay the group's range in one pass; yield the marker of every member's segment written."""
    for module in task.plugins:
        importlib.import_module(module)
    queries = [Query.from_dict(member.query) for member in task.members]
    executor = SharedTopK.restore(json.loads(task.state)) if task.state is not None else SharedTopK(queries)
    if executor.queries != dict(enumerate(queries)):
        raise ValueError(f"group task of queries {[m.query_id for m in task.members]}: its state holds other queries")
    writers = {handle: SegmentWriter(MemberOutput(member.query_id, task.label, task.shard,
                                                  task_directory(task.staging, member.query_id,
                                                                 task.algorithm_index, task.shard)))
               for handle, member in enumerate(task.members) if member.next_slide < member.total_slides}
    expected = {handle: task.members[handle].next_slide for handle in writers}
    keep = shard_filter(task.shard, task.shards, "seq") if task.shards > 1 else None
    cuts = deque(task.cuts)
    slides = [query.slide for query in queries]
    last_progress = time.monotonic()

    def feed(arrays: dict[str, np.ndarray], stream_end: int, time_now: int) -> None:
        if keep is None:
            rows = arrays
        else:
            mask = keep(arrays)
            rows = {name: values[mask] for name, values in arrays.items()}
        began = time.perf_counter()
        results = executor.process(rows["id"], rows["t"], rows["x"], seq=rows["seq"], stream_end=stream_end,
                                   time_now=time_now, max_slides=None)
        seconds = (time.perf_counter() - began) / max(len(results), 1)
        stats = executor.stats()
        for result in results:
            if result.query not in writers:
                continue
            member = task.members[result.query]
            slide = (result.end - member.origin) // slides[result.query] - 1
            if slide < member.next_slide:
                continue  # stored already: the executor resumed from an earlier member's snapshot
            fill(result.query, slide, stats)
            if slide != expected[result.query] or slide >= member.total_slides:
                raise ValueError(f"query {member.query_id}: the shared executor answered slide {slide}, "
                                 f"expected {expected[result.query]}")
            writers[result.query].add(slide, result.end, result.answer, stats, stats["measured_bytes"], seconds)
            expected[result.query] = slide + 1

    def fill(handle: int, slide: int, stats: dict[str, Any]) -> None:
        """Empty answers for the time slides before ``slide`` that came before the shard's first row."""
        if queries[handle].kind != "time":
            return
        origin = task.members[handle].origin
        for empty in range(expected[handle], slide):
            writers[handle].add(empty, origin + (empty + 1) * slides[handle], EMPTY, stats, stats["measured_bytes"],
                                0.0)
        expected[handle] = max(expected[handle], slide)

    def write_progress(handles) -> None:
        for handle in handles:
            done = expected[handle] - task.members[handle].next_slide
            write_atomically(writers[handle].directory / "progress.json",
                             lambda path: path.write_text(json.dumps({"slides": done})))

    chunks = dataset_chunks(task.source, ("id", "t", *task.columns), task.first_row, features=task.columns)
    for arrays in chunks:
        if not cuts:
            break
        seq = arrays["seq"]
        if not len(seq):
            continue
        first, stop = int(seq[0]), int(seq[-1]) + 1
        while cuts and cuts[0][0] <= stop:
            position, now, ends = cuts.popleft()
            piece = {name: values[:position - first] for name, values in arrays.items()}
            arrays = {name: values[position - first:] for name, values in arrays.items()}
            first = position
            feed(piece, position, now)
            stats = executor.stats()
            state, digest = executor.to_state_text()
            for handle, slide in ends:
                fill(handle, slide + 1, stats)
                if expected[handle] != slide + 1:
                    raise ValueError(f"query {task.members[handle].query_id}: slide {slide} was not answered "
                                     "at its boundary")
                yield writers[handle].flush(state, digest)
            write_progress(sorted({handle for handle, _ in ends}))
        if cuts and len(arrays["seq"]):
            feed(arrays, stop, int(arrays["t"][-1]))
        if time.monotonic() - last_progress >= PROGRESS_SECONDS:
            write_progress(writers)
            last_progress = time.monotonic()
    write_progress(writers)
    short = [task.members[h].query_id for h in writers if expected[h] != task.members[h].total_slides]
    if cuts or short:
        raise ValueError(f"group task of queries {[m.query_id for m in task.members]}: the dataset ended before "
                         f"every slide was answered (queries {short}; was it changed during the replay?)")
