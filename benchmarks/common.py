"""Shared measuring tools: every competitor runs in the same process on the same batches.

Two layers live here:

* the small helpers the per-algorithm modules (``bench_*.py``) use: :func:`measure`,
  :func:`peak_memory`, :func:`table` and two tiny streams;
* the harness' protocol (:func:`measure_runs`): a *warm-up run* under ``tracemalloc`` that
  also records candidates after every slide and every answer, then several *timed runs* of a
  fresh instance over the same batches; the figure is the median objects/s of the timed runs,
  with their spread.  Times are CPU seconds of this process (``time.process_time``): the
  machine is shared, and CPU time is what the algorithm costs, not how busy the neighbours are.
"""

from __future__ import annotations

import datetime
import functools
import os
import platform
import subprocess
import sys
import time
import tracemalloc
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

import engine
from engine.warmup import load_kernels

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

DATA_ENV = "TOPK_DATA"
DATA_SOURCES = """\
The public traces larger than sample_data/ (the benchmarks fall back to sample_data/ for what it holds):
  stock/{spy,bac}_201310DD_trade.zip  US equity trade ticks 7-11 Oct 2013: AlgoSeek data as distributed
                                      with the QuantConnect Lean engine (github.com/QuantConnect/Lean,
                                      Data/equity/usa/tick/<symbol>/<date>_trade.zip)
  taxi/yellow_tripdata_sample_2019-MM.csv.gz  NYC TLC yellow trips, 10,000 sampled per month (NYC Open
                                      Data, as sampled in the great_expectations repository)
  worldcup/wc_day6_1_sample.tar.bz2   1998 World Cup access log sample (M. Arlitt and T. Jin, ITA)"""


def data_dir() -> str:
    """The directory of the public traces: ``$TOPK_DATA`` (``python -m benchmarks.run --data-dir``),
    default ``var/data`` in the repository; see :data:`DATA_SOURCES` for what it holds."""
    return os.environ.get(DATA_ENV) or os.path.join(ROOT, "var", "data")


@dataclass
class Measurement:
    objects_per_s: float
    slides_per_s: float
    avg_candidates: float
    max_candidates: int
    model_bytes: int
    stats: dict
    answers: list                         # the answer after every timed slide


def uniform_stream(m: int, d: int = 1, seed: int = 1):
    rng = np.random.default_rng(seed)
    return np.arange(m), np.arange(m), rng.random((m, d))


def decreasing_stream(m: int, d: int = 1, seed: int = 1):
    rng = np.random.default_rng(seed)
    trend = -np.arange(m, dtype=np.float64) / m
    return np.arange(m), np.arange(m), (trend[:, None] + 1e-3 * rng.random((m, d)))


def timed_pass(alg, filling: list, timed: list, after_slide: Callable[[object, object], None] | None = None) -> float:
    """Answer every slide of ``filling`` untimed, then of ``timed``: the CPU seconds of ``process`` +
    ``topk`` over ``timed``; ``after_slide(alg, answer)`` runs untimed after each timed slide."""
    for batch in filling:
        alg.process(batch)
        alg.topk()
    elapsed = 0.0
    for batch in timed:
        start = time.process_time()
        alg.process(batch)
        answer = alg.topk()
        elapsed += time.process_time() - start
        if after_slide is not None:
            after_slide(alg, answer)
    return elapsed


def first_disagreement(expected: list, got: list) -> int | None:
    """The first slide where ``got``'s answer is not ``expected``'s (scores rank by rank, equal
    scores may swap ids; a different length disagrees), ``None`` when every slide agrees.  A
    timed algorithm's answers are checked against the oracle's, so that a faster algorithm
    answering wrongly is reported, not ranked.

    >>> a = engine.Answer(np.array([1, 2]), np.array([3.0, 2.0]), np.array([1, 2]))
    >>> b = engine.Answer(np.array([1, 5]), np.array([3.0, 1.0]), np.array([1, 5]))
    >>> first_disagreement([a, a], [a, a]), first_disagreement([a, a], [a, b]), first_disagreement([a], [a, a])
    (None, 1, 1)
    """
    for slide, (want, answer) in enumerate(zip(expected, got)):
        if len(want) != len(answer) or engine.metrics.disagreements(want, answer).any():
            return slide
    return None if len(expected) == len(got) else min(len(expected), len(got))


def exact_answers(query: engine.Query, batches: list, warmup: int) -> list:
    """The oracle's answers after every slide of ``batches`` past the first ``warmup`` (untimed)."""
    oracle, answers = engine.create("oracle", query), []
    for number, batch in enumerate(batches):
        oracle.process(batch)
        answer = oracle.topk()
        if number >= warmup:
            answers.append(answer)
    return answers


