"""SAP paper Table 2: the equal partition's running time against the number of partitions m.

The paper times Algorithm 1 with the S-AVL over equal partitions for m = 5, 7, ..., 37 at its
defaults (n = 0.1% |D|, k = 100, s = 0.1% n, so C_nw = 1,000) and finds that the m* =
ceil(sqrt(n / max(s, k))) of its cost model, which minimises the bound on the candidate set,
does not minimise the running time; its three rows are Algorithm 1 without the delay policy
("non-delay": ``M_i`` built for every partition as it is finished), Algorithm 1 (delay policy,
no S-AVL) and Algorithm 1 with the S-AVL.  Here: ``sap-equal`` with its partition size forced to
``n / m`` (whole slides; :class:`EqualPartitions`), n = 100,000, k = 100, s = 100 (C_nw = 1,000,
m* = 32), on TIME-U, TIME-R (falling flank, as in the grid), STOCK and TRIP.  Each run fills one
window, then times ``process`` + ``topk`` (CPU seconds) over one full window turnover
(``benchmarks.common.required_slides``).  The three rows of Table 2 are the engine's ablation
switches (``docs/algorithms/sap.md``): ``non-delay`` is ``delay=False, savl=False``, ``algo1``
``savl=False``, ``algo1-savl`` the defaults; each is timed on the same batches in turn.  One row per
(data set, m, variant): objects/s, time per object, candidates and retained objects, S-AVL builds
and drops; plus one ``summary`` row per data set: the time per object of ``algo1-savl`` at m*
over the best m's (``mstar_over_best``), the figure the paper's Table 2 argues from.  Quick mode
times ``algo1-savl`` at three m and the two ablated rows at m* only.

The grid (``benchmarks.registry``) measures sap, sap-dynamic and sap-equal against every
competitor (Fig. 9, Tables 3, 5, 6, 8).
"""

from __future__ import annotations

import math
import time

import numpy as np

import engine
from benchmarks import workloads
from benchmarks.common import agreement, exact_answers, required_slides, table
from engine.algorithms.sap.equal import SAPEqual
from engine.warmup import load_kernels

N, K, S = 100_000, 100, 100
PARTITIONS = (5, 9, 13, 17, 21, 25, 29, 32, 37)
QUICK_PARTITIONS = (5, 13, 32)
DATASETS = ("time-u", "time-r", "stock", "taxi")
VARIANTS = {"non-delay": {"delay": False, "savl": False}, "algo1": {"savl": False}, "algo1-savl": {}}
"""Table 2's rows, as ``sap-equal``'s ablation switches (the last is the engine's default)."""

COLUMNS = ["case", "dataset", "m", "variant", "objects_per_s", "us_per_object", "avg_candidates", "avg_retained",
           "savl_builds", "savl_dropped", "timed_slides", "mstar_over_best", "best_m"]


class EqualPartitions(SAPEqual):
    """``sap-equal`` with ``m`` partitions of whole slides instead of the cost model's m*."""

    partitions = 0

    def _choose_unit_slides(self) -> int:
        slides = self.q.window // self.q.slide
        return max(1, min(slides, round(slides / self.partitions)))


def with_partitions(m: int) -> type[EqualPartitions]:
    return type(f"EqualPartitions{m}", (EqualPartitions,), {"partitions": m})


def m_star(n: int, s: int, k: int) -> int:
    return math.ceil(math.sqrt(n / max(s, k)))


def stream(dataset: str, m: int, quick: bool):
    return workloads.object_stream(dataset, m, N, quick)


def measure(variant: type, query: engine.Query, batches: list, warmup: int, truth: list | None = None,
            **params) -> dict:
    """Fill ``warmup`` slides untimed (kernels loaded first: ``engine.warmup.load_kernels``), then time every
    later slide: ``process`` + ``topk``, CPU seconds; each answer checked against ``truth`` (the
    oracle's, :func:`benchmarks.common.agreement`)."""
    load_kernels("sap-equal", **params)
    alg = variant(query, **params)
    for batch in batches[:warmup]:
        alg.process(batch)
        alg.topk()
    elapsed, objects, candidates, retained, answers = 0.0, 0, [], [], []
    for batch in batches[warmup:]:
        start = time.process_time()
        alg.process(batch)
        answer = alg.topk()
        elapsed += time.process_time() - start
        answers.append(answer)
        objects += len(batch)
        light = alg._stats()
        candidates.append(light["candidates"])
        retained.append(light["retained"])
    totals = alg.stats()
    return {"objects_per_s": objects / elapsed, "us_per_object": 1e6 * elapsed / objects,
            "avg_candidates": float(np.mean(candidates)), "avg_retained": float(np.mean(retained)),
            "savl_builds": totals["savl_builds"], "savl_dropped": totals["savl_dropped"],
            "timed_slides": len(batches) - warmup, **agreement(truth, answers)}


def run(quick: bool = False) -> list[dict]:
    rows = []
    query = engine.Query(weights=[1.0], k=K, window=N, slide=S)
    warmup = N // S
    star = m_star(N, S, K)
    for dataset in DATASETS[:2] if quick else DATASETS:
        batches = list(engine.slides(stream(dataset, N + S * required_slides(N, S), quick), query))
        found, truth = {}, exact_answers(query, batches, warmup)
        for m in QUICK_PARTITIONS if quick else PARTITIONS:
            for variant, params in VARIANTS.items():
                if quick and m != star and variant != "algo1-savl":
                    continue
                measured = measure(with_partitions(m), query, batches, warmup, truth, **params)
                if variant == "algo1-savl" and measured.get("agrees_with_oracle", True):
                    found[m] = measured
                rows.append({"bench": "sap", "section": "table2", "case": f"{dataset} n={N} k={K} s={S} m={m}",
                             "dataset": dataset, "algorithm": "sap-equal", "variant": variant, "n": N, "k": K,
                             "s": S, "m": m, "m_star": star, **measured})
        summary = {"bench": "sap", "section": "summary", "case": f"{dataset} n={N} k={K} s={S}", "dataset": dataset,
                   "algorithm": "sap-equal", "n": N, "k": K, "s": S, "m_star": star}
        if star not in found:
            rows.append({**summary, "status": "error: m* answered wrongly (see its table2 row)"})
            continue
        best = min(found, key=lambda m: found[m]["us_per_object"])
        rows.append({**summary, "best_m": best,
                     "mstar_over_best": found[star]["us_per_object"] / found[best]["us_per_object"]})
    return rows


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a much smaller version")
    print(table(run(quick=parser.parse_args().quick), COLUMNS))
