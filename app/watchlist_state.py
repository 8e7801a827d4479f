"""The watch list's state: several queries over one stream, run by one shared executor.

No Streamlit here. :class:`Watch` runs a trace through one :class:`engine.multi.SharedTopK`
(MTopList: queries with equal weights share one candidate list) and, beside it, one MinTopK
per query (the unshared reference the shared executor replaces) so the page can show what
sharing saves. Queries are added and removed while the stream runs without restarting the
others; a query added mid-stream answers from its first slide boundary after it was added, its
windows holding the objects from its ``since`` row on when it cannot join a family that holds
its whole window (see ``docs/algorithms/multi.md``).

URL form of a workload: queries separated by ``;``, each ``kind:k:window:slide:w1,w2,...``
with window and slide in objects or in the trace's time unit.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from time import perf_counter
from typing import Any, Callable, Iterator, Sequence

import altair as alt
import numpy as np
import pandas as pd

import engine
from app import live_state, units
from app.data import Trace
from app.live_state import WEIGHT_STEP, typed
from app.presets import Profile, describe_weights
from app.tables import score_text
from engine.multi import SharedTopK

SHOWN_IDS = 10
"""Most ids and scores written in a row of the table (the rest is counted)."""
HISTORY = 2000
"""Points kept for the chart."""
CHUNK = 250
"""Rows per call of the shared executor during playback (a pause is served between chunks)."""
MAX_QUERIES = 50
"""Most queries a watch list holds (Add refuses more; a link's first ones are watched, the rest
dropped): each is one more MinTopK beside the shared executor, and a link of 300 took 11 s to open."""
MAX_SLIDES = 1_000_000
"""Most slide boundaries a time query may pass over the whole trace (when they outnumber its
rows): the shared executor answers every boundary, empty ones included, and a chunk of rows
across a gap in the times cannot be paused (a 1 ms slide over a month of taxi trips passes
2.6 billion boundaries)."""


def slider_position(weight: float) -> float:
    """Where a weight slider stands for ``weight``: the nearest step of ``[-1, 1]``. A link may
    give any weight (``0.33``, ``2.5``); a slider cannot hold one off its steps or range.

    >>> slider_position(0.33), slider_position(2.5), slider_position(-0.124)
    (0.35, 1.0, -0.1)
    """
    return round(round(min(1.0, max(-1.0, weight)) / WEIGHT_STEP) * WEIGHT_STEP, 2)


def edited_weights(values: Sequence[float], kept: Sequence[tuple[float, float]]) -> list[float]:
    """The weights an edit saves: the query's own weight where its slider still stands where the
    edit put it (``kept``: each feature's ``(weight, slider_position(weight))``), else the slider's
    value; a weight off the sliders' steps or range is kept exactly unless its slider is moved.

    >>> edited_weights([0.35, 0.5], [(0.33, 0.35), (0.1234, 0.1)])
    [0.33, 0.5]
    """
    return [weight if abs(value - position) < WEIGHT_STEP / 2 else value
            for value, (weight, position) in zip(values, kept)]


def boundaries_problem(trace: Trace, query: engine.Query) -> str | None:
    """Why ``query``'s slides are too many over ``trace`` (more than :data:`MAX_SLIDES` and its
    rows), a message for the user; ``None`` when they are not. The Live page applies the same rule."""
    boundaries = engine.stream.slide_count(trace.t, query)
    if boundaries <= max(MAX_SLIDES, len(trace)):
        return None
    return (f"a slide of {typed(query.slide, query.kind, trace.t_unit)} passes {boundaries:,} boundaries over "
            f"`{trace.name}` (nearly all empty), more than the {MAX_SLIDES:,} the page answers: choose a longer slide")


def parse_query(kind: str, k: float, window: str, slide: str, weights: Sequence[float], profile: Profile) -> engine.Query:
    """The query typed in the form; ``ValueError`` with a message for the user when a value is bad.

    The Live page's checks (:func:`app.live_state.k_problem`, :func:`app.live_state.lengths`), in its
    order, its suggestions said as "try ...".

    Examples
    --------
    >>> from app.presets import profile
    >>> ms = profile("x", "synthetic", ("a",), "ms")
    >>> parse_query("count", 5, "1k", "100", [1.0], ms).window
    1000
    >>> parse_query("time", 5, "30 min", "7 min", [1.0], ms)
    Traceback (most recent call last):
    ...
    ValueError: the window (30 min) must be a whole number of slides (7 min): try 6 min or 10 min
    """
    if (k_problem := live_state.k_problem(k)) is not None:
        raise ValueError(k_problem)
    n, s, problems = live_state.lengths({"kind": kind, "window": window, "slide": slide}, profile)
    if problems:
        first = problems[0]
        parsed = n is not None and s is not None  # the lengths do not fit together: the problem names them
        raise ValueError(f"{first.message}: try {' or '.join(first.suggestions)}" if parsed and first.suggestions
                         else first.message)
    return engine.Query(weights=list(weights), k=int(k), window=n, slide=s, kind=kind)


def to_url(queries: Sequence[engine.Query]) -> str:
    """The workload as one URL parameter.

    >>> to_url([engine.Query([1.0, -0.5], k=5, window=200, slide=50)])
    'count:5:200:50:1,-0.5'
    """
    return ";".join(f"{q.kind}:{q.k}:{q.window}:{q.slide}:{units.weights_text(q.weights)}"
                    for q in queries)


def link_value(name: str, text: str, read: Callable[[str], Any]) -> Any:
    """``read(text)``; ``ValueError`` naming the field when ``text`` is not a number (Python's own message names
    ``int()``)."""
    try:
        return read(text)
    except ValueError:
        raise ValueError(f'{name} "{units.shorten(text)}" is not a {"whole " if read is int else ""}number') from None


def from_url(text: str, dimensions: int, notes: list[str] | None = None) -> list[engine.Query]:
    """The queries of :func:`to_url`'s text (``""``: none); malformed ones (or of other
    dimensions, a ``k`` the form refuses, or spanning more than
    :data:`app.units.MAX_SLIDES_PER_WINDOW` slides) are skipped, each with a line in ``notes``
    when it is given.

    >>> notes = []
    >>> [q.k for q in from_url("count:5:200:50:1,-0.5;time:3:10:5:1,1;bad;count:1:2:1:1", 2, notes)]
    [5, 3]
    >>> notes
    ['query 3 (bad) left out: not kind:k:window:slide:weights', 'query 4 (count:1:2:1:1) left out: 1 weight(s), not 2']
    """
    notes = [] if notes is None else notes
    out = []
    for number, part in enumerate(str(text).split(";") if text else [], 1):
        shown = units.shorten(part)
        try:
            kind, k, window, slide, weights = part.split(":")
        except ValueError:
            notes.append(f"query {number} ({shown}) left out: not kind:k:window:slide:weights")
            continue
        try:
            if not engine.base.plain_digits(part):
                raise ValueError("numbers are written with the digits 0-9")
            query = engine.Query(weights=[link_value("weight", w, float) for w in weights.split(",")],
                                 k=link_value("k", k, int), window=link_value("window", window, int),
                                 slide=link_value("slide", slide, int), kind=kind)
            if (k_problem := live_state.k_problem(query.k)) is not None:
                raise ValueError(k_problem)
            if query.window > units.MAX_LENGTH:
                raise ValueError(f"window must be at most {units.MAX_LENGTH:,}, got {query.window:,}")
            if (too_many := units.slides_per_window_problem(query.window, query.slide)) is not None:
                raise ValueError(too_many)
        except ValueError as exc:
            notes.append(f"query {number} ({shown}) left out: {units.shorten(str(exc), 200)}")
            continue
        if query.dimensions != dimensions:
            notes.append(f"query {number} ({shown}) left out: {query.dimensions} weight(s), not {dimensions}")
            continue
        out.append(query)
    return out


def due_row(t: np.ndarray, query: engine.Query, end: int) -> int:
    """Rows the stream must have delivered before the boundary ``end`` of ``query`` is passed.

    Count boundaries pass with their last object, time boundaries ``T`` with the first object
    of ``t >= T`` (the shared executor's convention, ``engine.slides``'s cut).

    >>> due_row(np.array([0, 1, 1, 4]), engine.Query([1.0], k=1, window=2, slide=2, kind="time"), 2)
    4
    """
    if query.kind == "count":
        return end
    return int(np.searchsorted(t, end, side="left")) + 1


def query_slides(trace: Trace, query: engine.Query, since: int) -> Iterator[engine.Batch]:
    """The slides of ``query`` over the rows from ``since`` on, with the whole stream's boundaries.

    A query added after ``since`` rows sees the windows the shared executor gives it: count
    boundaries are multiples of the slide in ``seq`` (a first, partial slide when ``since`` is
    not one), time boundaries multiples of the slide in ``t`` starting at the slide of the
    last row before ``since`` (its empty slides included).
    """
    arrays = tuple(column[since:] for column in trace.arrays)
    s = query.slide
    if query.kind == "time":
        start = int(trace.t[since - 1]) // s * s if since else None
        yield from engine.slides(arrays, query, seq_start=since, start=start)
        return
    first = -(-since // s) * s
    if first > since:
        if first > len(trace):
            return
        rows = slice(since, first)
        yield engine.Batch(ids=trace.ids[rows], seq=np.arange(since, first, dtype=np.int64), t=trace.t[rows],
                           x=trace.x[rows], end=first, index=0)
        arrays = tuple(column[first:] for column in trace.arrays)
    yield from engine.slides(arrays, query, seq_start=first, first_index=int(first > since))


def warm_start(trace: Trace, query: engine.Query, since: int, rows: int) -> int:
    """The first row a new engine for ``query`` needs to answer like one that saw every row from
    ``since`` on, at any point after ``rows`` rows: the start of the slide before the last full
    window (exact answers depend only on the window's objects).

    >>> trace = Trace("x", np.arange(10), np.arange(10), np.ones((10, 1)), ("a",), "ordinal")
    >>> warm_start(trace, engine.Query([1.0], k=1, window=4, slide=2), 0, 9)
    2
    """
    s = query.slide
    if rows == 0:
        return since
    if query.kind == "count":
        return max(since, ((rows - query.window) // s - 1) * s)
    boundary = ((int(trace.t[rows - 1]) - query.window) // s - 1) * s
    return max(since, int(np.searchsorted(trace.t, boundary, side="left")))


class Alone:
    """One MinTopK for one query, fed the query's slides as the shared stream passes them.

    Added after ``rows`` rows, it starts at :func:`warm_start` rather than at ``since``.
    """

    def __init__(self, trace: Trace, query: engine.Query, since: int, rows: int = 0) -> None:
        self.query = query
        self.engine = engine.create("mintopk", query)
        self._t = trace.t
        self._slides = query_slides(trace, query, warm_start(trace, query, since, rows))
        self._next = next(self._slides, None)
        self.seconds = 0.0

    def advance(self, rows: int) -> None:
        """Process every slide whose boundary the first ``rows`` rows have passed."""
        start = perf_counter()
        while self._next is not None and due_row(self._t, self.query, self._next.end) <= rows:
            self.engine.process(self._next)
            self._next = next(self._slides, None)
        self.seconds += perf_counter() - start


@dataclass(frozen=True)
class Watched:
    """A query of the watch list: its handle in the shared executor and the first row its windows hold."""

    handle: int
    query: engine.Query
    since: int


def _load_kernels(trace: Trace) -> None:
    """Run a tiny workload once so the compiled kernels are loaded before anything is timed."""
    d = len(trace.features)
    SharedTopK([engine.Query([1.0] * d, k=1, window=2, slide=1),
                engine.Query([1.0] * d, k=1, window=2, slide=1, kind="time")]).process(
        np.arange(3), np.arange(3), np.zeros((3, d)))


class Watch:
    """A trace run through one shared executor, with queries added and removed while it runs.

    Attributes
    ----------
    rows
        Rows of the trace delivered so far.
    watched
        The query's number (``#`` on the page; an edit keeps it) -> :class:`Watched`, in the order the
        queries were added.
    alone
        Number -> its :class:`Alone` MinTopK (the unshared reference).
    seconds
        Engine seconds of the shared executor so far.
    """

    def __init__(self, trace: Trace, queries: Sequence[engine.Query] = ()) -> None:
        if trace.stream != "single":
            raise ValueError("the shared executor reads object streams (every feature per row); "
                             f"`{trace.name}` is an attribute stream")
        self.trace = trace
        self.shared = SharedTopK()
        self.rows = 0
        self.watched: dict[int, Watched] = {}
        self.alone: dict[int, Alone] = {}
        self.numbered = 0  # numbers given so far
        self.seconds = 0.0
        self.points: deque[dict[str, Any]] = deque(maxlen=HISTORY)
        _load_kernels(trace)
        for query in queries:
            self.add(query)

    @property
    def done(self) -> bool:
        return self.rows >= len(self.trace)

    @property
    def queries(self) -> list[engine.Query]:
        return [w.query for w in self.watched.values()]

    def add(self, query: engine.Query) -> int:
        """Watch one more query from the current row on; the others go on undisturbed. Returns its number."""
        if len(self.watched) >= MAX_QUERIES:
            raise ValueError(f"the watch list holds at most {MAX_QUERIES} queries: remove one first")
        number, self.numbered = self.numbered, self.numbered + 1
        self.watched[number], self.alone[number] = self._start(query)
        return number

    def edit(self, number: int, query: engine.Query) -> None:
        """Put ``query`` in place of query ``number``, which keeps its number and place: it answers from its
        next slide boundary, as an added query does. A query refused leaves the old one watched."""
        replaced = self.watched[number].handle
        self.watched[number], self.alone[number] = self._start(query)
        self.shared.remove(replaced)

    def _start(self, query: engine.Query) -> tuple[Watched, Alone]:
        """``query`` in the shared executor and in a MinTopK of its own, from the current row on."""
        if query.dimensions != len(self.trace.features):
            raise ValueError(f"the query has {query.dimensions} weight(s) but `{self.trace.name}` has "
                             f"{len(self.trace.features)} feature(s)")
        if (problem := boundaries_problem(self.trace, query)) is not None:
            raise ValueError(problem)
        handle = self.shared.add(query)
        since = self.shared.since(handle)
        try:
            alone = Alone(self.trace, query, since, self.rows)
            alone.advance(self.rows)
        except ValueError:  # the stream refused (a time going backwards, a value not finite): not watched
            self.shared.remove(handle)
            raise
        return Watched(handle, query, since), alone

    def remove(self, number: int) -> None:
        """Stop watching one query; the others go on undisturbed."""
        self.shared.remove(self.watched[number].handle)
        del self.watched[number], self.alone[number]

    def restarted(self) -> "Watch":
        """The same queries under the same numbers, from row 0 (every one then holds whole windows);
        a query added next takes the number it would have taken before."""
        watch = Watch(self.trace)
        for number, watched in self.watched.items():
            watch.watched[number], watch.alone[number] = watch._start(watched.query)
        watch.numbered = self.numbered
        return watch

    def next_stop(self) -> int:
        """The row count at which the next slide boundary of any query is passed."""
        t, rows, stops = self.trace.t, self.rows, []
        for q in self.queries:
            if q.kind == "count":
                stops.append((rows // q.slide + 1) * q.slide)
            else:
                boundary = (int(t[max(rows - 1, 0)]) // q.slide + 1) * q.slide
                stops.append(due_row(t, q, boundary))
        return min([len(self.trace), *stops])

    def advance(self, rows: int) -> list:
        """Deliver the rows up to ``rows`` to every engine; the shared executor's results."""
        rows = min(rows, len(self.trace))
        if rows <= self.rows:
            return []
        part = slice(self.rows, rows)
        start = perf_counter()
        results = self.shared.process(self.trace.ids[part], self.trace.t[part], self.trace.x[part])
        self.seconds += perf_counter() - start
        self.rows = rows
        for alone in self.alone.values():
            alone.advance(rows)
        stats = self.shared.stats()
        self.points.append({"row": rows, "structure": "shared (one executor)", "records": stats["candidates"]})
        self.points.append({"row": rows, "structure": "one MinTopK per query",
                            "records": sum(a.engine.stats()["candidates"] for a in self.alone.values())})
        return results

    def step(self) -> int:
        """Deliver rows up to the next slide boundary of any query; rows delivered."""
        before = self.rows
        self.advance(self.next_stop())
        return self.rows - before

    def play(self, objects: int, budget: float, clock: Callable[[], float] = perf_counter) -> int:
        """Deliver up to ``objects`` rows in chunks, stopping once ``budget`` seconds have passed."""
        start, target = clock(), min(len(self.trace), self.rows + objects)
        before = self.rows
        while self.rows < target:
            self.advance(min(target, self.rows + CHUNK))
            if clock() - start >= budget:
                break
        return self.rows - before

    # ------------------------------------------------------------ what the page shows

    def answer(self, number: int) -> engine.Answer | None:
        """The query's latest answer (``None`` before its first boundary)."""
        result = self.shared.topk(self.watched[number].handle)
        return None if result is None else result.answer

    def table(self, end_text: Callable[[int, str], str] = lambda end, kind: str(end)) -> pd.DataFrame:
        """One row per query: its parameters, the row its windows start at, its latest slide (numbered from
        its first boundary) and end, the answer in short, the candidates of its MinTopK alone, and whether
        that MinTopK's answer is the same."""
        t_unit, features = self.trace.t_unit, self.trace.features
        rows = []
        for number, watched in self.watched.items():
            q, result, alone = watched.query, self.shared.topk(watched.handle), self.alone[number]
            ids = [] if result is None else result.answer.ids.tolist()
            scores = [] if result is None else result.answer.scores.tolist()
            more = f" … (+{len(ids) - SHOWN_IDS})" if len(ids) > SHOWN_IDS else ""
            mine = alone.engine.topk()
            same = result is not None and mine.ids.tolist() == ids
            rows.append({
                "#": number,
                "query": f"{describe_weights(dict(zip(features, q.weights)))} · k = {q.k} · "
                         f"{typed(q.window, q.kind, t_unit)} / {typed(q.slide, q.kind, t_unit)} {q.kind}",
                "from row": watched.since,
                "slide": None if result is None else result.slide,
                "end": "–" if result is None else end_text(result.end, q.kind),
                "top ids": " ".join(str(i) for i in ids[:SHOWN_IDS]) + more,
                "scores": " ".join(score_text(s) for s in scores[:SHOWN_IDS]) + more,
                "alone": int(alone.engine.stats()["candidates"]),
                "= MinTopK": "–" if result is None else "✓" if same else "✗ differs",
            })
        return pd.DataFrame(rows, columns=["#", "query", "from row", "slide", "end", "top ids", "scores", "alone",
                                           "= MinTopK"])

    def totals(self) -> dict[str, float]:
        """Records and modelled bytes of the shared executor and of one MinTopK per query; seconds."""
        stats = self.shared.stats()
        alone = [a.engine.stats() for a in self.alone.values()]
        return {"records": stats["candidates"], "bytes": stats["bytes"], "families": stats["families"],
                "groups": stats["groups"], "alone_records": sum(s["candidates"] for s in alone),
                "alone_bytes": sum(s["bytes"] for s in alone), "seconds": self.seconds,
                "alone_seconds": sum(a.seconds for a in self.alone.values())}

    def points_frame(self) -> pd.DataFrame:
        return pd.DataFrame(list(self.points), columns=["row", "structure", "records"])


def records_chart(frame: pd.DataFrame) -> alt.Chart:
    """Records held against the stream position: the shared executor and one MinTopK per query.

    >>> frame = pd.DataFrame({"row": [10, 10], "structure": ["shared (one executor)", "one MinTopK per query"],
    ...                       "records": [4, 7]})
    >>> records_chart(frame).mark.type
    'line'
    """
    return alt.Chart(frame, title=alt.TitleParams("Records held", anchor="start", fontSize=14)).mark_line(
        interpolate="step-after").encode(
        x=alt.X("row:Q", title="rows delivered", axis=alt.Axis(format="~s")),
        y=alt.Y("records:Q", title="records"),
        color=alt.Color("structure:N", title=None, legend=alt.Legend(orient="top")),
        tooltip=["structure:N", alt.Tooltip("row:Q", format=","), alt.Tooltip("records:Q", format=",")],
    ).properties(height=240)
