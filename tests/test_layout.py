"""The layout (README, Layout): what each package may import; state is never pickled."""

from __future__ import annotations

import ast
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
ALLOWED = {
    "engine": {"numpy", "scipy", "sortedcontainers", "numba", "engine"},
    "pipelines": {"engine", "pipelines", "pyspark", "duckdb", "pyarrow", "numpy", "pandas"},
    "app": {"engine", "app", "duckdb", "altair", "streamlit", "numpy", "pandas"},
}
# The engine's CLI reads Parquet input (docs/CONTRACTS.md): it imports pyarrow lazily, in that branch only.
EXTRA = {"engine/cli.py": {"pyarrow"}}
FORBIDDEN_EVERYWHERE = {"pickle", "dill", "cloudpickle", "shelve", "marshal"}


def imported_modules(path: pathlib.Path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module.split(".")[0]


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_packages_import_only_what_the_spec_allows(package):
    files = sorted((ROOT / package).rglob("*.py"))
    assert files, f"{package}/ has no Python files"
    stdlib = set(sys.stdlib_module_names)
    offences = [f"{path.relative_to(ROOT)}:{line} imports {name}"
                for path in files for line, name in imported_modules(path)
                if name in FORBIDDEN_EVERYWHERE
                or (name not in stdlib and name not in ALLOWED[package] | EXTRA.get(str(path.relative_to(ROOT)), set()))]
    assert not offences, "\n".join(offences)
