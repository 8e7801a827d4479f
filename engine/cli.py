"""The headless command line, ``python -m engine`` (contract: ``docs/CONTRACTS.md``).

``python -m engine run`` replays a CSV or Parquet stream through one algorithm and writes one
JSON line per slide boundary; ``python -m engine run-many`` replays it through a workload of
queries (shared execution, ``engine.multi``, or one algorithm instance per query) and writes
one JSON line per query and slide boundary; ``python -m engine list`` prints the registry.  Bad arguments or
bad input end with one ``error: ...`` line on stderr (naming the file, the line and the
problem) and exit status 2, and leave no output file behind: the answers are written to a
temporary file next to the output and renamed over it only once the run has succeeded.

Examples
--------
>>> import contextlib, io
>>> listing = io.StringIO()
>>> with contextlib.redirect_stdout(listing):
...     status = main(["list"])
>>> status, "mintopk" in listing.getvalue()
(0, True)
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import heapq
import json
import math
import os
import re
import select
import stat
import sys
import tempfile
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Sequence, TextIO

import numpy as np

from .attributes import check_weights
from .base import INT64_MAX, INT64_MIN, Algorithm, coerce_param, plain_digits
from .jsondata import DuplicateKey, unique_keys
from .query import KINDS, Query
from .registry import AlgorithmInfo, available, create, describe, names
from .ranking import Answer, score
from .stream import (MAX_SLIDES, Batch, attribute_overflow, first_overflow, slides, time_margin,
                     time_range_problem, too_many_slides)

if TYPE_CHECKING:
    from .multi import SharedTopK

EXIT_ERROR = 2
"""Exit status for bad arguments or bad input (argparse uses it for usage errors too)."""

EXIT_INTERRUPTED = 130
"""Exit status after Ctrl-C, as a shell reports a SIGINT."""

EXIT_READER_GONE = 141
"""Exit status when the reader of the output closed it (``... | head -1``): the shell's status
of a standard tool ended by SIGPIPE (128 + 13), so ``set -o pipefail`` still sees the answers cut
short; nothing is printed."""

STANDARD_STREAM = "-"
"""``--input -`` reads CSV from standard input, ``--output -`` writes to standard output."""

OBJECT_KEY_COLUMNS = ("id", "t")
"""The columns every object stream must have."""

IGNORED_COLUMNS = ("seq",)
"""Columns that are neither features nor attributes: a ``seq`` column (as in the datasets that
``pipelines.ingest`` writes, object and attribute streams alike) is ignored, since row order is
arrival order."""

ATTRIBUTE_COLUMNS = ("id", "stream", "value", "t")
"""The columns of an attribute stream (incomplete-stream algorithms), no others but ``seq``."""

ATTRIBUTE_MARKS = ("stream", "value")
"""Columns that make a file an attribute stream, as they make a dataset one for the replay: a
single-stream algorithm refuses such a file rather than score stream numbers as a feature."""


class CommandError(Exception):
    """A problem with the arguments or the input, reported as ``error: <message>``, exit 2."""


@dataclass(frozen=True)
class Table:
    """The columns of an input file, not yet converted to numbers.

    Parameters
    ----------
    path
        The file as named on the command line.
    header
        Column names, in file order.
    columns
        Column name -> raw values: strings (CSV) or a numpy array (Parquet).
    unit
        ``"line"`` for CSV (the header is line 1) or ``"row"`` for Parquet (first row is 1).
    numbers
        The line or row number of every data row, for messages.
    """

    path: str
    header: list[str]
    columns: dict[str, Sequence]
    unit: str
    numbers: Sequence[int]

    def __len__(self) -> int:
        return len(self.numbers)

    def where(self, row: int | None = None) -> str:
        """``"data.csv line 7"`` for data row ``row`` (0-based); the header when ``None``."""
        if row is not None:
            return f"{self.path} {self.unit} {self.numbers[row]}"
        return f"{self.path} line 1" if self.unit == "line" else self.path


# ---------------------------------------------------------------------------- reading input

def read_table(path: str) -> Table:
    """Read ``path`` (``.csv`` or ``.parquet``; ``-``: CSV on standard input) into a :class:`Table`."""
    if path == STANDARD_STREAM:
        return read_csv(path)
    extension = os.path.splitext(path)[1].lower()
    if extension == ".csv":
        return read_csv(path)
    if extension in (".parquet", ".pq"):
        return read_parquet(path)
    raise CommandError(f"{path}: unsupported input format {repr(extension) if extension else '(no extension)'}; "
                       f"expected a .csv or .parquet file, or {STANDARD_STREAM} for CSV on standard input")


def read_csv(path: str) -> Table:
    """Read a CSV file (``-``: standard input, named ``stdin`` in messages) with a header row;
    blank lines are skipped, every other row must be full.

    A row is numbered by the line it starts on (a quoted field may span lines).
    """
    try:
        if path == STANDARD_STREAM:
            path = "stdin"
            if sys.stdin is None:  # closed by the caller (<&-)
                raise CommandError(f"{path}: cannot read: standard input is closed")
            file = open(sys.stdin.fileno(), newline="", encoding="utf-8-sig", closefd=False)
        else:
            file = open(path, newline="", encoding="utf-8-sig")
    except OSError as exc:
        raise CommandError(f"{path}: cannot read: {exc.strerror}") from None
    with file:
        reader = csv.reader(file)
        rows: list[list[str]] = []
        lines: list[int] = []
        try:
            header = next(reader, None)
            if header is None:
                raise CommandError(f"{path} line 1: the file is empty; expected a header row")
            first_line = reader.line_num + 1
            for row in reader:
                if row:
                    rows.append(row)
                    lines.append(first_line)
                first_line = reader.line_num + 1
        except csv.Error as exc:
            raise CommandError(f"{path} line {reader.line_num}: {exc}") from None
        except UnicodeDecodeError as exc:
            raise CommandError(f"{path}: not UTF-8 text ({exc.reason})") from None
        except OSError as exc:
            raise CommandError(f"{path}: cannot read: {exc.strerror}") from None
    header = [name.strip() for name in header]
    short_or_long = next((i for i, row in enumerate(rows) if len(row) != len(header)), None)
    if short_or_long is not None:
        raise CommandError(f"{path} line {lines[short_or_long]}: {len(rows[short_or_long])} field(s), "
                           f"but the header has {len(header)}")
    columns = dict(zip(header, zip(*rows))) if rows else {name: () for name in header}
    return Table(path, header, columns, "line", lines)


def read_parquet(path: str) -> Table:
    """Read a Parquet file; needs ``pyarrow``, imported only here.

    ``ParquetFile.read`` reads the single file directly: ``pyarrow.parquet.read_table`` goes
    through ``pyarrow.dataset``, whose import pulls in pandas (about 0.6 s of CPU per process).
    """
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise CommandError(f"{path}: reading Parquet needs pyarrow, which is not installed "
                           "(pip install pyarrow)") from None
    try:
        arrow_table = pyarrow.parquet.ParquetFile(path).read()
    except (OSError, ValueError, pyarrow.ArrowException) as exc:
        raise CommandError(f"{path}: cannot read Parquet: {exc}") from None
    header = list(arrow_table.column_names)
    columns = {}
    for position, name in enumerate(header):
        column = arrow_table.column(position)
        if pyarrow.types.is_dictionary(column.type):  # pandas' category columns: their values, each row's own
            column = column.cast(column.type.value_type)
        kind = column.type
        if pyarrow.types.is_decimal(kind):
            column = decimal_numbers(path, name, column)
        elif not (pyarrow.types.is_integer(kind) or pyarrow.types.is_floating(kind)
                  or pyarrow.types.is_string(kind) or pyarrow.types.is_large_string(kind)):
            raise CommandError(f"{path}: column {name} has type {kind}; expected numbers (integers, floats, "
                               "decimals or text holding numbers; times as integers)")
        if column.null_count:
            row = int(np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))[0])
            raise CommandError(f"{path} row {row + 1}: column {name}: missing value")
        columns[name] = column_values(column)
    return Table(path, header, columns, "row", range(1, arrow_table.num_rows + 1))


def decimal_numbers(path: str, name: str, column):
    """A decimal Arrow column (a database's ``DECIMAL``) as int64 when its scale is 0 (exactly,
    so that ids and times keep every digit) or float64 (the nearest double, as the same digits
    in a CSV file read), ``O(rows)``. Arrow's direct decimal-to-double cast is not correctly
    rounded (``2.675`` as ``DECIMAL(6, 3)`` gave ``2.6750000000000003``), so the digits go through text.

    >>> import decimal, pyarrow as pa
    >>> decimal_numbers("x.parquet", "x", pa.chunked_array([[decimal.Decimal("2.50")]])).to_pylist()
    [2.5]
    """
    import pyarrow

    target = pyarrow.int64() if column.type.scale == 0 else pyarrow.float64()
    try:
        return column.cast(target) if column.type.scale == 0 else column.cast(pyarrow.string()).cast(target)
    except pyarrow.ArrowInvalid as exc:
        raise CommandError(f"{path}: column {name}: {column.type} does not fit in {target}: {exc}") from None


def column_values(column) -> np.ndarray:
    """A chunked Arrow column as one numpy array (``O(rows)``, numbers copied once): numbers
    without nulls straight from the Arrow buffers, strings without nulls as an object array,
    any other column through Arrow's ``to_numpy``, which imports pandas (about 0.3 s of CPU per
    process, in ``run-many``, in every replay worker and in the driver).

    >>> import pyarrow as pa
    >>> column_values(pa.chunked_array([[1, 2], [3]], pa.int64())).tolist()
    [1, 2, 3]
    >>> column_values(pa.chunked_array([["a"], ["b"]])).tolist()
    ['a', 'b']
    """
    import pyarrow.types as types

    kind = column.type
    if column.null_count:
        return column.to_numpy()
    if types.is_string(kind) or types.is_large_string(kind):
        return np.array(column.to_pylist(), dtype=object)
    if not (types.is_integer(kind) or types.is_floating(kind)):
        return column.to_numpy()
    code = "f" if types.is_floating(kind) else "i" if types.is_signed_integer(kind) else "u"
    dtype = np.dtype(f"={code}{kind.bit_width // 8}")
    parts = [np.frombuffer(chunk.buffers()[1], dtype, len(chunk) + chunk.offset)[chunk.offset:] for chunk in column.chunks]
    return np.concatenate(parts) if parts else np.empty(0, dtype)


# ------------------------------------------------------------------------ converting columns

def cut(text: str, limit: int = 80) -> str:
    """``text``, its middle cut out when longer than ``limit`` characters (for messages).

    >>> cut("[" + "1, " * 50 + "1]", 20)
    '[1, 1, 1, ..., 1, 1, 1] (153 characters)'
    """
    if len(text) <= limit:
        return text
    return f"{text[:limit // 2]}...{text[-(limit // 2):]} ({len(text):,} characters)"


def shown(text: str, limit: int = 40) -> str:
    """``repr(text)``, its middle cut out when longer than ``limit`` characters (for messages).

    >>> shown("1" * 50, 10)
    "'11111...11111' (50 characters)"
    """
    if len(text) <= limit:
        return repr(text)
    half = limit // 2
    return f"{repr(text[:half])[:-1]}...{repr(text[-half:])[1:]} ({len(text):,} characters)"


def _text_problem(text: str, integer: bool) -> str | None:
    """Why ``text`` is not a finite float (or an int64 when ``integer``); ``None`` if it is."""
    try:
        if not plain_digits(text):
            raise ValueError
        number = int(text) if integer else float(text)
    except ValueError:
        return f"{shown(text)} is not {'an integer' if integer else 'a number'}"
    if integer and not INT64_MIN <= number <= INT64_MAX:
        return f"{shown(text)} does not fit in a 64-bit integer"
    if not integer and not math.isfinite(number):
        return f"{shown(text)} is not a finite number"
    return None


def _convert_text(texts: Sequence[str], integer: bool) -> tuple[np.ndarray | None, int]:
    """Parse strings at C speed; on failure scan them one by one for the first bad row."""
    try:
        values = np.array(texts, dtype=np.int64 if integer else np.float64)
        if not plain_digits("".join(texts)):
            raise ValueError
    except (ValueError, OverflowError):
        return None, next(row for row, text in enumerate(texts) if _text_problem(text, integer))
    if not integer:
        bad = np.flatnonzero(~np.isfinite(values))
        if len(bad):
            return None, int(bad[0])
    return values, -1


def _convert_typed(raw: np.ndarray, integer: bool) -> tuple[np.ndarray, np.ndarray]:
    """Values of a numeric Parquet column as int64 or float64, and a mask of unusable ones."""
    if not integer:
        values = raw.astype(np.float64)
        return values, ~np.isfinite(values)
    if raw.dtype.kind == "f":
        bad = ~(np.isfinite(raw) & (np.floor(raw) == raw) & (np.abs(raw) < 2.0**63))
        return np.where(bad, 0, raw).astype(np.int64), bad
    if raw.dtype.kind == "u":
        bad = raw > INT64_MAX
        return raw.astype(np.int64), bad
    return raw.astype(np.int64), np.zeros(len(raw), dtype=bool)


def numeric_column(table: Table, name: str, integer: bool) -> np.ndarray:
    """Column ``name`` as int64 (``integer``) or finite float64; a bad value names its line."""
    raw = table.columns[name]
    if isinstance(raw, np.ndarray) and raw.dtype.kind in "iuf":
        values, bad = _convert_typed(raw, integer)
        if bad.any():
            row = int(np.argmax(bad))
            what = "an integer in the 64-bit range" if integer else "a finite number"
            raise CommandError(f"{table.where(row)}: column {name}: {raw[row].item()!r} is not {what}")
        return values
    values, row = _convert_text(raw, integer)
    if values is None:
        raise CommandError(f"{table.where(row)}: column {name}: {_text_problem(raw[row], integer)}")
    return values


def _check_header(table: Table, required: Sequence[str], exclusive: bool) -> None:
    """Every ``required`` column present once; no other column when ``exclusive``."""
    seen = set()
    for position, name in enumerate(table.header):
        if not name:
            raise CommandError(f"{table.where()}: column {position + 1} has no name"
                               + (" (a row index, as pandas' to_csv writes by default?)" if position == 0 else ""))
        if name in seen:
            raise CommandError(f"{table.where()}: column {name} appears twice")
        seen.add(name)
    missing = [name for name in required if name not in seen]
    if missing:
        raise CommandError(f"{table.where()}: missing column(s) {', '.join(missing)} "
                           f"(the header has {', '.join(table.header)})")
    extra = [name for name in table.header if name not in required + IGNORED_COLUMNS]
    if exclusive and extra:
        raise CommandError(f"{table.where()}: unexpected column(s) {', '.join(extra)}; "
                           f"incomplete-stream algorithms read exactly {', '.join(required)} (and an "
                           f"ignored {', '.join(IGNORED_COLUMNS)})")


def object_stream(table: Table, weights: tuple[float, ...] | None, kind: str):
    """``(ids, t, x)`` and the weights (all ones by default) of an ``id,t,<features>`` table."""
    _check_header(table, OBJECT_KEY_COLUMNS, exclusive=False)
    if all(name in table.header for name in ATTRIBUTE_MARKS):
        incomplete = ", ".join(info.name for info in available() if info.stream == "incomplete")
        raise CommandError(f"{table.where()}: columns {' and '.join(ATTRIBUTE_MARKS)} make this an attribute "
                           f"stream, which the incomplete-stream algorithms read ({incomplete}); "
                           "single-stream algorithms read id,t,<features...>")
    features = [name for name in table.header if name not in OBJECT_KEY_COLUMNS + IGNORED_COLUMNS]
    if not features:
        raise CommandError(f"{table.where()}: no feature columns; expected id, t and at least one feature")
    if weights is not None and len(weights) != len(features):
        raise CommandError(f"{table.where()}: {len(weights)} weight(s) given but the file has "
                           f"{len(features)} feature column(s): {', '.join(features)}")
    ids = numeric_column(table, "id", integer=True)
    t = numeric_column(table, "t", integer=True)
    if kind == "time":
        _check_time_order(table, t)
    x = np.empty((len(table), len(features)))
    for position, name in enumerate(features):
        x[:, position] = numeric_column(table, name, integer=False)
    return (ids, t, x), weights or (1.0,) * len(features)


def check_score_overflow(table: Table, x: np.ndarray, weights: Sequence[float], query: str = "",
                         largest: np.ndarray | None = None) -> None:
    """Refuse the first row whose score ``x · w`` overflows to infinity, naming its line
    (:func:`engine.stream.first_overflow`: ``O(d)`` unless some score may overflow)."""
    row = first_overflow(x, weights, largest)
    if row is not None:
        with np.errstate(over="ignore", invalid="ignore"):
            value = score(x[row:row + 1], weights)[0]
        raise CommandError(f"{table.where(row)}: {query}the score x · w overflows ({value}) with weights "
                           f"{list(weights)}; scale the features or the weights down")


def attribute_stream(table: Table, weights: tuple[float, ...] | None, kind: str):
    """``(ids, stream, value, t)`` and the weights of an ``id,stream,value,t`` table.

    Without weights there is one weight of 1 per stream, ``d = max(stream) + 1``.
    """
    _check_header(table, ATTRIBUTE_COLUMNS, exclusive=True)
    ids = numeric_column(table, "id", integer=True)
    stream = numeric_column(table, "stream", integer=True)
    value = numeric_column(table, "value", integer=False)
    t = numeric_column(table, "t", integer=True)
    if kind == "time":
        _check_time_order(table, t)
    streams = len(weights) if weights is not None else max(int(stream.max()) + 1, 1) if len(stream) else 1
    outside = np.flatnonzero((stream < 0) | (stream >= streams))
    if len(outside):
        row = int(outside[0])
        raise CommandError(f"{table.where(row)}: column stream: {int(stream[row])} is not a stream "
                           f"number in 0..{streams - 1}")
    if weights is None and len(stream):
        _check_streams_numbered(table, stream, streams)
    outside = np.flatnonzero((value < 0.0) | (value > 1.0))
    if len(outside):
        row = int(outside[0])
        raise CommandError(f"{table.where(row)}: column value: {float(value[row])!r} is not in [0, 1]")
    weights = weights or (1.0,) * streams
    _check_attribute_overflow(table, ids, stream, value, weights)
    return (ids, stream, value, t), weights


def _check_streams_numbered(table: Table, stream: np.ndarray, streams: int) -> None:
    """Without ``--weights`` the streams are ``0..max(stream)``: refuse a numbering with unused
    numbers (a stray stream number of 20,000,000 would make as many streams, each with its own
    structures: gigabytes for a two-row file).  ``O(rows)``."""
    if streams <= len(stream):
        unused = np.flatnonzero(np.bincount(stream, minlength=streams) == 0)
        if not len(unused):
            return
        first_unused = int(unused[0])
    else:
        first_unused = int(np.setdiff1d(np.arange(len(stream) + 1), stream)[0])
    row = int(np.argmax(stream))
    raise CommandError(f"{table.where(row)}: column stream: {streams - 1} makes {streams:,} streams, but stream "
                       f"{first_unused} never occurs; number the streams 0..d-1 or give --weights, one per stream")


def _check_attribute_overflow(table: Table, ids: np.ndarray, stream: np.ndarray, value: np.ndarray,
                              weights: Sequence[float]) -> None:
    """Refuse weights with which an object's score may overflow to infinity, naming its first
    line (:func:`engine.stream.attribute_overflow`)."""
    problem = attribute_overflow(ids, stream, value, weights)
    if problem is not None:
        raise CommandError(f"{table.where(problem[0])}: {problem[1]}")


def check_time_range(table: Table, t: np.ndarray, queries: Sequence[Query]) -> None:
    """Refuse times too near the int64 limits for the time queries' windows (``O(queries)``)."""
    margin = time_margin(queries)
    problem = None if margin is None else time_range_problem(t, margin)
    if problem is not None:
        raise CommandError(f"{table.where(problem[0])}: column {problem[1]}")


