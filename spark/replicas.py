"""The `replicas` table: Spark joins of batch metadata across the log dirs holding a partition.

A replica set is the live replicas of one partition in one cluster (`spark.identity`: never across
clusters), of one topic id where partition.metadata gives one: a replica without a topic id joins
the set of its cluster's only topic id for that partition, or, when there are several (a topic
deleted and made again under the same name), stays with the others that have none. A replica is
told apart by its log dir, so two log dirs of one broker are two replicas.
"""
from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from replog.spark import schemas
from replog.spark.digests import BUCKET_BITS, suspects_frame
from replog.spark.schemas import Where

if TYPE_CHECKING:
    from replog.spark.detail import FetchTask

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


def replicas_frame(partitions: Any, batches: Any, digests: Any, *, fetch: bool = False,
                   remote: Collection[str] = ()) -> Any:
    """The `replicas` table: live partitions held by two or more replicas of one set, compared by batch metadata.

    The join finds a lower bound L per set: the smallest base_offset of a batch of one replica that
    another replica's log range [log_start_offset, log_end_offset) covers but which that replica
    does not hold identically (same base_offset, last_offset and CRC). Offsets only one replica holds
    (one log is ahead, or the other's start was deleted by retention) are not divergence. Batch rows
    are joined only in the buckets of offsets where the replicas' digests differ
    (`digests.suspect_buckets`): none at all for a set of equal replicas. Each replica's batches
    ending at or after L then go, one set per row, to `replica_sets.replica_set_row`, which pairs
    them as replay does.

    `batches`: the batch rows (the batch table, or the rows of remote replicas; None: none). With
    `fetch`, the rows of the local replicas (log dirs not in `remote`) are read again from their
    segments, only where wanted (`spark.detail`).
    """
    from pyspark.sql import functions as F

    key = list(SET)
    sets = replica_sets(partitions)
    reps = sets.select("broker", REPLICA, *key, "log_start_offset", "log_end_offset", "high_watermark",
                       "latest_epoch")
    suspects = suspects_frame(reps, digests, REPLICA, key)
    per_replica = reps.withColumn("lower_bound", F.lit(None).cast("bigint")).withColumn("tail", F.lit(None).cast(
        "array<struct<base_offset:bigint,last_offset:bigint,crc:bigint,count:bigint>>"))
    if not suspects.isEmpty():   # else every set's replicas are equal where they overlap: no batch row is read
        source = _Source(sets, batches, fetch, set(remote))
        located = source.located(reps, key, suspects=suspects.collect() if fetch else None)
        detail = (located.withColumn("bucket", F.shiftright("base_offset", BUCKET_BITS))
                  .join(F.broadcast(suspects), [*key, "bucket"]).drop("bucket"))
        div = _lower_bounds(reps, detail, key)
        if fetch:
            div = reps.sparkSession.createDataFrame(div.collect(), div.schema)
            located = source.located(reps, key, lower_bounds=div.collect())
        k, d = located.alias("k"), F.broadcast(div).alias("d")
        tails = (k.join(d, _same(key, "k", "d") & (F.col("k.last_offset") >= F.col("d.lower_bound")))
                 .groupBy(f"k.{REPLICA}", *(f"k.{c}" for c in key))
                 .agg(F.collect_list(F.struct("k.base_offset", "k.last_offset", "k.crc", "k.count")).alias("tail")))
        per_replica = reps.join(div, key, "left").join(tails, [REPLICA, *key], "left")
    grouped = per_replica.groupBy(*key).agg(F.collect_list(F.struct(
        "broker", REPLICA, "log_start_offset", "log_end_offset", "high_watermark", "latest_epoch",
        "lower_bound", "tail")).alias("replicas"))
    return grouped.mapInArrow(assemble_batches, schemas.spark_schema(schemas.REPLICAS))


