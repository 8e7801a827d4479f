"""Run the registry's cases: every algorithm beside the oracle and DuckDB SQL, same stream.

For each case the stream is generated (or loaded) once and cut into slides once; the
baselines and every registered algorithm of the case's stream model then run over the same
``Batch`` objects in this process (:func:`benchmarks.common.measure_runs`).  One row per
(case, algorithm): the median objects/s of the timed runs with its spread (every timed row
covers one full window turnover or 200 slides, whichever is more: ``required_slides``; a row
the stream cannot fill that far says ``thin``), the ratio to both
baselines, candidates and retained objects after every timed slide, modelled ``bytes`` and
``measured_bytes`` from ``stats()``, the peak ``tracemalloc`` of the warm-up run, and the
answers' precision against the oracle at every timed slide.  An algorithm that fails or is
too slow gets a row with ``status`` saying why, and the run goes on; so does an exact algorithm
whose answers differ from the oracle's at some timed slide (no ratio, no figure in the report).
"""

from __future__ import annotations

import time
import traceback

import numpy as np

import engine
from benchmarks import workloads
from benchmarks.baselines import DuckDBAttributeWindow, DuckDBWindow
from benchmarks.bench_incomplete import max_occurrences
from benchmarks.common import TooSlow, first_disagreement, measure_runs, required_slides
from benchmarks.registry import Case, algorithms, params_for

SQL = "duckdb-sql"
COLUMNS = ["case", "algorithm", "objects_per_s", "spread_pct", "vs_oracle", "vs_sql", "avg_candidates",
           "avg_retained", "bytes", "measured_bytes", "peak_tracemalloc_bytes", "precision", "status"]
SAO_COLUMNS = ["case", "algorithm", "objects_per_s", "vs_oracle", "filtering_ratio", "avg_error", "max_error",
               "avg_range_error", "query_ms_median", "retained", "measured_bytes", "status"]
INCOMPLETE_COLUMNS = ["case", "algorithm", "objects_per_s", "vs_oracle", "vs_sql", "avg_retained", "precision",
                      "abs_error", "measured_bytes", "status"]


FULL_SETTINGS = {"repeats": 3, "budget": 1.0, "fill_limit": 60.0, "repeat_budget": 20.0, "turnover_limit": 120.0}
QUICK_SETTINGS = {"repeats": 3, "budget": 0.15, "fill_limit": 10.0, "repeat_budget": 5.0, "turnover_limit": 20.0}
"""Per algorithm and case: timed runs; CPU seconds a row may time beyond its minimum of slides (only
where the stream holds more: time windows); the longest one window fill may take (traced); the CPU
seconds all its timed runs may take (fewer runs beyond it); the longest its minimum of timed slides
may take under tracing (beyond it the row is skipped, with the reason, never cut short)."""


def settings(quick: bool) -> dict:
    """The harness' limits for a quick or a full run (:data:`QUICK_SETTINGS`, :data:`FULL_SETTINGS`)."""
    return dict(QUICK_SETTINGS if quick else FULL_SETTINGS)


def stream_for(case: Case, quick: bool, budget_rows: int):
    """The case's stream (one window to fill plus ``budget_rows`` rows to time; a real trace is cut
    to that length, the World Cup sample is replayed whole) and the trace's length (``None``
    for generated streams)."""
    m, options = case.n + budget_rows, dict(case.options)
    if case.workload == "correlated":
        return workloads.correlated(m, streams=case.d, reuse=options["xi"], memory=options["memory"]), None
    if case.workload == "worldcup":
        ids, stream, value, t, _ = workloads.worldcup(case.d)
        return (ids, stream, value, t), len(ids)
    data = workloads.object_stream(case.workload, m, case.n, quick, d=case.d, **options)
    return data, workloads.trace_length(case.workload, quick, **options)


def timed_rows(case: Case) -> int:
    """Rows after the first window: the case's minimum of timed slides
    (:func:`benchmarks.common.required_slides`: one turnover or 200 slides); four windows for
    incomplete streams (precision is averaged over them).  Time windows (``n``, ``s`` in
    milliseconds) take ``s`` rows per slide, more than the trace's rate fills."""
    rows = required_slides(case.n, case.s) * case.s
    return max(rows, 4 * case.n) if case.stream == "incomplete" else rows


def _row(case: Case, name: str, quick: bool) -> dict:
    return {"bench": f"grid-{case.family}", "family": case.family, "sweep": case.sweep, "case": case.label,
            "workload": case.workload, "algorithm": name, "n": case.n, "k": case.k, "s": case.s,
            "cnw": case.n // case.s, "d": case.d, "kind": case.kind, "quick": quick,
            **{f"opt_{k}": v for k, v in case.options}, **{f"param_{k}": v for k, v in case.params}}


def _describe(runs, minimum: int, exact_answers=None) -> dict:
    out = {"objects_per_s": runs.median, "objects_per_s_min": min(runs.objects_per_s),
           "objects_per_s_max": max(runs.objects_per_s), "spread_pct": runs.spread_pct,
           "runs": len(runs.objects_per_s), "timed_slides": runs.timed_slides,
           "required_slides": minimum, "thin": runs.timed_slides < minimum,
           "avg_candidates": float(np.mean(runs.candidates)) if runs.candidates else None,
           "max_candidates": int(max(runs.candidates)) if runs.candidates else None,
           "avg_retained": float(np.mean(runs.retained)) if runs.retained else None,
           "bytes": runs.stats.get("bytes"), "measured_bytes": runs.stats.get("measured_bytes"),
           "peak_tracemalloc_bytes": runs.peak_tracemalloc_bytes, "fill_seconds": runs.fill_seconds}
    for key in ("filtering_ratio", "rescans", "partitions"):
        if key in runs.stats:
            out[key] = runs.stats[key]
    if exact_answers is not None:
        shared = list(zip(exact_answers, runs.answers))
        out["precision"] = float(np.mean([engine.metrics.precision(e, g) for e, g in shared]))
        out["abs_error"] = float(np.mean([engine.metrics.absolute_error(e, g) for e, g in shared]))
        timed = min(len(exact_answers), len(runs.answers))
        out["agrees_with_oracle"] = first_disagreement(exact_answers[:timed], runs.answers[:timed]) is None
    return out


