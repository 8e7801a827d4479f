"""MinTopK and PreTopK: throughput against the oracle, PreTopK's cost against k, response times under non-uniform arrival.

Three sections (column ``section``), all on uniformly random scores (d = 1):

* ``foundation``: mintopk, pretopk and the oracle (every timed answer checked against the
  oracle's: ``agrees_with_oracle``; a row that disagrees is an error, never a figure).  Targets (issue 2): mintopk >= 10x the
  oracle's objects/s at n=100,000, s=1,000, k=10 and >= 2x at n=10,000, s=10, k=10; the
  super-top-k list's average size against k and against the expected ``k * H(n/s)``; both
  memory figures (modelled ``bytes`` and ``measured_bytes``, in bytes) and the tracemalloc peak.
* ``pretopk-k``: PreTopK's cost per offered object (``prefilter=False``: every object is offered
  to all ``C_nw`` windows) at fixed ``C_nw = 100``, for k in {1, 10, 100, 1000} at ``s = 100``
  and for k in {1, 10, 100} at ``s = 10 k``.  With heaps and reference counts an object costs
  ``C_nw`` comparisons plus ``O(log k)`` per window it enters (``entries_per_object``, about
  ``(k / s)(1 + ln(C_nw s / k))`` on i.i.d. scores: ``expected_entries``): at a fixed ``k / s``
  ``us_per_object`` may grow at most logarithmically in k (issue 12); at fixed ``s`` the
  entries grow with ``k / s`` as well.  MinTopK on the same runs for comparison.
* ``arrival``: the MinTopK paper's Fig. 13, response time per window under non-uniform arrival:
  the shipped SPY day (regular hours) by its time stamps, time windows of 1,000 s, slides of 1,
  10 and 100 s, k = 1,000; SMA, PreTopK and MinTopK; the CPU time of ``process`` + ``topk`` at
  each timed slide: its mean, standard deviation (``response_cv`` = std / mean), minimum and
  maximum, with the objects per slide.

Every timed section covers one full window turnover or 200 slides, whichever is more
(``benchmarks.common.required_slides``); ``timed_slides`` says how many.  Every algorithm's
compiled kernels are loaded before it is timed (``engine.warmup.load_kernels``), and every timed
answer is checked against the oracle's (``agrees_with_oracle``; a row that disagrees is an
error, never a figure).
"""

from __future__ import annotations

import time

import numpy as np

import engine
from benchmarks import workloads
from benchmarks.common import agreement, exact_answers, measure, peak_memory, required_slides, table, uniform_stream
from engine.warmup import load_kernels

CASES = [(100_000, 1_000, 10), (10_000, 10, 10), (100_000, 100, 10), (100_000, 1_000, 100), (10_000, 1_000, 10)]
ALGORITHMS = ["oracle", "mintopk", "pretopk"]
PRETOPK_KS = (1, 10, 100, 1000)

COLUMNS = ["section", "case", "algorithm", "objects_per_s", "vs_oracle", "us_per_object", "entries_per_object",
           "expected_entries", "timed_slides", "response_ms_mean", "response_ms_std", "response_cv",
           "response_ms_min", "response_ms_max",
           "avg_candidates_per_k", "expected_mtk_per_k", "max_candidates", "bytes", "measured_bytes", "peak_bytes"]



