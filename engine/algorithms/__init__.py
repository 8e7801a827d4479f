"""One module per algorithm, imported when its algorithm is first asked for.

:data:`MODULES` names each registered algorithm's module (relative to this package), in the
registry's listing order; :mod:`engine.registry` imports a module when its algorithm is created
or described, so a process pays only for the algorithms (and the compiled kernels, numba, scipy)
it uses.  ``engine.algorithms.sao`` and the like still work as attributes: the module is
imported on first access.
"""

from __future__ import annotations

import importlib
from types import ModuleType

MODULES = {
    "oracle": "oracle",
    "pretopk": "pretopk",
    "mintopk": "mintopk",
    "kskyband": "kskyband",
    "tma": "tma",
    "sma": "sma",
    "sap-equal": "sap.equal",
    "sap-dynamic": "sap.dynamic",
    "sap": "sap.enhanced",
    "sao": "sao",
    "oracle-incomplete": "oracle_incomplete",
    "sla": "sla",
    "eaa": "eaa",
    "approx": "approx",
}
"""Algorithm name -> the module registering it, in listing order."""

SUBMODULES = frozenset(module.split(".")[0] for module in MODULES) | {"sao_hull"}
"""This package's modules, importable as its attributes."""


def load(name: str) -> None:
    """Import the module registering algorithm ``name`` (one of :data:`MODULES`)."""
    importlib.import_module(f"{__name__}.{MODULES[name]}")


def __getattr__(attribute: str) -> ModuleType:
    if attribute in SUBMODULES:
        return importlib.import_module(f"{__name__}.{attribute}")
    raise AttributeError(f"module {__name__!r} has no attribute {attribute!r}")
