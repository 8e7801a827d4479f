"""SAP (issue 6) against MinTopK and the one-pass k-skyband on the SAP paper's synthetic sets.

One process, the same batches for every algorithm, ``d = 1``:

- ``TIME-U``: uniform scores (``engine.generators.time_u``).
- ``TIME-R``: ``sin(pi t / 10^6)`` on the arrival ordinal (``engine.generators.time_r`` with
  ``period = 10^6`` and no noise, the paper's definition).  A window of ``10^5`` objects sees a
  tenth of a half period, so the stream starts at ordinal ``5 * 10^5`` (the crest): every
  window lies in the decreasing phase, the case the paper's Table 6 shows as hard for the
  one-pass algorithms (each arrival may outlive every older object).

Grid: ``n = 100,000``, ``k`` in {10, 100, 1000}, ``s`` in {10, 100, 1000}, plus ``C_nw = n / s``
varied at ``s = 10``, ``k = 100`` (``n`` in {10,000, 30,000, 100,000}).  Each run processes one
full window as warm-up, then times ``process`` + ``topk`` per slide (CPU time) until ``BUDGET``
seconds are spent (at least ``MIN_SLIDES`` slides, at most ``n / 2`` objects).

Reported per run: objects/s and its ratio to MinTopK's, the average number of candidates and
of retained objects after each timed slide, the modelled ``bytes`` (SPEC 3 cost model) and
``measured_bytes`` (deep size of the live structures) at the end.

Targets (paper): average candidates SAP < MinTopK < k-skyband (Table 6); SAP's objects/s at
least 1.5x MinTopK's at ``s = 10``, ``k = 100`` (Fig. 9).
"""

from __future__ import annotations

import time

import numpy as np

import engine
from benchmarks.common import table
from engine.generators import time_r, time_u

BUDGET = 1.5
QUICK_BUDGET = 0.3
MIN_SLIDES = 5
TIME_R_START = 500_000
FULL = ["sap", "sap-equal", "sap-dynamic", "mintopk", "kskyband"]
MAIN = ["sap", "mintopk", "kskyband"]

COLUMNS = ["case", "algorithm", "objects_per_s", "vs_mintopk", "avg_candidates", "avg_retained",
           "model_bytes", "measured_bytes", "timed_slides"]


def stream(dataset: str, m: int):
    if dataset == "time-u":
        return time_u(m, seed=1)
    ids, t, x = time_r(TIME_R_START + m, period=1e6, noise=0.0)
    return np.arange(m, dtype=np.int64), np.arange(m, dtype=np.int64), x[TIME_R_START:]


def measure(name: str, query: engine.Query, batches: list, warmup: int, budget: float) -> dict:
    """Warm up over one window, then time slides until the budget is spent."""
    alg = engine.create(name, query)
    for batch in batches[:warmup]:
        alg.process(batch)
        alg.topk()
    elapsed, objects, slides, candidates, retained = 0.0, 0, 0, [], []
    for batch in batches[warmup:]:
        start = time.process_time()
        alg.process(batch)
        alg.topk()
        elapsed += time.process_time() - start
        objects += len(batch)
        slides += 1
        stats = alg._stats()
        candidates.append(stats["candidates"])
        retained.append(stats["retained"])
        if elapsed >= budget and slides >= MIN_SLIDES:
            break
    stats = alg.stats()
    return {"objects_per_s": objects / elapsed if elapsed > 0 else float("inf"),
            "avg_candidates": float(np.mean(candidates)), "avg_retained": float(np.mean(retained)),
            "model_bytes": stats["bytes"], "measured_bytes": stats["measured_bytes"], "timed_slides": slides}


def cases(quick: bool):
    if quick:
        for dataset in ("time-u", "time-r"):
            yield dataset, 100_000, 10, 100, MAIN, "grid"
            yield dataset, 100_000, 100, 10, MAIN, "grid"
        return
    for dataset in ("time-u", "time-r"):
        for k in (10, 100, 1000):
            for s in (10, 100, 1000):
                yield dataset, 100_000, s, k, FULL if (k, s) == (100, 10) else MAIN, "grid"
        for n in (10_000, 30_000):
            yield dataset, n, 10, 100, MAIN, "c_nw"


def run(quick: bool = False) -> list[dict]:
    rows = []
    budget = QUICK_BUDGET if quick else BUDGET
    for dataset, n, s, k, names, group in cases(quick):
        q = engine.Query(weights=[1.0], k=k, window=n, slide=s)
        m = n + n // 2
        batches = list(engine.slides(stream(dataset, m), q))
        warmup = n // s
        results = {name: measure(name, q, batches, warmup, budget) for name in names}
        base = results["mintopk"]["objects_per_s"]
        for name, r in results.items():
            rows.append({"bench": "sap", "group": group, "case": f"{dataset} n={n} s={s} k={k}",
                         "dataset": dataset, "algorithm": name, "n": n, "s": s, "k": k, "c_nw": n // s,
                         "vs_mintopk": r["objects_per_s"] / base, **r})
    return rows


if __name__ == "__main__":
    print(table(run(), COLUMNS))
