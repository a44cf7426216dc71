"""The fleet tables: one Arrow schema each, the Spark schemas derived from them.

The Arrow schemas below are the only definition: executors build record
batches of exactly these types, Spark reads them through `spark_schema`, and
`fleet report` reads the Parquet files back with pyarrow alone. Types are
those Spark has (no unsigned integers), so the round trip is lossless.
Importing this module does not import pyspark.
"""
from __future__ import annotations

from typing import Any

import pyarrow as pa

from replog.formats.kafka.columns import BATCH_SCHEMA

_EPOCH = pa.struct([("epoch", pa.int32()), ("start_offset", pa.int64())])
# Every row says where it comes from: the cluster (its id, or the group standing in for it: `spark.identity`),
# the broker, the log dir's path, and the partition.
_WHERE = [("cluster", pa.string()), ("broker", pa.string()), ("log_dir", pa.string()), ("topic", pa.string()),
          ("partition", pa.int32())]
_COUNTS = [("errors", pa.int32()), ("warnings", pa.int32()), ("infos", pa.int32())]

PARTITIONS = pa.schema(_WHERE + [
    ("path", pa.string()),
    ("topic_id", pa.string()),                   # from partition.metadata; null when absent or unreadable
    ("state", pa.string()),                      # live | delete | future | stray
    ("segments", pa.int32()),
    ("bytes", pa.int64()),
    ("log_start_offset", pa.int64()),
    ("log_end_offset", pa.int64()),
    ("high_watermark", pa.int64()),              # null: not in replication-offset-checkpoint
    ("recovery_point", pa.int64()),
    ("latest_epoch", pa.int32()),
    ("epoch_history", pa.list_(_EPOCH)),         # leader-epoch-checkpoint; null when absent
    ("batch_epochs", pa.list_(_EPOCH)),          # epoch changes stamped in the batches
    ("first_timestamp", pa.int64()),
    ("max_timestamp", pa.int64()),
    *_COUNTS,
    ("flags", pa.list_(pa.string())),            # as `ls` shows them
])

SEGMENTS = pa.schema(_WHERE + [
    ("path", pa.string()),
    ("base_offset", pa.int64()),
    ("size", pa.int64()),
    ("batch_count", pa.int64()),
    ("first_offset", pa.int64()),
    ("valid_bytes", pa.int64()),                 # broker recovery truncates here
    ("valid_next_offset", pa.int64()),
    ("first_timestamp", pa.int64()),
    ("max_timestamp", pa.int64()),
    *_COUNTS,
    ("damaged", pa.bool_()),                     # an error finding, or valid_bytes < size
])

FINDINGS = pa.schema(_WHERE + [
    ("code", pa.string()),
    ("severity", pa.string()),
    ("path", pa.string()),
    ("position", pa.int64()),
    ("offset", pa.int64()),
    ("message", pa.string()),
])

REPLICAS = pa.schema([
    ("cluster", pa.string()),                    # replica sets never span clusters
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("topic_id", pa.string()),                   # the replicas' topic id, when partition.metadata gives one
    ("replicas", pa.list_(pa.string())),         # broker names, sorted
    ("log_dirs", pa.list_(pa.string())),         # each replica's log dir, in the order of `replicas`
    ("log_end_offsets", pa.list_(pa.int64())),   # in the order of `replicas`
    ("high_watermarks", pa.list_(pa.int64())),
    ("latest_epochs", pa.list_(pa.int32())),
    ("leo_spread", pa.int64()),                  # max - min log end offset
    ("hw_spread", pa.int64()),                   # max - min known high watermark
    ("first_divergent_offset", pa.int64()),      # null: the logs agree where they overlap
    ("kept", pa.list_(pa.string())),             # side whose batches win at the divergence
    ("diverged", pa.list_(pa.string())),         # replicas holding other batches there
    ("behind", pa.list_(pa.string())),           # replicas holding nothing there
    ("records_at_risk", pa.int64()),
    ("committed_at_risk", pa.int64()),
    ("compacted_up_to", pa.int64()),             # batches differ below here only as the cleaners left them
])


_AFFECTED_GROUP = pa.struct([("group", pa.string()), ("classification", pa.string()),
                             ("records_consumed_lost", pa.int64())])
_HANGING = pa.struct([("producer_id", pa.int64()), ("first_offset", pa.int64()), ("cause", pa.string())])
IMPACT = pa.schema([                             # one row per divergent replica set (`recovery.kafka.impact`)
    ("cluster", pa.string()),
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("replicas", pa.list_(pa.string())),
    ("leader", pa.string()),                     # after the replay
    ("groups", pa.int32()),                      # groups with a committed offset on the partition
    ("groups_affected", pa.int32()),             # not `unaffected`
    ("records_consumed_lost", pa.int64()),       # distinct lost records some group had read
    ("producers_with_lost_writes", pa.int32()),
    ("hanging_transactions", pa.int32()),
    ("open_transactions", pa.int32()),
    ("affected_groups", pa.list_(_AFFECTED_GROUP)),
    ("hanging", pa.list_(_HANGING)),
    ("error", pa.string()),                      # why the set could not be replayed (null: it was)
])


