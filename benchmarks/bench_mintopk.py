"""Foundation figures: MinTopK and PreTopK against the oracle on uniformly random scores (d = 1).

Targets (issue 2): mintopk >= 10x the oracle's objects/s at n=100,000, s=1,000, k=10 and
>= 2x at n=10,000, s=10, k=10; the super-top-k list's average size reported against k and
against the expected size of the MTK set on i.i.d. scores, k * H(n/s).
"""

from __future__ import annotations

import engine
from benchmarks.common import measure, peak_memory, table, uniform_stream

CASES = [(100_000, 1_000, 10), (10_000, 10, 10), (100_000, 100, 10), (100_000, 1_000, 100), (10_000, 1_000, 10)]
ALGORITHMS = ["oracle", "mintopk", "pretopk"]


def run(quick: bool = False) -> list[dict]:
    rows = []
    for n, s, k in CASES[:2] if quick else CASES:
        q = engine.Query(weights=[1.0], k=k, window=n, slide=s)
        timed_slides = (50 if quick else 400) if s >= 1000 else (500 if quick else 4000)
        m = n + s * timed_slides
        batches = list(engine.slides(uniform_stream(m), q))
        warmup = n // s
        harmonic = sum(1 / i for i in range(1, n // s + 1))
        results = {name: measure(name, q, batches, warmup) for name in ALGORITHMS}
        for name, r in results.items():
            rows.append({"bench": "mintopk", "case": f"uniform n={n} s={s} k={k}", "algorithm": name,
                         "n": n, "s": s, "k": k, "distribution": "uniform",
                         "objects_per_s": r.objects_per_s, "vs_oracle": r.objects_per_s / results["oracle"].objects_per_s,
                         "avg_candidates": r.avg_candidates, "avg_candidates_per_k": r.avg_candidates / k,
                         "expected_mtk_per_k": harmonic, "max_candidates": r.max_candidates,
                         "model_bytes": r.model_bytes,
                         "peak_bytes": peak_memory(name, q, batches[: warmup + 50])})
    return rows


COLUMNS = ["case", "algorithm", "objects_per_s", "vs_oracle", "avg_candidates_per_k", "expected_mtk_per_k",
           "max_candidates", "model_bytes", "peak_bytes"]

if __name__ == "__main__":
    print(table(run(), COLUMNS))
