"""The `replicas` table: Spark joins of batch metadata across the log dirs holding a partition.

A replica set is the live replicas of one partition in one cluster (`spark.identity`: never across
clusters), of one topic id where partition.metadata gives one: a replica without a topic id joins
the set of its cluster's only topic id for that partition, or, when there are several (a topic
deleted and made again under the same name), stays with the others that have none. A replica is
told apart by its log dir, so two log dirs of one broker are two replicas.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from replog.spark import schemas

SET = ("cluster", "topic", "partition", "set_topic_id")       # one replica set
REPLICA = "log_dir"                                            # one replica of it
REPLICA_BATCH_COLUMNS = ("cluster", "broker", "log_dir", "topic", "partition", "base_offset", "last_offset", "crc",
                         "count")


def replica_sets(partitions: Any) -> Any:
    """The live partitions of sets of two or more replicas, each with its set's key (`SET`)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    live = partitions.where(F.col("state") == "live")
    ids = F.array_sort(F.collect_set("topic_id").over(Window.partitionBy("cluster", "topic", "partition")))
    keyed = live.withColumn("set_topic_id", F.when(F.col("topic_id").isNotNull(), F.col("topic_id"))
                            .when(F.size(ids) == 1, ids[0]).otherwise(F.lit("")))
    multi = keyed.groupBy(*SET).count().where(F.col("count") >= 2).select(*SET)
    return keyed.join(multi, list(SET))


def replicas_frame(partitions: Any, batches: Any) -> Any:
    """The `replicas` table: live partitions held by two or more replicas of one set, compared by batch metadata.

    First divergent offset D of a replica set = the smallest base_offset of a kept
    batch of one replica that another replica's log range [log_start_offset,
    log_end_offset) covers but which that replica does not hold identically
    (same base_offset, last_offset and CRC): a different batch, or different
    batch boundaries, at that offset. Offsets only one replica holds (one log is
    ahead, or the other's start was deleted by retention) are not divergence.
    Sides and records at risk: `spark.replica_sets.assemble_replica_set`.
    """
    from pyspark.sql import functions as F

    key = list(SET)
    reps = replica_sets(partitions).select("broker", REPLICA, *key, "log_start_offset", "log_end_offset",
                                           "high_watermark", "latest_epoch")
    kept = batches.join(reps.select(REPLICA, "cluster", "topic", "partition", "set_topic_id"),
                        [REPLICA, "cluster", "topic", "partition"]).select(
        REPLICA, *key, "base_offset", "last_offset", "crc", "count")
    b, o = kept.alias("b"), reps.alias("o")
    same_set = [F.col(f"b.{c}") == F.col(f"o.{c}") for c in key]
    on = same_set[0]
    for cond in same_set[1:]:
        on = on & cond
    covered = b.join(o, on & (F.col(f"b.{REPLICA}") != F.col(f"o.{REPLICA}"))
                     & (F.col("b.base_offset") >= F.col("o.log_start_offset"))
                     & (F.col("b.base_offset") < F.col("o.log_end_offset"))).select(
        F.col(f"o.{REPLICA}").alias("other"), *(f"b.{c}" for c in key), "b.base_offset", "b.last_offset", "b.crc")
    held = kept.select(F.col(REPLICA).alias("other"), *key, "base_offset", "last_offset", "crc")
    mismatch = covered.join(held, ["other", *key, "base_offset", "last_offset", "crc"], "left_anti")
    div = mismatch.groupBy(*key).agg(F.min("base_offset").alias("divergent_offset"))
    k, d = kept.alias("k"), div.alias("d")
    on_set = [F.col(f"k.{c}") == F.col(f"d.{c}") for c in key]
    on_kd = on_set[0]
    for cond in on_set[1:]:
        on_kd = on_kd & cond
    at_d = k.join(d, on_kd & (F.col("k.base_offset") <= F.col("d.divergent_offset"))
                  & (F.col("k.last_offset") >= F.col("d.divergent_offset"))).select(
        f"k.{REPLICA}", *(f"k.{c}" for c in key),
        F.struct("k.base_offset", "k.last_offset", "k.crc").alias("at_d"))
    r = reps.alias("r")
    on_kr = F.col(f"r.{REPLICA}") == F.col(f"k.{REPLICA}")
    for c in key:
        on_kr = on_kr & (F.col(f"r.{c}") == F.col(f"k.{c}"))
    after = (k.join(d, on_kd & (F.col("k.last_offset") >= F.col("d.divergent_offset")))
             .join(r, on_kr)
             .groupBy(f"k.{REPLICA}", *(f"k.{c}" for c in key))
             .agg(F.sum("k.count").alias("records_from_d"),
                  F.sum(F.when(F.col("k.base_offset") < F.col("r.high_watermark"), F.col("k.count"))
                        .otherwise(0)).alias("committed_from_d")))
    per_replica = (reps.join(div, key, "left").join(at_d, [REPLICA, *key], "left")
                   .join(after, [REPLICA, *key], "left"))
    grouped = per_replica.groupBy(*key).agg(F.collect_list(F.struct(
        "broker", REPLICA, "log_end_offset", "high_watermark", "latest_epoch", "divergent_offset", "at_d",
        "records_from_d", "committed_from_d")).alias("replicas"))
    return grouped.mapInArrow(assemble_batches, schemas.spark_schema(schemas.REPLICAS))


def assemble_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: grouped per-replica facts -> `replicas` rows."""
    from replog.spark.replica_sets import assemble_replica_set

    for rb in batches:
        rows = [assemble_replica_set(r["topic"], r["partition"], r["replicas"], cluster=r["cluster"],
                                     topic_id=r["set_topic_id"] or None) for r in rb.to_pylist()]
        if rows:
            yield pa.RecordBatch.from_pylist(rows, schema=schemas.REPLICAS)
