"""Restoring an algorithm from its plain-data state, with validation.  Never pickle.

:func:`restore` reads every format from :data:`OLDEST_VERSION` to :data:`FORMAT_VERSION`:
an older document is first migrated, one format at a time (:data:`MIGRATIONS`), to the current
one.  Format 1 hashed ``data`` only; format 2 hashes the whole document.
"""

from __future__ import annotations

from typing import Any, Callable

from .jsondata import FORMAT_VERSION, OLDEST_VERSION, StateError, checksum, document_checksum, seal
from .query import Query
from .registry import algorithm_class

SHARED_EXECUTOR = "multi"
"""The algorithm name in the states of :class:`engine.multi.SharedTopK` (``engine.multi.NAME``),
which that class restores."""

__all__ = ["FORMAT_VERSION", "MIGRATIONS", "StateError", "restore"]

FIELDS = ("algorithm", "query", "params", "data", "checksum")
READS = f"this engine reads {OLDEST_VERSION}-{FORMAT_VERSION}"


def _from_v1(state: dict[str, Any]) -> dict[str, Any]:
    """Format 1 -> 2: check the data-only checksum, then seal the whole document."""
    if not _matches(checksum, state.get("data"), state["checksum"]):
        raise StateError("state (format 1) is corrupt: its checksum does not match its data")
    return seal({**state, "format_version": 2})


MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _from_v1}
"""``version -> function`` turning a checked document of that format into one of the next format."""


def restore(state: Any, query: Query | None = None, *, algorithm: str | None = None,
            params: dict[str, Any] | None = None):
    """Rebuild an algorithm from :meth:`Algorithm.to_state` output.

    Parameters
    ----------
    state
        The state document (parsed JSON).
    query, algorithm, params
        What the caller expects to continue (``None``: not checked).  ``params`` are compared
        after the algorithm's defaults fill them in, so ``{}`` means "the defaults".

    Checks the format version (an older format is migrated, a newer one refused as such), that
    the algorithm, query and params are the ones asked for, the checksum (of the whole document)
    and every invariant of the rebuilt structures.  Anything wrong raises :class:`StateError`
    naming what differs.  The copy has answered the slide the state was saved at, as its
    writer had once it answered, so both report the same ``stats()``.  ``O(size of the state)``.

    Examples
    --------
    >>> import engine
    >>> q = engine.Query(weights=[1.0], k=2, window=4, slide=2)
    >>> state = engine.create("sao", q, memory=40).to_state()
    >>> engine.restore(state, q, algorithm="sao", params={"memory": 40}).params["memory"]
    40
    >>> engine.restore(state, q, algorithm="sao", params={"memory": 400})
    Traceback (most recent call last):
    ...
    engine.jsondata.StateError: state differs in params (memory: 40 saved, 400 asked)
    """
    if query is not None and not isinstance(query, Query):
        raise ValueError(f"query must be an engine.Query, got {type(query).__name__}")
    if params is not None and not isinstance(params, dict):
        raise ValueError(f"params must be a mapping of parameter names to values, got {type(params).__name__}")
    document = _current_format(state)
    if document.get("algorithm") == SHARED_EXECUTOR:
        raise StateError("state is of the shared executor (run-many): restore it with "
                         "engine.multi.SharedTopK.restore(state)")
    try:
        cls = algorithm_class(document["algorithm"])
        stored_query = Query.from_dict(document["query"])
        if not isinstance(document["params"], dict):
            raise ValueError(f"params must be a mapping, got {type(document['params']).__name__}")
    except ValueError as error:
        raise StateError(f"state is invalid: {error}") from None
    if algorithm is not None and algorithm != cls.name:
        raise StateError(f"state differs in algorithm ({cls.name} saved, {algorithm} asked)")
    if query is not None and query != stored_query:
        raise StateError(f"state differs in query ({_differences(stored_query.to_dict(), query.to_dict())})")
    try:
        stored_params = cls._resolve_params(document["params"])
    except ValueError as error:
        raise StateError(f"state is invalid: {error}") from None
    if params is not None:
        try:
            asked = cls._resolve_params(params)
        except ValueError as error:
            raise StateError(f"cannot compare the state's params: {error}") from None
        if asked != stored_params:
            raise StateError(f"state differs in params ({_differences(stored_params, asked)})")
    if not _matches(document_checksum, document, document["checksum"]):
        if None in (query, algorithm, params):
            raise StateError("state does not match its checksum: its algorithm, query, params or data "
                             "changed after it was written")
        raise StateError("state differs in data: its data does not match its checksum (changed after it was written)")
    try:
        restored = cls(stored_query, **stored_params)
        restored.load_state(document["data"])
        restored.check()
        restored.topk()  # held by the writer once it answered: stats() measures the cached answer
    except (AssertionError, AttributeError, KeyError, IndexError, OverflowError, TypeError, ValueError) as error:
        raise StateError(f"state of {cls.name} is corrupt: {type(error).__name__}: {error}") from None
    return restored


def _current_format(state: Any) -> dict[str, Any]:
    """``state`` migrated to :data:`FORMAT_VERSION`; a missing field or an unknown version raises."""
    if not isinstance(state, dict):
        raise StateError(f"state must be a JSON object, got {type(state).__name__}")
    version = state.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise StateError(f"state format version {version!r} is not supported ({READS})")
    if version > FORMAT_VERSION:
        raise StateError(f"state was written by a newer Top-k Watch: format {version}, {READS}")
    if version < OLDEST_VERSION:
        raise StateError(f"state format version {version} is not supported ({READS})")
    missing = [key for key in FIELDS if key not in state]
    if missing:
        raise StateError(f"state is missing {', '.join(missing)}")
    while version < FORMAT_VERSION:
        state = MIGRATIONS[version](state)
        version = state["format_version"]
    return state


def _matches(digest: Callable[[Any], str], value: Any, expected: Any) -> bool:
    try:
        return digest(value) == expected
    except (TypeError, ValueError):
        return False


def _differences(saved: dict[str, Any], asked: dict[str, Any]) -> str:
    """``k: 6 saved, 3 asked; ...`` for every key whose values differ."""
    keys = sorted(set(saved) | set(asked))
    return "; ".join(f"{key}: {saved.get(key)!r} saved, {asked.get(key)!r} asked"
                     for key in keys if saved.get(key) != asked.get(key))
