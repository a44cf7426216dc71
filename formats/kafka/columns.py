"""Batch metadata as Arrow columns: one schema, built in chunks so memory stays flat.

The schema is the single definition behind `dump --format parquet`, the fleet
`batches` table and the Spark schema derived from it.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pyarrow as pa

from replog.formats.kafka.segment import BatchInfo

BATCH_SCHEMA = pa.schema([
    ("path", pa.string()),
    ("position", pa.int64()),
    ("size", pa.int32()),
    ("magic", pa.int8()),
    ("base_offset", pa.int64()),
    ("last_offset", pa.int64()),
    ("count", pa.int32()),
    ("partition_leader_epoch", pa.int32()),
    ("crc", pa.uint32()),
    ("crc_valid", pa.bool_()),
    ("attributes", pa.int16()),
    ("codec", pa.int8()),
    ("timestamp_type", pa.int8()),
    ("first_timestamp", pa.int64()),
    ("max_timestamp", pa.int64()),
    ("producer_id", pa.int64()),
    ("producer_epoch", pa.int16()),
    ("base_sequence", pa.int32()),
    ("is_transactional", pa.bool_()),
    ("is_control", pa.bool_()),
    ("has_delete_horizon", pa.bool_()),
])

CHUNK = 65536


def to_record_batch(path: str, infos: list[BatchInfo]) -> pa.RecordBatch:
    """Columns of `infos` (a chunk of one file's batches)."""
    cols: list[Sequence[Any]] = list(zip(*infos, strict=True)) if infos else [[] for _ in BatchInfo._fields]
    arrays = [pa.array([path] * len(infos), pa.string())]
    arrays += [pa.array(col, BATCH_SCHEMA.field(name).type)
               for name, col in zip(BatchInfo._fields, cols, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=BATCH_SCHEMA)


def column_chunks(path: str, batches: Iterable[BatchInfo], chunk: int = CHUNK) -> Iterator[pa.RecordBatch]:
    """Group a batch walk into Arrow record batches of at most `chunk` rows."""
    pending: list[BatchInfo] = []
    for info in batches:
        pending.append(info)
        if len(pending) >= chunk:
            yield to_record_batch(path, pending)
            pending = []
    if pending:
        yield to_record_batch(path, pending)
