"""Plain JSON data for algorithm state: format version, checksum, number codecs.  Never pickle.

A leaf module: it imports nothing of the engine, so data structures and algorithms can use it
without importing the persistence layer.

A state document is ``{"format_version", "algorithm", "query", "params", "data", "checksum"}``.
Format 2 (written now) hashes the whole document but its checksum, so no field can be edited
unnoticed; format 1 hashed ``data`` only (:func:`engine.state.restore` still reads it).
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

import numpy as np

FORMAT_VERSION = 2
"""The state format this engine writes."""
OLDEST_VERSION = 1
"""The oldest state format this engine reads (older formats are migrated on restore)."""


class StateError(ValueError):
    """A state that cannot be restored: wrong version, another algorithm, query or params, corrupt data."""


class DuplicateKey(ValueError):
    """A JSON object naming one key twice (``json`` would keep the last silently)."""


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.load``'s ``object_pairs_hook``: the object as a dict, refusing a repeated key
    (:class:`DuplicateKey`, the key as its argument)."""
    entry: dict[str, Any] = {}
    for key, value in pairs:
        if key in entry:
            raise DuplicateKey(key)
        entry[key] = value
    return entry


def canonical(data: Any) -> str:
    """The canonical JSON form of ``data`` (sorted keys, no spaces, no NaN), which :func:`checksum` hashes;
    a ``ValueError`` when it is not JSON data, lists or objects nested too deeply included."""
    try:
        return json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except RecursionError:
        raise ValueError("lists or objects nested too deeply for JSON") from None


def checksum(data: Any) -> str:
    """SHA-256 of the canonical JSON form of ``data``."""
    return _sha256(canonical(data))


def document_checksum(document: dict[str, Any]) -> str:
    """The format-2 checksum: :func:`checksum` of every field of ``document`` but ``checksum``."""
    return checksum({key: value for key, value in document.items() if key != "checksum"})


def seal(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with its format-2 :func:`document_checksum` set."""
    return {**document, "checksum": document_checksum(document)}


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def pack(name: str, query: dict[str, Any], params: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    """The state document of algorithm ``name``: version, algorithm, query, params, data and checksum."""
    return seal({"format_version": FORMAT_VERSION, "algorithm": name, "query": dict(query),
                 "params": dict(params), "data": data})


def pack_text(name: str, query: dict[str, Any], params: dict[str, Any], data: dict[str, Any]) -> tuple[str, str]:
    """:func:`pack`'s document as JSON text, and its checksum, encoding ``data`` only once.

    The document is written in its canonical form (the top-level keys in sorted order, each
    value canonical), the very text the checksum hashes, followed by the checksum; a large
    state (a whole window) so costs one encoding instead of two.

    >>> text, digest = pack_text("oracle", {"k": 1}, {}, {"x": [1.5, 2]})
    >>> json.loads(text) == pack("oracle", {"k": 1}, {}, {"x": [1.5, 2]}) and digest == json.loads(text)["checksum"]
    True
    """
    body = (f'{{"algorithm":{canonical(name)},"data":{canonical(data)},"format_version":{FORMAT_VERSION},'
            f'"params":{canonical(dict(params))},"query":{canonical(dict(query))}}}')
    digest = _sha256(body)
    return f'{body[:-1]},"checksum":"{digest}"}}', digest


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


def saved_capacity(capacity: dict[str, int], name: str, least: int = 1) -> int:
    """``capacity[name]``, an array's capacity read from a state: a 64-bit integer of at least
    ``least`` (``ValueError`` on anything else)."""
    value = capacity[name]
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value < 2 ** 63:
        raise ValueError(f"capacity: {name} must be a 64-bit integer of at least {least}, got {value!r}")
    return value


def ints_in(values, name: str) -> np.ndarray:
    """A list of JSON integers as an int64 array (``ValueError`` on anything else, an integer
    beyond int64 included)."""
    if not isinstance(values, list) or any(isinstance(v, bool) or not isinstance(v, int) for v in values):
        raise ValueError(f"{name} must be a list of 64-bit integers")
    try:
        return np.asarray(values, np.int64)
    except OverflowError:
        raise ValueError(f"{name} must be a list of 64-bit integers") from None
