"""The algorithms side by side as C_nw = n / s grows, and the memory figures against tracemalloc.

Two sections (column ``section``), one process and the same batches for every algorithm:

* ``c_nw``: fixed ``s = 100`` and ``k = 10``, ``n`` in {1,000, 10,000, 100,000}, that is
  ``C_nw`` in {10, 100, 1,000} windows per object (issue 12: at ``s = n / 100`` brute force
  stays flat too, so only a growing ``C_nw`` separates the algorithms), on uniformly random
  scores and on a decreasing trend (a little noise, ``benchmarks.common.decreasing_stream``)
  where every slide expires the best objects: TMA and SMA rescan at every slide, the one-pass
  algorithms keep the window, MinTopK reaches its ``C_nw * k`` worst case.  Each run loads
  the algorithm's compiled kernels (``engine.warmup.load_kernels``), processes one window untimed, then
  times ``process`` + ``topk`` per slide (CPU time) over every later slide of the stream: one
  full window turnover or 200 slides, whichever is more (``common.required_slides``), four
  windows at ``C_nw`` below 1,000; the same slides for every algorithm, every answer checked
  against the oracle's (``agrees_with_oracle``; a row that disagrees is an error, not a figure).  Reported: objects/s, the average
  candidates after each timed slide, rescans per timed slide, and both memory figures at the
  end, in bytes: ``bytes`` (the cost model, from each structure's declared layout) and
  ``measured_bytes`` (the real size of the structures).
* ``memory``: the issue-12 review workload (uniform, n = 100,000, s = 1,000, k = 10, 300
  slides) for every registered single-stream algorithm: objects/s (timed as above, without
  tracemalloc; the k-skyband's target is ``KSKYBAND_TARGET``), then a second run under
  tracemalloc: ``bytes``, ``measured_bytes``, ``traced_bytes`` (tracemalloc: what deleting the
  live algorithm frees, so input and module-level caches are excluded) and the ratios
  ``model_vs_measured`` and ``measured_vs_traced``.
"""

from __future__ import annotations

import gc
import time
import tracemalloc

import numpy as np

import engine
from benchmarks.common import agreement, decreasing_stream, required_slides, table, uniform_stream
from engine.warmup import load_kernels

ALGORITHMS = ["mintopk", "pretopk", "kskyband", "tma", "sma", "oracle"]
DISTRIBUTIONS = {"uniform": uniform_stream, "decreasing": decreasing_stream}
SLIDE = 100
WINDOWS = (10, 100, 1000)
K = 10
KSKYBAND_TARGET = 1_000_000
"""objects/s the k-skyband must reach on the issue-12 workload."""

COLUMNS = ["section", "case", "algorithm", "c_nw", "objects_per_s", "target", "vs_mintopk", "avg_candidates",
           "rescans_per_slide", "bytes", "measured_bytes", "traced_bytes", "model_vs_measured", "measured_vs_traced"]


def measure(name: str, query: engine.Query, batches: list, warmup: int) -> dict:
    """Load ``name``'s kernels (:func:`~engine.warmup.load_kernels`), fill ``warmup`` slides untimed,
    then time every later slide of ``batches``: every algorithm of a case over the same slides."""
    load_kernels(name)
    alg = engine.create(name, query)
    for batch in batches[:warmup]:
        alg.process(batch)
        alg.topk()
    before = alg.stats().get("rescans", 0)
    elapsed, objects, slides, candidates, answers = 0.0, 0, 0, [], []
    for batch in batches[warmup:]:
        start = time.process_time()
        alg.process(batch)
        answer = alg.topk()
        elapsed += time.process_time() - start
        objects += len(batch)
        slides += 1
        candidates.append(alg.stats()["candidates"])
        answers.append(answer)
    stats = alg.stats()
    rescans = stats.get("rescans", 0) - before
    return {"objects_per_s": objects / elapsed if elapsed > 0 else float("inf"),
            "avg_candidates": float(np.mean(candidates)), "rescans": int(rescans), "timed_slides": slides,
            "rescans_per_slide": rescans / slides, "bytes": stats["bytes"], "measured_bytes": stats["measured_bytes"],
            "model_vs_measured": stats["bytes"] / stats["measured_bytes"], "answers": answers}


def without_answers(found: dict) -> dict:
    return {key: value for key, value in found.items() if key != "answers"}


def windows_sweep(quick: bool) -> list[dict]:
    rows = []
    for distribution, generate in DISTRIBUTIONS.items():
        for c_nw in WINDOWS[:2] if quick else WINDOWS:
            n = c_nw * SLIDE
            longest = max(required_slides(n, SLIDE) * SLIDE, 4 * n if c_nw < 1000 else 0)
            q = engine.Query(weights=[1.0], k=K, window=n, slide=SLIDE)
            batches = list(engine.slides(generate(n + longest), q))
            found = {name: measure(name, q, batches, c_nw) for name in ALGORITHMS}
            truth = found["oracle"]["answers"]
            for name, r in found.items():
                rows.append({"bench": "competitors", "section": "c_nw", "algorithm": name,
                             "case": f"{distribution} n={n} s={SLIDE} k={K}", "n": n, "s": SLIDE, "k": K,
                             "c_nw": c_nw, "distribution": distribution, **without_answers(r),
                             **agreement(truth, r["answers"]),
                             "vs_mintopk": r["objects_per_s"] / found["mintopk"]["objects_per_s"]})
            print(f"  {distribution} C_nw={c_nw} done", flush=True)
    return rows


def memory_table(quick: bool) -> list[dict]:
    n, s, k = 100_000, 1_000, K
    slides = n // s + required_slides(n, s)
    q = engine.Query(weights=[1.0], k=k, window=n, slide=s)
    batches = list(engine.slides(uniform_stream(n + s * (slides - n // s), seed=12), q))
    rows, truth = [], measure("oracle", q, batches, n // s)["answers"]
    for info in engine.available():
        if info.stream != "single":
            continue
        speed = measure(info.name, q, batches, n // s)
        gc.collect()
        tracemalloc.start()
        alg = engine.create(info.name, q)
        for batch in batches:
            alg.process(batch)
            alg.topk()
        stats = alg.stats()
        gc.collect()
        alive = tracemalloc.get_traced_memory()[0]
        del alg
        gc.collect()
        traced = alive - tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        rows.append({"bench": "competitors", "section": "memory", "algorithm": info.name,
                     "case": f"uniform n={n} s={s} k={k} {slides} slides", "n": n, "s": s, "k": k, "c_nw": n // s,
                     "distribution": "uniform", "avg_candidates": speed["avg_candidates"],
                     "objects_per_s": speed["objects_per_s"], "timed_slides": speed["timed_slides"],
                     **({"target": KSKYBAND_TARGET} if info.name == "kskyband" else {}),
                     "bytes": stats["bytes"],
                     "measured_bytes": stats["measured_bytes"], "traced_bytes": traced,
                     "model_vs_measured": stats["bytes"] / stats["measured_bytes"],
                     "measured_vs_traced": stats["measured_bytes"] / traced,
                     **agreement(truth if info.exact else None, speed["answers"])})
    return rows


def run(quick: bool = False) -> list[dict]:
    return windows_sweep(quick) + memory_table(quick)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a much smaller version")
    print(table(run(quick=parser.parse_args().quick), COLUMNS))
