"""Slides of a stream: how rows are cut into the batches every algorithm sees.

Count windows: slide boundaries are multiples of ``s`` in ``seq`` space (``seq`` is the row
number); the answer at boundary ``end`` covers ``end - n <= seq < end``.
Time windows: boundaries are multiples of ``s`` in ``t``; the answer at boundary ``T`` covers
``T - n <= t < T``; slides may be empty.  A trailing incomplete slide produces no batch.
"""

from __future__ import annotations

import decimal
import itertools
import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

from .query import Query
from .ranking import score

_BOUNDARY_CHUNK = 1 << 16


@dataclass(frozen=True, eq=False)
class Batch:
    """One slide of the stream, possibly empty.

    ``ids``, ``seq`` and ``t`` are int64 arrays of equal length ``m``; ``x`` is an ``(m, d)``
    float64 feature matrix (object streams).  Attribute streams carry ``stream`` (int64) and
    ``value`` (float64) instead, and ``x`` has zero columns.  ``end`` is the slide boundary
    (exclusive): a ``seq`` for count windows, a time for time windows.  ``index`` is the
    ordinal of the slide in the run that produced it.
    """

    ids: np.ndarray
    seq: np.ndarray
    t: np.ndarray
    x: np.ndarray
    end: int
    index: int
    stream: np.ndarray | None = None
    value: np.ndarray | None = None

    def __post_init__(self) -> None:
        """Refuse (``O(1)``) columns that are not 1-D numpy arrays of one length, ``x`` that is not
        an ``(m, d)`` array and an ``end`` that is not an integer, so a hand-made batch holds what
        one from :func:`slides` holds (its values are the maker's to check).

        >>> Batch(np.arange(2), np.arange(3), np.arange(2), np.ones((2, 1)), end=2, index=0)
        Traceback (most recent call last):
        ...
        ValueError: the batch's seq has 3 values for 2 ids
        """
        ids = self.ids
        m = len(ids) if isinstance(ids, np.ndarray) and ids.ndim == 1 else -1
        x = self.x
        if not (m >= 0 and _fits(self.seq, m) and _fits(self.t, m) and isinstance(x, np.ndarray) and x.ndim == 2
                and len(x) == m and (self.stream is None or _fits(self.stream, m))
                and (self.value is None or _fits(self.value, m))):
            columns = {"ids": ids, "seq": self.seq, "t": self.t, "x": x, "stream": self.stream, "value": self.value}
            for column, values in columns.items():
                if values is None and column in ("stream", "value"):
                    continue
                if not isinstance(values, np.ndarray) or values.ndim != (2 if column == "x" else 1):
                    shape = "an (m, d)" if column == "x" else "a 1-D"
                    raise ValueError(f"the batch's {column} must be {shape} numpy array, "
                                     f"got {getattr(values, 'shape', type(values).__name__)}")
                if len(values) != m:
                    raise ValueError(f"the batch's {column} has {len(values)} values for {m} ids")
        if isinstance(self.end, bool) or not isinstance(self.end, (int, np.integer)):
            raise ValueError(f"the batch's end must be an integer, got {self.end!r}")

    def __len__(self) -> int:
        return len(self.ids)

    def window_start(self, query: Query) -> int:
        """Lowest key (``seq`` or ``t``) still inside the window that ends at this slide."""
        return self.end - query.window

    def keys(self, query: Query) -> np.ndarray:
        """The values that decide expiry: ``seq`` for count windows, ``t`` for time windows."""
        return getattr(self, query.expiry_key)


def _fits(values: Any, m: int) -> bool:
    return isinstance(values, np.ndarray) and values.ndim == 1 and len(values) == m


def as_object_stream(ids, t, x, dimensions: int | None = None, weights=None):
    """Validate and convert ``(ids, t, x)`` to int64, int64 and an ``(m, d)`` float64 matrix.

    Given the query's ``weights``, also refuses a row whose score overflows (see
    :func:`check_scores`).
    """
    ids, t = int64_column("ids", ids), int64_column("t", t)
    x = float_array("features", x, "a 1-D or 2-D array", (1, 2))
    if x.ndim == 1:  # one feature per row; no rows at all have the query's features
        x = x.reshape(len(x), 1 if len(x) or dimensions is None else dimensions)
    x = np.ascontiguousarray(x)
    if not len(ids) == len(t) == len(x):
        raise ValueError(f"ids, t and x must have equal lengths, got {len(ids)}, {len(t)}, {len(x)}")
    if dimensions is not None and x.shape[1] != dimensions:
        raise ValueError(f"the query has {dimensions} weight(s) but the stream has {x.shape[1]} feature(s)")
    if not np.isfinite(x).all():
        bad = ~np.isfinite(x).all(axis=1)
        raise ValueError(f"row {int(np.argmax(bad))}: feature values must be finite numbers")
    if weights is not None:
        with np.errstate(over="ignore", invalid="ignore"):
            check_scores(score(x, weights))
    return ids, t, x


