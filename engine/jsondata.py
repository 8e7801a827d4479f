"""Plain JSON data for algorithm state: format version, checksum, number codecs.  Never pickle.

A leaf module: it imports nothing of the engine, so data structures and algorithms can use it
without importing the persistence layer.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

import numpy as np

FORMAT_VERSION = 1


class StateError(ValueError):
    """A state that cannot be restored: wrong version, wrong query or corrupt data."""


def canonical(data: Any) -> str:
    """The canonical JSON form of ``data`` (sorted keys, no spaces, no NaN), which :func:`checksum` hashes."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False)


def checksum(data: Any) -> str:
    """SHA-256 of the canonical JSON form of ``data``."""
    return _sha256(canonical(data))


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def pack(name: str, query: dict[str, Any], params: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    """The state document of algorithm ``name``: version, query, params, data and checksum."""
    return {"format_version": FORMAT_VERSION, "algorithm": name, "query": dict(query),
            "params": dict(params), "data": data, "checksum": checksum(data)}


def pack_text(name: str, query: dict[str, Any], params: dict[str, Any], data: dict[str, Any]) -> tuple[str, str]:
    """:func:`pack`'s document as JSON text, and its checksum, encoding ``data`` only once.

    The data is written in its canonical form, the very text the checksum hashes, so a large
    state (a whole window) costs one encoding instead of two.

    >>> text, digest = pack_text("oracle", {"k": 1}, {}, {"x": [1.5, 2]})
    >>> json.loads(text) == pack("oracle", {"k": 1}, {}, {"x": [1.5, 2]}) and digest == checksum({"x": [1.5, 2]})
    True
    """
    body = canonical(data)
    digest = _sha256(body)
    head = json.dumps({"format_version": FORMAT_VERSION, "algorithm": name, "query": dict(query),
                       "params": dict(params)}, separators=(",", ":"), allow_nan=False)
    return f'{head[:-1]},"data":{body},"checksum":"{digest}"}}', digest


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
