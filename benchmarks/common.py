"""Shared measuring tools: every competitor runs in the same process on the same batches."""

from __future__ import annotations

import time
import tracemalloc
from dataclasses import dataclass

import numpy as np

import engine


@dataclass
class Measurement:
    objects_per_s: float
    slides_per_s: float
    avg_candidates: float
    max_candidates: int
    model_bytes: int
    stats: dict


def uniform_stream(m: int, d: int = 1, seed: int = 1):
    rng = np.random.default_rng(seed)
    return np.arange(m), np.arange(m), rng.random((m, d))


def decreasing_stream(m: int, d: int = 1, seed: int = 1):
    rng = np.random.default_rng(seed)
    trend = -np.arange(m, dtype=np.float64) / m
    return np.arange(m), np.arange(m), (trend[:, None] + 1e-3 * rng.random((m, d)))


def measure(name: str, query: engine.Query, batches: list, warmup: int, params=None) -> Measurement:
    """Process ``batches``, answering every slide; time (CPU) only the slides after ``warmup``."""
    alg = engine.create(name, query, **(params or {}))
    for batch in batches[:warmup]:
        alg.process(batch)
        alg.topk()
    timed = batches[warmup:]
    sizes = []
    elapsed = 0.0
    for batch in timed:
        start = time.process_time()
        alg.process(batch)
        alg.topk()
        elapsed += time.process_time() - start
        sizes.append(alg.stats()["candidates"])
    objects = sum(len(b) for b in timed)
    stats = alg.stats()
    return Measurement(objects / elapsed, len(timed) / elapsed, float(np.mean(sizes)), int(max(sizes)),
                       stats["bytes"], stats)


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