def check_slide_count(table: Table, t: np.ndarray, queries: Sequence[Query], limit: int, named: bool) -> None:
    """Refuse a time query whose slides outnumber both the rows and ``--max-slides`` (a gap in
    ``t``; :func:`engine.stream.too_many_slides`), naming the row after the widest gap."""
    excess = too_many_slides(t, queries, limit)
    if excess is not None:
        position, row, problem = excess
        raise CommandError(f"{table.where(row)}: {f'query {position}: ' if named else ''}column {problem}")


def _check_time_order(table: Table, t: np.ndarray) -> None:
    decreasing = np.flatnonzero(t[1:] < t[:-1])
    if len(decreasing):
        row = int(decreasing[0]) + 1
        raise CommandError(f"{table.where(row)}: column t: {int(t[row])} comes after {int(t[row - 1])}; "
                           "a time window needs non-decreasing t")


# ---------------------------------------------------------------------------------- running

def find_algorithm(name: str) -> AlgorithmInfo:
    """The registry entry of ``name``; an unknown name lists the valid ones."""
    valid = names()
    if name not in valid:
        raise CommandError(f"--algorithm: unknown algorithm {name!r}; valid: {', '.join(valid)}")
    return describe(name)


def check_params(info: AlgorithmInfo, params: Sequence[tuple[str, str]]) -> dict[str, str]:
    """``--param`` pairs as a dict, each name known and each value convertible."""
    checked: dict[str, str] = {}
    for key, value in params:
        if key in checked:
            raise CommandError(f"--param: {key} is given twice")
        if key not in info.defaults:
            valid = ", ".join(f"{name} (default {default})" for name, default in info.defaults.items())
            raise CommandError(f"--param: unknown parameter {key!r} for {info.name}; valid: {valid or 'none'}")
        try:
            coerce_param(info.name, key, info.defaults[key], value)
        except ValueError as exc:
            raise CommandError(f"--param: {exc}") from None
        checked[key] = value
    return checked