def run_case(case: Case, quick: bool, log=print) -> list[dict]:
    """Every algorithm of the case's stream model, with both baselines; one row each."""
    registered = {info.name: info for info in engine.available()}
    oracle_name = "oracle" if case.stream == "single" else "oracle-incomplete"
    others = [info.name for info in algorithms(case.stream, case.family, case.only) if info.name != oracle_name]
    if oracle_name not in registered or (case.family == "sao" and not others):
        log(f"  skip {case.label}: no {oracle_name if oracle_name not in registered else 'index'} registered")
        return []
    cfg = {**settings(quick), **dict(case.limits)}
    query = case.query()
    data, trace_rows = stream_for(case, quick, timed_rows(case))
    batches = list(engine.slides(data, query))
    warmup = case.n // case.s
    minimum = required_slides(case.n, case.s)
    if len(batches) <= warmup:
        log(f"  skip {case.label}: the stream holds only {len(batches)} slides")
        return []
    names = [oracle_name] + ([SQL] if case.family != "sao" and (not case.only or SQL in case.only) else []) + others
    # Repeated (object, stream) pairs (World Cup clients) need EAA's per-window promise of the
    # measured bound; streams without repeats (the paper's generator) keep its tighter default.
    repeats = max_occurrences(data[0], data[1], np.arange(len(data[0])), query.window) \
        if case.stream == "incomplete" else 1
    measured = {"occurrences": repeats, "occurrences_per": "window"} if repeats > 1 else {}
    rows, found, reference = [], {}, None
    for name in names:
        row = _row(case, name, quick)
        if trace_rows:
            row["data_rows"] = trace_rows
            row["n_frac_of_data"] = case.n / trace_rows
        try:
            if name == SQL:
                baseline = DuckDBAttributeWindow if case.stream == "incomplete" else DuckDBWindow
                factory = lambda: baseline(query, data)  # noqa: E731
                row["exact"] = True
            else:
                info = registered[name]
                params = {**{k: v for k, v in measured.items() if k in info.defaults}, **params_for(info, case)}
                factory = lambda name=name, params=params: engine.create(name, query, **params)  # noqa: E731
                row["exact"] = info.exact
                row.update({f"param_{k}": v for k, v in params.items()})
            started = time.perf_counter()
            runs = measure_runs(factory, batches, warmup, min_slides=minimum, **cfg)
            if name == oracle_name:
                reference = runs
            row.update(_describe(runs, minimum, exact_answers=None if reference is None else reference.answers[:runs.timed_slides]))
            if name == SQL:
                row["load_seconds"] = factory().load_seconds
            if case.family == "sao" and name != oracle_name:
                row.update(index_quality(factory, batches, warmup, runs.timed_slides, query, quick))
            row["wall_seconds"] = time.perf_counter() - started
            if row["exact"] and row.get("agrees_with_oracle") is False:   # wrong answers get no figure
                row["status"] = "error: an exact algorithm's answers differ from the oracle's"
            else:
                row["status"] = "ok"
                found[name] = row
        except TooSlow as slow:
            row["status"] = f"skipped: {slow}"
        except Exception as error:  # an algorithm under construction must not stop the run
            row["status"] = f"error: {type(error).__name__}: {error}"
            log(traceback.format_exc(limit=3))
        rows.append(row)
    for row in rows:
        for base, key in ((oracle_name, "vs_oracle"), (SQL, "vs_sql")):
            if row.get("status") == "ok" and base in found:
                row[key] = row["objects_per_s"] / found[base]["objects_per_s"]
    return rows


def index_quality(factory, batches, warmup, slides, query: engine.Query, quick: bool) -> dict:
    """SAO paper's quality figures: 100 random queries (weights uniform in [-1, 1]) at steady state.

    The index and an oracle run over the same slides; then each query is answered by both
    (``query(weights, K)``) and the weighted relative error (``u_i = 1``) and its
    range-normalised variant are averaged; the median query time of the index is reported.
    """
    index, oracle = factory(), engine.create("oracle", query)
    for batch in batches[:warmup + slides]:
        index.process(batch)
        oracle.process(batch)
    window = np.concatenate([b.x for b in batches[:warmup + slides]])[-query.window:]
    rng = np.random.default_rng(7)
    errors, ranged, times = [], [], []
    for _ in range(20 if quick else 100):
        weights = rng.uniform(-1.0, 1.0, query.dimensions)
        exact = oracle.query(weights, query.k)
        start = time.perf_counter()
        got = index.query(weights, query.k)
        times.append(time.perf_counter() - start)
        errors.append(engine.metrics.relative_error(exact, got))
        scores = window @ weights
        ranged.append(engine.metrics.range_error(exact, got, float(scores.min()), float(scores.max())))
    stats = index.stats()
    return {"avg_error": float(np.mean(errors)), "max_error": float(np.max(errors)),
            "avg_range_error": float(np.mean(ranged)),
            "query_ms_median": 1000 * float(np.median(times)), "queries": len(errors),
            "filtering_ratio": stats.get("filtering_ratio"), "retained": stats.get("retained")}
