"""The algorithm registry: ``create``, ``available`` and lookup by name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .base import Algorithm
from .query import Query

_REGISTRY: dict[str, type[Algorithm]] = {}


def register(cls: type[Algorithm]) -> type[Algorithm]:
    """Class decorator adding an algorithm to the registry under ``cls.name``."""
    if cls.name in _REGISTRY:
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


def algorithm_class(name: str) -> type[Algorithm]:
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):  # TypeError: an unhashable name, such as a list
        raise ValueError(f"unknown algorithm {name!r}; valid: {', '.join(_REGISTRY)}") from None


def create(name: str, query: Query, **params: Any) -> Algorithm:
    """A new algorithm ``name`` for ``query``; unknown names or parameters raise ``ValueError``."""
    return algorithm_class(name)(query, **params)


def available() -> list[AlgorithmInfo]:
    """Every registered algorithm with its family, summary and parameter defaults."""
    return [AlgorithmInfo(c.name, c.exact, c.stream, c.summary, dict(c.defaults)) for c in _REGISTRY.values()]
