"""What every trace family's extract and transform return."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F


@dataclass(frozen=True)
class Raw:
    """The output of a family's extract (plain reading, no Spark).

    ``table`` holds one row per raw record with ``source_file``, ``line`` and ``raw`` for
    reporting rejects (plus whatever the family's transform needs); ``params`` are the
    family's settings recorded in ``datasets.params`` (and handed back on ``--append``);
    ``features`` are the feature names (object streams) or stream names (attribute streams).
    """

    table: pa.Table
    params: dict[str, Any]
    features: tuple[str, ...]


@dataclass(frozen=True)
class Cleaned:
    """The result of a transform: accepted ``rows`` and ``rejected`` rows with their reason.

    ``rows`` has the dataset columns ``id, seq, t, <features...>`` for object streams or
    ``id, seq, t, stream, value`` for attribute streams (docs/CONTRACTS.md), plus the
    family's partition columns (``date``, ``symbol``); ``rejected`` has
    ``source_file, line, reason, raw``. ``learned`` is ``None`` or a one-row DataFrame whose
    columns are added to the dataset's ``params`` (e.g. a normalisation scale).
    """

    rows: DataFrame
    rejected: DataFrame
    learned: DataFrame | None = None


def judged_once(judged: DataFrame) -> DataFrame:
    """A family's parsed rows with their ``reason``, computed once for all that follows.

    Accepted rows (``reason IS NULL``), rejected rows and the ingest's counts all read the
    judged rows.  Left lazy, every one of them would parse the raw lines again, and Spark's
    optimizer would push each ``reason`` filter below the parsing, copying the whole
    validation expression into the filter (a taxi row's line was split about 80 times).  A
    lazy local checkpoint (kept by the executors, in memory or on their local disk) makes
    the first action parse each line once and the later ones reuse it.
    """
    return judged.localCheckpoint(eager=False)


PLAIN_NUMBER = r"^\s*[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\s*$"
"""A number in plain decimal, as the engine's CLI reads it (Python's ``float``, less ``1_000``)."""


def plain_number(text: Column) -> Column:
    """The double a field's text holds, ``null`` unless it is a number in plain decimal.

    Spark's cast to double also reads Java's suffixes (``1d``, ``2F``) and hex floats
    (``0x1p3``), which the engine's CLI refuses: a family must reject those rows too."""
    return F.when(text.rlike(PLAIN_NUMBER), text.try_cast("double"))
