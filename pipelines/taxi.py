"""The ``taxi`` trace family: NYC TLC yellow taxi trip records (``..._YYYY-MM.csv[.gz]``).

Each file is a CSV with a header naming at least :data:`REQUIRED_COLUMNS`; times are New
York wall-clock times, distances miles, amounts dollars. The rows of a file are not in time
order: the dataset orders them by pickup time. The dataset rows are
``id, seq, t, duration, distance, speed, fare, tip`` (docs/CONTRACTS.md), partitioned by the
pickup ``date``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from .cleaned import Cleaned, Raw, judged_once, plain_number
from .errors import InputError
from .ordering import with_seq
from .rawfiles import lines_table, per_file, read_lines

FEATURES = ("duration", "distance", "speed", "fare", "tip")
"""``duration`` seconds, ``distance`` miles, ``speed`` miles per hour, ``fare`` and ``tip`` dollars."""
T_UNIT = "ms"
PARTITION_BY = ("date",)
CITY_TIME_ZONE = "America/New_York"
TIME_FORMAT = "yyyy-MM-dd HH:mm:ss"
FILE_MONTH = re.compile(r"(?P<year>\d{4})-(?P<month>\d{2})")
LINES_PER_MONTH = 10**8
"""Room for the line number in an id: ``id = yyyymm * LINES_PER_MONTH + line``."""
AMOUNT_COLUMNS = ("fare_amount", "extra", "mta_tax", "tip_amount", "tolls_amount", "improvement_surcharge",
                  "total_amount", "congestion_surcharge")
"""Money columns; an empty one counts as 0, a negative one rejects the row."""
REQUIRED_COLUMNS = ("pickup_datetime", "dropoff_datetime", "trip_distance", "fare_amount", "tip_amount")
SECONDS_PER_HOUR = 3600.0
MAX_SPEED_MPH = 100.0
"""Fastest plausible average speed of a trip, miles per hour. No road in or around New York City
allows more than 65 mph (the city's default limit is 25 mph), and a trip's average includes its
stops, so a trip above 100 mph (say 20 miles in 5 minutes, or the sample's 558 mph) is a clock or
odometer error, not a fast ride: it is rejected as ``implausible_speed``."""

REASONS = (
    "wrong_field_count",
    "non_numeric",
    "bad_time",
    "time_out_of_range",
    "non_positive_duration",
    "zero_distance",
    "implausible_speed",
    "negative_amount",
    "before_dataset_end",
)
"""Why a raw row is rejected, in the order the checks apply (a row gets the first that fits).

``non_numeric``: distance, fare or tip missing or not a finite number, or another amount
present but not a number; ``bad_time``: a pickup or dropoff time that does not parse;
``time_out_of_range``: pickup outside the file's month; ``zero_distance``: distance 0 (or
below); ``implausible_speed``: distance over duration above :data:`MAX_SPEED_MPH`;
``negative_amount``: any money column below 0."""


def file_month(path: Path) -> int:
    """``yyyymm`` from a trip file name; a name without ``YYYY-MM`` raises :class:`InputError`.

    >>> file_month(Path("yellow_tripdata_sample_2019-03.csv.gz"))
    201903
    """
    match = FILE_MONTH.search(path.name)
    if match is None or not 1 <= int(match["month"]) <= 12:
        raise InputError(f"{path}: no month in the file name (expected e.g. yellow_tripdata_2019-01.csv.gz)")
    return int(match["year"]) * 100 + int(match["month"])


def default_name(paths: Sequence[Path], options: dict[str, Any] | None = None) -> str:
    """``taxi`` (all the files of a dataset are usually one city's months)."""
    return "taxi"


def extract(paths: Sequence[Path], options: dict[str, Any] | None = None,
            existing: dict[str, Any] | None = None) -> Raw:
    """Read trip files into raw lines (header removed), with each file's column positions.

    Returns
    -------
    Raw
        ``table``: ``source_index``, ``source_file``, ``line`` (1-based, the header is line 1),
        ``raw`` and ``month`` (``yyyymm`` of the file name); ``params["_layout"]`` (not
        recorded): per file, the index of each of :data:`REQUIRED_COLUMNS` then
        :data:`AMOUNT_COLUMNS` (-1 if absent) and the header's number of fields.

    Raises
    ------
    InputError
        A missing or unreadable file, a name without month, two files for one month, or a
        header without a required column.
    """
    months = [file_month(Path(path)) for path in paths]
    repeated = sorted({m for m in months if months.count(m) > 1})
    if repeated:
        raise InputError(f"two files for month {repeated[0]}; give one file per month")
    bodies, positions, widths = [], [], []
    for path in paths:
        lines = read_lines(path)
        header = [name.strip().lower() for name in lines[0].split(",")] if lines else []
        if lines:
            missing = [name for name in REQUIRED_COLUMNS if name not in header]
            if missing:
                raise InputError(f"{path}: the header lacks {', '.join(missing)} (found: {lines[0][:200]})")
        positions.append([header.index(name) if name in header else -1
                          for name in REQUIRED_COLUMNS + AMOUNT_COLUMNS])
        widths.append(len(header))
        bodies.append(lines[1:])
    table = lines_table(paths, bodies, first_line=[2] * len(paths), month=months)
    return Raw(table=table, params={"_layout": {"positions": positions, "width": widths}}, features=FEATURES)


def transform(raw: DataFrame, *, seq_start: int = 0, t_after: int | None = None,
              params: dict[str, Any] | None = None) -> Cleaned:
    """Validate trips, derive the features and order them by pickup time (no I/O).

    Returns
    -------
    Cleaned
        ``rows``: ``id`` (``yyyymm * 10^8 + line``: unique, names the source line), ``seq``
        (``seq_start ..`` by pickup ``t``, then file, then line), ``t`` (pickup, UTC epoch
        milliseconds), ``duration`` (s), ``distance`` (miles), ``speed`` (mph), ``fare``,
        ``tip`` (dollars), partition column ``date`` (New York pickup date);
        ``rejected``: every other row with the first reason of :data:`REASONS` that applies.
    """
    fields = F.split("raw", ",", -1)
    names = REQUIRED_COLUMNS + AMOUNT_COLUMNS
    layout = params["_layout"]

    def field(name: str) -> Column:
        position = per_file([p[names.index(name)] for p in layout["positions"]])
        return F.when(position >= 0, F.trim(F.try_element_at(fields, (position + 1).cast("int"))))

    parsed = raw.select(
        "source_index", "source_file", "line", "raw", "month",
        (F.size(fields) == per_file(layout["width"])).alias("enough_fields"),
        F.try_to_timestamp(field("pickup_datetime"), F.lit(TIME_FORMAT)).alias("pickup"),
        F.try_to_timestamp(field("dropoff_datetime"), F.lit(TIME_FORMAT)).alias("dropoff"),
        *[field(name).alias(f"{name}_text") for name in ("trip_distance",) + AMOUNT_COLUMNS],
        *[plain_number(field(name)).alias(name) for name in ("trip_distance",) + AMOUNT_COLUMNS],
    )

    def finite(name: str) -> Column:
        value = F.col(name)
        return value.isNotNull() & ~F.isnan(value) & (F.abs(value) != float("inf"))

    def number_or_blank(name: str) -> Column:
        text = F.col(f"{name}_text")
        return text.isNull() | (text == "") | finite(name)

    t = F.unix_millis(F.to_utc_timestamp("pickup", CITY_TIME_ZONE))
    duration = F.unix_seconds("dropoff") - F.unix_seconds("pickup")
    pickup_month = F.year("pickup") * 100 + F.month("pickup")
    checks = [
        ("wrong_field_count", ~F.col("enough_fields")),
        ("non_numeric", ~(finite("trip_distance") & finite("fare_amount") & finite("tip_amount")
                          & _all(number_or_blank(name) for name in AMOUNT_COLUMNS))),
        ("bad_time", F.col("pickup").isNull() | F.col("dropoff").isNull()),
        ("time_out_of_range", pickup_month != F.col("month")),
        ("non_positive_duration", duration <= 0),
        ("zero_distance", F.col("trip_distance") <= 0),
        ("implausible_speed", F.col("trip_distance") / (duration / SECONDS_PER_HOUR) > MAX_SPEED_MPH),
        ("negative_amount", _any(F.coalesce(F.col(name) < 0, F.lit(False)) for name in AMOUNT_COLUMNS)),
        ("before_dataset_end", F.lit(False) if t_after is None else t < F.lit(t_after)),
    ]
    reason = F.lit(None).cast("string")
    for name, failed in reversed(checks):
        reason = F.when(failed, F.lit(name)).otherwise(reason)
    judged = judged_once(parsed.withColumn("reason", reason))

    accepted = judged.where(F.col("reason").isNull()).withColumn("t", t).withColumn("duration",
                                                                                    duration.cast("double"))
    rows = with_seq(accepted, ["t", "source_index", "line"], seq_start).select(
        (F.col("month").cast("long") * LINES_PER_MONTH + F.col("line")).alias("id"),
        "seq",
        "t",
        "duration",
        F.col("trip_distance").alias("distance"),
        (F.col("trip_distance") / (F.col("duration") / SECONDS_PER_HOUR)).alias("speed"),
        F.col("fare_amount").alias("fare"),
        F.col("tip_amount").alias("tip"),
        F.date_format("pickup", "yyyy-MM-dd").alias("date"),
    )
    rejected = judged.where(F.col("reason").isNotNull()).select("source_file", "line", "reason", "raw")
    return Cleaned(rows=rows, rejected=rejected)


def _all(conditions) -> Column:
    result = F.lit(True)
    for condition in conditions:
        result = result & condition
    return result


def _any(conditions) -> Column:
    result = F.lit(False)
    for condition in conditions:
        result = result | condition
    return result
