"""The ``csv`` trace family: bring your own stream.

Any comma-separated file with a header (plain or ``.gz`` / ``.bz2`` / ``.zip``) holding an id
column, a time column and numeric feature columns, all named on the command line
(``--id-column``, ``--time-column``, ``--feature-columns a,b,c``). Fields are separated by
commas and may be quoted as RFC 4180 has it (``"Smith, John"``, ``"12.5"``, ``""`` for a quote
inside a quoted field, a quoted field spanning lines), as Python's ``csv`` module and the
engine's CLI read them; a row is numbered by the line it starts on. ``id`` and ``t`` must be integers (``t`` in the unit given by ``--time-unit``,
default ``ordinal``); features any finite numbers. Rows are ordered by ``t`` (then file, then
line). The dataset rows are ``id, seq, t, <features...>``, not partitioned (``t`` has no
calendar meaning in general).
"""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any, Sequence

import pyarrow as pa
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from .cleaned import Cleaned, Raw, judged_once, plain_number
from .errors import InputError
from .ordering import with_seq
from .rawfiles import lines_table, per_file, read_lines

PARTITION_BY = ()
FIELD_SEPARATOR = "\x1f"
"""Joins the fields of a row read with quotes, for Spark to split (the ASCII unit separator)."""
DATASET_COLUMNS = ("id", "seq", "t")
"""The dataset's own columns, which no feature may be named (Spark's column names ignore case)."""
ATTRIBUTE_COLUMNS = ("stream", "value")
"""The columns that make a dataset an attribute stream to the replay: never two features of a csv dataset."""
DEFAULT_T_UNIT = "ordinal"
T_UNITS = ("ordinal", "ms", "s", "min", "h", "d")
"""Units the dashboard reads a time column in (``ordinal``: a plain count, shown as is)."""
REASONS = (
    "wrong_field_count",
    "non_numeric",
    "non_integer",
    "duplicate_id",
    "before_dataset_end",
)
"""Why a row is rejected, in the order the checks apply: a field count other than the header's;
an id, time or feature that is not a finite number; an id or time with a fractional part or
beyond 64 bits; an id seen on an earlier row (the first one is kept); (``--append``) a time
before the dataset's last ``t``."""


def default_name(paths: Sequence[Path], options: dict[str, Any] | None = None) -> str:
    """The first file's name without its suffixes, other characters than letters, digits, ``_``
    and ``-`` as ``-`` (``trips.csv.gz`` -> ``trips``, ``my trips (2).csv`` -> ``my-trips--2-``)."""
    stem = Path(paths[0]).name.split(".")[0] if paths else ""
    return re.sub(r"[^A-Za-z0-9_-]", "-", stem).lstrip("-_") or "csv"


SETTING_FLAGS = {"id_column": "--id-column", "time_column": "--time-column", "features": "--feature-columns",
                 "t_unit": "--time-unit"}
"""The command-line flag of each column setting."""


def _setting_text(value: Any) -> str:
    return ",".join(value) if isinstance(value, list) else str(value)


def settings(options: dict[str, Any] | None, existing: dict[str, Any] | None) -> dict[str, Any]:
    """The column choice: the dataset's when appending (options must agree), else the options."""
    options = options or {}
    features = options.get("feature_columns") or []
    if isinstance(features, str):
        features = [name.strip() for name in features.split(",") if name.strip()]
    chosen = {"id_column": options.get("id_column"), "time_column": options.get("time_column"),
              "features": list(features), "t_unit": options.get("time_unit") or DEFAULT_T_UNIT}
    if existing:
        existing = {"t_unit": DEFAULT_T_UNIT, **existing}
        given = {key: value for key, value in chosen.items() if value and key != "t_unit"}
        if options.get("time_unit"):  # given, not defaulted: it must be the dataset's
            given["t_unit"] = options["time_unit"]
        differing = [key for key, value in given.items() if existing[key] != value]
        if differing:
            had = ", ".join(f"{key}={_setting_text(existing[key])}" for key in differing)
            asked = ", ".join(f"{SETTING_FLAGS[key]} {_setting_text(given[key])}" for key in differing)
            raise InputError(f"the dataset was ingested with {had}, not {asked}: --append keeps the dataset's "
                             "columns and time unit (leave the flag out, or ingest a new dataset under another --name)")
        return existing
    missing = [flag for flag, key in (("--id-column", "id_column"), ("--time-column", "time_column"),
                                      ("--feature-columns", "features")) if not chosen[key]]
    if missing:
        raise InputError(f"the csv family needs {', '.join(missing)}")
    if chosen["t_unit"] not in T_UNITS:
        raise InputError(f"--time-unit must be one of {', '.join(T_UNITS)}, got {chosen['t_unit']!r}")
    names = [chosen["id_column"], chosen["time_column"], *chosen["features"]]
    if len(set(names)) != len(names):
        raise InputError(f"a column is named twice in --id-column, --time-column, --feature-columns: {names}")
    features = [name.lower() for name in chosen["features"]]
    clashing = [name for name in chosen["features"]
                if name.lower() in DATASET_COLUMNS or features.count(name.lower()) > 1]
    if clashing or set(ATTRIBUTE_COLUMNS) <= set(features):
        raise InputError(f"feature column(s) {', '.join(clashing or ATTRIBUTE_COLUMNS)}: a dataset's features must "
                         f"not be named {', '.join(DATASET_COLUMNS)} (its own columns), nor two alike but for case, "
                         f"nor {' and '.join(ATTRIBUTE_COLUMNS)} together (an attribute stream's columns); rename "
                         "them in the file's header")
    return chosen


