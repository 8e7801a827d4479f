"""Run a test script in a fresh interpreter, with numba's JIT on or off (``NUMBA_DISABLE_JIT``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_script(script: str, *, no_jit: bool) -> object:
    """The JSON value ``script`` prints last, run from the repository root with the JIT
    disabled (``no_jit``) or as configured; fails the test with the script's stderr."""
    env = {key: value for key, value in os.environ.items() if key != "NUMBA_DISABLE_JIT"}
    env["PYTHONPATH"] = str(ROOT)
    if no_jit:
        env["NUMBA_DISABLE_JIT"] = "1"
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