def float_array(name: str, values, shape: str, dimensions: tuple[int, ...]) -> np.ndarray:
    """``values``, numbers in an array of one of ``dimensions`` (described as ``shape``), as
    float64; a bool or text (``True``, ``"1.5"``, which numpy reads as 1.0 and 1.5) or anything
    else that is not a real number is a ``ValueError`` naming the row (and the feature of a
    matrix).  ``O(1)`` for a numpy array of floats or integers; a list or tuple is checked by the
    types of its values (``O(m)`` in C loops, as numpy reads it), anything else value by value.

    >>> float_array("value", [0.5, True], "a 1-D sequence of numbers", (1,))
    Traceback (most recent call last):
    ...
    ValueError: value must be numbers: row 1: True is a boolean
    >>> float_array("features", [[0.5, "2"]], "a 1-D or 2-D array", (1, 2))
    Traceback (most recent call last):
    ...
    ValueError: features must be numbers: row 0, feature 1: '2' is text
    >>> float_array("value", np.ma.masked_array([0.5, 0.7], mask=[0, 1]), "a 1-D sequence of numbers", (1,))
    Traceback (most recent call last):
    ...
    ValueError: value must be numbers: row 1: masked (a masked array's masked entries have no value)
    """
    values = unmasked(f"{name} must be numbers", values)
    numeric = isinstance(values, np.ndarray) and values.dtype.kind in "fiu"
    try:
        array = values if numeric else np.asarray(values)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"{name} must be numbers: {exc}") from None
    if array.ndim not in dimensions:
        raise ValueError(f"{name} must be {shape}, got {array.ndim} dimensions")
    if not numeric:
        kinds = _listed_types(values, array.ndim)
        if kinds is None or not all(map(_number_type, kinds)):
            _refuse_what_is_not_a_number(name, values, array)
    try:
        return array.astype(np.float64, copy=False)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"{name} must be numbers: {exc}") from None


def unmasked(refusal: str, values):
    """The data of a numpy masked array with no masked entry (``np.asarray`` drops the mask and
    reads the values under it), else ``ValueError`` ``refusal: row i[, feature j]: masked``;
    anything else as it is."""
    if not isinstance(values, np.ma.MaskedArray):
        return values
    mask = np.ma.getmaskarray(values)
    if mask.any():
        position = [int(index) for index in np.unravel_index(int(np.argmax(mask)), mask.shape)]
        where = f"row {position[0]}" + (f", feature {position[1]}" if len(position) == 2 else "")
        raise ValueError(f"{refusal}: {where}: masked (a masked array's masked entries have no value)")
    return np.ma.getdata(values)


def _listed_types(values, dimensions: int) -> set[type] | None:
    """The types of the values of a list or tuple (of lists or tuples when ``dimensions`` is 2),
    ``O(values)`` in C loops; ``None`` for anything else."""
    if not isinstance(values, (list, tuple)):
        return None
    if dimensions == 1:
        return set(map(type, values))
    rows = set(map(type, values))
    return set(map(type, itertools.chain.from_iterable(values))) if rows <= {list, tuple} else None


def _refuse_what_is_not_a_number(name: str, values, array: np.ndarray) -> None:
    """Raise :func:`float_array`'s ``ValueError`` for the first value of ``values`` (read as
    ``array``) that is not a number it takes, if there is one."""
    objects = array if array.dtype.kind == "O" else np.array(values, dtype=object)
    types = np.frompyfunc(type, 1, 1)(objects).reshape(-1).tolist()
    for index in sorted(types.index(kind) for kind in set(types) if not _number_type(kind)):
        position = np.unravel_index(index, objects.shape)
        where = f"row {position[0]}" + (f", feature {position[1]}" if len(position) > 1 else "")
        raise ValueError(f"{name} must be numbers: {where}: {_not_a_number(objects.flat[index])}")