def extract(paths: Sequence[Path], options: dict[str, Any] | None = None,
            existing: dict[str, Any] | None = None) -> Raw:
    """Read the files' lines (header removed) with the positions of the chosen columns.

    A file without a quote character is split by Spark on commas; a file with quotes is read by
    Python's ``csv`` module here, each row's fields joined by :data:`FIELD_SEPARATOR` in
    ``fields`` (see :func:`records`).

    Returns
    -------
    Raw
        ``table``: ``source_index``, ``source_file``, ``line`` (the header is line 1), ``raw``,
        ``fields`` (null where Spark splits ``raw``); ``params["_layout"]`` (not recorded): per file, the positions of the id, time and
        feature columns and the header's field count.

    Raises
    ------
    InputError
        Missing options, an unreadable file, or a header without a chosen column or with one twice.
    """
    params = settings(options, existing)
    wanted = [params["id_column"], params["time_column"], *params["features"]]
    bodies, numbers, fields, positions, widths = [], [], [], [], []
    for path in paths:
        header, raws, starts, split = records(read_lines(path))
        header = [name.strip() for name in header]
        if header or raws:
            missing = [name for name in wanted if name not in header]
            if missing:
                raise InputError(f"{path}: no column {', '.join(missing)} in the header {','.join(header)[:200]!r}")
            repeated = [name for name in dict.fromkeys(wanted) if header.count(name) > 1]
            if repeated:
                raise InputError(f"{path}: column {', '.join(repeated)} appears twice in the header; which one to read "
                                 "is unclear")
        positions.append([header.index(name) if name in header else 0 for name in wanted])
        widths.append(len(header))
        bodies.append(raws)
        numbers.append(starts)
        fields += split
    table = lines_table(paths, bodies, line_numbers=numbers).append_column("fields", pa.array(fields, pa.string()))
    return Raw(table=table, params={**params, "_layout": {"positions": positions, "width": widths}},
               features=tuple(params["features"]))


def records(lines: list[str]) -> tuple[list[str], list[str], list[int], list[str | None]]:
    r"""The header's fields, then per row its text, the line it starts on and its fields joined
    by :data:`FIELD_SEPARATOR` (``None`` when the file has no quote: Spark splits on commas).
    A blank line is no row, as for the engine's CLI.

    A quoted field may span lines. When one is still open at the end of the file (a stray
    quote), or grows past the ``csv`` module's field size limit (128 KiB), the lines from its
    row on are read one by one: a line that closes its quotes is a row, one that does not is
    split on commas as if unquoted (``fields`` ``None``).
    ``O(characters)``, in C.

    Examples
    --------
    >>> records(['a,"b, c"', '1,"x ""y"" z"', '2,"two', 'lines"', '', '3,4'])
    (['a', 'b, c'], ['1,"x ""y"" z"', '2,"two\nlines"', '3,4'], [2, 3, 6], ['1\x1fx "y" z', '2\x1ftwo\nlines', '3\x1f4'])
    >>> records(['t,x', '1,"2', '3,4', '"5",6'])
    (['t', 'x'], ['1,"2', '3,4', '"5",6'], [2, 3, 4], [None, '3\x1f4', '5\x1f6'])
    >>> records(['t,x', '3,4', '1,"2'])
    (['t', 'x'], ['3,4', '1,"2'], [2, 3], ['3\x1f4', None])
    >>> records(['t,x', '1,2', '', '3,4'])
    (['t', 'x'], ['1,2', '3,4'], [2, 4], [None, None])
    """
    if not lines:
        return [], [], [], []
    if not any('"' in line for line in lines):
        numbered = [(number, line) for number, line in enumerate(lines[1:], 2) if line]
        return (lines[0].split(","), [line for _, line in numbered], [number for number, _ in numbered],
                [None] * len(numbered))
    reader = csv.reader(line + "\n" for line in lines)
    spans, first, stray = [], 0, None
    try:
        for row in reader:
            spans.append((first, reader.line_num, row))
            first = reader.line_num
    except csv.Error:  # a field past csv's size limit: a quote left open over many lines
        stray = first
    if stray is None and not _closed(lines[spans[-1][0]:]):
        stray = spans.pop()[0]
    if stray is not None:
        spans += [(i, i + 1, next(csv.reader([lines[i]]), []) if _closed(lines[i:i + 1]) else None)
                  for i in range(stray, len(lines))]
    header = spans[0][2]
    rows = [(start, end, row) for start, end, row in spans[1:] if end - start > 1 or lines[start]]
    return (lines[0].split(",") if header is None else header,
            ["\n".join(lines[start:end]) for start, end, _ in rows],
            [start + 1 for start, _, _ in rows],
            [None if row is None else FIELD_SEPARATOR.join(row) for _, _, row in rows])


