"""One case, timed the three ways a user meets: the dashboard, the replay and the benchmark.

The case is ``make run``'s demo (``pipelines/configs/demo.json``: SPY trades, the 10 largest
notionals of the last 10,000 trades, slide 500) for each of its algorithms, on the ``spy``
dataset of ``$TOPK_DB`` (default ``var/topk.duckdb``, written by ``make run``):

- ``dashboard_ms``: the Live page's engines (``app.session.LiveRun``, the algorithm beside the
  oracle the page always runs) stepped through the trace; its per-slide ``seconds``
  (``process`` + ``topk``, wall clock), as the page plots.  One algorithm at a time: beside a
  slow neighbour (SAO) a 20 µs slide measures 3-4x longer, its caches evicted;
- ``replay_ms``: ``slide_metrics.seconds`` of the latest demo run in that database
  (``process`` + ``topk`` in a Spark task, wall clock);
- ``bench_ms``: the harness' :func:`benchmarks.common.timed_pass` on the same slides (CPU time
  of ``process`` + ``topk``).

Every figure is the median over the slides after the first window. ``dashboard_vs_bench`` and
``replay_vs_bench`` are the ratios; near 1 means the three agree. A measurement, never a test.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

import engine
from benchmarks.common import timed_pass

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "pipelines" / "configs" / "demo.json"
COLUMNS = ["algorithm", "slides", "dashboard_ms", "replay_ms", "bench_ms", "dashboard_vs_bench", "replay_vs_bench",
           "status"]


def per_slide_bench_ms(name: str, q: engine.Query, batches: list, warmup: int, params: dict) -> float:
    """Median CPU ms of ``process`` + ``topk`` per slide after ``warmup`` slides."""
    alg = engine.create(name, q, **params)
    times = []
    timed_pass(alg, batches[:warmup], [])
    for batch in batches[warmup:]:
        times.append(1e3 * timed_pass(alg, [], [batch]))
    return float(np.median(times))


def run(quick: bool = False) -> list[dict]:
    from app import data
    from app.session import LiveRun, Setup

    db = Path(os.environ.get("TOPK_DB", ROOT / "var" / "topk.duckdb"))
    demo = json.loads(DEMO.read_text())
    algorithms = [a["name"] for a in demo["algorithms"]]
    params = {a["name"]: a.get("params", {}) for a in demo["algorithms"]}
    if not db.exists():
        return [{"bench": "agreement", "algorithm": name, "status": f"no database {db}: run make run first"}
                for name in algorithms]
    trace = data.load_trace(db, demo["dataset"])
    spec = demo["queries"][0]
    q = engine.Query(weights=[spec["weights"].get(f, 0.0) for f in trace.features], k=spec["k"],
                     window=spec["window"], slide=spec["slide"], kind=spec["kind"])
    warmup = q.window // q.slide
    limit = warmup + (40 if quick else 400)
    batches = list(engine.slides(trace.arrays, q))[:limit]
    run_id = data.demo_run(db, demo)
    replay = {}
    if run_id is not None:
        frame = data.query(db, "SELECT algorithm, median(seconds) * 1e3 AS ms FROM slide_metrics "
                               "WHERE run_id = ? AND query_id = 0 AND slide >= ? AND slide < ? GROUP BY algorithm",
                           [run_id, warmup, limit])
        replay = {label.split("(")[0]: ms for label, ms in zip(frame["algorithm"], frame["ms"])}  # sao(memory=500)
    rows = []
    for name in algorithms:
        live = LiveRun(trace, Setup(demo["dataset"], q, (name,), params))
        live.step(limit)
        dashboard = float(np.median([h["seconds"] for h in live.history
                                     if h["slide"] >= warmup and h["algorithm"] == name])) * 1e3
        bench = per_slide_bench_ms(name, q, batches, warmup, params.get(name, {}))
        replayed = replay.get(name, float("nan"))
        rows.append({"bench": "agreement", "case": f"demo spy n={q.window} s={q.slide} k={q.k}", "algorithm": name,
                     "slides": limit - warmup, "dashboard_ms": dashboard, "replay_ms": replayed, "bench_ms": bench,
                     "dashboard_vs_bench": dashboard / bench if bench else float("nan"),
                     "replay_vs_bench": replayed / bench if bench else float("nan"),
                     "status": "ok" if run_id is not None else "no demo run in the database: dashboard and bench only"})
    return rows


if __name__ == "__main__":
    from benchmarks.common import table

    print(table(run(quick=False), COLUMNS))
