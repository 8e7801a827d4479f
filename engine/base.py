"""The shared base class of every algorithm and the memory cost model."""

from __future__ import annotations

import abc
from typing import Any, ClassVar

import numpy as np

from .jsondata import pack
from .memory import deep_size
from .query import Query
from .ranking import Answer
from .stream import Batch

WORD = 8
"""Bytes per feature value, id, seq, t, score, pointer, counter or window mark (SPEC 3)."""

OBJECT_WORDS = 3
"""Words every retained object costs before its values: id, seq and t."""


class Algorithm(abc.ABC):
    """A continuous top-k algorithm over the slides of one query.

    Settings (the query and the parameters) are fixed in the constructor; the working state
    lives in ``_private`` attributes.  ``dump_state`` / ``load_state`` convert that state to and
    from plain JSON data, kept apart from the working structures; ``check`` asserts every
    invariant (``engine.restore`` calls it after ``load_state``, tests after every slide).
    Subclasses implement ``_stats``; the public ``stats`` adds ``measured_bytes``.

    Subclasses set ``name``, ``summary``, ``exact``, ``stream`` (``"single"`` or
    ``"incomplete"``) and ``defaults`` (parameter name -> default value).
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    exact: ClassVar[bool] = True
    stream: ClassVar[str] = "single"
    defaults: ClassVar[dict[str, Any]] = {}

    def __init__(self, query: Query, **params: Any) -> None:
        if not isinstance(query, Query):
            raise ValueError(f"query must be an engine.Query, got {type(query).__name__}")
        self.q = query
        self.params = self._resolve_params(params)
        self._reset()

    @classmethod
    def _resolve_params(cls, params: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(params) - set(cls.defaults))
        if unknown:
            valid = ", ".join(sorted(cls.defaults)) or "none"
            raise ValueError(f"unknown parameter(s) for {cls.name}: {', '.join(unknown)}; valid: {valid}")
        resolved = dict(cls.defaults)
        for key, value in params.items():
            resolved[key] = coerce_param(cls.name, key, cls.defaults[key], value)
        return resolved

    @abc.abstractmethod
    def _reset(self) -> None:
        """Create empty working structures."""

    @abc.abstractmethod
    def process(self, batch: Batch) -> None:
        """Take one slide (possibly empty) and move the window to ``batch.end``."""

    @abc.abstractmethod
    def topk(self) -> Answer:
        """The ranked answer for the window ending at the last processed slide."""

    @abc.abstractmethod
    def candidates(self) -> np.ndarray:
        """``seq`` of every object in the candidate structures (int64, any order)."""

    @abc.abstractmethod
    def _stats(self) -> dict[str, Any]:
        """``candidates``, ``retained``, ``bytes`` (the cost model) and algorithm counters."""

    def stats(self) -> dict[str, Any]:
        """``candidates``, ``retained``, ``bytes`` (modelled), ``measured_bytes`` and counters."""
        out = self._stats()
        out["measured_bytes"] = self.measured_bytes()
        return out

    def measured_bytes(self) -> int:
        """The real size of the working structures (``O(size)``; settings excluded)."""
        return deep_size(self.__dict__, exclude=(self.q, self.params))

    @abc.abstractmethod
    def dump_state(self) -> dict[str, Any]:
        """The working state as plain JSON data."""

    @abc.abstractmethod
    def load_state(self, data: dict[str, Any]) -> None:
        """Rebuild the working structures from :meth:`dump_state` data (after ``_reset``)."""

    def check(self) -> None:
        """Assert every invariant of the working structures (``O(size)``; for tests and restore)."""

    def to_state(self) -> dict[str, Any]:
        """A JSON-serialisable snapshot; :func:`engine.restore` continues from it exactly."""
        return pack(self.name, self.q.to_dict(), self.params, self.dump_state())

    def __repr__(self) -> str:
        params = "".join(f", {k}={v!r}" for k, v in self.params.items())
        return f"{type(self).__name__}({self.q!r}{params})"


def coerce_param(algorithm: str, key: str, default: Any, value: Any) -> Any:
    """Convert ``value`` (possibly a CLI string) to the type of ``default``."""
    kind = type(default)
    try:
        if kind is bool:
            if isinstance(value, str):
                lowered = value.strip().lower()
                if lowered not in ("true", "false", "1", "0", "yes", "no"):
                    raise ValueError
                return lowered in ("true", "1", "yes")
            if not isinstance(value, (bool, int)):
                raise ValueError
            return bool(value)
        if kind is int:
            if isinstance(value, float) and not value.is_integer():
                raise ValueError
            return int(value)
        if kind is float:
            return float(value)
        return kind(value)
    except (TypeError, ValueError):
        raise ValueError(f"parameter {key} of {algorithm} must be {kind.__name__}, got {value!r}") from None
