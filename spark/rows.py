"""The rows of the fleet tables, built from what one unit's scan found (`spark.schemas` types them)."""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

import numpy as np
import pyarrow as pa

from replog.formats.errors import FormatError, UnreadableInput
from replog.formats.fileio import is_regular, read_small
from replog.formats.findings import Finding
from replog.formats.kafka import names
from replog.formats.kafka.partition_metadata import parse_partition_metadata
from replog.recovery.kafka.logdir import (
    PartitionSummary,
    flags,
)
from replog.recovery.kafka.segment_pass import Walked
from replog.spark import schemas
from replog.spark.schemas import Counts, Epoch, FindingRow, PartitionRow, SegmentRow, Where
from replog.spark.units import Unit

WHERE = ("cluster", "broker", "log_dir", "topic", "partition")


def unit_place(unit: Unit) -> Where:
    """Where a unit's rows belong: cluster, broker, log dir, and the partition its dir names (or None)."""
    parsed = names.parse_partition_dir(Path(unit.path).name) if unit.kind in ("partition", "segments", "tail") else None
    return {"cluster": unit.cluster, "broker": unit.broker, "log_dir": unit.log_dir,
            "topic": parsed.topic if parsed else None, "partition": parsed.partition if parsed else None}


def topic_id(partition_dir: str) -> str | None:
    """The topic id in the partition's `partition.metadata` (None when absent or unreadable: doctor's
    checks report why); replica sets form only among replicas of one topic id."""
    path = Path(partition_dir) / names.PARTITION_METADATA
    if not is_regular(path):
        return None
    try:
        return parse_partition_metadata(read_small(path, 1 << 16)).topic_id
    except (FormatError, UnreadableInput):
        return None


# -- rows ----------------------------------------------------------------------------


def severity_counts(found: Iterable[Finding]) -> Counts:
    """A row's finding counts by severity."""
    sev = [f.severity.value for f in found]
    return {"errors": sev.count("error"), "warnings": sev.count("warning"), "infos": sev.count("info")}


class _EpochEntry(Protocol):
    @property
    def epoch(self) -> int: ...
    @property
    def start_offset(self) -> int: ...


def _epochs(entries: Iterable[_EpochEntry] | None) -> list[Epoch] | None:
    return None if entries is None else [{"epoch": e.epoch, "start_offset": e.start_offset} for e in entries]


def partition_row(unit: Unit, part: PartitionSummary, found: list[Finding]) -> PartitionRow:
    """The `partitions` row: the numbers `ls` shows, the finding counts `doctor` gives."""
    return {**unit_place(unit), "path": part.path, "topic_id": topic_id(part.path), "state": part.state,
            "segments": len(part.segments),
            "bytes": part.bytes, "log_start_offset": part.log_start_offset,
            "log_end_offset": part.log_end_offset, "high_watermark": part.high_watermark,
            "recovery_point": part.recovery_point, "latest_epoch": part.latest_epoch,
            "epoch_history": _epochs(part.epoch_checkpoint),
            "batch_epochs": _epochs(e for s in part.segments for e in s.epoch_starts),
            "first_timestamp": part.first_timestamp, "max_timestamp": part.max_timestamp,
            **severity_counts(found), "flags": flags(part)}


def partition_batch(unit: Unit, part: PartitionSummary, found: list[Finding]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([partition_row(unit, part, found)], schema=schemas.PARTITIONS)


def segments_batch(where: Where, part: PartitionSummary, found: list[Finding]) -> pa.RecordBatch:
    """One row per `.log`; finding counts are doctor's findings located in that file."""
    rows: list[SegmentRow] = []
    for s in part.segments:
        counts = severity_counts(f for f in found if f.path == s.path)
        rows.append({**where, "path": s.path, "base_offset": s.base_offset, "size": s.size,
                     "batch_count": s.batch_count, "first_offset": s.first_offset,
                     "valid_bytes": s.valid_bytes, "valid_next_offset": s.valid_next_offset,
                     "first_timestamp": s.first_timestamp, "max_timestamp": s.max_timestamp, **counts,
                     "damaged": counts["errors"] > 0 or s.valid_bytes < s.size})
    return pa.RecordBatch.from_pylist(rows, schema=schemas.SEGMENTS)


def findings_batch(where: Where, found: list[Finding]) -> pa.RecordBatch:
    rows: list[FindingRow] = [{**where, "code": f.code, "severity": f.severity.value, "path": f.path,
             "position": f.position, "offset": f.offset, "message": f.message} for f in found]
    return pa.RecordBatch.from_pylist(rows, schema=schemas.FINDINGS)


def where_values(where: Where) -> list[str | int | None]:
    """The place's values in the order of the tables' first columns (`WHERE`)."""
    return [where["cluster"], where["broker"], where["log_dir"], where["topic"], where["partition"]]


def where_columns(where: Where, schema: pa.Schema, n: int) -> list[pa.Array]:
    """The where columns of `n` rows of one place."""
    return [pa.repeat(pa.scalar(v, schema.field(k).type), n) for k, v in zip(WHERE, where_values(where), strict=True)]


def batch_rows(where: Where, walked: Walked, chunk: pa.RecordBatch | None = None) -> pa.RecordBatch:
    """One block's `batches` rows: where it is, `survives_recovery` (the broker's recovery keeps the batch), its columns
    (`chunk`: the block already typed by `BatchBlock.to_arrow`)."""
    chunk = walked.block.to_arrow(str(walked.segment.path)) if chunk is None else chunk
    cols = where_columns(where, schemas.BATCHES, chunk.num_rows)
    cols.append(pa.array(walked.kept, pa.bool_()))
    cols += [chunk.column(i).cast(schemas.BATCHES.field(name).type) for i, name in enumerate(chunk.schema.names)]
    return pa.RecordBatch.from_arrays(cols, schema=schemas.BATCHES)


def replica_batch_rows(where: Where, walked: Walked) -> pa.RecordBatch:
    """What the replica comparison reads of a block when the batch table is not written (the where
    columns as dictionaries: one value per block)."""
    block, schema = walked.block, schemas.REPLICA_BATCHES_WRITTEN
    zeros = pa.array(np.zeros(len(block), dtype=np.int32))
    cols: list[pa.Array] = [
        pa.DictionaryArray.from_arrays(zeros, pa.array([v], schema.field(k).type.value_type))
        if pa.types.is_dictionary(schema.field(k).type) else pa.repeat(pa.scalar(v, schema.field(k).type), len(block))
        for k, v in zip(WHERE, where_values(where), strict=True)]
    cols += [pa.array(block.column(name), schema.field(name).type) for name in schema.names[len(WHERE):]]
    return pa.RecordBatch.from_arrays(cols, schema=schema)