def make_query(args: argparse.Namespace, weights: Sequence[float]) -> Query:
    """The query of the command line; an invalid field names the field and the value."""
    try:
        return Query(weights=tuple(weights), k=args.k, window=args.window, slide=args.slide, kind=args.kind)
    except ValueError as exc:
        raise CommandError(f"invalid query: {exc}") from None


def slide_where(table: Table, batch: Batch) -> str:
    """``"data.csv lines 5-9 (slide 2, end 10)"``: where a slide's rows are, for messages."""
    if not len(batch):
        return f"{table.path} slide {batch.index} (end {batch.end}, no rows)"
    first, last = table.numbers[int(batch.seq[0])], table.numbers[int(batch.seq[-1])]
    rows = f"{table.unit} {first}" if first == last else f"{table.unit}s {first}-{last}"
    return f"{table.path} {rows} (slide {batch.index}, end {batch.end})"


def processed(algorithm: Algorithm, batch: Batch, table: Table, query: str = "") -> Answer:
    """``algorithm``'s answer after ``batch``; an input the algorithm refuses on the way (such
    as ``eaa``'s ``occurrences`` bound broken) is reported naming the slide's lines."""
    try:
        algorithm.process(batch)
        return algorithm.topk()
    except ValueError as exc:
        raise CommandError(f"{slide_where(table, batch)}: {query}{exc}") from None


