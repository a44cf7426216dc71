"""`fleet scan --tail`: replicas compared from what stays small whatever the log holds: checkpoints,
leader-epoch files and the last batches of each segment, in seconds per thousand partitions.

Per partition replica (a task, `tail_tables`): the root checkpoints (log start, high watermark,
recovery point, read once per log dir by the driver), its leader-epoch-checkpoint and
partition.metadata, and of every segment its first batch and its tail: from the last entry of its
offset index to the end of the file, walked with CRCs (`tail_start`). The broker adds an index entry
for the batch it appends once `index.interval.bytes` (4 KiB by default) have gone by since the last
one (`LogSegment.append`, storage/.../LogSegment.java; the entry's offset is the batch's last offset),
so a tail is a few KiB. An index without entries, or whose last entry does not point at a batch
ending at the indexed offset, gets its segment walked whole. The log end offset is the end of the
last valid batch of the active segment's tail, as recovery would leave it when the damage is there.

Per replica set (a Spark task, `tail_replicas_frame`, then `compare_set` of its `TailScanReplica`s): the
replica the controller could elect (`election.elect`, as `replay` and the full scan), and for each
other replica where the brokers'
own truncation leaves it (`protocol.truncation_on_fetch`: the KIP-595 DivergingEpoch rounds, from
the epoch caches and log ends alone; the models carry no batches, their log end is all they have
of a log). A replica the protocol truncates below its log end has diverged there;
`records_at_risk` then counts the offsets it loses (an upper bound of records: compaction and
control batches take offsets without records). Tail batches two replicas both hold (same base and
last offset) below that point must have the same CRC: the lowest that does not is divergence the
epochs cannot see.

What a tail scan does not see: damage before a segment's last indexed batch, records, producer
state, index contents, batch counts (null in its `segments` rows). The full scan does.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from replog.formats.errors import UnreadableInput
from replog.formats.fileio import is_regular, mapped
from replog.formats.findings import Finding, from_unreadable
from replog.formats.kafka.blocks import BatchBlock, walk_blocks
from replog.formats.kafka.offset_index import last_entry
from replog.formats.kafka.partition_files import list_partition_files
from replog.formats.kafka.segment import SegmentWalk
from replog.recovery.kafka import protocol
from replog.recovery.kafka.election import Candidate, elect
from replog.recovery.kafka.epoch_cache import EpochCache
from replog.recovery.kafka.logdir import RisingEpochs, SegmentSummary, summarize_partition, summary_from_walk
from replog.recovery.kafka.replica import Replica
from replog.spark import schemas
from replog.spark.replica_sets import Verdict, assemble_replica_set
from replog.spark.rows import findings_batch, partition_batch, segments_batch, unit_place, where_columns
from replog.spark.schemas import Epoch, ReplicaSetRow, Where
from replog.spark.units import Unit, checkpoints_for

TableBatch = tuple[str, pa.RecordBatch]
TAIL_COLUMNS = ("base_offset", "last_offset", "crc", "partition_leader_epoch")   # of a tail batch, after its place


# -- one replica (tasks) ---------------------------------------------------------------------------


def tail_start(buf: memoryview, path: Path, base: int, index: Path | None) -> int:
    """Where the tail of a segment starts: the batch its offset index names last, when that batch is
    there and ends at the indexed offset; else 0 (the whole segment)."""
    if index is None or not is_regular(index):
        return 0
    try:
        with mapped(index) as ibuf:
            entry = last_entry(ibuf, base)
    except UnreadableInput:
        return 0
    if entry is None or not 0 < entry.position < len(buf):
        return 0
    info = SegmentWalk(buf, str(path), base).read_at(entry.position, len(buf))
    return entry.position if info is not None and info.last_offset == entry.offset else 0


def segment_tail(path: Path, base: int, index: Path | None) -> tuple[SegmentSummary, BatchBlock]:
    """A segment's summary as far as its first batch and its tail tell (`batch_count` is not known:
    0), and the valid batches of the tail (with the first one), as a block at their file positions."""
    with mapped(path) as buf:
        summary = SegmentSummary(str(path), base, len(buf))
        start = tail_start(buf, path, base, index)
        first = SegmentWalk(buf, str(path), base).read_at(0, len(buf)) if start and len(buf) else None
        walk, blocks = walk_blocks(buf[start:], str(path), base, compiled=False)
        tail = BatchBlock.concat(blocks)       # a copy: it outlives the mapping
        tail.position[:] += start              # at its position in the file
        findings = [_shifted(f, start) for f in walk.findings]
        valid_end = start + walk.valid_bytes
    kept = tail[tail.end <= valid_end]
    batches = BatchBlock.concat([BatchBlock.from_infos([first]), kept]) if first is not None and first.crc_valid \
        else kept
    epochs = RisingEpochs()
    v2 = batches.magic == 2
    epochs.feed_columns(batches.partition_leader_epoch[v2], batches.base_offset[v2])
    summary.epoch_starts = epochs.starts
    stamps = batches.max_timestamp[batches.max_timestamp >= 0]
    summary.max_timestamp = int(stamps.max()) if len(stamps) else None
    head = first if first is not None else (tail.row(0) if len(tail) else None)
    if head is not None and head.max_timestamp >= 0:
        summary.first_timestamp = head.first_timestamp if head.first_timestamp >= 0 else head.max_timestamp
    if len(kept):
        summary.valid_next_offset = int(kept.last_offset[-1]) + 1
    elif start == 0:
        summary.valid_next_offset = None
    summary_from_walk(summary, 0, head.base_offset if head is not None else None, valid_end, findings)
    return summary, batches


def _shifted(f: Finding, start: int) -> Finding:
    return dataclasses.replace(f, position=f.position + start) if start and f.position is not None else f


def tail_rows(where: Where, block: BatchBlock) -> pa.RecordBatch:
    """A replica's `tail_batches` rows: where it is, and the tail batches' offsets, CRCs and epochs."""
    schema = schemas.TAIL_BATCHES
    cols = where_columns(where, schema, len(block))
    cols += [pa.array(block.column(name), schema.field(name).type) for name in TAIL_COLUMNS]
    return pa.RecordBatch.from_arrays(cols, schema=schema)


def tail_tables(unit: Unit) -> Iterator[TableBatch]:
    """A partition replica's rows in a tail scan: `partitions` and `segments` as far as its checkpoints
    and segment tails tell, the findings of what was read, and its tail batches (internal)."""
    where = unit_place(unit)
    cps = checkpoints_for(unit)
    pdir = Path(unit.path)
    files = list_partition_files(pdir)
    summaries: dict[int, SegmentSummary] = {}
    tails: list[BatchBlock] = []
    found: list[Finding] = []
    for base, path in files.logs.items():
        try:
            summary, batches = segment_tail(path, base, files.indexes.get((base, "index")))
        except UnreadableInput as e:
            summary, batches = SegmentSummary(str(path), base, 0, findings=[from_unreadable(e, str(path))]), \
                BatchBlock.empty()
        summaries[base] = summary
        found += summary.findings
        tails.append(batches)
    part = summarize_partition(unit.path, cps, summaries=summaries)
    found = part.findings + found
    yield "partitions", partition_batch(unit, part, found)
    segs = segments_batch(where, part, found)
    yield "segments", segs.set_column(segs.schema.get_field_index("batch_count"), "batch_count",
                                      pa.nulls(segs.num_rows, pa.int64()))
    yield "findings", findings_batch(where, found)
    yield "tail_batches", tail_rows(where, BatchBlock.concat(tails))


# -- replica sets (driver) ----------------------------------------------------------------------------


@dataclass
class TailScanReplica:
    """One replica of a tail scan's set: its `partitions` row's facts and its tail batches as columns
    (`tail`: (4, n) base offset, last offset, CRC, partition leader epoch, in base offset order)."""
    cluster: str
    broker: str
    log_dir: str
    path: str
    topic: str
    partition: int
    set_topic_id: str
    epoch_history: list[Epoch] | None
    log_start_offset: int
    log_end_offset: int
    high_watermark: int | None
    latest_epoch: int | None
    tail: np.ndarray

    def __post_init__(self) -> None:
        self.tail = self.tail[:, np.argsort(self.tail[0], kind="stable")]


_FACTS = tuple(f.name for f in dataclasses.fields(TailScanReplica) if f.name != "tail")


def tail_scan_sets(rb: pa.RecordBatch) -> Iterator[list[TailScanReplica]]:
    """The replicas of each row of a batch of grouped sets (`tail_replicas_frame`: a `replicas` list of
    each replica's partition facts and `tail`); the tail batches go from Arrow to numpy as columns."""
    reps = rb.column("replicas")
    at = reps.offsets.to_numpy()
    flat = reps.values
    facts = {name: flat.field(name).to_pylist() for name in _FACTS}
    tails = flat.field("tail")
    bounds = tails.offsets.to_numpy()
    cols = np.vstack([np.asarray(tails.values.field(n).to_numpy(zero_copy_only=False), dtype=np.int64)
                      for n in TAIL_COLUMNS])
    for i in range(rb.num_rows):
        yield [TailScanReplica(**{name: facts[name][j] for name in _FACTS},
                           tail=cols[:, int(bounds[j]):int(bounds[j + 1])]) for j in range(int(at[i]), int(at[i + 1]))]


def _model(rep: TailScanReplica) -> Replica:
    """A replica as the protocol sees it, without batches: its epoch cache (the checkpoint's, then any
    higher epoch its tail batches start, as the broker assigns one on append), log start, high
    watermark and log end."""
    cache = EpochCache((e["epoch"], e["start_offset"]) for e in rep.epoch_history or [])
    base, epoch = rep.tail[0], rep.tail[3]
    top = cache.latest_epoch if cache.latest_epoch is not None else -1
    before = np.maximum.accumulate(np.concatenate(([top], epoch)))[:-1]
    for i in np.flatnonzero(epoch > before).tolist():   # epochs >= 0 above every one before
        cache.assign(int(epoch[i]), int(base[i]))
    return Replica(rep.log_dir, rep.path, rep.topic, rep.partition, epochs=cache,
                   log_start_offset=rep.log_start_offset, high_watermark=rep.high_watermark or 0,
                   truncated_end=rep.log_end_offset)


def _crc_mismatch(a: np.ndarray, b: np.ndarray, below: int) -> int | None:
    """The lowest base offset below `below` of a batch both tails hold (same offsets) with other CRCs."""
    theirs = dict(zip(zip(b[0].tolist(), b[1].tolist(), strict=True), b[2].tolist(), strict=True))
    mine = a[:, a[0] < below]
    hits = [base for base, last, crc in zip(*(mine[k].tolist() for k in range(3)), strict=True)
            if theirs.get((base, last), crc) != crc]
    return min(hits) if hits else None


def compare_set(reps: list[TailScanReplica]) -> ReplicaSetRow:
    """One `replicas` row of a tail scan from the set's replicas: where the protocol leaves each replica,
    given to the one verdict of both scan modes."""
    reps = sorted(reps, key=lambda r: (r.broker, r.log_dir))
    models = [_model(r) for r in reps]
    k = int(elect([Candidate(str(i), r.high_watermark or 0, r.log_end_offset, r.latest_epoch)
                   for i, r in enumerate(reps)]).name)
    leader = models[k].copy()
    protocol.become_leader(leader, [m for i, m in enumerate(models) if i != k])
    facts: list[Verdict] = []
    for i, (rep, model) in enumerate(zip(reps, models, strict=True)):
        at = None if i == k else _diverges_at(rep, model, reps[k], leader)
        leo, hw = rep.log_end_offset, rep.high_watermark or 0
        facts.append({"broker": rep.broker, "log_dir": rep.log_dir, "log_end_offset": leo,
                      "high_watermark": rep.high_watermark, "latest_epoch": rep.latest_epoch,
                      "divergent_offset": at, "records_from_d": None if at is None else leo - at,
                      "committed_from_d": None if at is None else max(0, min(hw, leo) - at)})
    first = reps[0]
    return assemble_replica_set(first.topic, first.partition, facts, cluster=first.cluster,
                                topic_id=first.set_topic_id or None)


def _diverges_at(rep: TailScanReplica, model: Replica, lead: TailScanReplica, leader: Replica) -> int | None:
    """Where a follower's log leaves the leader's: its truncation on fetch (`protocol.truncation_on_fetch`)
    when below its log end, or the lowest tail batch both hold with another CRC below that, if lower.
    `records_from_d` then counts offsets (an upper bound of records: see the module's docstring)."""
    end = protocol.truncation_on_fetch(leader, model) if model.has_epochs and leader.has_epochs \
        else rep.log_end_offset
    mismatch = _crc_mismatch(rep.tail, lead.tail, min(end, lead.log_end_offset))
    found = [x for x in (end if end < rep.log_end_offset else None, mismatch) if x is not None]
    return min(found) if found else None


def tail_replicas_frame(spark: Any, partitions: Path, tail_batches: Path) -> Any:
    """The `replicas` table of a tail scan, in Spark: the sets (`replicas.replica_sets`, the one rule for
    what a set is), each replica with its tail batches, each set compared (`compare_set`) in a Python
    task; nothing of the fleet gathers on the driver."""
    from pyspark.sql import functions as F

    from replog.spark.replicas import SET, replica_sets

    parts = spark.read.schema(schemas.spark_schema(schemas.PARTITIONS)).parquet(str(partitions))
    tails = spark.read.schema(schemas.spark_schema(schemas.TAIL_BATCHES)).parquet(str(tail_batches))
    per_replica = tails.groupBy("log_dir", "topic", "partition").agg(F.collect_list(F.struct(
        "base_offset", "last_offset", "crc", "partition_leader_epoch")).alias("tail"))
    reps = replica_sets(parts).join(per_replica, ["log_dir", "topic", "partition"], "left")
    grouped = reps.groupBy(*SET).agg(F.collect_list(F.struct(
        "cluster", "broker", "log_dir", "path", "topic", "partition", "set_topic_id", "epoch_history",
        "log_start_offset", "log_end_offset", "high_watermark", "latest_epoch", "tail")).alias("replicas"))
    return grouped.mapInArrow(compare_batches, schemas.spark_schema(schemas.REPLICAS))


def compare_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: a set's replicas with their tails -> its `replicas` row."""
    for rb in batches:
        rows = [compare_set(reps) for reps in tail_scan_sets(rb)]
        if rows:
            yield pa.RecordBatch.from_pylist(rows, schema=schemas.REPLICAS)