def _closed(lines: list[str]) -> bool:
    """Whether the row made of ``lines`` closes every quote it opens."""
    try:
        list(csv.reader([line + "\n" for line in lines], strict=True))
    except csv.Error:
        return False
    return True


def transform(raw: DataFrame, *, seq_start: int = 0, t_after: int | None = None,
              params: dict[str, Any] | None = None) -> Cleaned:
    """Validate rows, keep the first row of each id and order by ``t`` (no I/O)."""
    features = list(params["features"])
    fields = F.when(F.col("fields").isNull(), F.split("raw", ",", -1)).otherwise(
        F.split("fields", FIELD_SEPARATOR, -1))

    def field(index: int) -> Column:
        position = per_file([p[index] + 1 for p in params["_layout"]["positions"]])
        return F.trim(F.try_element_at(fields, position.cast("int")))

    parsed = raw.select("source_index", "source_file", "line", "raw",
                        (F.size(fields) == per_file(params["_layout"]["width"])).alias("fits"),
                        *[field(i).alias(f"_text{i}") for i in (0, 1)],
                        plain_number(field(0)).alias("id_value"), plain_number(field(1)).alias("t_value"),
                        *[plain_number(field(2 + i)).alias(f"_f{i}") for i in range(len(features))])
    parsed = parsed.select("*", integer("_text0", "id_value").alias("id_long"),
                           integer("_text1", "t_value").alias("t_long"))

    def finite(name: str) -> Column:
        value = F.col(name)
        return value.isNotNull() & ~F.isnan(value) & (F.abs(value) != float("inf"))

    checks = [
        ("wrong_field_count", ~F.col("fits")),
        ("non_numeric", ~_all([finite("id_value"), finite("t_value"), *[finite(f"_f{i}") for i in range(len(features))]])),
        ("non_integer", F.col("id_long").isNull() | F.col("t_long").isNull()),
    ]
    reason = F.lit(None).cast("string")
    for name, failed in reversed(checks):
        reason = F.when(failed, F.lit(name)).otherwise(reason)
    judged = judged_once(parsed.withColumn("reason", reason))
    first_of_id = Window.partitionBy("id_long").orderBy("source_index", "line")
    valid = judged.where(F.col("reason").isNull()).withColumn("occurrence", F.row_number().over(first_of_id))
    t = F.col("t_long")
    later = (F.when(F.col("occurrence") > 1, F.lit("duplicate_id"))
             .when(F.lit(False) if t_after is None else t < F.lit(t_after), F.lit("before_dataset_end")))
    valid = valid.withColumn("reason", later)
    accepted = valid.where(F.col("reason").isNull()).withColumn("t", t)
    rows = with_seq(accepted, ["t", "source_index", "line"], seq_start).select(
        F.col("id_long").alias("id"),
        "seq",
        "t",
        *[F.col(f"_f{i}").alias(name) for i, name in enumerate(features)],
    )
    columns = ("source_file", "line", "reason", "raw")
    rejected = (judged.where(F.col("reason").isNotNull()).select(*columns)
                .unionByName(valid.where(F.col("reason").isNotNull()).select(*columns)))
    return Cleaned(rows=rows, rejected=rejected)


def integer(text: str, value: str) -> Column:
    """The 64-bit integer a field holds, exactly (``null`` when it holds none): its text read as
    an integer (a double has 53 bits: ids past 2**53 would merge), else its number when that is
    integral and within the int64 range (``1e3``, ``12.0``)."""
    exact, number = F.col(text).try_cast("long"), F.col(value)
    return (F.when(exact.isNotNull() & (exact.cast("double") == number), exact)
            .when(F.abs(number) < 2.0**63, F.when(F.floor(number) == number, number.cast("long"))))


def _all(conditions: list[Column]) -> Column:
    result = F.lit(True)
    for condition in conditions:
        result = result & condition
    return result
