"""Write one golden state file per algorithm and query kind for the engine's current format.

    python -m tests.engine.golden.generate v2

Each file holds the stream itself (so no generator or random-number change can alter it), the
query, the slide after which the state was taken, and the state.  ``test_golden.py`` restores
each state, feeds the rest of the stream and compares every later answer with the oracle's
answer over the whole stream.  Files of a released format are never regenerated.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

import engine
from engine.generators import correlated_streams

HERE = Path(__file__).parent
CUT = 23
"""Slides processed before the state is taken: past the first window turnover (8 slides)."""


def golden_stream(name: str, kind: str) -> dict:
    """The stream of a golden file, as plain lists."""
    rng = np.random.default_rng(20261126)
    m = 320
    t = np.sort(rng.integers(0, 240, m)) if kind == "time" else np.arange(m)
    info = {i.name: i for i in engine.available()}[name]
    if info.stream == "incomplete":
        ids, stream, value, _ = correlated_streams(m, streams=2, seed=7, reuse=0.6, memory=15)
        value = np.round(value * 8) / 8
        return {"ids": ids.tolist(), "stream": stream.tolist(), "value": value.tolist(), "t": t.tolist()}
    x = np.column_stack([np.round(rng.random(m), 3), rng.integers(0, 3, m).astype(float)])
    return {"ids": np.arange(m).tolist(), "t": t.tolist(), "x": x.tolist()}


def stream_arrays(stream: dict):
    """The arrays ``engine.slides`` takes, from a golden file's stream."""
    if "x" in stream:
        return np.asarray(stream["ids"]), np.asarray(stream["t"]), np.asarray(stream["x"], np.float64)
    return (np.asarray(stream["ids"]), np.asarray(stream["stream"]), np.asarray(stream["value"], np.float64),
            np.asarray(stream["t"]))


def golden_query(kind: str) -> engine.Query:
    return engine.Query(weights=[1.0, 0.25], k=4, window=40, slide=5, kind=kind)


def main(version: str) -> None:
    if version != f"v{engine.FORMAT_VERSION}":
        raise SystemExit(f"this engine writes format {engine.FORMAT_VERSION}: generate v{engine.FORMAT_VERSION}, "
                         f"not {version} (files of an older format are never regenerated)")
    out = HERE / version
    out.mkdir(exist_ok=True)
    for info in engine.available():
        for kind in ("count", "time"):
            q = golden_query(kind)
            stream = golden_stream(info.name, kind)
            alg = engine.create(info.name, q)
            for index, batch in enumerate(engine.slides(stream_arrays(stream), q)):
                if index == CUT:
                    break
                alg.process(batch)
            doc = {"algorithm": info.name, "kind": kind, "cut": CUT, "stream": stream, "state": alg.to_state()}
            (out / f"{info.name}-{kind}.json").write_text(json.dumps(doc, allow_nan=False) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