def foundation(quick: bool) -> list[dict]:
    rows = []
    for n, s, k in CASES[:2] if quick else CASES:
        q = engine.Query(weights=[1.0], k=k, window=n, slide=s)
        timed_slides = required_slides(n, s) if quick else max(required_slides(n, s), 4000 if s < 1000 else 400)
        batches = list(engine.slides(uniform_stream(n + s * timed_slides), q))
        warmup = n // s
        harmonic = sum(1 / i for i in range(1, n // s + 1))
        results = {name: measure(name, q, batches, warmup) for name in ALGORITHMS}
        for name, r in results.items():
            rows.append({"bench": "mintopk", "section": "foundation", "case": f"uniform n={n} s={s} k={k}",
                         "algorithm": name, "n": n, "s": s, "k": k, "c_nw": n // s, "distribution": "uniform",
                         "objects_per_s": r.objects_per_s, "vs_oracle": r.objects_per_s / results["oracle"].objects_per_s,
                         "timed_slides": len(batches) - warmup,
                         "avg_candidates": r.avg_candidates, "avg_candidates_per_k": r.avg_candidates / k,
                         "expected_mtk_per_k": harmonic, "max_candidates": r.max_candidates,
                         "bytes": r.stats["bytes"], "measured_bytes": r.stats["measured_bytes"],
                         "peak_bytes": peak_memory(name, q, batches[: warmup + 50]),
                         **agreement(results["oracle"].answers, r.answers)})
    return rows


def timed_after(alg, batches) -> tuple[float, int, list[int], list]:
    """CPU seconds and objects of ``batches``, candidates and the answer after each."""
    elapsed, objects, sizes, answers = 0.0, 0, [], []
    for batch in batches:
        start = time.process_time()
        alg.process(batch)
        answer = alg.topk()
        elapsed += time.process_time() - start
        objects += len(batch)
        sizes.append(alg.stats()["candidates"])
        answers.append(answer)
    return elapsed, objects, sizes, answers


def pretopk_against_k(quick: bool) -> list[dict]:
    """PreTopK and MinTopK with every object offered, ``C_nw = 100``: ``k`` at fixed ``s = 100``
    (the windows entered per object grow with ``k / s``), and ``k`` with ``s = 10 k`` (a fixed
    ``k / s``: only the heap depth grows)."""
    c_nw = 100
    cases = [(100, k) for k in PRETOPK_KS] + [(10 * k, k) for k in PRETOPK_KS[:3]]
    rows = []
    for s, k in [c for c in cases if c[1] <= 10] if quick else cases:
        n = c_nw * s
        q = engine.Query(weights=[1.0], k=k, window=n, slide=s)
        timed_slides = required_slides(n, s)
        batches = list(engine.slides(uniform_stream(n + s * timed_slides, seed=3), q))
        expected = k / s * (1 + np.log(c_nw * s / k))
        truth = exact_answers(q, batches, c_nw)
        for name in ("pretopk", "mintopk"):
            load_kernels(name, prefilter=False)
            alg = engine.create(name, q, prefilter=False)
            before = {"offered": 0, "entries": 0}
            for batch in batches[:c_nw]:
                alg.process(batch)
                alg.topk()
            if name == "pretopk":
                before = {key: alg.stats()[key] for key in before}
            elapsed, objects, sizes, answers = timed_after(alg, batches[c_nw:])
            stats = alg.stats()
            row = {"bench": "mintopk", "section": "pretopk-k", "case": f"uniform n={n} s={s} k={k} prefilter=False",
                   "algorithm": name, "n": n, "s": s, "k": k, "c_nw": c_nw, "distribution": "uniform",
                   "objects_per_s": objects / elapsed, "us_per_object": 1e6 * elapsed / objects,
                   "timed_slides": len(sizes),
                   "avg_candidates": float(np.mean(sizes)), "avg_candidates_per_k": float(np.mean(sizes)) / k,
                   "max_candidates": int(max(sizes)), "bytes": stats["bytes"], "measured_bytes": stats["measured_bytes"],
                   **agreement(truth, answers)}
            if name == "pretopk":
                offered = stats["offered"] - before["offered"]
                row.update(entries_per_object=(stats["entries"] - before["entries"]) / offered,
                           expected_entries=expected)
            rows.append(row)
    return rows


ARRIVAL_WINDOW_MS = 1_000_000
ARRIVAL_SLIDES_MS = (1_000, 10_000, 100_000)
ARRIVAL_K = 1_000
ARRIVAL_ALGORITHMS = ("sma", "pretopk", "mintopk")


def arrival(quick: bool) -> list[dict]:
    """Fig. 13: per-slide response times on trades by time stamp (one SPY day, regular hours)."""
    ids, t, x = workloads.stock(True, regular_hours=True)
    rows = []
    for slide in ARRIVAL_SLIDES_MS[1:] if quick else ARRIVAL_SLIDES_MS:
        q = engine.Query(weights=[1.0], k=ARRIVAL_K, window=ARRIVAL_WINDOW_MS, slide=slide, kind="time")
        batches = list(engine.slides((ids, t, x), q))
        warmup = ARRIVAL_WINDOW_MS // slide
        timed = batches[warmup:warmup + required_slides(ARRIVAL_WINDOW_MS, slide)]
        sizes = np.array([len(b) for b in timed])
        truth = exact_answers(q, batches[:warmup + len(timed)], warmup)
        for name in ARRIVAL_ALGORITHMS:
            load_kernels(name)
            alg = engine.create(name, q)
            for batch in batches[:warmup]:
                alg.process(batch)
                alg.topk()
            times, answers = [], []
            for batch in timed:
                start = time.process_time()
                alg.process(batch)
                answer = alg.topk()
                times.append(1000 * (time.process_time() - start))
                answers.append(answer)
            times = np.array(times)
            rows.append({"bench": "mintopk", "section": "arrival", "algorithm": name, "distribution": "spy-day",
                         "case": f"spy time window 1000 s, slide {slide // 1000} s, k={ARRIVAL_K}",
                         "n": ARRIVAL_WINDOW_MS, "s": slide, "k": ARRIVAL_K, "kind": "time",
                         "slide_seconds": slide / 1000, "timed_slides": len(timed),
                         "objects_per_slide_min": int(sizes.min()), "objects_per_slide_max": int(sizes.max()),
                         "objects_per_s": sizes.sum() / (times.sum() / 1000) if times.sum() > 0 else float("inf"),
                         "response_ms_mean": float(times.mean()), "response_ms_std": float(times.std()),
                         "response_ms_min": float(times.min()), "response_ms_max": float(times.max()),
                         "response_cv": float(times.std() / times.mean()) if times.mean() > 0 else float("nan"),
                         **agreement(truth, answers)})
    return rows


def run(quick: bool = False) -> list[dict]:
    return foundation(quick) + pretopk_against_k(quick) + arrival(quick)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a much smaller version")
    print(table(run(quick=parser.parse_args().quick), COLUMNS))