def agreement(expected: list | None, got: list) -> dict:
    """Row fields for :func:`first_disagreement`: ``agrees_with_oracle`` and, when it does not,
    a ``status`` that keeps the row out of every comparison (``expected`` ``None``: not checked)."""
    if expected is None:
        return {}
    slide = first_disagreement(expected, got)
    if slide is None:
        return {"agrees_with_oracle": True}
    return {"agrees_with_oracle": False, "status": f"error: answer differs from the oracle's at timed slide {slide}"}


def measure(name: str, query: engine.Query, batches: list, warmup: int, params=None) -> Measurement:
    """Process ``batches``, answering every slide; time (CPU) only the slides after ``warmup``
    (``name``'s kernels loaded first: :func:`engine.warmup.load_kernels`)."""
    load_kernels(name, **(params or {}))
    alg = engine.create(name, query, **(params or {}))
    timed = batches[warmup:]
    sizes, answers = [], []

    def after_slide(alg, answer):
        sizes.append(alg.stats()["candidates"])
        answers.append(answer)

    elapsed = timed_pass(alg, batches[:warmup], timed, after_slide)
    objects = sum(len(b) for b in timed)
    stats = alg.stats()
    return Measurement(objects / elapsed, len(timed) / elapsed, float(np.mean(sizes)), int(max(sizes)),
                       stats["bytes"], stats, answers)


def peak_memory(name: str, query: engine.Query, batches: list, params=None) -> int:
    """Peak bytes allocated (tracemalloc) while running over ``batches``, input excluded."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    alg = engine.create(name, query, **(params or {}))
    for batch in batches:
        alg.process(batch)
        alg.topk()
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return peak


def table(rows: list[dict], columns: list[str]) -> str:
    """A plain-text table of ``rows`` restricted to ``columns``."""
    def cell(value):
        if isinstance(value, float):
            return f"{value:,.1f}" if abs(value) >= 10 else f"{value:.2f}"
        return str(value)
    cells = [[cell(row.get(c, "")) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) if cells else len(c) for i, c in enumerate(columns)]
    lines = ["  ".join(c.rjust(w) for c, w in zip(columns, widths))]
    lines += ["  ".join(v.rjust(w) for v, w in zip(r, widths)) for r in cells]
    return "\n".join(lines)


# --------------------------------------------------------------------------- the harness protocol

class TooSlow(Exception):
    """A run exceeded its CPU limit; the case is reported as skipped, with the reason."""


@dataclass
class Runs:
    """What :func:`measure_runs` found for one algorithm on one case."""

    objects_per_s: list[float]            # one figure per timed run
    timed_slides: int
    timed_objects: int
    candidates: list[int]                 # after every timed slide of the warm-up run
    retained: list[int]
    answers: list                         # engine.Answer after every timed slide of the warm-up run
    stats: dict                           # stats() at the end of the warm-up run
    peak_tracemalloc_bytes: int
    fill_seconds: float                   # CPU seconds to fill the first window (warm-up run, traced)
    extra: dict = field(default_factory=dict)

    @property
    def median(self) -> float:
        return float(np.median(self.objects_per_s))

    @property
    def spread_pct(self) -> float:
        """``(max - min) / median`` of the timed runs, in percent."""
        return 100.0 * (max(self.objects_per_s) - min(self.objects_per_s)) / self.median if self.median else 0.0


def _light_stats(alg) -> dict:
    """``candidates`` and ``retained`` without the deep memory walk of the public ``stats()``."""
    inner = getattr(alg, "_stats", None)
    return inner() if inner is not None else alg.stats()


MIN_TIMED_SLIDES = 200
"""The fewest timed slides of a harness row: with one full window turnover (``n / s`` slides,
:func:`required_slides`) every timed row pays each periodic cost (partition rebuilds, rescans,
expiring candidates) at least once."""


def required_slides(window: int, slide: int) -> int:
    """Slides a timed row must cover: one full window turnover ``ceil(n / s)`` or
    :data:`MIN_TIMED_SLIDES`, whichever is more (time windows: ``n`` and ``s`` in time units).

    >>> required_slides(100_000, 10), required_slides(100_000, 1_000), required_slides(1_000, 1_000)
    (10000, 200, 200)
    """
    return max(-(-int(window) // int(slide)), MIN_TIMED_SLIDES)


def compiled_kernels() -> int:
    """Signatures of the engine's compiled kernels in this process so far (compiled, or loaded
    from numba's cache); 0 with ``NUMBA_DISABLE_JIT=1``."""
    from numba.core.registry import CPUDispatcher

    return sum(len(value.overloads) for name, module in list(sys.modules.items())
               if name.startswith("engine.kernels.") for value in vars(module).values()
               if isinstance(value, CPUDispatcher))


