"""The kernels' on-disk cache after an upgrade: a kernel compiled with a callee from another
module must not keep the callee's old code once that module changed (real processes, real
numba cache)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import engine.kernels
from engine.kernels import STAMP, cache_directory, sources_digest

REPOSITORY = Path(__file__).resolve().parents[2]

CALLER = """
from numba import njit
from {package}.callee import value

@njit(cache=True)
def doubled():
    return 2 * value()
"""

CALLEE = """
from numba import njit

@njit(cache=True)
def value():
    return {value}
"""


def make_package(root: Path, name: str, guarded: bool) -> Path:
    package = root / name
    package.mkdir()
    init = "from pathlib import Path\nfrom engine.kernels import drop_stale_cache\ndrop_stale_cache(Path(__file__).parent)\n"
    (package / "__init__.py").write_text(init if guarded else "")
    (package / "caller.py").write_text(CALLER.format(package=name))
    (package / "callee.py").write_text(CALLEE.format(value=1))
    return package


def doubled(root: Path, name: str, **env: str) -> int:
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(REPOSITORY)]), **env}
    if "NUMBA_CACHE_DIR" not in env:
        environment.pop("NUMBA_CACHE_DIR", None)
    done = subprocess.run([sys.executable, "-c", f"from {name}.caller import doubled; print(doubled())"],
                          env=environment, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return int(done.stdout)


def test_a_changed_callee_module_recompiles_its_callers(tmp_path):
    for name, guarded in (("unguarded", False), ("guarded", True)):
        package = make_package(tmp_path, name, guarded)
        assert doubled(tmp_path, name) == 2
        assert doubled(tmp_path, name) == 2  # loaded from the cache
        (package / "callee.py").write_text(CALLEE.format(value=5))
        stale_or_fresh = doubled(tmp_path, name)
        # numba alone keeps the caller's compiled copy of the old callee; the guard drops it
        assert stale_or_fresh == (10 if guarded else 2), name


def test_the_guard_follows_numba_cache_dir(tmp_path):
    package = make_package(tmp_path, "elsewhere", guarded=True)
    cache = tmp_path / "numba-cache"
    assert doubled(tmp_path, "elsewhere", NUMBA_CACHE_DIR=str(cache)) == 2
    (package / "callee.py").write_text(CALLEE.format(value=7))
    assert doubled(tmp_path, "elsewhere", NUMBA_CACHE_DIR=str(cache)) == 14
    assert sources_digest(package) in {stamp.read_text() for stamp in cache.rglob(STAMP)}
    assert not (package / "__pycache__" / STAMP).exists()


def test_the_engine_kernels_record_their_sources():
    package = Path(engine.kernels.__file__).parent
    directory = cache_directory(package)
    assert directory is not None
    assert (directory / STAMP).read_text() == sources_digest(package)


def test_nothing_to_guard_without_the_jit(tmp_path):
    code = textwrap.dedent("""
        from pathlib import Path
        import engine.kernels
        print(engine.kernels.cache_directory(Path(engine.kernels.__file__).parent))
    """)
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "NUMBA_DISABLE_JIT": "1"},
                          capture_output=True, text=True, timeout=300, cwd=REPOSITORY)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "None"
