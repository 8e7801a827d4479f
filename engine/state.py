"""Plain-data state: format version, checksum and validation on restore.  Never pickle."""

from __future__ import annotations

import hashlib
import json
from typing import Any

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