def measure_runs(factory: Callable[[], object], batches: list, warmup: int, *,
                 kernels: Callable[[], int] = compiled_kernels, **limits) -> Runs:
    """:func:`measure_once`; if its warm-up run was too slow while ``kernels`` were compiled or
    loaded (a fresh clone's first run, numba's cache empty), once more: the limits are for the
    algorithm's work, not for the compiler's."""
    compiled = kernels()
    try:
        return measure_once(factory, batches, warmup, **limits)
    except TooSlow:
        if kernels() == compiled:
            raise
        return measure_once(factory, batches, warmup, **limits)


def measure_once(factory: Callable[[], object], batches: list, warmup: int, *, repeats: int,
                 budget: float, min_slides: int = MIN_TIMED_SLIDES, fill_limit: float = 120.0,
                 repeat_budget: float = 60.0, turnover_limit: float = float("inf")) -> Runs:
    """Warm-up run (traced) then up to ``repeats`` timed runs of fresh instances from ``factory``.

    ``batches[:warmup]`` fill the first window untimed in every run; then slides are timed
    (``process`` + ``topk``, CPU seconds): always ``min_slides`` of them (or every slide there
    is), and more while the ``budget`` lasts: the budget stops a row only after its minimum.
    The timed runs process exactly as many slides as the warm-up run did.  A warm-up run whose
    fill takes more than ``fill_limit`` CPU seconds, or whose ``min_slides`` would take more than
    ``turnover_limit``, raises :class:`TooSlow` (a skipped row says so; no row is ever cut
    short of its minimum).  An algorithm whose timed runs would take more than ``repeat_budget``
    seconds in all gets fewer of them (at least one; ``Runs.objects_per_s`` has one figure per run).
    """
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    try:
        alg = factory()
        start = time.process_time()
        for batch in batches[:warmup]:
            alg.process(batch)
            alg.topk()
            if time.process_time() - start > fill_limit:
                raise TooSlow(f"filling one window took over {fill_limit:.0f} s of CPU")
        fill = time.process_time() - start
        candidates, retained, answers = [], [], []
        spent, slides = 0.0, 0
        for batch in batches[warmup:]:
            start = time.process_time()
            alg.process(batch)
            answer = alg.topk()
            spent += time.process_time() - start
            answers.append(answer)
            light = _light_stats(alg)
            candidates.append(light.get("candidates") or 0)
            retained.append(light.get("retained") or 0)
            slides += 1
            if slides < min_slides and spent > turnover_limit:
                raise TooSlow(f"{slides} of the {min_slides} slides of one turnover took over "
                              f"{turnover_limit:.0f} s of CPU (traced)")
            if slides >= min_slides and spent >= budget / 3:   # tracing slows Python ~3x
                break
        peak = tracemalloc.get_traced_memory()[1] - base
        stats = alg.stats()
    finally:
        tracemalloc.stop()
    del alg
    timed = batches[warmup:warmup + slides]
    objects = sum(len(b) for b in timed)
    rates = []
    one_run = (fill + spent) / 2             # tracemalloc roughly doubles the cost of Python code
    repeats = max(1, min(repeats, int(repeat_budget / max(one_run, 1e-9))))
    for _ in range(repeats):
        elapsed = timed_pass(factory(), batches[:warmup], timed)
        rates.append(objects / elapsed if elapsed > 0 else float("inf"))
    return Runs(rates, slides, objects, candidates, retained, answers, stats, peak, fill)


# --------------------------------------------------------------------------- provenance

@functools.cache
def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


OUTPUTS = (":!benchmarks/results", ":!docs/REPORT.md", ":!docs/report")
"""What a benchmark run writes: changes there do not make the measured code dirty."""


def git_commit() -> str:
    """The commit of the working tree (``+dirty`` when its code has uncommitted changes)."""
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                                check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", ".", *OUTPUTS], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
        return commit + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine_info() -> dict:
    """When and where a benchmark ran: every stored result row carries these fields."""
    try:
        load = os.getloadavg()
    except OSError:
        load = (float("nan"),) * 3
    return {"when": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "cores": os.cpu_count(), "cpu_model": cpu_model(), "python": platform.python_version(),
            "machine": platform.machine(), "commit": git_commit(),
            "load_1m": round(load[0], 2), "load_5m": round(load[1], 2)}
