"""The partition writer as it was before it streamed: segments joined in memory, walked by the
reference `SegmentWalk`, indexed by the reference `rebuild_indexes` (the oracle of the writer tests)."""
from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from replog.formats.fileio import atomic_write
from replog.formats.kafka import checkpoint, names
from replog.formats.kafka.partition_metadata import PartitionMetadata, build_partition_metadata
from replog.formats.kafka.producer_snapshot import build_producer_snapshot
from replog.formats.kafka.segment import SegmentWalk
from replog.recovery.kafka.epoch_cache import EpochCache
from replog.recovery.kafka.producer_state import ProducerState
from replog.recovery.kafka.rebuild import INDEX_INTERVAL_BYTES, rebuild_indexes
from replog.recovery.kafka.writer import DEFAULT_SEGMENT_BYTES, WrittenPartition, roll_segments


def reference_write_partition(out_dir: str | os.PathLike[str], batches: Sequence[bytes], *,
                              segment_bytes: int = DEFAULT_SEGMENT_BYTES, topic_id: str | None = None,
                              epochs: EpochCache | None = None, start_offset: int = 0,
                              interval: int = INDEX_INTERVAL_BYTES) -> WrittenPartition:
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
    result.epochs = derived if epochs is None else derived.with_entries_from(epochs, result.log_end_offset)
    _write(out, names.LEADER_EPOCH_CHECKPOINT,
           checkpoint.build_leader_epoch_checkpoint(result.epochs.entries), result)
    if topic_id is not None:
        _write(out, names.PARTITION_METADATA, build_partition_metadata(PartitionMetadata(0, topic_id)), result)
    return result


def _write(out: Path, name: str, data: bytes, result: WrittenPartition) -> None:
    atomic_write(out / name, data)
    result.files.append(name)