class _Source:
    """Where the comparison's batch rows come from: `batches` (a table, or None), and with `fetch`
    the local replicas' segments, read for the wanted offsets only (`spark.detail`)."""

    def __init__(self, sets: Any, batches: Any, fetch: bool, remote: set[str]) -> None:
        self.batches, self.fetch = batches, fetch
        self.members: dict[tuple[Any, ...], list[_Member]] = {}
        if fetch:
            cols = ["cluster", "broker", REPLICA, "topic", "partition", "set_topic_id", "path"]
            for r in sets.select(*cols).collect():
                if r[REPLICA] in remote:
                    continue   # its scan wrote its rows
                self.members.setdefault((r["cluster"], r["topic"], r["partition"], r["set_topic_id"]), []).append(
                    _Member(where={"cluster": r["cluster"], "broker": r["broker"], "log_dir": r[REPLICA],
                                   "topic": r["topic"], "partition": r["partition"]}, path=r["path"]))

    def located(self, reps: Any, key: list[str], *, suspects: list[Any] | None = None,
                lower_bounds: list[Any] | None = None) -> Any:
        """The rows, each with its set's key: `suspects` (rows of set key and bucket) or `lower_bounds`
        (rows of set key and lower_bound) say what to fetch."""
        frame = self.batches
        if self.fetch:
            from replog.spark.detail import fetched_frame

            tasks = self._tasks(suspects or [], lower_bounds or [], key)
            fetched = fetched_frame(reps.sparkSession, tasks)
            frame = fetched if frame is None else fetched.unionByName(frame.select(*fetched.columns))
        return frame.join(reps.select(REPLICA, "cluster", "topic", "partition", "set_topic_id"),
                          [REPLICA, "cluster", "topic", "partition"]).select(
            REPLICA, *key, "base_offset", "last_offset", "crc", "count")

    def _tasks(self, suspects: list[Any], lower_bounds: list[Any], key: list[str]) -> list[FetchTask]:
        buckets: dict[tuple[Any, ...], list[int]] = {}
        starts: dict[tuple[Any, ...], int] = {}
        for s in suspects:
            buckets.setdefault(tuple(s[k] for k in key), []).append(s["bucket"])
        for b in lower_bounds:
            starts[tuple(b[k] for k in key)] = b["lower_bound"]
        tasks: list[FetchTask] = []
        for set_key in {**buckets, **starts}:
            for m in self.members.get(set_key, []):
                task: FetchTask = {"where": m.where, "path": m.path}
                if set_key in starts:
                    task["from"] = starts[set_key]
                else:
                    task["buckets"] = buckets[set_key]
                tasks.append(task)
        return tasks


@dataclass
class _Member:
    """A local replica of a set whose batch rows may be fetched."""
    where: Where
    path: str


def _lower_bounds(reps: Any, kept: Any, key: list[str]) -> Any:
    """(set key, lower_bound): per set, the lowest base offset of a batch one replica holds that
    another's log range covers and that other does not hold identically (among `kept`'s rows)."""
    from pyspark.sql import functions as F

    b, o = kept.alias("b"), reps.alias("o")
    covered = b.join(o, _same(key, "b", "o") & (F.col(f"b.{REPLICA}") != F.col(f"o.{REPLICA}"))
                     & (F.col("b.base_offset") >= F.col("o.log_start_offset"))
                     & (F.col("b.base_offset") < F.col("o.log_end_offset"))).select(
        F.col(f"o.{REPLICA}").alias("other"), *(f"b.{c}" for c in key), "b.base_offset", "b.last_offset", "b.crc")
    held = kept.select(F.col(REPLICA).alias("other"), *key, "base_offset", "last_offset", "crc")
    mismatch = covered.join(held, ["other", *key, "base_offset", "last_offset", "crc"], "left_anti")
    return mismatch.groupBy(*key).agg(F.min("base_offset").alias("lower_bound"))


def _same(columns: list[str], left: str, right: str) -> Any:
    """`left.c == right.c` for every c of `columns`."""
    from pyspark.sql import functions as F

    cond = F.col(f"{left}.{columns[0]}") == F.col(f"{right}.{columns[0]}")
    for c in columns[1:]:
        cond = cond & (F.col(f"{left}.{c}") == F.col(f"{right}.{c}"))
    return cond


def assemble_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: grouped per-replica facts and tails -> `replicas` rows."""
    from replog.spark.replica_sets import full_scan_sets, replica_set_row

    for rb in batches:
        key = {k: rb.column(k).to_pylist() for k in SET}
        rows = [replica_set_row(key["topic"][i], key["partition"][i], members, cluster=key["cluster"][i],
                                topic_id=key["set_topic_id"][i] or None)
                for i, members in enumerate(full_scan_sets(rb))]
        if rows:
            yield pa.RecordBatch.from_pylist(rows, schema=schemas.REPLICAS)
