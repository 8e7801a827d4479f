"""Engines running in a dashboard session: one setup, stepped slide by slide through a trace."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any, Callable, Iterator

import numpy as np
import pandas as pd

import engine
from engine import metrics
from engine.attributes import aggregate
from engine.warmup import load_kernels
from app.data import Trace

REFERENCE = "oracle"
"""The exact reference of object streams."""
REFERENCES = {"single": "oracle", "incomplete": "oracle-incomplete"}
"""The exact reference per kind of stream (the pipeline's choice too)."""
HISTORY_SLIDES = 1000
"""Slides of metrics a :class:`LiveRun` keeps (the page draws the last 500): playing a long trace
with a short slide must not grow the session's memory with every slide."""


def reference_for(trace: Trace) -> str:
    """Name of the exact algorithm every other one is compared with on ``trace``."""
    return REFERENCES[trace.stream]


@dataclass(frozen=True)
class Setup:
    """Everything the engines depend on; a different setup means new engines.

    Attributes
    ----------
    dataset
        Name of the trace.
    query
        The continuous query.
    algorithms
        Registry names to show, in display order.
    params
        Algorithm name -> parameters passed to :func:`engine.create`.
    """

    dataset: str
    query: engine.Query
    algorithms: tuple[str, ...]
    params: dict[str, dict[str, Any]] = field(default_factory=dict)


def weight_vectors(count: int, dimensions: int, seed: int = 0, lowest: float = -1.0) -> np.ndarray:
    """``count`` weight vectors drawn uniformly in ``[lowest, 1]^dimensions`` (the SAO paper's queries).

    >>> weight_vectors(3, 2).shape, bool((weight_vectors(5, 3, lowest=0.0) >= 0).all())
    ((3, 2), True)
    """
    return np.random.default_rng(seed).uniform(lowest, 1.0, size=(count, dimensions))


def first_boundary(trace: Trace, query: engine.Query) -> int:
    """Time windows: where the first slide of the whole trace starts (``floor(t0 / s) * s``)."""
    return int(trace.t[0]) // query.slide * query.slide if len(trace) else 0


def warm_start_slide(trace: Trace, query: engine.Query, rows: int) -> int:
    """The slide to start new engines at so that they reach the window ending within ``rows`` rows.

    Exact answers depend only on the objects of the window, so new engines need not replay
    the trace from its start: they start one slide before the last full window that ends
    within the first ``rows`` rows (``O(window)`` work at any position instead of
    ``O(position)``). Approximate engines (SAO, approx) then hold what they would hold had
    the stream begun there.

    Examples
    --------
    >>> from app.data import synthetic_uniform
    >>> q = engine.Query(weights=[1.0, 1.0, 1.0], k=3, window=1000, slide=50)
    >>> warm_start_slide(synthetic_uniform(), q, 5000), warm_start_slide(synthetic_uniform(), q, 900)
    (79, 0)
    """
    if rows <= 0 or not len(trace):
        return 0
    if query.kind == "count":
        return max(0, (rows - query.window) // query.slide - 1)
    last = int(trace.t[min(rows, len(trace)) - 1])
    return max(0, (last - query.window - first_boundary(trace, query)) // query.slide - 1)


class LiveRun:
    """The selected algorithms plus the exact reference (the oracle) over one trace.

    Parameters
    ----------
    trace
        The stream to replay.
    setup
        Query and algorithms; :func:`engine.create` raises ``ValueError`` on a bad one.

    Attributes
    ----------
    slide
        Number of slides processed so far; the last one is slide ``slide - 1`` (slides are
        numbered from 0 at the start of the trace, as in the pipeline's ``slide`` column).
    rows
        Number of trace rows those slides held.
    end
        Boundary of the last processed slide (``None`` before the first).
    answers
        Algorithm -> its current :class:`engine.Answer`.
    exact
        The oracle's current answer.
    history
        One dict per (slide, algorithm) of the last :data:`HISTORY_SLIDES` slides: ``slide, end,
        algorithm, candidates, retained, bytes, seconds, precision, error, measured_bytes``
        (``slide`` numbered as above).
    """

    def __init__(self, trace: Trace, setup: Setup, first_slide: int = 0) -> None:
        self.trace = trace
        self.setup = setup
        q = setup.query
        self.reference = reference_for(trace)
        for name in dict.fromkeys((self.reference, *setup.algorithms)):
            load_kernels(name, len(q.weights))
        self.engines = {name: engine.create(name, q, **setup.params.get(name, {}))
                        for name in dict.fromkeys((self.reference, *setup.algorithms))}
        self._error = metrics.absolute_error if trace.stream == "incomplete" else metrics.relative_error
        self.slide, self.rows = 0, 0
        if first_slide > 0:  # start at a later slide boundary (see warm_start_slide); slides keep their numbers
            if q.kind == "count":
                self.rows = min(len(trace), first_slide * q.slide)
                start = None
            else:
                start = first_boundary(trace, q) + first_slide * q.slide
                self.rows = int(np.searchsorted(trace.t, start, side="left"))
            self.slide = first_slide
            part = tuple(column[self.rows:] for column in trace.arrays)
            self._slides: Iterator[engine.Batch] = engine.slides(part, q, seq_start=self.rows, start=start)
        else:
            self._slides = engine.slides(trace.arrays, q)
        self._next = next(self._slides, None)
        self.end: int | None = None
        self.answers = {name: engine.Answer.empty() for name in setup.algorithms}
        self.exact = engine.Answer.empty()
        self.history: deque[dict[str, Any]] = deque(maxlen=HISTORY_SLIDES * len(setup.algorithms))

    @property
    def oracle(self) -> engine.Algorithm:
        """The exact reference engine (also shown when it is selected)."""
        return self.engines[self.reference]

    @property
    def done(self) -> bool:
        """Whether the trace has no complete slide left."""
        return self._next is None

    def step(self, slides: int = 1) -> int:
        """Process up to ``slides`` more slides; returns how many there were."""
        count = 0
        while count < slides and self._next is not None:
            self._advance()
            count += 1
        return count

    def replay(self, rows: int) -> int:
        """Process every slide that ends within the first ``rows`` rows; returns the count.

        Used after a query change to bring new engines to where the old ones were.
        """
        count = 0
        while self._next is not None and self.rows + len(self._next) <= rows:
            self._advance()
            count += 1
        return count

    def replay_steps(self, rows: int, chunk: int = 20) -> Iterator[float]:
        """:meth:`replay` in chunks of ``chunk`` slides, yielding the fraction of ``rows`` done.

        Lets the page draw a progress bar and stop (cancel) between chunks.
        """
        while self._next is not None and self.rows + len(self._next) <= rows:
            for _ in range(chunk):
                if self._next is None or self.rows + len(self._next) > rows:
                    break
                self._advance()
                yield self.rows / max(1, rows)

    def play(self, slides: int, budget: float, clock: Callable[[], float] = perf_counter) -> int:
        """Process up to ``slides`` slides but stop once ``budget`` seconds have passed.

        Playback calls this once per tick so that a tick never outlasts its time and a pause
        takes effect at the next tick. Returns the number of slides processed (at least one
        when any is left).
        """
        start = clock()
        count = 0
        while count < slides and self._next is not None:
            self._advance()
            count += 1
            if clock() - start >= budget:
                break
        return count

    @property
    def current(self) -> int | None:
        """Number of the last processed slide (``None`` before the first)."""
        return self.slide - 1 if self.slide else None

    def _advance(self) -> None:
        self._process(self._next)
        self._next = next(self._slides, None)

    def _process(self, batch: engine.Batch) -> None:
        answers, seconds = {}, {}
        for name, alg in self.engines.items():
            start = perf_counter()
            alg.process(batch)
            answers[name] = alg.topk()
            seconds[name] = perf_counter() - start
        self.exact = answers[self.reference]
        for name in self.setup.algorithms:
            stats = self.engines[name].stats()
            self.history.append({
                "slide": self.slide, "end": batch.end, "algorithm": name,
                "candidates": stats["candidates"], "retained": stats["retained"], "bytes": stats["bytes"],
                "measured_bytes": stats.get("measured_bytes", float("nan")), "seconds": seconds[name],
                "precision": metrics.precision(self.exact, answers[name]),
                "error": self._error(self.exact, answers[name])})
            self.answers[name] = answers[name]
        self.slide += 1
        self.rows += len(batch)
        self.end = batch.end

    def metrics_frame(self, last: int) -> pd.DataFrame:
        """The history of the last ``last`` slides as a DataFrame (``ms`` = seconds * 1000)."""
        rows = list(self.history)[-last * len(self.setup.algorithms):] if self.history else []
        frame = pd.DataFrame(rows, columns=["slide", "end", "algorithm", "candidates", "retained", "bytes",
                                            "measured_bytes", "seconds", "precision", "error"])
        return frame.assign(ms=frame["seconds"] * 1e3)

    def window_rows(self) -> tuple[int, int]:
        """Row range ``[lo, hi)`` of the current window (empty before the first slide)."""
        q = self.setup.query
        if self.end is None:
            return 0, 0
        if q.kind == "count":
            return max(0, self.end - q.window), self.rows
        return int(np.searchsorted(self.trace.t, self.end - q.window, side="left")), self.rows

    def window_objects(self) -> int:
        """Objects in the current window: its rows, or on attribute streams (a row per value) its
        distinct ids (``O(window log window)``)."""
        lo, hi = self.window_rows()
        return len(np.unique(self.trace.ids[lo:hi])) if self.trace.stream == "incomplete" else hi - lo

    def window_frame(self, limit: int) -> pd.DataFrame:
        """Objects of the current window (``seq, t, score``), thinned evenly to at most ``limit``.

        Attribute streams: one row per valid object, at its newest tuple (``seq``, ``t``) with
        its current score (the sum of its valid values per stream, weighted).
        """
        q = self.setup.query
        if self.end is None:
            return pd.DataFrame({"seq": [], "t": [], "score": []})
        if self.trace.stream == "incomplete":
            objects = self.objects_frame()
            frame = pd.DataFrame({"seq": objects["seq"], "t": self.trace.t[objects["seq"]], "score": objects["current"]})
            return frame.iloc[np.linspace(0, len(frame) - 1, limit).astype(np.int64)] if len(frame) > limit else frame
        lo, hi = self.window_rows()
        rows = np.arange(lo, hi)
        if len(rows) > limit:
            rows = rows[np.linspace(0, len(rows) - 1, limit).astype(np.int64)]
        return pd.DataFrame({"seq": rows, "t": self.trace.t[rows],
                             "score": engine.score(self.trace.x[rows], q.weights)})

    def objects_frame(self, occurrences: int = 1) -> pd.DataFrame:
        """Attribute streams: every valid object's ``id, seq, current, best`` scores.

        ``current`` weighs the sums of the object's valid values per stream; ``best`` is the
        most it could still reach as EAA bounds it (incomplete-streams paper, 3.2) with
        ``occurrences`` tuples per stream: every stream the object has fewer than
        ``occurrences`` valid tuples in may still bring values up to 1 each.
        """
        lo, hi = self.window_rows()
        trace, d = self.trace, len(self.setup.query.weights)
        weights = np.asarray(self.setup.query.weights)
        if hi <= lo:
            return pd.DataFrame({"id": [], "seq": [], "current": [], "best": []})
        rows = slice(lo, hi)
        objects, sums, newest = aggregate(trace.ids[rows], trace.streams[rows], trace.values[rows],
                                          np.arange(lo, hi), d)
        _, inverse = np.unique(trace.ids[rows], return_inverse=True)
        counts = np.bincount(inverse * d + trace.streams[rows], minlength=len(objects) * d).reshape(len(objects), d)
        current = sums @ weights
        best = current + np.clip(occurrences - counts, 0, None) @ weights
        return pd.DataFrame({"id": objects, "seq": newest, "current": current, "best": best})

    def candidates_frame(self, limit: int) -> pd.DataFrame:
        """Every shown algorithm's candidate objects as rows ``algorithm, seq, t, score``.

        The reference is left out (its candidates are the whole window); each algorithm's set
        is thinned evenly to at most ``limit`` objects. Attribute streams: ``seq`` is the
        object's newest tuple and ``score`` its current score.
        """
        parts = []
        current = None
        if self.trace.stream == "incomplete":
            objects = self.objects_frame()
            current = pd.Series(objects["current"].to_numpy(), index=objects["id"].to_numpy())
        for name in self.setup.algorithms:
            if name == self.reference:
                continue
            seq = np.sort(np.asarray(self.engines[name].candidates(), dtype=np.int64))
            if len(seq) > limit:
                seq = seq[np.linspace(0, len(seq) - 1, limit).astype(np.int64)]
            if current is None:
                scores = engine.score(self.trace.x[seq], self.setup.query.weights)
            else:
                scores = current.reindex(self.trace.ids[seq]).to_numpy()
            parts.append(pd.DataFrame({"algorithm": name, "seq": seq, "t": self.trace.t[seq], "score": scores}))
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
            {"algorithm": [], "seq": [], "t": [], "score": []})

    def layers(self, name: str) -> list[np.ndarray] | None:
        """``seq`` of the objects of each layer of ``name``, best layer first; ``None`` without layers.

        An algorithm may offer ``layers()``; SAO reports ``layer_counts`` in its stats and lists
        its candidates layer after layer, which gives the same split (before its layers are
        created, its buffer counts as one layer).
        """
        alg = self.engines[name]
        if self.trace.stream != "single":
            return None
        if callable(getattr(alg, "layers", None)):
            return [np.asarray(seq, dtype=np.int64) for seq in alg.layers()]
        counts = alg.stats().get("layer_counts")
        if not isinstance(counts, list):
            return None
        seq = np.asarray(alg.candidates(), dtype=np.int64)
        if sum(counts) != len(seq):  # the creation buffer, before the layers exist
            return [seq]
        return [part for part in np.split(seq, np.cumsum(counts)[:-1])]

    def layers_frame(self, name: str, features: tuple[int, int], limit: int) -> pd.DataFrame | None:
        """Objects of ``name``'s layers (``layer, seq, a, b``: two chosen feature columns).

        ``None`` when the algorithm keeps no layers (see :meth:`layers`). Each layer is thinned
        to ``limit`` objects.
        """
        layers = self.layers(name)
        if layers is None:
            return None
        parts = []
        for number, seq in enumerate(layers):
            seq = np.sort(seq)
            if len(seq) > limit:
                seq = seq[np.linspace(0, len(seq) - 1, limit).astype(np.int64)]
            parts.append(pd.DataFrame({"layer": number + 1, "seq": seq, "a": self.trace.x[seq, features[0]],
                                       "b": self.trace.x[seq, features[1]]}))
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
            {"layer": [], "seq": [], "a": [], "b": []})

    def any_weights_frame(self, name: str, vectors: np.ndarray, k: int) -> pd.DataFrame:
        """``name`` and the exact reference answering each weight vector at once, from the current window.

        Both answer with ``query(weights, k)`` (no reprocessing); rows ``query, algorithm, ms,
        precision`` (precision of ``name``'s answer against the reference's, 1 for the reference).
        ``ValueError`` when an engine refuses the weights.
        """
        rows = []
        for number, weights in enumerate(np.asarray(vectors, dtype=float), 1):
            start = perf_counter()
            exact = self.oracle.query(list(weights), k)
            exact_ms = (perf_counter() - start) * 1e3
            start = perf_counter()
            got = self.engines[name].query(list(weights), k)
            got_ms = (perf_counter() - start) * 1e3
            rows += [{"query": number, "algorithm": self.reference, "ms": exact_ms, "precision": 1.0},
                     {"query": number, "algorithm": name, "ms": got_ms, "precision": metrics.precision(exact, got)}]
        return pd.DataFrame(rows, columns=["query", "algorithm", "ms", "precision"])

    def answers_frame(self) -> pd.DataFrame:
        """Every shown algorithm's current answer as rows ``algorithm, rank, seq, t, score``."""
        parts = [pd.DataFrame({"algorithm": name, "rank": np.arange(1, len(ans) + 1), "seq": ans.seq,
                               "t": self.trace.t[ans.seq], "score": ans.scores})
                 for name, ans in self.answers.items()]
        return pd.concat(parts, ignore_index=True)
