"""The continuous top-k query: score weights, k, window, slide and window kind."""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Mapping, Set
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

KINDS = ("count", "time")

FIELDS = ("weights", "k", "window", "slide", "kind")
"""The fields of :meth:`Query.to_dict`, in order."""

INT64_MAX = 2**63 - 1
"""The largest ``k``, ``window`` and ``slide`` (and time ``window + slide``): every structure
and kernel holds them, and a time window's bounds, in int64."""

MAX_WINDOWS_PER_OBJECT = 10_000_000
"""The largest ``window / slide`` of the algorithms that keep a row for each of the windows an
object takes part in, allocated when they are created (``pretopk``, ``mintopk``, the shared
executor): 80 to 320 MB of rows at this limit, where ``window / slide = 10**9`` (a day in
microseconds, slide 1) asks for 8 to 16 GB before the first object arrives."""


def check_windows_per_object(query: "Query", holder: str) -> None:
    """Refuse, as a ``ValueError`` naming ``holder`` and the limit, a query whose
    ``window / slide`` exceeds :data:`MAX_WINDOWS_PER_OBJECT` (``O(1)``).

    >>> check_windows_per_object(Query(weights=[1.0], k=1, window=10**15, slide=1), "mintopk")
    Traceback (most recent call last):
    ...
    ValueError: mintopk keeps a row per window an object takes part in: window / slide must be at most 10,000,000, got 1,000,000,000,000,000 (window 1000000000000000, slide 1); use a longer slide
    """
    if query.windows_per_object > MAX_WINDOWS_PER_OBJECT:
        raise ValueError(f"{holder} keeps a row per window an object takes part in: window / slide must be at "
                         f"most {MAX_WINDOWS_PER_OBJECT:,}, got {query.windows_per_object:,} (window {query.window}, "
                         f"slide {query.slide}); use a longer slide")


@dataclass(frozen=True)
class Query:
    """A continuous top-k query over a sliding window.

    Parameters
    ----------
    weights
        One weight per feature (single stream) or per stream (incomplete streams);
        the score of an object is ``weights · x``.
    k
        Number of objects in every answer, ``k >= 1``.
    window
        Window length ``n``: objects (``kind="count"``) or time units (``kind="time"``).
    slide
        Slide length ``s`` with ``0 < s <= n`` and ``n % s == 0``.
    kind
        ``"count"`` or ``"time"``.

    Invalid fields raise ``ValueError`` naming the field and the value.

    Examples
    --------
    >>> q = Query(weights=[1.0, 0.5], k=3, window=100, slide=10)
    >>> q.windows_per_object
    10
    >>> Query(weights=[1.0], k=0, window=10, slide=5)
    Traceback (most recent call last):
    ...
    ValueError: k must be an integer >= 1, got 0
    """

    weights: tuple[float, ...]
    k: int
    window: int
    slide: int
    kind: str = "count"

    def __post_init__(self) -> None:
        try:
            if isinstance(self.weights, (str, bytes, Set, Mapping)):  # a set's order is arbitrary, a dict's keys no weights
                raise TypeError
            weights = tuple(self.weights)
            if any(isinstance(w, (bool, np.bool_, str, bytes)) for w in weights):  # float(True), float("1") read them
                raise TypeError
            weights = tuple(float(w) for w in weights)
        except (TypeError, ValueError):
            raise ValueError(f"weights must be a sequence of numbers, got {self.weights!r}") from None
        except OverflowError:
            raise ValueError("weights must be finite numbers, got an integer beyond the largest float "
                             f"({sys.float_info.max:.4g})") from None
        if not weights:
            raise ValueError("weights must hold at least one weight, got []")
        if not all(math.isfinite(w) for w in weights):
            raise ValueError(f"weights must be finite numbers, got {list(weights)}")
        object.__setattr__(self, "weights", weights)
        for field in ("k", "window", "slide"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
                raise ValueError(f"{field} must be an integer >= 1, got {value!r}")
            if value > INT64_MAX:
                raise ValueError(f"{field} must be at most {INT64_MAX} (int64), got {value}")
            object.__setattr__(self, field, int(value))
        if self.slide > self.window:
            raise ValueError(f"slide must be <= window ({self.window}), got {self.slide}")
        if self.window % self.slide:
            raise ValueError(f"window must be a multiple of slide ({self.slide}), got {self.window}")
        if not isinstance(self.kind, str) or self.kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        object.__setattr__(self, "kind", str(self.kind))  # numpy's str_ too
        if self.kind == "time" and self.window + self.slide > INT64_MAX:
            raise ValueError(f"a time window needs window + slide at most {INT64_MAX} (int64), got "
                             f"{self.window} + {self.slide}")

    @property
    def dimensions(self) -> int:
        """Number of features (or streams) the weights cover."""
        return len(self.weights)

    @property
    def expiry_key(self) -> str:
        """What decides expiry: ``"seq"`` for count windows, ``"t"`` for time windows."""
        return "seq" if self.kind == "count" else "t"

    @property
    def windows_per_object(self) -> int:
        """``C_nw = n / s``: how many windows every object takes part in."""
        return self.window // self.slide

    def with_weights(self, weights: Sequence[float]) -> "Query":
        """The same query with other weights."""
        return Query(weights=tuple(weights), k=self.k, window=self.window, slide=self.slide, kind=self.kind)

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form, as stored in state and in DuckDB."""
        return {"weights": list(self.weights), "k": self.k, "window": self.window,
                "slide": self.slide, "kind": self.kind}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Query":
        """Inverse of :meth:`to_dict`; a missing, unknown or bad field raises ``ValueError``.

        >>> Query.from_dict({"weights": [1.0], "k": 1, "window": 2, "slide": 1, "kind": "count", "K": 5})
        Traceback (most recent call last):
        ...
        ValueError: query has unknown field(s) K; valid: weights, k, window, slide, kind
        """
        if not isinstance(data, dict):
            raise ValueError(f"query must be a mapping, got {type(data).__name__}")
        unknown = sorted(str(field) for field in data if field not in FIELDS)
        if unknown:
            raise ValueError(f"query has unknown field(s) {', '.join(unknown)}; valid: {', '.join(FIELDS)}")
        missing = [f for f in FIELDS if f not in data]
        if missing:
            raise ValueError(f"query is missing field(s): {', '.join(missing)}")
        return cls(weights=data["weights"], k=data["k"], window=data["window"],
                   slide=data["slide"], kind=data["kind"])
