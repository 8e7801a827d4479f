"""The algorithm registry: ``create``, ``available`` and lookup by name.

The engine's algorithms are listed by name in :data:`engine.algorithms.MODULES` and their
modules imported on first use (:func:`algorithm_class`), so that creating one algorithm does not
import every other one with its compiled kernels; :func:`available` imports them all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import algorithms
from .base import Algorithm
from .query import Query

_REGISTRY: dict[str, type[Algorithm]] = {}


def register(cls: type[Algorithm]) -> type[Algorithm]:
    """Class decorator adding an algorithm to the registry under ``cls.name``."""
    if cls.name in _REGISTRY or (cls.name in algorithms.MODULES
                                 and cls.__module__ != f"{algorithms.__name__}.{algorithms.MODULES[cls.name]}"):
        raise ValueError(f"algorithm {cls.name} is registered twice")
    _REGISTRY[cls.name] = cls
    return cls


@dataclass(frozen=True)
class AlgorithmInfo:
    name: str
    exact: bool
    stream: str
    summary: str
    defaults: dict[str, Any]

    @property
    def family(self) -> str:
        return f"{'exact' if self.exact else 'approximate'}, {self.stream}"


def names() -> list[str]:
    """Every registered algorithm's name, in listing order (the engine's, then any registered
    from outside), without importing any algorithm."""
    return list(algorithms.MODULES) + [name for name in _REGISTRY if name not in algorithms.MODULES]


def algorithm_class(name: str) -> type[Algorithm]:
    """The class of algorithm ``name``, its module imported on first use; an unknown name raises
    ``ValueError`` listing the valid ones."""
    try:
        known = name in _REGISTRY or name in algorithms.MODULES
    except TypeError:  # an unhashable name, such as a list
        known = False
    if not known:
        raise ValueError(f"unknown algorithm {name!r}; valid: {', '.join(names())}")
    if name not in _REGISTRY:
        algorithms.load(name)
    return _REGISTRY[name]


def create(name: str, query: Query, **params: Any) -> Algorithm:
    """A new algorithm ``name`` for ``query``; unknown names or parameters raise ``ValueError``."""
    return algorithm_class(name)(query, **params)


def describe(name: str) -> AlgorithmInfo:
    """Algorithm ``name``'s family, summary and parameter defaults (importing its module only);
    an unknown name raises ``ValueError`` listing the valid ones."""
    c = algorithm_class(name)
    return AlgorithmInfo(c.name, c.exact, c.stream, c.summary, dict(c.defaults))


def available() -> list[AlgorithmInfo]:
    """Every registered algorithm with its family, summary and parameter defaults (importing
    every algorithm's module)."""
    return [describe(name) for name in names()]
