"""engine.warmup.load_kernels: after it, running an algorithm loads no further compiled kernel.

Whatever reports a time per slide (the replay's ``seconds``, the dashboard's ms / slide, the
benchmarks) calls it first; a kernel it misses would be loaded (milliseconds to seconds) inside
some slide's time.  Checked in one fresh interpreter, algorithm after algorithm: for each, the
kernel signatures loaded by ordinary streams after ``load_kernels`` must be none.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import engine

ROOT = str(Path(__file__).resolve().parents[2])

REACH = """
import json, sys
import numpy as np
from numba.core.registry import CPUDispatcher
import engine
from engine.warmup import load_kernels

def signatures():
    return {(module, name, str(sig)) for module, space in list(sys.modules.items())
            if module.startswith("engine.kernels.") for name, value in vars(space).items()
            if isinstance(value, CPUDispatcher) for sig in value.overloads}

def run(name, query, data, params):
    alg = engine.create(name, query, **params)
    for batch in engine.slides(data, query):
        alg.process(batch)
        alg.topk()
        alg.stats()

rng = np.random.default_rng(5)
missed = {}
for name, single, d in json.loads(sys.argv[1]):
    params = {"memory": 30} if name == "sao" else {}
    load_kernels(name, d)
    before = signatures()
    for window, slide, k, kind in ((1_000, 10, 10, "count"), (2_000, 200, 50, "count"), (600, 1, 1, "count"),
                                   (500, 50, 5, "time")):
        query = engine.Query(weights=[1.0] * d, k=k, window=window, slide=slide, kind=kind)
        rows = 3 * window
        ids, t = np.arange(rows), np.sort(rng.integers(0, rows, rows))
        falling = 1.0 - np.arange(rows) / rows
        for values in (rng.random(rows), falling):
            if single:
                run(name, query, (ids, t, values[:, None] * rng.random((1, d)) + 1e-3 * rng.random((rows, d))), params)
            else:
                run(name, query, (ids // d, ids % d, values, t), params)
    missed[name] = sorted(f"{m}.{k}" for m, k, _ in signatures() - before)
print(json.dumps(missed))
"""


def test_after_load_kernels_no_stream_loads_another_kernel():
    cases = [(info.name, info.stream == "single", 3 if info.name == "sao" else 2) for info in engine.available()]
    done = subprocess.run([sys.executable, "-c", REACH, json.dumps(cases)], cwd=ROOT, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": ROOT})
    assert done.returncode == 0, done.stderr
    missed = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(missed) == {name for name, _, _ in cases}
    assert {name: kernels for name, kernels in missed.items() if kernels} == {}


def test_load_kernels_of_sao_imports_qhull():
    """SAO's hulls fall back on Qhull where a kernel fails; importing ``scipy.spatial`` takes
    0.3-0.7 s, which the first such slide would otherwise pay (the SPY demo's 501 slides by
    about 1 ms each on average)."""
    probe = ("import sys; from engine.warmup import load_kernels; load_kernels('sao', 3); "
             "print('scipy.spatial' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": ROOT})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"