def answer_lines(algorithm: Algorithm, data: tuple, table: Table) -> Iterator[str]:
    """Run ``algorithm`` over ``data`` (read from ``table``): one JSON line per slide boundary passed."""
    for batch in slides(data, algorithm.q, max_slides=None):  # counted against --max-slides before
        answer = processed(algorithm, batch, table)
        stats = algorithm.stats()
        yield json.dumps({"slide": batch.index, "end": batch.end,
                          "ids": answer.ids.tolist(), "scores": answer.scores.tolist(),
                          "candidates": int(stats["candidates"]), "retained": int(stats["retained"]),
                          "bytes": int(stats["bytes"]),
                          "measured_bytes": int(stats["measured_bytes"])}) + "\n"


def _new_file_mode() -> int:
    """Permissions of a newly created file under the current umask (``mkstemp`` uses 0600)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def check_output_apart(output: str, inputs: dict[str, str]) -> None:
    """Refuse an ``--output`` that is one of the command's input files (``inputs``: flag to
    path), which the answers would replace."""
    if output == STANDARD_STREAM:
        return
    for flag, path in inputs.items():
        if path != STANDARD_STREAM and os.path.realpath(output) == os.path.realpath(path):
            raise CommandError(f"--output {output} is the {flag} file; the answers would replace it. "
                               "Give another output file")


def writes_through(path: str) -> bool:
    """Whether ``path`` names an existing file that is not a regular one (``/dev/null``, a
    terminal, a named pipe) or a file under ``/dev`` or ``/proc`` (``/dev/stdout`` redirected to
    a file, ``/dev/fd/3``): written to in place, as a shell redirection would, since renaming a
    file over it would replace the device or the pipe itself, or a file opened for appending."""
    if os.path.abspath(path).startswith(("/dev/", "/proc/")):
        return True
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def write_answers(path: str, lines: Iterator[str]) -> None:
    """Write the answer ``lines`` to ``--output path``: a regular file (or a new one) through
    :func:`write_atomically`, the target of a symbolic link included (the link is kept); a
    device or a pipe (:func:`writes_through`) in place, appending, so lines written before a
    failure stay written there.  ``-`` is standard output, written in place too.  A reader that
    closes a pipe before the end (``| head -1``) ends the run: ``BrokenPipeError`` goes up to
    :func:`main`."""
    if path == STANDARD_STREAM:
        write_stdout(lines)
        return
    if os.path.isdir(path):
        raise CommandError(f"{path}: cannot write: it is a directory")
    if path.endswith("/"):  # the rename below would create the file the name without "/" names
        raise CommandError(f"{path}: cannot write: there is no directory {path}, and a file's name cannot end with /")
    if not writes_through(path):
        write_atomically(path, lines)
        return
    try:
        with open(path, "a", encoding="utf-8") as out:
            out.writelines(lines)
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise CommandError(f"{path}: cannot write: {exc.strerror or exc}") from None


def write_atomically(path: str, lines: Iterator[str]) -> None:
    """Write ``lines`` to a temporary file beside ``path`` (beside the file a symbolic link
    ``path`` points to), then rename it to that file.

    On any failure, Ctrl-C and SIGTERM included, the temporary file is removed and an existing
    ``path`` is left as it was. A process killed outright (SIGKILL) cannot remove its own: its
    name holds the writer's process id, and the next write to ``path`` removes the temporary
    files of writers no longer running (:func:`remove_orphans`).
    """
    target = os.path.realpath(path)
    directory = os.path.dirname(target)
    prefix = temporary_prefix(os.path.basename(target))
    remove_orphans(directory, prefix)
    try:
        handle, temporary = tempfile.mkstemp(dir=directory, prefix=f"{prefix}{os.getpid()}.", suffix=".tmp")
    except OSError as exc:
        raise CommandError(f"{path}: cannot write: {exc.strerror}") from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.writelines(lines)
        os.chmod(temporary, _new_file_mode())
        os.replace(temporary, target)
    except BaseException as exc:
        os.unlink(temporary)
        if isinstance(exc, OSError):
            raise CommandError(f"{path}: cannot write: {exc.strerror or exc}") from None
        raise


NAME_BYTES = 255
"""The longest file name most file systems take (``NAME_MAX``), in bytes."""

TEMPORARY_PART = 32
"""Bytes a temporary file's name adds after its prefix: writer pid, random part, ``.tmp``."""


