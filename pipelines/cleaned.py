"""What every trace family's transform returns."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame


@dataclass(frozen=True)
class Cleaned:
    """The result of a transform: accepted ``rows`` and ``rejected`` rows with their reason.

    ``rows`` has the dataset columns ``id, seq, t, <features...>`` (docs/CONTRACTS.md);
    ``rejected`` has ``source_file, line, reason, raw``.
    """

    rows: DataFrame
    rejected: DataFrame