STORES = pa.schema([
    ("cluster", pa.string()),                    # brokerClusterName, or the group standing in for it
    ("broker", pa.string()),
    ("broker_name", pa.string()),                # brokerName: a master and its slaves share it
    ("broker_id", pa.int64()),
    ("role", pa.string()),                       # master | slave (null: the store does not say)
    ("store", pa.string()),                      # the store dir's name
    ("path", pa.string()),
    ("commitlog_min_offset", pa.int64()),        # physical offsets
    ("commitlog_max_offset", pa.int64()),        # where the broker's recovery ends the log
    ("messages", pa.int64()),
    ("queues", pa.int32()),
    ("abort_present", pa.bool_()),               # did not shut down cleanly
    ("confirm_offset", pa.int64()),
    ("latest_epoch", pa.int32()),
    *_COUNTS,
])

LOG_DIRS = pa.schema([
    ("cluster", pa.string()),
    ("cluster_id", pa.string()),                 # as meta.properties / the store config gives it, else null
    ("broker", pa.string()),
    ("node_id", pa.int64()),                     # Kafka node.id / broker.id, RocketMQ brokerId
    ("role", pa.string()),                       # RocketMQ master | slave
    ("kind", pa.string()),                       # kafka | rocketmq
    ("path", pa.string()),
    ("remote", pa.bool_()),
    ("flags", pa.list_(pa.string())),            # no-cluster-id: grouped by its inventory line or folder
])

# Internal (not written): finding counts a split partition's segment units add to
# the light partition unit's `partitions` and `segments` rows.
SPLIT_COUNTS = pa.schema([("partition_path", pa.string()), ("path", pa.string()), *_COUNTS])


def _sparkable(t: pa.DataType) -> pa.DataType:
    return pa.int64() if pa.types.is_uint32(t) else pa.int16() if pa.types.is_uint8(t) else t


BATCHES = pa.schema(_WHERE + [("kept", pa.bool_())]
                    + [pa.field(f.name, _sparkable(f.type)) for f in BATCH_SCHEMA])

# Internal (written only until the replica sets are compared): what the comparison reads of each batch
# when the batch table is not written.
REPLICA_BATCHES = pa.schema([f for f in BATCHES if f.name in
                             ("cluster", "broker", "log_dir", "topic", "partition", "base_offset", "last_offset",
                              "crc", "count")])

# How a task writes it: the where columns dictionary-encoded (one value per block, not one string per row).
REPLICA_BATCHES_WRITTEN = pa.schema([pa.field(f.name, pa.dictionary(pa.int32(), f.type)) if pa.types.is_string(f.type)
                                     else f for f in REPLICA_BATCHES])

# Internal: each replica's batches summed up by bucket of offsets (`spark.digests`): the replica comparison
# reads batch rows only where the digests of a replica set differ.
REPLICA_DIGESTS = pa.schema([("cluster", pa.dictionary(pa.int32(), pa.string())),
                             ("log_dir", pa.dictionary(pa.int32(), pa.string())),
                             ("topic", pa.dictionary(pa.int32(), pa.string())), ("partition", pa.int32()),
                             ("bucket", pa.int64()), ("count", pa.int64()), ("digest", pa.int64())])
REPLICA_DIGESTS_READ = pa.schema([pa.field(f.name, f.type.value_type) if pa.types.is_dictionary(f.type) else f
                                  for f in REPLICA_DIGESTS])

# Internal, a tail scan's: the last batches of each segment (and its first), for the replica comparison.
TAIL_BATCHES = pa.schema([*(f for f in BATCHES if f.name in ("cluster", "broker", "log_dir", "topic", "partition")),
                          ("base_offset", pa.int64()), ("last_offset", pa.int64()), ("crc", pa.int64()),
                          ("partition_leader_epoch", pa.int32())])

TABLES: dict[str, pa.Schema] = {"partitions": PARTITIONS, "segments": SEGMENTS, "findings": FINDINGS,
                                "replicas": REPLICAS, "batches": BATCHES, "stores": STORES, "log_dirs": LOG_DIRS,
                                "impact": IMPACT}


def empty(schema: pa.Schema) -> pa.Table:
    return schema.empty_table()


def spark_type(t: pa.DataType) -> Any:
    """The Spark SQL type of one Arrow type (the subset the tables use)."""
    from pyspark.sql import types as T

    simple = {pa.string(): T.StringType(), pa.int64(): T.LongType(), pa.int32(): T.IntegerType(),
              pa.int16(): T.ShortType(), pa.int8(): T.ByteType(), pa.bool_(): T.BooleanType(),
              pa.binary(): T.BinaryType(), pa.float64(): T.DoubleType()}
    if t in simple:
        return simple[t]
    if pa.types.is_list(t):
        return T.ArrayType(spark_type(t.value_type), True)
    if pa.types.is_struct(t):
        return T.StructType([T.StructField(f.name, spark_type(f.type), f.nullable) for f in t])
    raise TypeError(f"no Spark type for Arrow {t}")


def spark_schema(schema: pa.Schema) -> Any:
    """StructType of a table, derived from its Arrow schema."""
    from pyspark.sql import types as T

    return T.StructType([T.StructField(f.name, spark_type(f.type), f.nullable) for f in schema])
