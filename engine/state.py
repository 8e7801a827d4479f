"""Restoring an algorithm from its plain-data state, with validation.  Never pickle."""

from __future__ import annotations

from typing import Any

from .jsondata import FORMAT_VERSION, StateError, checksum
from .query import Query
from .registry import algorithm_class

__all__ = ["FORMAT_VERSION", "StateError", "restore"]


def restore(state: Any, query: Query | None = None):
    """Rebuild an algorithm from :meth:`Algorithm.to_state` output.

    Checks the format version, the algorithm name, the query (equal to ``query`` when one is
    given), the checksum and every invariant of the rebuilt structures; anything wrong raises
    :class:`StateError` with the reason.
    """
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
        algorithm.load_state(state["data"])
        algorithm.check()
    except (AssertionError, KeyError, IndexError, TypeError, ValueError) as error:
        raise StateError(f"state of {cls.name} is corrupt: {type(error).__name__}: {error}") from None
    return algorithm
