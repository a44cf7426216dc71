"""The `replicas` table: Spark joins of batch metadata across the brokers holding a partition."""

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from replog.spark import schemas

REPLICA_BATCH_COLUMNS = ("broker", "topic", "partition", "base_offset", "last_offset", "crc", "count")

def replicas_frame(partitions: Any, batches: Any) -> Any:
    """The `replicas` table: live partitions held by two or more brokers, compared by batch metadata.

    First divergent offset D of a replica set = the smallest base_offset of a kept
    batch of one replica that another replica's log range [log_start_offset,
    log_end_offset) covers but which that replica does not hold identically
    (same base_offset, last_offset and CRC): a different batch, or different
    batch boundaries, at that offset. Offsets only one replica holds (one log is
    ahead, or the other's start was deleted by retention) are not divergence.
    Sides and records at risk: `spark.replica_sets.assemble_replica_set`.
    """
    from pyspark.sql import functions as F

    live = partitions.where(F.col("state") == "live")
    tp = ["topic", "partition"]
    multi = live.groupBy(*tp).count().where(F.col("count") >= 2).select(*tp)
    reps = live.join(multi, tp).select("broker", *tp, "log_start_offset", "log_end_offset",
                                       "high_watermark", "latest_epoch")
    kept = batches.join(multi, tp).select(
        "broker", *tp, "base_offset", "last_offset", "crc", "count")
    b, o = kept.alias("b"), reps.alias("o")
    covered = b.join(o, (F.col("b.topic") == F.col("o.topic")) & (F.col("b.partition") == F.col("o.partition"))
                     & (F.col("b.broker") != F.col("o.broker"))
                     & (F.col("b.base_offset") >= F.col("o.log_start_offset"))
                     & (F.col("b.base_offset") < F.col("o.log_end_offset"))).select(
        F.col("o.broker").alias("other"), "b.topic", "b.partition", "b.base_offset", "b.last_offset", "b.crc")
    held = kept.select(F.col("broker").alias("other"), *tp, "base_offset", "last_offset", "crc")
    mismatch = covered.join(held, ["other", *tp, "base_offset", "last_offset", "crc"], "left_anti")
    div = mismatch.groupBy(*tp).agg(F.min("base_offset").alias("divergent_offset"))
    k, d = kept.alias("k"), div.alias("d")
    on_tp = (F.col("k.topic") == F.col("d.topic")) & (F.col("k.partition") == F.col("d.partition"))
    at_d = k.join(d, on_tp & (F.col("k.base_offset") <= F.col("d.divergent_offset"))
                  & (F.col("k.last_offset") >= F.col("d.divergent_offset"))).select(
        "k.broker", "k.topic", "k.partition",
        F.struct("k.base_offset", "k.last_offset", "k.crc").alias("at_d"))
    after = (k.join(d, on_tp & (F.col("k.last_offset") >= F.col("d.divergent_offset")))
             .join(reps.alias("r"), (F.col("r.broker") == F.col("k.broker")) & (F.col("r.topic") == F.col("k.topic"))
                   & (F.col("r.partition") == F.col("k.partition")))
             .groupBy("k.broker", "k.topic", "k.partition")
             .agg(F.sum("k.count").alias("records_from_d"),
                  F.sum(F.when(F.col("k.base_offset") < F.col("r.high_watermark"), F.col("k.count"))
                        .otherwise(0)).alias("committed_from_d")))
    per_replica = (reps.join(div, tp, "left").join(at_d, ["broker", *tp], "left")
                   .join(after, ["broker", *tp], "left"))
    grouped = per_replica.groupBy(*tp).agg(F.collect_list(F.struct(
        "broker", "log_end_offset", "high_watermark", "latest_epoch", "divergent_offset", "at_d",
        "records_from_d", "committed_from_d")).alias("replicas"))
    return grouped.mapInArrow(assemble_batches, schemas.spark_schema(schemas.REPLICAS))


def assemble_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: grouped per-replica facts -> `replicas` rows."""
    from replog.spark.replica_sets import assemble_replica_set

    for rb in batches:
        rows = [assemble_replica_set(r["topic"], r["partition"], r["replicas"]) for r in rb.to_pylist()]
        if rows:
            yield pa.RecordBatch.from_pylist(rows, schema=schemas.REPLICAS)


