"""Writing a complete partition dir a broker can start from, given its batches as bytes.

`write_partition` takes the partition's batches in offset order, one batch (or
legacy entry) per item, joins them once into a temporary file next to the
output and hands that file to the one writer there is,
`segment_writer.write_partition_runs`: segments rolled the way the broker
does, each `.log` with its rebuilt `.index`, `.timeindex` and `.txnindex`,
producer snapshots at every roll and at the log end, the
`leader-epoch-checkpoint` and `partition.metadata`, every file atomic.

`roll_segments` is the roll rule in its reference form, over bytes; the writer
applies it to columns (`segment_writer.roll_rows`) and tests hold them equal.
"""
from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from replog.formats.kafka import batch as v2
from replog.formats.kafka.segment import SegmentWalk
from replog.recovery.kafka.epoch_cache import EpochCache
from replog.recovery.kafka.rebuild import INDEX_INTERVAL_BYTES
from replog.recovery.kafka.segment_writer import (
    DEFAULT_SEGMENT_BYTES,
    INT32_MAX,
    ByteRun,
    WrittenPartition,
    write_partition_runs,
)

__all__ = ["DEFAULT_SEGMENT_BYTES", "WrittenPartition", "roll_segments", "write_partition"]


def _offsets(batch: bytes) -> tuple[int, int]:
    """(first, last) offset of one batch or legacy entry."""
    info = next(SegmentWalk(batch, "<batch>").batches(), None)
    if info is None:
        raise ValueError("not a record batch")
    return info.base_offset, info.last_offset


def roll_segments(batches: Sequence[bytes], segment_bytes: int, start_offset: int = 0) -> list[tuple[int, bytes]]:
    """Group batches into (base offset, bytes) segments as the broker rolls them (the reference rule)."""
    segments: list[tuple[int, list[bytes], int]] = []
    for b in batches:
        first, last_offset = _offsets(b)
        cur = segments[-1] if segments else None
        if cur is None or (cur[2] + len(b) > segment_bytes and cur[2] > 0) or last_offset - cur[0] > INT32_MAX:
            base = first if segments else min(start_offset, first)
            segments.append((base, [b], len(b)))
        else:
            cur[1].append(b)
            segments[-1] = (cur[0], cur[1], cur[2] + len(b))
    return [(base, b"".join(parts)) for base, parts, _ in segments]


def write_partition(out_dir: str | os.PathLike[str], batches: Sequence[bytes], *,
                    segment_bytes: int = DEFAULT_SEGMENT_BYTES, topic_id: str | None = None,
                    epochs: EpochCache | None = None, start_offset: int = 0,
                    interval: int = INDEX_INTERVAL_BYTES) -> WrittenPartition:
    """Write `batches` as a partition dir under `out_dir` (created; must be empty or new).

    `epochs` adds its entries at or past the log end to the epoch cache derived
    from the batches (a leader that was elected but never wrote keeps its entry).
    """
    for i, b in enumerate(batches):
        if not _one_entry(b):
            raise ValueError(f"item {i} is not one record batch ({len(b)} bytes)")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fd, joined = tempfile.mkstemp(dir=out, prefix=".batches.", suffix=".replog-tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.writelines(batches)
            size = f.tell()
        return write_partition_runs(out, [ByteRun(joined, 0, size, start_offset)], segment_bytes=segment_bytes,
                                    topic_id=topic_id, epochs=epochs, start_offset=start_offset, interval=interval)
    finally:
        os.unlink(joined)


def _one_entry(batch: bytes) -> bool:
    """Whether `batch` is exactly one entry by its length field (the writer rolls entry by entry)."""
    return (len(batch) >= v2.LOG_OVERHEAD
            and int.from_bytes(batch[v2.LENGTH_OFFSET:v2.LOG_OVERHEAD], "big", signed=True) + v2.LOG_OVERHEAD
            == len(batch))