def _number_type(kind: type) -> bool:
    """Whether values of type ``kind`` are numbers :func:`float_array` takes (not a bool, not text)."""
    return issubclass(kind, (numbers.Real, decimal.Decimal)) and not issubclass(kind, (bool, np.bool_))


def _not_a_number(value: Any) -> str:
    """Why ``value``, of a type :func:`_number_type` refuses, is not a number."""
    if isinstance(value, (bool, np.bool_)):
        return f"{bool(value)!r} is a boolean"
    if isinstance(value, (str, bytes)):
        return f"{str(value) if isinstance(value, str) else bytes(value)!r} is text"
    return f"{value!r} is not a number"


def int64_column(name: str, values) -> np.ndarray:
    """``values``, a 1-D sequence of whole numbers (integers, or floats without a fraction such
    as ``3.0``), as a contiguous int64 array; a bool, a fraction, a value beyond int64, text or
    anything else is a ``ValueError`` naming the column and the row (``O(m)``; a list or tuple
    is scanned for bools, and one holding floats, or an object array, checked value by value).

    >>> int64_column("t", [0, 3.0]).tolist()
    [0, 3]
    >>> int64_column("t", [0, 2**63])
    Traceback (most recent call last):
    ...
    ValueError: t must be int64 integers: row 1: 9223372036854775808 is beyond int64
    >>> int64_column("ids", [1, 3.5])
    Traceback (most recent call last):
    ...
    ValueError: ids must be int64 integers: row 1: 3.5 is not a whole number
    """
    values = unmasked(f"{name} must be int64 integers", values)
    listed = isinstance(values, (list, tuple))
    try:
        array = np.asarray(values)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"{name} must be int64 integers: {exc}") from None
    if array.ndim != 1:
        raise ValueError(f"{name} must be a 1-D sequence of int64 integers, got {array.ndim} dimensions")
    kind = array.dtype.kind
    if kind == "b":
        raise ValueError(f"{name} must be int64 integers, got booleans")
    if kind == "O" or (listed and kind == "f"):
        return _whole_numbers(name, values if listed else array.tolist())
    if listed and any(isinstance(value, (bool, np.bool_)) for value in values):  # numpy reads True as 1
        return _whole_numbers(name, values)
    if kind == "i":
        return np.ascontiguousarray(array, dtype=np.int64)
    if kind == "u":
        beyond = np.flatnonzero(array > np.uint64(2**63 - 1))
        if len(beyond):
            raise ValueError(f"{name} must be int64 integers: row {int(beyond[0])}: {array[beyond[0]]} is beyond int64")
        return np.ascontiguousarray(array, dtype=np.int64)
    if kind == "f":
        with np.errstate(invalid="ignore"):
            bad = np.flatnonzero(~(np.isfinite(array) & (np.floor(array) == array)
                                   & (array >= -(2.0**63)) & (array < 2.0**63)))
        if len(bad):
            raise ValueError(f"{name} must be int64 integers: row {int(bad[0])}: "
                             f"{_whole_problem(float(array[bad[0]]))}")
        return np.ascontiguousarray(array, dtype=np.int64)
    raise ValueError(f"{name} must be int64 integers, got {array.dtype} values")


def _whole_problem(value: float) -> str:
    """Why the float ``value`` is not an int64 whole number."""
    if value.is_integer():
        return f"{value!r} is beyond int64"
    return f"{value!r} is not a whole number"


def _whole_numbers(name: str, values: Sequence) -> np.ndarray:
    """The Python values ``values`` as int64, each checked as :func:`int64_column` says (``O(m)``
    Python steps: a float is read exactly, never through a float array that would round a large
    integer beside it)."""
    whole = []
    for row, value in enumerate(values):
        if isinstance(value, (bool, np.bool_)):
            raise ValueError(f"{name} must be int64 integers: row {row}: {value!r} is a boolean")
        if isinstance(value, numbers.Integral):
            number = int(value)
        elif isinstance(value, (float, np.floating)) and math.isfinite(value) and float(value).is_integer():
            number = int(value)
        elif isinstance(value, (float, np.floating)):
            raise ValueError(f"{name} must be int64 integers: row {row}: {value!r} is not a whole number")
        else:
            raise ValueError(f"{name} must be int64 integers: row {row}: {value!r} is not a number")
        if not -2**63 <= number < 2**63:
            raise ValueError(f"{name} must be int64 integers: row {row}: {number} is beyond int64")
        whole.append(number)
    return np.array(whole, dtype=np.int64)


