"""Number rows 0..N-1 in a total order, in parallel (no single-partition window)."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

ROW_IN_PARTITION_BITS = 33
"""``monotonically_increasing_id`` puts the partition id above bit 33 and the row's position below."""


def with_seq(frame: DataFrame, order: list[str], seq_start: int = 0) -> DataFrame:
    """``frame`` with a ``seq`` column counting ``seq_start ..`` in the total order ``order``.

    The rows are range-partitioned and sorted by ``order`` (a key that is unique per row,
    so the result does not depend on the partitioning); each row's position within its
    partition comes from ``monotonically_increasing_id`` and the partitions' offsets from
    a running sum over the (few) partition sizes, broadcast back. So no step holds all the
    rows in one task, unlike ``row_number()`` over an unpartitioned window.

    The sorted rows are materialised once (an eager local checkpoint: a computation, no
    I/O of the caller's), because the sizes and the rows must come from the same
    partitioning and a range partitioning is sampled anew each time it is computed.
    """
    ordered = (frame.orderBy(*order).withColumn("_position", F.monotonically_increasing_id())
               .localCheckpoint(eager=True))
    ordered = ordered.withColumn("_partition", F.shiftright("_position", ROW_IN_PARTITION_BITS))
    sizes = ordered.groupBy("_partition").agg(F.count(F.lit(1)).alias("_size"))
    offsets = sizes.select("_partition", (F.sum("_size").over(Window.orderBy("_partition")) - F.col("_size"))
                           .alias("_offset"))
    in_partition = F.col("_position") - F.shiftleft("_partition", ROW_IN_PARTITION_BITS)
    return (ordered.join(F.broadcast(offsets), "_partition")
            .withColumn("seq", F.col("_offset") + in_partition + F.lit(seq_start).cast("long"))
            .drop("_position", "_partition", "_offset"))
