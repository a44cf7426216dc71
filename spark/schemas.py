"""The fleet tables: each table's row declared once, as a TypedDict; its Arrow schema derived from it.

Each field's Arrow type rides on its annotation (`I32`, `I64`, `Str`, ...: `Annotated` Python types), so
the row a task builds is checked by mypy against the same declaration that types the Parquet column.
Executors build record batches of exactly these schemas, Spark reads them through `spark_schema`, and
`fleet report` reads the Parquet files back with pyarrow alone. Types are those Spark has (no unsigned
integers), so the round trip is lossless; every column is nullable, as Spark reads them. `| None` in a
row says which fields a row may leave empty. Importing this module does not import pyspark.
"""
from __future__ import annotations

import sys
import types
from typing import Annotated, Any, TypedDict, TypeVar, Union, cast, get_args, get_origin, get_type_hints

import pyarrow as pa

from replog.formats.kafka.columns import BATCH_SCHEMA

# The Python type of a field, with the Arrow type of its column.
I32 = Annotated[int, pa.int32()]
I64 = Annotated[int, pa.int64()]
Str = Annotated[str, pa.string()]
Bool = Annotated[bool, pa.bool_()]
DictStr = Annotated[str, pa.dictionary(pa.int32(), pa.string())]   # one value per block, not one per row

Row = TypeVar("Row")


def arrow_type(hint: Any) -> pa.DataType:
    """The Arrow type of one annotation: `Annotated[.., <arrow type>]`, `X | None`, `list[X]`, or a row (a struct)."""
    origin = get_origin(hint)
    if origin is Annotated:
        return cast(pa.DataType, hint.__metadata__[0])
    if origin in (Union, types.UnionType):
        (inner,) = [a for a in get_args(hint) if a is not type(None)]
        return arrow_type(inner)
    if origin is list:
        return pa.list_(arrow_type(get_args(hint)[0]))
    if isinstance(hint, type) and issubclass(hint, dict) and hasattr(hint, "__annotations__"):
        return pa.struct(_fields(hint))
    raise TypeError(f"no Arrow type for {hint!r}")


def _fields(row: type) -> list[tuple[str, pa.DataType]]:
    hints = get_type_hints(row, globalns=vars(sys.modules[__name__]), include_extras=True)
    return [(name, arrow_type(hint)) for name, hint in hints.items()]


def schema_of(row: type) -> pa.Schema:
    """The Arrow schema of a row TypedDict: its fields in declaration order (a base class's first)."""
    return pa.schema(_fields(row))


def rows_of(table: pa.Table | pa.RecordBatch, row: type[Row]) -> list[Row]:
    """A table's rows typed as `row` (the TypedDict its schema was derived from)."""
    return cast("list[Row]", table.to_pylist())


# -- the rows ------------------------------------------------------------------------------------------


class Epoch(TypedDict):
    epoch: I32
    start_offset: I64


class Where(TypedDict):
    """Every row says where it comes from: the cluster (its id, or the group standing in for it:
    `spark.identity`), the broker, the log dir's path, and the partition (None: the unit is no partition)."""
    cluster: Str
    broker: Str
    log_dir: Str
    topic: Str | None
    partition: I32 | None


class Counts(TypedDict):
    errors: I32
    warnings: I32
    infos: I32


class PartitionRow(Where):
    path: Str
    topic_id: Str | None                # from partition.metadata; null when absent or unreadable
    state: Str                          # live | delete | future | stray
    segments: I32
    bytes: I64
    log_start_offset: I64
    log_end_offset: I64
    high_watermark: I64 | None          # null: not in replication-offset-checkpoint
    recovery_point: I64 | None
    latest_epoch: I32 | None
    epoch_history: list[Epoch] | None   # leader-epoch-checkpoint; null when absent
    batch_epochs: list[Epoch] | None    # epoch changes stamped in the batches
    first_timestamp: I64 | None
    max_timestamp: I64 | None
    errors: I32
    warnings: I32
    infos: I32
    flags: list[Str]                    # as `ls` shows them


class SegmentRow(Where):
    path: Str
    base_offset: I64
    size: I64
    batch_count: I64 | None             # null in a tail scan
    first_offset: I64 | None
    valid_bytes: I64                    # broker recovery truncates here
    valid_next_offset: I64 | None
    first_timestamp: I64 | None
    max_timestamp: I64 | None
    errors: I32
    warnings: I32
    infos: I32
    damaged: Bool                       # an error finding, or valid_bytes < size


class FindingFields(TypedDict):
    """A finding's own columns: the `findings` table's after its `Where`, and the scan cache's."""
    code: Str
    severity: Str
    path: Str
    position: I64 | None
    offset: I64 | None
    message: Str


class FindingRow(Where, FindingFields):
    """A `findings` row: where (cluster, broker, log dir, partition), then the finding."""


class ReplicaSetRow(TypedDict):
    """One replica set's verdict (`replica_sets.assemble_replica_set`)."""
    cluster: Str                        # replica sets never span clusters
    topic: Str
    partition: I32
    topic_id: Str | None                # the replicas' topic id, when partition.metadata gives one
    replicas: list[Str]                 # broker names, sorted
    log_dirs: list[Str | None]          # each replica's log dir, in the order of `replicas`
    log_end_offsets: list[I64]          # in the order of `replicas`
    high_watermarks: list[I64 | None]
    latest_epochs: list[I32 | None]
    leo_spread: I64                     # max - min log end offset
    hw_spread: I64 | None               # max - min known high watermark
    first_divergent_offset: I64 | None  # null: the logs agree where they overlap
    kept: list[Str]                     # side whose batches win at the divergence
    diverged: list[Str]                 # replicas holding other batches there
    behind: list[Str]                   # replicas holding nothing there
    records_at_risk: I64
    committed_at_risk: I64
    compacted_up_to: I64 | None         # batches differ below here only as the cleaners left them