def int64_argument(name: str, value: Any) -> int:
    """``value`` as an int, refused (``ValueError`` naming ``name``) unless it is an integer
    within int64: a bool or a float (even ``3.0``) is refused (``O(1)``).

    >>> int64_argument("seq_start", True)
    Traceback (most recent call last):
    ...
    ValueError: seq_start must be an int64 integer, got True
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not -2**63 <= value < 2**63:
        raise ValueError(f"{name} must be an int64 integer, got {value!r}")
    return int(value)


def check_scores(values: np.ndarray) -> None:
    """Refuse scores that overflowed: finite features times the weights can exceed ``1.8e308``.

    >>> as_object_stream([7], [0], [[1e308, 1e308]], weights=[1.0, 1.0])
    Traceback (most recent call last):
    ...
    ValueError: row 0: the score x · w overflows (inf); scale the features or the weights down
    """
    if not np.isfinite(values).all():
        row = int(np.argmax(~np.isfinite(values)))
        raise ValueError(f"row {row}: the score x · w overflows ({values[row]}); "
                         "scale the features or the weights down")


SCORE_SAFE = 1e300
"""A bound on ``|x · w|`` below which no score can overflow (the largest float is ``1.8e308``)."""


def may_overflow(weights: Sequence[float], largest: np.ndarray) -> bool:
    """Whether ``Σ |w_j| · largest_j`` (``largest``: each feature's largest magnitude) comes near
    enough the largest float for some score to overflow (``O(d)``)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return not float(np.abs(np.asarray(weights, np.float64)) @ largest) < SCORE_SAFE


def first_overflow(x: np.ndarray, weights: Sequence[float], largest: np.ndarray | None = None) -> int | None:
    """The first row of ``x`` whose score ``x · w`` overflows to infinity, or ``None``.

    ``O(d)`` when :func:`may_overflow` says none can (``largest`` computed here when not
    given); ``O(m d)`` otherwise.

    >>> first_overflow(np.array([[1.0, 1.0], [1e308, 1e308]]), [1.0, 1.0])
    1
    >>> first_overflow(np.array([[1e308, 1e308]]), [1.0, -1.0]) is None
    True
    """
    largest = np.abs(x).max(axis=0, initial=0.0) if largest is None else largest
    if not may_overflow(weights, largest):
        return None
    with np.errstate(over="ignore", invalid="ignore"):
        overflowing = np.flatnonzero(~np.isfinite(score(x, weights)))
    return int(overflowing[0]) if len(overflowing) else None


def weighted_sum_limit(rows: int, streams: int) -> float:
    """The least bound on an object's weighted values, summed over ``rows`` rows of ``streams``
    streams, at which its score may round to infinity: the largest float less the sums' rounding
    (at most a relative ``2 (rows + streams) ε`` whatever their order).

    >>> weighted_sum_limit(10, 2) < float(np.finfo(np.float64).max)
    True
    """
    return float(np.finfo(np.float64).max / (1.0 + 2.0 * (rows + streams) * np.finfo(np.float64).eps))


def attribute_overflow(ids: np.ndarray, stream: np.ndarray, value: np.ndarray,
                       weights: Sequence[float]) -> tuple[int, str] | None:
    """The first row of an attribute stream (``stream`` checked in ``0..len(weights)-1``)
    holding an object whose score may overflow to infinity, with the problem; else ``None``.

    An object's values in each stream are summed, so its score is at most its weighted values
    over all the rows, give or take the rounding of the sums (at most a relative
    ``2 (rows + d) ε`` whatever their order): refused when that bound comes within the rounding of
    the largest float (``O(d)`` when even every tuple of a stream summed could not come near
    it; ``O(rows log rows)`` otherwise).

    >>> attribute_overflow(np.array([2, 1, 1]), np.array([0, 0, 1]), np.array([0.5, 1.0, 1.0]), [1e308, 1e308])
    (1, 'object 1: its values weighted by [1e+308, 1e+308] add up to inf, beyond the largest float; scale the weights down')
    """
    w = np.asarray(weights, np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        if float(w @ np.bincount(stream, minlength=len(w))) < SCORE_SAFE:
            return None
        pairs, pair_of_row = np.unique(np.column_stack([ids, stream]), axis=0, return_inverse=True)
        weighted = np.bincount(pair_of_row.reshape(-1), weights=value) * w[pairs[:, 1]]
        objects, object_of_pair = np.unique(pairs[:, 0], return_inverse=True)
        bounds = np.bincount(object_of_pair.reshape(-1), weights=weighted)
    overflowing = np.flatnonzero(~(bounds < weighted_sum_limit(len(value), len(w))))
    if not len(overflowing):
        return None
    row = int(np.argmax(ids == objects[overflowing[0]]))
    bound = float(bounds[overflowing[0]])
    return row, (f"object {int(ids[row])}: its values weighted by {list(weights)} add up to {bound}, "
                 f"{'beyond' if math.isinf(bound) else 'within rounding of'} the largest float; "
                 "scale the weights down")


def as_attribute_stream(ids, stream, value, t, dimensions: int, weights: Sequence[float] | None = None):
    """Validate and convert ``(ids, stream, value, t)`` of an incomplete, attribute stream.

    ``stream`` must be in ``0..dimensions-1`` and ``value`` in ``[0, 1]``; given the query's
    ``weights``, no object's score may overflow (:func:`attribute_overflow`); a bad row raises
    ``ValueError`` naming it (0-based).

    >>> as_attribute_stream([4], [1], [0.5], [0], dimensions=1)
    Traceback (most recent call last):
    ...
    ValueError: row 0: stream must be in 0..0, got 1
    """
    ids, stream, t = int64_column("ids", ids), int64_column("stream", stream), int64_column("t", t)
    value = np.ascontiguousarray(float_array("value", value, "a 1-D sequence of numbers", (1,)))
    if not len(ids) == len(stream) == len(value) == len(t):
        raise ValueError(f"ids, stream, value and t must have equal lengths, got "
                         f"{len(ids)}, {len(stream)}, {len(value)}, {len(t)}")
    d = dimensions
    bad = (stream < 0) | (stream >= d)
    if bad.any():
        raise ValueError(f"row {int(np.argmax(bad))}: stream must be in 0..{d - 1}, got {int(stream[bad][0])}")
    bad = ~(np.isfinite(value) & (value >= 0.0) & (value <= 1.0))
    if bad.any():
        raise ValueError(f"row {int(np.argmax(bad))}: value must be in [0, 1], got {float(value[bad][0])!r}")
    if weights is not None:
        problem = attribute_overflow(ids, stream, value, weights)
        if problem is not None:
            raise ValueError(f"row {problem[0]}: {problem[1]}")
    return ids, stream, value, t


MAX_SLIDES = 10_000_000
"""Complete slides a time query may pass beyond its rows before the command line and the replay
refuse it (their ``--max-slides``): every slide is an answer line or row, and a gap in the times
(a stray timestamp, a unit mistaken) can make them astronomically many, nearly all empty."""


def slides(data: Sequence, query: Query, *, seq_start: int = 0, start: int | None = None,
           first_index: int = 0, max_slides: int | None = MAX_SLIDES) -> Iterator[Batch]:
    """Cut a stream into the slides of ``query``, one :class:`Batch` per complete slide.

    The stream and the arguments are checked when ``slides`` is called, before the first batch:
    a bad one is a ``ValueError``.

    Parameters
    ----------
    data
        ``(ids, t, x)`` for an object stream or ``(ids, stream, value, t)`` for an attribute
        stream, as arrays in arrival order.
    query
        The query whose window kind and slide decide the boundaries.
    seq_start
        ``seq`` of the first row (to continue a stream); a multiple of ``s`` for count windows.
    start
        Time windows only: the boundary where the first slide starts (a multiple of ``s``, at
        most the first ``t``); default ``floor(t[0] / s) * s``.
    first_index
        ``index`` of the first batch (to continue a stream cut in pieces).
    max_slides
        A time window whose complete slides outnumber both the rows and ``max_slides`` (nearly
        all empty, as a gap in ``t`` makes them) is refused, as the command line's
        ``--max-slides`` refuses it (default :data:`MAX_SLIDES`); ``None`` takes any number.

    Examples
    --------
    >>> import numpy as np
    >>> from engine import Query
    >>> q = Query(weights=[1.0], k=1, window=4, slide=2)
    >>> [(b.end, b.ids.tolist()) for b in slides((np.arange(5), np.arange(5), np.ones(5)), q)]
    [(2, [0, 1]), (4, [2, 3])]
    >>> q = Query(weights=[1.0, 1.0], k=1, window=2, slide=2)
    >>> [(b.stream.tolist(), b.value.tolist()) for b in slides(([7, 8], [1, 0], [0.5, 1.0], [0, 1]), q)]
    [([1, 0], [0.5, 1.0])]
    """
    if not isinstance(query, Query):
        raise ValueError(f"query must be an engine.Query, got {type(query).__name__}")
    seq_start, first_index = int64_argument("seq_start", seq_start), int64_argument("first_index", first_index)
    start = None if start is None else int64_argument("start", start)
    max_slides = None if max_slides is None else int64_argument("max_slides", max_slides)
    if max_slides is not None and max_slides < 1:
        raise ValueError(f"max_slides must be >= 1 (None: no limit), got {max_slides}")
    if isinstance(data, (str, bytes, Mapping)) or not hasattr(data, "__len__") or len(data) not in (3, 4):
        raise ValueError("data must be (ids, t, x) or (ids, stream, value, t)"
                         + (f", got a {type(data).__name__}" if isinstance(data, Mapping) else ""))
    if len(data) == 3:
        ids, t, x = as_object_stream(*data, dimensions=query.dimensions, weights=query.weights)
        stream = value = None
    else:
        ids, stream, value, t = as_attribute_stream(*data, dimensions=query.dimensions, weights=query.weights)
        x = np.empty((len(ids), 0))
    if not -2**63 <= seq_start <= 2**63 - 1 - len(ids):
        raise ValueError(f"seq_start must leave every row's seq within int64, got {seq_start} for {len(ids)} rows")
    first_end, count = _slide_plan(t, query, seq_start, start, max_slides)
    seq = np.arange(seq_start, seq_start + len(ids), dtype=np.int64)
    return _batches(ids, seq, t, x, stream, value, query, seq_start, first_end, count, first_index)


def _batches(ids, seq, t, x, stream, value, query: Query, seq_start: int, first_end: int, count: int,
             first_index: int) -> Iterator[Batch]:
    """The ``count`` complete slides, the first ending at ``first_end``."""
    lo = 0
    for index, (end, hi) in enumerate(_boundaries(t, query, seq_start, first_end, count), first_index):
        part = slice(lo, hi)
        yield Batch(ids=ids[part], seq=seq[part], t=t[part], x=x[part], end=end, index=index,
                    stream=None if stream is None else stream[part],
                    value=None if value is None else value[part])
        lo = hi


TIME_LIMITS = (-(2**63), 2**63 - 1)
"""The int64 range that times, slide ends and window starts must stay in."""


def time_margin(queries: Iterable[Query]) -> int | None:
    """The widest ``window + slide`` of the time queries, ``None`` if none is a time query."""
    return max((q.window + q.slide for q in queries if q.kind == "time"), default=None)


def time_range_problem(t: np.ndarray, margin: int) -> tuple[int, str] | None:
    """The first or last row of the non-decreasing times ``t`` if it lies within ``margin``
    (a time query's ``window + slide``, :func:`time_margin`) of the int64 limits, so that a
    window's start (an end minus the window) or the next slide's end would not be an int64,
    with the problem; else ``None`` (``O(1)``).

    Examples
    --------
    >>> import numpy as np
    >>> time_range_problem(np.array([0, 5]), 15) is None
    True
    >>> time_range_problem(np.array([0, 2**63 - 10]), 15)[0]
    1
    """
    low, high = TIME_LIMITS[0] + margin, TIME_LIMITS[1] - margin
    for row in (0, len(t) - 1):
        if len(t) and not low <= int(t[row]) <= high:
            return row, (f"t = {int(t[row])} is outside [{low}, {high}]: times must stay window + slide "
                         f"({margin}) inside the int64 range so that every window's bounds are int64")
    return None


def slide_count(t: np.ndarray, query: Query, start: int | None = None) -> int:
    """The complete slides :func:`slides` cuts from the rows with times ``t`` (``start``: the
    first slide's start, default ``floor(t[0] / s) * s``; ``O(1)``).

    Examples
    --------
    >>> import numpy as np
    >>> from engine import Query
    >>> slide_count(np.array([3, 4, 10**12]), Query(weights=[1.0], k=1, window=10, slide=5, kind="time"))
    200000000000
    """
    if query.kind == "count":
        return len(t) // query.slide
    if not len(t):
        return 0
    first = int(t[0]) // query.slide * query.slide if start is None else start
    return max(0, (int(t[-1]) // query.slide * query.slide - first) // query.slide)


def excess_slides(t: np.ndarray, query: Query, count: int, limit: int, start: int | None = None,
                  option: str = "--max-slides") -> tuple[int, str] | None:
    """``(row after the widest gap in t, problem)`` when a time query's ``count`` complete
    slides outnumber both the rows and ``limit`` (``option`` names the setting that raises it);
    else ``None``.  ``O(1)``, plus ``O(rows)`` to find the gap when refusing."""
    if query.kind == "count" or count <= max(limit, len(t)):
        return None
    first = int(t[0]) // query.slide * query.slide if start is None else start
    times = np.concatenate([np.array([first], np.int64), t])
    row = int(np.argmax(np.diff(times).view(np.uint64)))  # t non-decreasing: exact below 2**64
    before = str(int(t[row - 1])) if row else f"the first slide's start {first}"
    since = f"t = {int(t[0])}" if start is None else f"the first slide's start {first}"
    return row, (f"t jumps from {before} to {int(t[row])} here: a time window with slide {query.slide} passes "
                 f"{count:,} slide boundaries from {since} to t = {int(t[-1])}, more than the {len(t):,} rows and "
                 f"the limit of {limit:,} ({option}), one answer each, nearly all empty; use a larger slide or "
                 f"raise {option}")


def too_many_slides(t: np.ndarray, queries: Sequence[Query], limit: int) -> tuple[int, int, str] | None:
    """The first time query whose complete slides outnumber both the rows and ``limit``, as
    ``(query position, row after the widest gap in t, problem)``; else ``None``.  ``O(queries)``,
    plus ``O(rows)`` to find the gap when refusing.  Count queries pass at most a slide per row.

    Examples
    --------
    >>> import numpy as np
    >>> from engine import Query
    >>> too_many_slides(np.array([3, 4, 10**12]), [Query(weights=[1.0], k=1, window=10, slide=5, kind="time")], 10**6)[:2]
    (0, 2)
    """
    for position, query in enumerate(queries):
        excess = excess_slides(t, query, slide_count(t, query), limit)
        if excess is not None:
            return (position, *excess)
    return None


def _slide_plan(t: np.ndarray, query: Query, seq_start: int, start: int | None, max_slides: int | None) -> tuple[int, int]:
    """``(end of the first slide, complete slides)`` of :func:`slides`, refusing what it refuses."""
    s = query.slide
    if query.kind == "count":
        if seq_start % s:
            raise ValueError(f"seq_start must be a multiple of slide ({s}), got {seq_start}")
        return seq_start + s, len(t) // s
    if start is not None and start % s:
        raise ValueError(f"start must be a multiple of slide ({s}) and at most the first t, got {start}")
    if len(t) == 0:
        return (0 if start is None else start) + s, 0
    decreasing = np.flatnonzero(t[1:] < t[:-1])
    if len(decreasing):
        row = int(decreasing[0]) + 1
        raise ValueError(f"row {row}: t decreases ({int(t[row - 1])} then {int(t[row])}) in a time window")
    problem = time_range_problem(t, query.window + query.slide)
    if problem is not None:
        raise ValueError(f"row {problem[0]}: {problem[1]}")
    if start is not None and start > t[0]:
        raise ValueError(f"start must be a multiple of slide ({s}) and at most the first t, got {start}")
    count = slide_count(t, query, start)
    excess = None if max_slides is None else excess_slides(t, query, count, max_slides, start, option="max_slides")
    if excess is not None:
        raise ValueError(f"row {excess[0]}: {excess[1]}")
    return (int(t[0]) // s * s if start is None else start) + s, count


def _boundaries(t: np.ndarray, query: Query, seq_start: int, first_end: int, count: int) -> Iterator[tuple[int, int]]:
    """``(end, row index where the slide ending at end stops)`` for every complete slide."""
    s = query.slide
    for chunk in range(0, count, _BOUNDARY_CHUNK):
        ends = first_end + s * np.arange(chunk, min(count, chunk + _BOUNDARY_CHUNK), dtype=np.int64)
        rows = ends - seq_start if query.kind == "count" else np.searchsorted(t, ends, side="left")
        yield from zip(ends.tolist(), rows.tolist())
