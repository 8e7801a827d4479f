"""Number rows 0..N-1 in a total order, in parallel (no single-partition window)."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

BUCKETS = 64
"""Ranges of the leading order column that are numbered independently (then offset)."""


def with_seq(frame: DataFrame, order: list[str], seq_start: int = 0, buckets: int = BUCKETS) -> DataFrame:
    """``frame`` with a ``seq`` column counting ``seq_start ..`` in the total order ``order``.

    ``order`` must be unique per row and start with a numeric column (the event time). Its
    range is cut into ``buckets`` equal ranges; each bucket is numbered by ``row_number()``
    in its own window partition, and offset by the sizes of the buckets before it (a
    running sum over ``buckets`` counts, broadcast back). So no step holds all the rows in
    one task, unlike ``row_number()`` over an unpartitioned window, and the result is
    deterministic (no sampled range partitioning). One small action reads the column's range.
    The bucket of a value is computed in doubles, so any int64 range works: rounding may move a
    value to a neighbouring bucket, never out of order (the bucket never decreases as the value grows).
    """
    low, high = frame.agg(F.min(order[0]), F.max(order[0])).first()
    if low is None:
        return frame.withColumn("seq", F.lit(0).cast("long"))
    width = float((int(high) - int(low)) // buckets + 1)
    offset = F.col(order[0]).cast("double") - F.lit(float(low))  # in doubles: high - low may pass 2**63
    tagged = frame.withColumn("_bucket", F.floor(offset / F.lit(width)).cast("long"))
    sizes = tagged.groupBy("_bucket").agg(F.count(F.lit(1)).alias("_size"))
    offsets = sizes.select("_bucket", (F.sum("_size").over(Window.orderBy("_bucket")) - F.col("_size"))
                           .alias("_offset"))
    rank = F.row_number().over(Window.partitionBy("_bucket").orderBy(*order))
    return (tagged.join(F.broadcast(offsets), "_bucket")
            .withColumn("seq", F.col("_offset") + rank - 1 + F.lit(seq_start).cast("long"))
            .drop("_bucket", "_offset"))