def temporary_prefix(name: str) -> str:
    """``.<name>.``: the start of the temporary files' names of output ``name``.  A name too long
    to take the temporary part keeps its first 160 bytes and a digest of the whole, so an output
    of up to ``NAME_BYTES`` bytes can still be written and two outputs keep apart (``O(len(name))``).

    >>> temporary_prefix("out.jsonl")
    '.out.jsonl.'
    >>> len(os.fsencode(temporary_prefix("x" * 255)))
    179
    """
    prefix = f".{name}."
    encoded = os.fsencode(name)
    if len(os.fsencode(prefix)) + TEMPORARY_PART <= NAME_BYTES:
        return prefix
    return f".{os.fsdecode(encoded[:160])}~{hashlib.sha256(encoded).hexdigest()[:16]}."


ORPHAN_NAME = re.compile(r"(\d+)\.[^.]+\.tmp")
"""The rest of a temporary output file's name after ``.<output name>.``: writer pid, random part."""


def remove_orphans(directory: str, prefix: str) -> None:
    """Remove the files ``<prefix><pid>.<random>.tmp`` in ``directory`` whose writer ``pid`` is
    not running: left by a killed write. A running writer's file, another user's process's and
    any file of another name are kept (``O(files in directory)``)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        writer = ORPHAN_NAME.fullmatch(name[len(prefix):]) if name.startswith(prefix) else None
        if writer and not _running(int(writer[1])):
            try:
                os.unlink(os.path.join(directory, name))
            except OSError:
                pass


def _running(pid: int) -> bool:
    """Whether process ``pid`` exists (one of another user counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def run(args: argparse.Namespace) -> None:
    """``python -m engine run``: check the arguments, read the input, write the answers."""
    check_output_apart(args.output, {"--input": args.input})
    info = find_algorithm(args.algorithm)
    query = make_query(args, args.weights or (1.0,))  # checked before reading; ones replaced below
    if info.stream == "incomplete":
        try:
            check_weights(query, info.name)
        except ValueError as exc:
            raise CommandError(f"invalid query: {exc}") from None
    params = check_params(info, args.param)
    algorithm = new_algorithm(info, query, params)  # refuses the query or the parameters before the input is read
    table = read_table(args.input)
    read_stream = attribute_stream if info.stream == "incomplete" else object_stream
    data, weights = read_stream(table, args.weights, query.kind)
    times = data[1] if info.stream == "single" else data[3]
    check_time_range(table, times, [query])
    check_slide_count(table, times, [query], args.max_slides, named=False)
    if info.stream == "single":
        check_score_overflow(table, data[2], weights)
    if tuple(weights) != query.weights:
        del algorithm  # its structures freed before the second one's are allocated
        algorithm = new_algorithm(info, query.with_weights(weights), params)
    write_answers(args.output, answer_lines(algorithm, data, table))


def new_algorithm(info: AlgorithmInfo, query: Query, params: dict[str, str], where: str = "") -> Algorithm:
    """``create(info.name, query, **params)``; a refusal is a :class:`CommandError` (``where``
    names the query in a workload)."""
    try:
        return create(info.name, query, **params)
    except ValueError as exc:
        raise CommandError(f"{where}cannot create {info.name}: {exc}") from None


# ------------------------------------------------------------------------------ run-many

SHARED = "shared"
"""``run-many --algorithm`` value of the shared executor (the default)."""

QUERY_FIELDS = ("weights", "k", "window", "slide", "kind")

CHUNK_ROWS = 1 << 16
"""Rows the shared executor takes per call at most, so answers stream out as they are found."""

CHUNK_ANSWERS = 1 << 24
"""Answer words (:func:`chunk_starts`) one call of the shared executor may pass at most, give or
take one row's: it holds every answer of a call at once, about 260 bytes per answer line plus
its objects, so 10,000 queries sliding by 1 over 65,536 rows in one call would need 170 GB."""


def chunk_starts(queries: Sequence[Query], t: np.ndarray, budget: int | None = None) -> np.ndarray:
    """The first row of every chunk the shared executor takes, then ``len(t)``: at most
    :data:`CHUNK_ROWS` rows, and no more answer words than ``budget`` (default
    :data:`CHUNK_ANSWERS`) unless one row passes more by itself (a gap in ``t``, bounded by
    ``--max-slides``: :func:`check_row_answers`).  A query's answer costs
    ``32 + min(k, objects)`` words (the line, then ids, scores and seq); a count query passes
    a boundary every ``slide`` rows, a time query every ``slide`` time units.  ``O(rows)``.

    >>> chunk_starts([Query(weights=[1.0], k=1, window=4, slide=1)], np.arange(10), budget=66).tolist()
    [0, 3, 6, 9, 10]
    """
    budget = CHUNK_ANSWERS if budget is None else budget
    m = len(t)
    per_row = sum((32 + min(q.k, q.window)) / q.slide for q in queries if q.kind == "count")
    per_time = sum((32 + min(q.k, m)) / q.slide for q in queries if q.kind == "time")
    rows = np.arange(m)
    since = (t - t[0]).view(np.uint64).astype(np.float64) if per_time and m else 0.0  # t non-decreasing: exact
    cost = rows * per_row + since * per_time
    starts = [0]
    while starts[-1] < m:
        lo = starts[-1]
        hi = int(np.searchsorted(cost, cost[lo] + budget, side="right"))
        starts.append(min(max(hi, lo + 1), lo + CHUNK_ROWS, m))
    return np.array(starts, np.int64)


def read_queries(path: str) -> list[Query]:
    """The workload file: a JSON list of ``{"weights", "k", "window", "slide", "kind"}``
    (``kind`` defaults to ``"count"``); a bad entry names its position (from 0) and the problem."""
    try:
        with open(path, encoding="utf-8-sig") as file:
            entries = json.load(file, object_pairs_hook=unique_keys)
    except DuplicateKey as exc:
        raise CommandError(f"{path}: field {exc.args[0]} appears twice in one object") from None
    except OSError as exc:
        raise CommandError(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise CommandError(f"{path}: not UTF-8 text ({exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise CommandError(f"{path} line {exc.lineno}: not JSON: {exc.msg}") from None
    except RecursionError:
        raise CommandError(f"{path}: lists or objects nested too deeply to read") from None
    if not isinstance(entries, list) or not entries:
        raise CommandError(f"{path}: expected a non-empty JSON list of queries, got "
                           f"{'an empty list' if entries == [] else type(entries).__name__}")
    queries = []
    for position, entry in enumerate(entries):
        where = f"{path}: query {position}"
        if not isinstance(entry, dict):
            raise CommandError(f"{where}: expected an object with {', '.join(QUERY_FIELDS)}, "
                               f"got {cut(json.dumps(entry))}")
        unknown = sorted(set(entry) - set(QUERY_FIELDS))
        if unknown:
            raise CommandError(f"{where}: unknown field(s) {', '.join(unknown)}; valid: {', '.join(QUERY_FIELDS)}")
        missing = [name for name in QUERY_FIELDS[:4] if name not in entry]
        if missing:
            raise CommandError(f"{where}: missing field(s) {', '.join(missing)}")
        weights = entry["weights"]
        if not isinstance(weights, list) or any(isinstance(w, bool) or not isinstance(w, (int, float)) for w in weights):
            raise CommandError(f"{where}: weights must be a list of numbers, got {cut(json.dumps(weights))}")
        try:
            queries.append(Query(weights=tuple(weights), k=entry["k"], window=entry["window"],
                                 slide=entry["slide"], kind=entry.get("kind", "count")))
        except ValueError as exc:
            raise CommandError(f"{where}: {exc}") from None
    return queries


def score_text(value: float) -> str:
    """A score as ``json.dumps`` writes it."""
    return repr(value) if math.isfinite(value) else json.dumps(value)


def joined(keys: np.ndarray, texts: Callable[[np.ndarray], list[str]]) -> tuple[str, np.ndarray]:
    """``", ".join`` of the texts of ``keys`` (int64; ``texts`` is given the distinct keys,
    ascending, and returns their texts: each is written once, an object being in many windows'
    answers) and where each piece starts in it, plus one past the end (+2): the text of pieces
    ``lo..hi-1`` is ``text[at[lo]:at[hi] - 2]``, empty when ``lo == hi``.  ``O(n log n)``
    numpy steps and one Python step per distinct key.

    >>> joined(np.array([3, 10, 3]), lambda distinct: list(map(str, distinct.tolist())))
    ('3, 10, 3', array([ 0,  3,  7, 10]))
    """
    distinct, which = np.unique(keys, return_inverse=True)
    which = which.reshape(-1)
    written = np.array(texts(distinct) or [""], dtype=object)
    lengths = np.fromiter(map(len, written), np.int64, len(written))
    at = np.zeros(len(keys) + 1, np.int64)
    np.cumsum(lengths[which] + 2, out=at[1:])
    return ", ".join(written[which].tolist()), at


def id_texts(ids: np.ndarray) -> list[str]:
    """The texts of ``ids``, as ``json.dumps`` writes them."""
    return list(map(str, ids.tolist()))


def score_texts_of_bits(bits: np.ndarray) -> list[str]:
    """The texts of the scores whose float64 bits are ``bits`` (int64), as ``json.dumps`` writes
    them: told apart by their bits, ``-0.0`` keeps its sign."""
    values = bits.view(np.float64)
    if np.isfinite(values).all():
        return list(map(repr, values.tolist()))
    return [score_text(value) for value in values.tolist()]


class AnswerLines:
    """Formats ``run-many``'s output lines (as ``json.dumps`` would); each distinct score is
    written once.

    An object stays in a window's answer for many slides and in the answers of many queries,
    so its score's text is kept (up to ``LIMIT`` distinct scores, then forgotten at once).

    >>> AnswerLines().line(3, 0, 10, np.array([7]), np.array([0.5]))
    '{"query": 3, "slide": 0, "end": 10, "ids": [7], "scores": [0.5]}\\n'
    """

    LIMIT = 1 << 20

    def __init__(self) -> None:
        self._texts: dict[float, str] = {}

    def line(self, query: int, slide: int, end: int, ids: np.ndarray, scores: np.ndarray) -> str:
        values = scores.tolist()
        texts = self._texts
        try:
            written = ", ".join(map(texts.__getitem__, values))
        except KeyError:
            if len(texts) > self.LIMIT:
                texts.clear()
            for value in values:
                if value and value not in texts:  # 0.0 == -0.0: zeros are never kept
                    texts[value] = score_text(value)
            written = ", ".join(texts[value] if value else score_text(value) for value in values)
        return f'{{"query": {query}, "slide": {slide}, "end": {end}, "ids": {ids.tolist()}, ' \
               f'"scores": [{written}]}}\n'


def column_lines(answers) -> Iterator[str]:
    """The lines of an :class:`engine.multi.Answers`, in its order, built from two texts (every
    id, every score, each written once): a line's lists are slices of them, ``O(1)`` Python steps
    per line.  Scores are told apart by their bits, so ``-0.0`` keeps its sign as in ``json.dumps``.
    The lines are made as they are written, never all held at once (with many queries they add
    up to far more than the two texts).

    >>> from engine.multi import Answers
    >>> one = np.array([1]); zero = np.array([0])
    >>> list(column_lines(Answers(one, zero, one * 10, one * 10, zero, one * 2, np.array([7, 8]),
    ...                           np.array([0.5, -0.0]), np.array([3, 4]))))
    ['{"query": 1, "slide": 0, "end": 10, "ids": [7, 8], "scores": [0.5, -0.0]}\\n']
    """
    id_text, id_at = joined(answers.ids, id_texts)
    score_texts, score_at = joined(np.ascontiguousarray(answers.scores).view(np.int64), score_texts_of_bits)
    lo, hi = answers.offset, answers.offset + answers.length
    return (f'{{"query": {q}, "slide": {j}, "end": {e}, "ids": [{id_text[a:b]}], "scores": [{score_texts[c:d]}]}}\n'
            for q, j, e, a, b, c, d in zip(answers.query.tolist(), answers.slide.tolist(), answers.end.tolist(),
                                           id_at[lo].tolist(), (id_at[hi] - 2).tolist(),
                                           score_at[lo].tolist(), (score_at[hi] - 2).tolist()))


def shared_lines(executor: "SharedTopK", queries: Sequence[Query], data: tuple) -> Iterator[str]:
    """The workload through ``executor``, a new :class:`engine.multi.SharedTopK` of ``queries``,
    chunk by chunk, in stream order.

    A chunk ending before row ``hi`` passes the count boundaries at ``hi`` (their last row has
    arrived); the next chunk's first row passes the time boundaries at ``hi`` (its ``t`` reaches
    them): both have seen ``hi`` arrivals, so their lines are held back and merged by query
    (``O(queries)`` lines held at most).
    """
    ids, t, x = data
    starts = chunk_starts(queries, t).tolist()
    held: list[tuple[int, int, str]] = []
    for lo, hi in zip(starts, starts[1:]):
        answers = executor.answers(ids[lo:hi], t[lo:hi], x[lo:hi], max_slides=None)  # rows checked before
        at_start = int(np.searchsorted(answers.position, lo, side="right"))
        at_end = int(np.searchsorted(answers.position, hi, side="left"))
        lines = column_lines(answers)
        if held or at_start:
            held.extend(zip(answers.query[:at_start].tolist(), answers.slide[:at_start].tolist(), lines))
            yield from (line for *_, line in sorted(held))
        yield from islice(lines, at_end - at_start)
        held = list(zip(answers.query[at_end:].tolist(), answers.slide[at_end:].tolist(), lines))
    yield from (line for *_, line in held)


def unshared_lines(algorithms: Sequence[Algorithm], data: tuple, table: Table) -> Iterator[str]:
    """One algorithm instance per query, interleaved in the shared executor's order: by the
    number of arrivals when the boundary is passed, then by query (the unshared reference)."""
    t = data[1]
    lines = AnswerLines()

    def answers(position: int, algorithm: Algorithm) -> Iterator[tuple[int, int, int, str]]:
        count = algorithm.q.kind == "count"
        for batch in slides(data, algorithm.q, max_slides=None):  # counted against --max-slides before
            answer = processed(algorithm, batch, table, f"query {position}: ")
            passed = batch.end if count else int(np.searchsorted(t, batch.end))
            yield passed, position, batch.index, lines.line(position, batch.index, batch.end, answer.ids,
                                                            answer.scores)

    for *_, line in heapq.merge(*(answers(i, algorithm) for i, algorithm in enumerate(algorithms))):
        yield line


def run_many(args: argparse.Namespace) -> None:
    """``python -m engine run-many``: check the workload and the input, write every answer."""
    check_output_apart(args.output, {"--input": args.input, "--queries": args.queries})
    queries = read_queries(args.queries)
    info = None
    if args.algorithm != SHARED:
        info = find_algorithm(args.algorithm)
        if info.stream != "single":
            raise CommandError(f"--algorithm: {info.name} is an {info.stream}-stream algorithm; "
                               "run-many takes single-stream ones")
        params = check_params(info, args.param)
    elif args.param:
        raise CommandError("--param: the shared executor takes no parameters")
    if info is None:
        from .multi import SharedTopK  # imported here: it loads the compiled kernels, which run does not need

        executor = SharedTopK()
        for position, query in enumerate(queries):  # refused before the input is read
            try:
                executor.add(query)
            except ValueError as exc:
                raise CommandError(f"{args.queries}: query {position}: {exc}") from None
    else:
        algorithms = [new_algorithm(info, query, params, f"{args.queries}: query {position}: ")
                      for position, query in enumerate(queries)]
    table = read_table(args.input)
    kind = "time" if any(query.kind == "time" for query in queries) else "count"
    data, ones = object_stream(table, None, kind)
    check_time_range(table, data[1], queries)
    check_slide_count(table, data[1], queries, args.max_slides, named=True)
    largest = np.abs(data[2]).max(axis=0, initial=0.0)
    for position, query in enumerate(queries):
        if query.dimensions != len(ones):
            raise CommandError(f"{args.queries}: query {position}: {query.dimensions} weight(s), but {table.path} "
                               f"has {len(ones)} feature column(s)")
        check_score_overflow(table, data[2], query.weights, f"query {position}: ", largest)
    if info is None:
        check_row_answers(table, data[1], queries, args.max_slides)
        lines = shared_lines(executor, queries, data)
    else:
        lines = unshared_lines(algorithms, data, table)
    write_answers(args.output, lines)


GAP_ANSWER_BYTES = 640
"""Peak memory per slide boundary the shared executor answers at once across a gap (measured:
560 to 680 bytes with one or two time queries over 1 to 6 million boundaries; the answers, their
columns and lines, and the Python integers of their ``tolist``), rounded up."""


def check_row_answers(table: Table, t: np.ndarray, queries: Sequence[Query], limit: int) -> None:
    """Refuse a row after which the shared executor would pass more than ``limit`` time slide
    boundaries of the workload at once (a gap in ``t``; :func:`engine.multi.crowded_gap`), or
    more than the memory available holds at :data:`GAP_ANSWER_BYTES` each
    (:func:`available_memory`): it answers them all before the next row, where one instance per
    query streams them.  Without the second bound a raised ``--max-slides`` let the system's
    out-of-memory killer end the run (exit 137, no message)."""
    from .multi import crowded_gap

    slides = [q.slide for q in queries if q.kind == "time"]
    memory = available_memory()
    affordable = limit if memory is None else min(limit, memory // GAP_ANSWER_BYTES)
    crowded = crowded_gap(t, slides, affordable)
    if crowded is not None:
        row, before, after, passed = crowded
        problem = (f"{table.where(row + 1)}: column t jumps from {before} to {after} here: the shared "
                   f"executor would answer the {passed:,} slide boundaries of the {len(slides)} time "
                   "queries in between at once, ")
        if passed > limit:
            raise CommandError(f"{problem}more than the limit of {limit:,} (--max-slides); use larger slides, "
                               "raise --max-slides, or --algorithm NAME (one instance per query, answers streamed)")
        raise CommandError(f"{problem}about {passed * GAP_ANSWER_BYTES / 1e9:,.1f} GB, more than the "
                           f"{memory / 1e9:,.1f} GB of memory available; use larger slides or --algorithm NAME "
                           "(one instance per query, answers streamed)")


def available_memory() -> int | None:
    """Bytes of memory this process may still take: the system's ``MemAvailable``, less when a
    control group (cgroup v2 ``memory.max``) leaves less; ``None`` where neither can be read
    (not Linux).  ``O(1)``."""
    found = []
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            found += [int(line.split()[1]) * 1024 for line in meminfo if line.startswith("MemAvailable:")]
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open("/sys/fs/cgroup/memory.max", encoding="ascii") as most, \
                open("/sys/fs/cgroup/memory.current", encoding="ascii") as used:
            ceiling = most.read().strip()
            if ceiling != "max":
                found.append(max(int(ceiling) - int(used.read()), 0))
    except (OSError, ValueError):
        pass
    return min(found) if found else None


def algorithm_lines() -> Iterator[str]:
    """``python -m engine list``: one line per algorithm: name, family, summary, parameters."""
    infos = available()
    name_width = max(len(info.name) for info in infos)
    family_width = max(len(info.family) for info in infos)
    for info in infos:
        params = ", ".join(f"{key}={value}" for key, value in info.defaults.items()) or "none"
        yield (f"{info.name:<{name_width}}  {info.family:<{family_width}}  {info.summary}"
               f"  [params: {params}]\n")


# ------------------------------------------------------------------------------ arguments

def _weights_argument(text: str) -> tuple[float, ...]:
    try:
        if not plain_digits(text):
            raise ValueError
        return tuple(float(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers separated by commas, got {text!r}") from None


def _param_argument(text: str) -> tuple[str, str]:
    key, equals, value = text.partition("=")
    if not equals or not key.strip():
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    return key.strip(), value.strip()


def whole_number(text: str) -> int:
    """An argparse type: an integer written in ASCII digits (``int`` alone also reads ``1_000``
    and ``١٢``, which the input files may not hold)."""
    try:
        if not plain_digits(text):
            raise ValueError
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def positive_count(text: str) -> int:
    """An argparse type: a whole number >= 1."""
    try:
        value = whole_number(text)
    except argparse.ArgumentTypeError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}")
    return value


RUN_EPILOG = """\
input (a header row, columns matched by name):
  single-stream algorithms      id,t,<features...>  (every column but id, t and seq is a feature, in order;
                                                     not both stream and value: that is an attribute stream)
  incomplete-stream algorithms  id,stream,value,t   (stream in 0..d-1, value in [0, 1], weights >= 0;
                                                     a seq column is ignored)
  numbers: plain decimal (1, -2.5, 3e-4), finite; id, t and stream 64-bit integers
  (Parquet: integer, float, decimal or text columns)

output: one JSON line per slide boundary passed:
  {"slide": j, "end": T, "ids": [...], "scores": [...], "candidates": c, "retained": r,
   "bytes": b, "measured_bytes": mb}
  bytes: the paper-style cost model (8 B per value, id, seq, t, pointer, counter); measured_bytes:
  the real size of the algorithm's structures in bytes (within 25% of tracemalloc)

Bad arguments or input: one "error:" line on stderr naming the file, line and problem, exit
status 2, and the output file is left as it was.  An output that is a device or a pipe
(/dev/null, /dev/stdout, a FIFO) is written in place, line by line.  --input - reads CSV from
standard input, --output - writes to standard output; a reader that closes the output early
(| head -1) ends the run quietly with exit status 141, as SIGPIPE ends a standard tool.

example:
  python -m engine run --algorithm mintopk --k 10 --window 1000 --slide 10 \\
      --weights=-1,0.5 --input trades.csv --output answers.jsonl
"""


RUN_MANY_EPILOG = """\
queries (Q.json): a JSON list of {"weights": [...], "k": K, "window": N, "slide": S, "kind": "count"|"time"}
  (kind defaults to count; one weight per feature column); a bad query is refused before any
  output, naming its position (from 0) and the problem.

input: as for run (id,t,<features...>).

output: one JSON line per (query, slide boundary passed), in stream order, then by query:
  {"query": i, "slide": j, "end": T, "ids": [...], "scores": [...]}

--algorithm shared (the default) runs every query through one shared executor (queries with
equal weights share one super-top-k list); any single-stream algorithm runs one instance per
query instead (the unshared reference).  Both give the same answers for exact algorithms.
The shared executor answers every boundary a row passes at once: a gap in t after which the
time queries pass more boundaries together than --max-slides, or than the memory available
holds (about 640 bytes each), is refused (one instance per query streams them).

example:
  python -m engine run-many --queries watch.json --input trades.csv --output answers.jsonl
"""


def _add_max_slides(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-slides", type=positive_count, default=MAX_SLIDES, metavar="N",
                        help="refuse a time window whose slides outnumber both the rows and N, nearly all "
                             f"empty, as a gap in t makes them (default: {MAX_SLIDES:,})")


class Parser(argparse.ArgumentParser):
    """An argument parser whose ``--help`` text goes through :func:`write_stdout`: argparse's
    own printing drops a failed write silently (``--help > /dev/full`` exited 0 having written
    nothing)."""

    def print_help(self, file: TextIO | None = None) -> None:
        if file is None:
            write_stdout([self.format_help()])
        else:
            file.write(self.format_help())


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m engine`` argument parser with its ``run``, ``run-many`` and ``list`` commands."""
    parser = Parser(
        prog="python -m engine",
        description="Top-k Watch, headless: continuous top-k queries over sliding windows.",
        epilog="'python -m engine run --help' describes the input and output formats.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="{run,run-many,list}")
    run_parser = commands.add_parser(
        "run", help="replay a CSV or Parquet stream through one algorithm, one JSON line per slide",
        description="Replay a stream through one algorithm and write its answer after every slide.",
        epilog=RUN_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    run_parser.add_argument("--algorithm", required=True, metavar="NAME",
                            help="a registered algorithm (see 'python -m engine list')")
    run_parser.add_argument("--param", action="append", default=[], type=_param_argument, metavar="KEY=VALUE",
                            help="an algorithm parameter; repeat for several")
    run_parser.add_argument("--k", required=True, type=whole_number, help="answer size, >= 1")
    run_parser.add_argument("--window", required=True, type=whole_number, metavar="N",
                            help="window length: objects (count) or time units (time)")
    run_parser.add_argument("--slide", required=True, type=whole_number, metavar="S", help="slide length; must divide N")
    run_parser.add_argument("--kind", choices=KINDS, default="count", help="window kind (default: count)")
    run_parser.add_argument("--weights", type=_weights_argument, metavar="W0,W1,...",
                            help="one weight per feature or stream (default: all ones); "
                                 "write negative ones as --weights=-1,0.5")
    run_parser.add_argument("--input", required=True, metavar="FILE", help="a .csv or .parquet stream")
    run_parser.add_argument("--output", required=True, metavar="FILE.jsonl", help="where to write the answers")
    _add_max_slides(run_parser)
    many_parser = commands.add_parser(
        "run-many", help="replay a stream through a workload of queries, one JSON line per query and slide",
        description="Replay a stream through many queries at once and write every query's answer after each "
                    "of its slides.",
        epilog=RUN_MANY_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    many_parser.add_argument("--queries", required=True, metavar="Q.json", help="the workload, a JSON list of queries")
    many_parser.add_argument("--input", required=True, metavar="FILE", help="a .csv or .parquet stream")
    many_parser.add_argument("--output", required=True, metavar="FILE.jsonl", help="where to write the answers")
    many_parser.add_argument("--algorithm", default=SHARED, metavar="NAME",
                             help=f"{SHARED} (default: the shared executor) or a single-stream algorithm, "
                                  "one instance per query")
    many_parser.add_argument("--param", action="append", default=[], type=_param_argument, metavar="KEY=VALUE",
                             help="a parameter of --algorithm NAME; repeat for several")
    _add_max_slides(many_parser)
    commands.add_parser("list", help="list the registered algorithms with their families and parameters",
                        description="List the registered algorithms: name, family, summary, parameters.")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    try:
        args = build_parser().parse_args(argv)
        if args.command == "list":
            write_stdout(algorithm_lines())
        elif args.command == "run-many":
            run_many(args)
        else:
            run(args)
    except BrokenPipeError:
        silence_stdout()
        return EXIT_READER_GONE
    except CommandError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except MemoryError as exc:
        print(f"error: out of memory{f': {exc}' if str(exc) else ''}; the window / slide ratio, k, the "
              "parameters or the workload ask for more than this machine has", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0


def write_stdout(lines: Iterable[str]) -> None:
    """Write ``lines`` to standard output and flush it; a failure (a full disk) is a
    :class:`CommandError`, a reader gone (``BrokenPipeError``) goes up to :func:`main`."""
    if sys.stdout is None:  # closed by the caller (>&-)
        raise CommandError("standard output: cannot write: it is closed")
    try:
        sys.stdout.writelines(lines)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        silence_stdout()
        raise CommandError(f"standard output: cannot write: {exc.strerror or exc}") from None


def command_status(command: Callable[[], int]) -> int:
    """``command()``'s exit status, or :data:`EXIT_READER_GONE`, quietly, when it stopped because
    the reader of standard output closed it (``python -m benchmarks.run --estimate | head -1``);
    a broken pipe or socket of its own still goes up."""
    try:
        return command()
    except BrokenPipeError:
        if not stdout_reader_gone():
            raise
        silence_stdout()
        return EXIT_READER_GONE


def stdout_reader_gone() -> bool:
    """Whether standard output is a pipe whose reader has closed it (``poll`` reports an error
    on its write end; ``O(1)``)."""
    try:
        descriptor = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    poller = select.poll()
    poller.register(descriptor, select.POLLOUT)
    return any(events & select.POLLERR for _, events in poller.poll(0))


def silence_stdout() -> None:
    """Point standard output at ``/dev/null`` once its reader is gone, so that the interpreter's
    last flush of what is still buffered cannot fail again and print a traceback at exit."""
    try:
        sys.stdout.flush()
    except OSError:
        pass
    try:
        descriptor = sys.stdout.fileno()
    except (OSError, ValueError):  # not a file (captured, replaced): nothing left to flush at exit
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, descriptor)
    os.close(devnull)
