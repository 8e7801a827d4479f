"""The ``stock`` trace family: AlgoSeek trade ticks (``<symbol>_<yyyymmdd>_trade.zip``).

Each zip holds one headerless CSV: ``time_ms`` (milliseconds since New York midnight),
``price`` (deci-cents), ``size`` (shares), ``exchange``, ``sale_condition``, ``suspicious``.
The dataset rows are ``id, seq, t, notional, price, size`` (docs/CONTRACTS.md), partitioned
by ``symbol`` and ``date``. One dataset may hold several symbols: a market-wide stream in
time order, whose ids stay unique across symbols.

Identical lines are *not* rejected as duplicates: several equal prints in the same
millisecond are distinct real trades (47,880 of the 250,601 lines of SPY on 2013-10-07
repeat an earlier line).
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from .cleaned import Cleaned, Raw, judged_once, plain_number
from .errors import InputError
from .ordering import with_seq
from .rawfiles import lines_table, read_lines

FEATURES = ("notional", "price", "size")
T_UNIT = "ms"
MARKET_TIME_ZONE = "America/New_York"
FILE_NAME = re.compile(r"^(?P<symbol>[A-Za-z]+)_(?P<date>\d{8})_trade\.zip$")
FIELDS = 6
PRICE_SCALE = 10_000.0
MS_PER_DAY = 86_400_000
LINES_PER_DAY = 10_000_000
"""Room for the line number in an id: ``id = symbol_index * ID_PER_SYMBOL + yyyymmdd * LINES_PER_DAY + line``."""
ID_PER_SYMBOL = 10**15
"""Room for ``yyyymmdd * LINES_PER_DAY + line`` in an id; ``symbol_index`` (< 9,223) goes above it."""
PARTITION_BY = ("symbol", "date")

REASONS = (
    "wrong_field_count",
    "non_numeric",
    "time_out_of_range",
    "non_positive_price",
    "non_positive_size",
    "suspicious",
    "before_dataset_end",
)
"""Why a raw row is rejected, in the order the checks apply (a row gets the first that fits);
``non_numeric`` also covers a price and size whose notional (price x size) is not a finite number."""


def parse_file_name(path: Path) -> tuple[str, str]:
    """``(SYMBOL, yyyymmdd)`` of a trade file; a name that does not fit raises :class:`InputError`.

    Examples
    --------
    >>> parse_file_name(Path("data/spy_20131007_trade.zip"))
    ('SPY', '20131007')
    """
    match = FILE_NAME.match(path.name)
    if match is None:
        raise InputError(f"{path}: not a trade file name (expected <symbol>_<yyyymmdd>_trade.zip)")
    try:
        dt.datetime.strptime(match["date"], "%Y%m%d")
    except ValueError:
        raise InputError(f"{path}: {match['date']} in the file name is not a date (yyyymmdd)") from None
    return match["symbol"].upper(), match["date"]


def default_name(paths: Sequence[Path], options: dict[str, Any] | None = None) -> str:
    """The dataset name when none is given: the lower-case symbols joined by ``-`` (``spy``, ``bac-spy``)."""
    return "-".join(sorted({parse_file_name(path)[0].lower() for path in paths}))


def extract(paths: Sequence[Path], options: dict[str, Any] | None = None,
            existing: dict[str, Any] | None = None) -> Raw:
    """Read trade zips into raw lines, one row per CSV line, nothing parsed yet.

    Parameters
    ----------
    paths
        Trade files, any symbols, one file per (symbol, date).
    options
        Unused (the stock family has no options).
    existing
        The ``params`` of the dataset appended to: its ``symbols`` keep their index, new
        symbols are added after them.

    Returns
    -------
    Raw
        ``table``: ``source_index`` (position of the file in ``paths``), ``source_file`` (its
        name), ``symbol``, ``symbol_index`` (position in ``params["symbols"]``), ``date``
        (``yyyymmdd`` from the file name), ``line`` (1-based line number) and ``raw`` (the
        line's text); ``params``: ``{"symbols": [...]}``.

    Raises
    ------
    InputError
        A missing or unreadable file, a zip without exactly one member, a name without symbol
        and date, two files for one symbol and date, or a file too long for the ids.
    """
    names = [parse_file_name(path) for path in paths]
    seen: dict[tuple[str, str], Path] = {}
    for path, key in zip(paths, names):
        if key in seen:
            raise InputError(f"{path}: a second file for {key[0]} on {key[1]} (also {seen[key]}); "
                             "give one file per symbol and trading day")
        seen[key] = path
    symbols = list((existing or {}).get("symbols", []))
    for symbol in sorted({symbol for symbol, _ in names} - set(symbols)):
        symbols.append(symbol)
    if len(symbols) * ID_PER_SYMBOL > 2**63:
        raise InputError(f"{len(symbols)} symbols do not fit in the ids")
    lines = []
    for path in paths:
        lines.append(read_lines(path))
        if len(lines[-1]) >= LINES_PER_DAY:
            raise InputError(f"{path}: {len(lines[-1]):,} lines; at most {LINES_PER_DAY - 1:,} fit in an id")
    table = lines_table(paths, lines, symbol=[symbol for symbol, _ in names],
                        symbol_index=[symbols.index(symbol) for symbol, _ in names],
                        date=[date for _, date in names])
    return Raw(table=table, params={"symbols": symbols}, features=FEATURES)


def transform(raw: DataFrame, *, seq_start: int = 0, t_after: int | None = None,
              params: dict[str, Any] | None = None) -> Cleaned:
    """Validate, clean and order raw trade lines (no I/O).

    Parameters
    ----------
    raw
        Rows as :func:`extract` returns them.
    seq_start
        ``seq`` of the first accepted row (the row count of the dataset being appended to).
    t_after
        When appending: the dataset's last ``t``; earlier rows are rejected
        (``before_dataset_end``) so that ``t`` never decreases along ``seq``.
    params
        Unused (the symbol index is already a column of ``raw``).

    Returns
    -------
    Cleaned
        ``rows``: ``id`` (``symbol_index * 10^15 + yyyymmdd * 10^7 + line``: unique across
        symbols, and names the source line), ``seq`` (``seq_start ..`` in order of ``t``, then
        file, then line), ``t`` (UTC epoch milliseconds), ``notional`` (dollars), ``price``
        (dollars), ``size`` (shares), and the partition columns ``symbol`` and ``date``
        (``yyyy-mm-dd``);
        ``rejected``: every other row with the first reason of :data:`REASONS` that applies.
    """
    fields = F.split("raw", ",", -1)

    def number(position: int) -> Column:
        return plain_number(F.try_element_at(fields, F.lit(position + 1)))

    time_ms, price, size, suspicious = number(0), number(1), number(2), number(5)
    parsed = raw.select(
        "source_index", "source_file", "line", "raw", "symbol", "symbol_index",
        F.size(fields).alias("field_count"),
        F.col("date").cast("long").alias("date"),
        time_ms.alias("time_ms"), price.alias("price"), size.alias("size"), suspicious.alias("suspicious"),
        (price / PRICE_SCALE * size).alias("notional"),
    )
    t = _epoch_ms(F.col("date"), F.col("time_ms"))

    def finite(name: str) -> Column:
        value = F.col(name)
        return value.isNotNull() & ~F.isnan(value) & (F.abs(value) != float("inf"))

    checks = [
        ("wrong_field_count", F.col("field_count") != FIELDS),
        ("non_numeric", ~(finite("time_ms") & finite("price") & finite("size") & finite("suspicious")
                          & finite("notional"))),
        ("time_out_of_range", (F.col("time_ms") < 0) | (F.col("time_ms") >= MS_PER_DAY)),
        ("non_positive_price", F.col("price") <= 0),
        ("non_positive_size", F.col("size") <= 0),
        ("suspicious", F.col("suspicious") != 0),
        ("before_dataset_end", F.lit(False) if t_after is None else t < F.lit(t_after)),
    ]
    reason = F.lit(None).cast("string")
    for name, failed in reversed(checks):
        reason = F.when(failed, F.lit(name)).otherwise(reason)
    judged = judged_once(parsed.withColumn("reason", reason))

    accepted = judged.where(F.col("reason").isNull()).withColumn("t", t)
    rows = with_seq(accepted, ["t", "source_index", "line"], seq_start).select(
        (F.col("symbol_index").cast("long") * ID_PER_SYMBOL + F.col("date") * LINES_PER_DAY
         + F.col("line")).alias("id"),
        "seq",
        "t",
        "notional",
        (F.col("price") / PRICE_SCALE).alias("price"),
        F.col("size").alias("size"),
        "symbol",
        F.date_format(F.to_date(F.col("date").cast("string"), "yyyyMMdd"), "yyyy-MM-dd").alias("date"),
    )
    rejected = judged.where(F.col("reason").isNotNull()).select("source_file", "line", "reason", "raw")
    return Cleaned(rows=rows, rejected=rejected)


def _epoch_ms(date: Column, time_ms: Column) -> Column:
    """UTC epoch milliseconds of New York wall-clock ``time_ms`` on ``date`` (``yyyymmdd``).

    Independent of the session time zone: the wall-clock time is built as if it were UTC
    and then shifted from New York time to UTC (daylight saving included).
    """
    day = F.unix_date(F.to_date(date.cast("string"), "yyyyMMdd")).cast("long")
    wall_clock_ms = day * MS_PER_DAY + F.floor(time_ms).cast("long")
    return F.unix_millis(F.to_utc_timestamp(F.timestamp_millis(wall_clock_ms), MARKET_TIME_ZONE))
