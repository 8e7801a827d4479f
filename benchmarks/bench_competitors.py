"""The SAP paper's competitors: one-pass k-skyband, TMA and SMA (grid index) against MinTopK.

One process, the same batches for every algorithm: ``n = 100,000``, ``s`` in {10, 100, 1000},
``k`` in {10, 100}, ``d = 1``, on uniformly random scores and on a decreasing trend (with a
little noise, ``benchmarks.common.decreasing_stream``).  Each run processes one window as
warm-up, then times ``process`` + ``topk`` per slide (CPU time) over at most ``n / 5``
objects, stopping early (after at least 20 slides) once ``BUDGET`` seconds are spent.

Reported per run: objects/s, the average number of candidates after each timed slide, and
the rescans (TMA: recomputations after a result expired; SMA: recomputations after the
skyband fell below ``k``; 0 for the one-pass algorithms) during the timed slides.

Expected shape (SAP paper, Section 6): the k-skyband holds the most candidates; SMA rescans
more as ``k`` grows relative to ``s``; on the decreasing trend every slide expires the best
objects, so TMA and SMA rescan at every slide and the one-pass algorithms keep the window.
"""

from __future__ import annotations

import time

import numpy as np

import engine
from benchmarks.common import decreasing_stream, table, uniform_stream

ALGORITHMS = ["kskyband", "tma", "sma", "mintopk"]
DISTRIBUTIONS = {"uniform": uniform_stream, "decreasing": decreasing_stream}
BUDGET = 1.0
QUICK_BUDGET = 0.2
MIN_SLIDES = 20

COLUMNS = ["case", "algorithm", "objects_per_s", "vs_mintopk", "avg_candidates", "avg_candidates_per_k",
           "rescans", "rescans_per_slide", "timed_slides"]


def measure(name: str, query: engine.Query, batches: list, warmup: int, budget: float) -> dict:
    """Warm up over ``warmup`` slides, then time slides until the budget is spent."""
    alg = engine.create(name, query)
    for batch in batches[:warmup]:
        alg.process(batch)
        alg.topk()
    before = alg.stats().get("rescans", 0)
    elapsed, objects, slides, candidates = 0.0, 0, 0, []
    for batch in batches[warmup:]:
        start = time.process_time()
        alg.process(batch)
        alg.topk()
        elapsed += time.process_time() - start
        objects += len(batch)
        slides += 1
        candidates.append(alg.stats()["candidates"])
        if elapsed >= budget and slides >= MIN_SLIDES:
            break
    rescans = alg.stats().get("rescans", 0) - before
    return {"objects_per_s": objects / elapsed if elapsed > 0 else float("inf"),
            "avg_candidates": float(np.mean(candidates)), "rescans": int(rescans), "timed_slides": slides,
            "rescans_per_slide": rescans / slides, "model_bytes": alg.stats()["bytes"]}


def run(quick: bool = False) -> list[dict]:
    n = 10_000 if quick else 100_000
    slides = (10, 100) if quick else (10, 100, 1000)
    ks = (10,) if quick else (10, 100)
    budget = QUICK_BUDGET if quick else BUDGET
    rows = []
    for distribution, generate in DISTRIBUTIONS.items():
        for s in slides:
            longest = max(MIN_SLIDES * s, n // 5)
            data = generate(n + longest)
            for k in ks:
                q = engine.Query(weights=[1.0], k=k, window=n, slide=s)
                batches = list(engine.slides(data, q))
                found = {name: measure(name, q, batches, n // s, budget) for name in ALGORITHMS}
                for name, r in found.items():
                    rows.append({"bench": "competitors", "algorithm": name,
                                 "case": f"{distribution} n={n} s={s} k={k}", "n": n, "s": s, "k": k,
                                 "distribution": distribution, **r,
                                 "avg_candidates_per_k": r["avg_candidates"] / k,
                                 "vs_mintopk": r["objects_per_s"] / found["mintopk"]["objects_per_s"]})
                print(f"  {distribution} s={s} k={k} done", flush=True)
    return rows


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a much smaller version")
    print(table(run(quick=parser.parse_args().quick), COLUMNS))
