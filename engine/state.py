"""Plain-data state: format version, checksum and validation on restore.  Never pickle."""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

import numpy as np

from .query import Query

FORMAT_VERSION = 1


class StateError(ValueError):
    """A state that cannot be restored: wrong version, wrong query or corrupt data."""


def checksum(data: Any) -> str:
    """SHA-256 of the canonical JSON form of ``data``."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


def pack(name: str, query: Query, params: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    return {"format_version": FORMAT_VERSION, "algorithm": name, "query": query.to_dict(),
            "params": dict(params), "data": data, "checksum": checksum(data)}


def restore(state: Any, query: Query | None = None):
    """Rebuild an algorithm from :meth:`Algorithm.to_state` output.

    Checks the format version, the algorithm name, the query (equal to ``query`` when one is
    given), the checksum and every invariant of the rebuilt structures; anything wrong raises
    :class:`StateError` with the reason.
    """
    from .registry import algorithm_class

    if not isinstance(state, dict):
        raise StateError(f"state must be a JSON object, got {type(state).__name__}")
    version = state.get("format_version")
    if version != FORMAT_VERSION:
        raise StateError(f"state format version {version!r} is not supported (this engine reads {FORMAT_VERSION})")
    missing = [key for key in ("algorithm", "query", "params", "data", "checksum") if key not in state]
    if missing:
        raise StateError(f"state is missing {', '.join(missing)}")
    try:
        cls = algorithm_class(state["algorithm"])
        stored_query = Query.from_dict(state["query"])
    except ValueError as error:
        raise StateError(f"state is invalid: {error}") from None
    if query is not None and query != stored_query:
        raise StateError(f"state was saved for {stored_query}, not {query}")
    try:
        valid_checksum = checksum(state["data"]) == state["checksum"]
    except (TypeError, ValueError):
        valid_checksum = False
    if not valid_checksum:
        raise StateError("state is corrupt: its checksum does not match its data")
    try:
        algorithm = cls(stored_query, **state["params"])
        algorithm._load(state["data"])
        algorithm._check()
    except (AssertionError, KeyError, IndexError, TypeError, ValueError) as error:
        raise StateError(f"state of {cls.name} is corrupt: {type(error).__name__}: {error}") from None
    return algorithm


def floats_out(values) -> list:
    """Floats as JSON data: finite values as numbers, ``inf``/``-inf``/``nan`` as strings.

    >>> floats_out(np.array([1.5, np.inf]))
    [1.5, 'inf']
    """
    return [v if math.isfinite(v) else repr(v) for v in np.asarray(values, np.float64).tolist()]


def floats_in(values) -> np.ndarray:
    """Inverse of :func:`floats_out`; anything else raises ``ValueError``.

    >>> floats_in([1.5, "inf"]).tolist()
    [1.5, inf]
    """
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float, str)):
            raise ValueError(f"expected a number, got {v!r}")
        if isinstance(v, str) and v not in ("inf", "-inf", "nan"):
            raise ValueError(f"expected a number, got {v!r}")
        out.append(float(v))
    return np.asarray(out, np.float64)


def ints_in(values, name: str) -> np.ndarray:
    """A list of JSON integers as an int64 array (``ValueError`` on anything else)."""
    if not isinstance(values, list) or any(isinstance(v, bool) or not isinstance(v, int) for v in values):
        raise ValueError(f"{name} must be a list of integers")
    return np.asarray(values, np.int64)
