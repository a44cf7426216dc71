"""Writing a complete partition dir a broker can start from.

Given the partition's batches in offset order (as bytes), roll segments the
way the broker does (`segment.bytes`, 32-bit relative offsets), write each
`.log` with its rebuilt `.index`, `.timeindex` and `.txnindex`, producer
snapshots at every roll and at the log end, the `leader-epoch-checkpoint`
and `partition.metadata`. Every file is written atomically.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from replog.formats.fileio import atomic_write
from replog.formats.kafka import checkpoint, names
from replog.formats.kafka.partition_metadata import PartitionMetadata, build_partition_metadata
from replog.formats.kafka.producer_snapshot import build_producer_snapshot
from replog.formats.kafka.segment import SegmentWalk
from replog.recovery.kafka.epoch_cache import EpochCache
from replog.recovery.kafka.producer_state import ProducerState
from replog.recovery.kafka.rebuild import INDEX_INTERVAL_BYTES, rebuild_indexes

DEFAULT_SEGMENT_BYTES = 1 << 30
INT32_MAX = 2**31 - 1


@dataclass
class WrittenPartition:
    path: str
    segment_bases: list[int] = field(default_factory=list)
    log_end_offset: int = 0
    epochs: EpochCache = field(default_factory=EpochCache)
    files: list[str] = field(default_factory=list)


def _offsets(batch: bytes) -> tuple[int, int]:
    """(first, last) offset of one batch or legacy entry."""
    info = next(SegmentWalk(batch, "<batch>").batches(), None)
    if info is None:
        raise ValueError("not a record batch")
    return info.base_offset, info.last_offset


def roll_segments(batches: Sequence[bytes], segment_bytes: int, start_offset: int = 0) -> list[tuple[int, bytes]]:
    """Group batches into (base offset, bytes) segments as the broker rolls them."""
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

    `epochs` overrides the epoch cache derived from the batches (e.g. a leader
    that was elected but never wrote keeps its entry at the log end).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    result = WrittenPartition(str(out), log_end_offset=start_offset)
    derived, producers = EpochCache(), ProducerState()
    for base, data in roll_segments(batches, segment_bytes, start_offset) or [(start_offset, b"")]:
        if result.segment_bases:
            _write(out, names.segment_file_name(base, "snapshot"),
                   build_producer_snapshot(producers.snapshot_entries()), result)
        infos = list(SegmentWalk(data, "<new>", base).batches())
        idx = rebuild_indexes(data, base, infos, derived, producers, interval)
        _write(out, names.segment_file_name(base, "log"), data, result)
        _write(out, names.segment_file_name(base, "index"), idx.offset_index, result)
        _write(out, names.segment_file_name(base, "timeindex"), idx.time_index, result)
        if idx.txn_index:
            _write(out, names.segment_file_name(base, "txnindex"), idx.txn_index, result)
        result.segment_bases.append(base)
        result.log_end_offset = idx.next_offset if idx.next_offset is not None else base
    _write(out, names.segment_file_name(result.log_end_offset, "snapshot"),
           build_producer_snapshot(producers.snapshot_entries()), result)
    result.epochs = epochs if epochs is not None else derived
    _write(out, names.LEADER_EPOCH_CHECKPOINT,
           checkpoint.build_leader_epoch_checkpoint(result.epochs.entries), result)
    if topic_id is not None:
        _write(out, names.PARTITION_METADATA, build_partition_metadata(PartitionMetadata(0, topic_id)), result)
    return result


def _write(out: Path, name: str, data: bytes, result: WrittenPartition) -> None:
    atomic_write(out / name, data)
    result.files.append(name)
