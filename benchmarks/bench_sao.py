"""SAO index (paper 000, section 4): error, filtering ratio, throughput and query time.

Families (d = 3, L = 4, K = 10, 100 queries with weights uniform in [-1, 1] unless varied):
the four allocation strategies against M/W; L; K; d; drift D (drifting Gaussian, D = 0 and 1);
skew p (skewed uniform).  Every case streams ``W + S`` rows (one full window, then ``S`` timed
rows in steady state), then poses the queries against the exact top-K of the last window.
Errors: the paper's weighted relative error ``e`` (u_i = 1) and the range-normalised variant.
Targets (issue 7) on the stationary Gaussian at W = 10^6, M = 500: filtering ratio >= 99%,
average error <= 1%, >= 100,000 rows/s, median query time <= 1 ms.
"""

from __future__ import annotations

import time

import numpy as np

import engine
from benchmarks.common import table
from engine.generators import drifting_gaussian, skewed_uniform
from engine.metrics import relative_error, weighted_range_error

SLIDE = 1000
QUERIES = 100


def case(data_name: str, window: int, memory: int, layers: int = 4, k: int = 10, d: int = 3,
         allocation: str = "dynamic-errmin", drift: float = 0.0, p: float = 0.5, steady: int = 100_000,
         ks: tuple = (), seed: int = 7) -> list[dict]:
    """Run one configuration; one row per K in ``ks`` (default just ``k``)."""
    rows_total = window + steady
    if data_name == "gaussian":
        ids, t, x = drifting_gaussian(rows_total, d=d, seed=seed, drift=drift, window=window)
    else:
        ids, t, x = skewed_uniform(rows_total, d=d, seed=seed, p=p)
    q = engine.Query(weights=[1.0] * d, k=k, window=window, slide=SLIDE)
    alg = engine.create("sao", q, memory=memory, layers=layers, allocation=allocation)
    batches = list(engine.slides((ids, t, x), q))
    warm = window // SLIDE
    for batch in batches[:warm]:
        alg.process(batch)
    before = alg.stats()
    start = time.process_time()
    for batch in batches[warm:]:
        alg.process(batch)
    elapsed = time.process_time() - start
    after = alg.stats()
    examined = after["arrivals_examined"] - before["arrivals_examined"]
    filtering = (after["filtered"] - before["filtered"]) / examined if examined else 0.0
    rng = np.random.default_rng(seed + 1)
    window_ids, window_x = ids[-window:], x[-window:]
    out = []
    for kk in ks or (k,):
        errors, ranged, latency = [], [], []
        for _ in range(QUERIES):
            weights = rng.uniform(-1, 1, d)
            scores = engine.score(window_x, weights)
            exact = engine.Answer.ranked(window_ids, scores, window_ids, kk)
            begin = time.perf_counter()
            got = alg.query(weights, kk)
            latency.append(time.perf_counter() - begin)
            errors.append(relative_error(exact, got))
            ranged.append(weighted_range_error(exact, got, float(scores.min()), float(scores.max())))
        out.append({"bench": "sao", "data": f"skewed p={p:g}" if data_name == "skewed" else f"gaussian D={drift:g}",
                    "W": window, "M": memory, "M_over_W_pct": 100.0 * memory / window, "L": layers, "K": kk, "d": d,
                    "p": p if data_name == "skewed" else None, "allocation": allocation,
                    "avg_error_pct": 100 * float(np.mean(errors)), "max_error_pct": 100 * float(np.max(errors)),
                    "avg_range_error_pct": 100 * float(np.mean(ranged)),
                    "max_range_error_pct": 100 * float(np.max(ranged)),
                    "filtering_pct": 100 * filtering, "rows_per_s": steady / elapsed,
                    "median_query_us": 1e6 * float(np.median(latency)),
                    "retained": after["retained"], "layer_counts": after["layer_counts"]})
    return out


ALLOCATIONS = ("dynamic-errmin", "dynamic-uniform", "static-errmin", "static-uniform")


def cases(quick: bool) -> list[dict]:
    """The configurations of one run: the headline at W = 10^6 (full) and the sweeps."""
    if quick:
        base = {"data_name": "gaussian", "window": 20_000, "memory": 300, "steady": 10_000}
        return ([{**base, "ks": (6, 10, 14)}]
                + [{**base, "allocation": a} for a in ALLOCATIONS[1:]]
                + [{**base, "drift": 1.0}, {**base, "data_name": "skewed", "p": 0.9}])
    headline = {"data_name": "gaussian", "window": 1_000_000, "memory": 500, "steady": 200_000}
    base = {"data_name": "gaussian", "window": 100_000, "memory": 300, "steady": 50_000}
    return ([{**headline, "ks": (6, 10, 14)}, {**headline, "drift": 1.0}]
            + [{**base, "memory": m, "allocation": a, "steady": 20_000 if m < 300 else 50_000}
               for m in (150, 300, 500) for a in ALLOCATIONS]
            + [{**base, "layers": layers, "steady": 20_000 if layers > 5 else 50_000} for layers in (1, 2, 3, 5, 7)]
            + [{**base, "ks": (6, 14)}, {**base, "drift": 1.0}]
            + [{**base, "data_name": "skewed", "p": p, "steady": 20_000 if p < 0.9 else 50_000} for p in (0.2, 0.5, 0.9)]
            + [{**base, "d": 2}, {**base, "d": 4, "steady": 5_000}])


def run(quick: bool = False) -> list[dict]:
    rows = []
    for config in cases(quick):
        rows += case(**config)
    return rows


COLUMNS = ["data", "W", "M", "M_over_W_pct", "L", "K", "d", "allocation", "avg_error_pct", "max_error_pct",
           "avg_range_error_pct", "filtering_pct", "rows_per_s", "median_query_us", "retained"]

if __name__ == "__main__":
    import sys
    print(table(run(quick="--quick" in sys.argv), COLUMNS))
