"""What a process imports: the command line and the registry import an algorithm's module (its
compiled kernels, numba, scipy) only when that algorithm is created, and never the app's or the
pipelines' libraries.  Checked in fresh interpreters through ``sys.modules``, never by time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import engine
from engine import algorithms

ROOT = Path(__file__).resolve().parents[2]

NEVER_FROM_THE_ENGINE = ("duckdb", "altair", "pyspark", "streamlit", "pandas")
"""Libraries of the pipelines and the dashboard, which no engine command needs."""


def imported_after(code: str) -> set[str]:
    """The modules loaded in a fresh interpreter after running ``code``."""
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def top_level(modules: set[str]) -> set[str]:
    return {name.split(".")[0] for name in modules}


def algorithm_modules(modules: set[str]) -> set[str]:
    return {name for name in modules if name.startswith("engine.algorithms.")}


def test_importing_the_command_line_loads_no_algorithm_numba_scipy_or_pyarrow():
    modules = imported_after("import engine.cli")
    assert not top_level(modules) & {"numba", "scipy", "pyarrow", "llvmlite", *NEVER_FROM_THE_ENGINE}
    assert algorithm_modules(modules) == set()
    assert "engine.multi" not in modules and "engine.kernels" not in modules


def test_creating_one_algorithm_imports_its_module_only():
    modules = imported_after("import engine\nengine.create('mintopk', engine.Query([1.0], k=2, window=4, slide=2))")
    assert algorithm_modules(modules) == {"engine.algorithms.mintopk"}
    assert "numba" in top_level(modules)
    assert "engine.kernels.mintopk" in modules and "engine.kernels.hull" not in modules


def test_run_many_on_csv_imports_neither_pyarrow_nor_any_algorithm(tmp_path):
    source = tmp_path / "s.csv"
    source.write_text("id,t,a\n" + "".join(f"{i},{i},{(i * 7) % 5}\n" for i in range(20)))
    spec = tmp_path / "q.json"
    spec.write_text(json.dumps([{"weights": [1.0], "k": 2, "window": 4, "slide": 2}]))
    output = tmp_path / "out.jsonl"
    modules = imported_after(f"from engine.cli import main\nassert main(['run-many', '--queries', {str(spec)!r}, "
                             f"'--input', {str(source)!r}, '--output', {str(output)!r}]) == 0")
    assert len(output.read_text().splitlines()) == 10
    assert not top_level(modules) & {"pyarrow", *NEVER_FROM_THE_ENGINE}
    assert algorithm_modules(modules) == set()
    assert "engine.multi" in modules


def test_listing_names_every_algorithm_in_registration_order_without_importing_any():
    listed = imported_after("from engine import registry\nprint(registry.names())\n"
                            "assert not [m for m in __import__('sys').modules if m.startswith('engine.algorithms.')]")
    assert not algorithm_modules(listed)
    names = [info.name for info in engine.available()]
    assert names == list(algorithms.MODULES)


def test_each_catalogued_module_registers_exactly_its_algorithms():
    """``MODULES`` agrees with the ``@register`` lines: importing every module of the package
    registers exactly the catalogued names, each from the module catalogued for it."""
    code = """
import importlib, json, pkgutil
import engine.algorithms as package
from engine import registry
for found in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
    importlib.import_module(found.name)
print(json.dumps({name: cls.__module__ for name, cls in registry._REGISTRY.items()}))
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    registered = json.loads(done.stdout.splitlines()[-1])
    assert registered == {name: f"engine.algorithms.{module}" for name, module in algorithms.MODULES.items()}


def test_an_outside_class_cannot_take_the_name_of_an_engine_algorithm_not_yet_imported():
    code = """
import sys
from engine import registry
from engine.algorithms.oracle import Oracle
class Impostor(Oracle):
    name = "sao"
try:
    registry.register(Impostor)
except ValueError as exc:
    print(exc)
print("engine.algorithms.sao" in sys.modules, registry.algorithm_class("sao").__module__)
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["algorithm sao is registered twice", "False engine.algorithms.sao"]


def test_algorithm_modules_are_attributes_of_the_package():
    assert engine.algorithms.sao_hull.__name__ == "engine.algorithms.sao_hull"
    assert engine.algorithms.sap.enhanced.__name__ == "engine.algorithms.sap.enhanced"