class AffectedGroup(TypedDict):
    group: Str
    classification: Str
    records_consumed_lost: I64


class Hanging(TypedDict):
    producer_id: I64
    first_offset: I64
    cause: Str


class ImpactRow(TypedDict):
    """One row per divergent replica set (`recovery.kafka.impact`)."""
    cluster: Str
    topic: Str
    partition: I32
    replicas: list[Str]
    leader: Str | None                  # after the replay
    groups: I32 | None                  # groups with a committed offset on the partition
    groups_affected: I32                # not `unaffected`
    records_consumed_lost: I64          # distinct lost records some group had read
    producers_with_lost_writes: I32 | None
    hanging_transactions: I32
    open_transactions: I32 | None
    affected_groups: list[AffectedGroup] | None
    hanging: list[Hanging] | None
    error: Str | None                   # why the set could not be replayed (null: it was)


class StoreRow(TypedDict):
    cluster: Str                        # brokerClusterName, or the group standing in for it
    broker: Str
    broker_name: Str | None             # brokerName: a master and its slaves share it
    broker_id: I64 | None
    role: Str | None                    # master | slave (null: the store does not say)
    store: Str                          # the store dir's name
    path: Str
    commitlog_min_offset: I64 | None    # physical offsets
    commitlog_max_offset: I64           # where the broker's recovery ends the log
    messages: I64 | None
    queues: I32 | None
    abort_present: Bool | None          # did not shut down cleanly
    confirm_offset: I64 | None
    latest_epoch: I32 | None
    errors: I32
    warnings: I32
    infos: I32


class LogDirRow(TypedDict):
    cluster: Str
    cluster_id: Str | None              # as meta.properties / the store config gives it, else null
    broker: Str
    node_id: I64 | None                 # Kafka node.id / broker.id, RocketMQ brokerId
    role: Str | None                    # RocketMQ master | slave
    kind: Str                           # kafka | rocketmq
    path: Str
    remote: Bool
    flags: list[Str]                    # no-cluster-id: grouped by its inventory line or folder


class SplitCountsRow(TypedDict):
    """Internal (not written): finding counts a split partition's segment units add to the light
    partition unit's `partitions` and `segments` rows."""
    partition_path: Str
    path: Str
    errors: I32
    warnings: I32
    infos: I32


class BatchPlace(Where):
    """The columns a `batches` row has before the batch's own (`BATCH_SCHEMA`'s)."""
    survives_recovery: Bool             # the broker's recovery keeps the batch: it ends within the valid bytes


class TailBatch(Where):
    """Internal, a tail scan's: the last batches of each segment (and its first), for the replica comparison."""
    base_offset: I64
    last_offset: I64
    crc: I64
    partition_leader_epoch: I32


class ReplicaDigest(TypedDict):
    """Internal: each replica's batches summed up by bucket of offsets (`spark.digests`): the replica
    comparison reads batch rows only where the digests of a replica set differ."""
    cluster: DictStr
    log_dir: DictStr
    topic: DictStr
    partition: I32
    bucket: I64
    count: I64
    digest: I64


# -- the schemas ---------------------------------------------------------------------------------------

PARTITIONS = schema_of(PartitionRow)
SEGMENTS = schema_of(SegmentRow)
FINDINGS = schema_of(FindingRow)
REPLICAS = schema_of(ReplicaSetRow)
IMPACT = schema_of(ImpactRow)
STORES = schema_of(StoreRow)
LOG_DIRS = schema_of(LogDirRow)
SPLIT_COUNTS = schema_of(SplitCountsRow)


def _sparkable(t: pa.DataType) -> pa.DataType:
    return pa.int64() if pa.types.is_uint32(t) else pa.int16() if pa.types.is_uint8(t) else t


# The batch's own columns are the walk's (`BATCH_SCHEMA`, declared once in formats), in Spark's types.
BATCHES = pa.schema(list(schema_of(BatchPlace)) + [pa.field(f.name, _sparkable(f.type)) for f in BATCH_SCHEMA])

# Internal (written only until the replica sets are compared): what the comparison reads of each batch
# when the batch table is not written.
REPLICA_BATCHES = pa.schema([f for f in BATCHES if f.name in
                             ("cluster", "broker", "log_dir", "topic", "partition", "base_offset", "last_offset",
                              "crc", "count")])

# How a task writes it: the where columns dictionary-encoded (one value per block, not one string per row).
REPLICA_BATCHES_WRITTEN = pa.schema([pa.field(f.name, pa.dictionary(pa.int32(), f.type)) if pa.types.is_string(f.type)
                                     else f for f in REPLICA_BATCHES])

REPLICA_DIGESTS = schema_of(ReplicaDigest)
REPLICA_DIGESTS_READ = pa.schema([pa.field(f.name, f.type.value_type) if pa.types.is_dictionary(f.type) else f
                                  for f in REPLICA_DIGESTS])

TAIL_BATCHES = schema_of(TailBatch)

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
