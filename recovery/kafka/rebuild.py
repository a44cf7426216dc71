"""Rebuilding a segment's indexes, epochs and producer state from its batches.

This is `LogSegment.recover` (kafka.md §10.3) minus the truncation: one pass
over the batches builds `.index` and `.timeindex` with the broker's
`index.interval.bytes` rule, `.txnindex` from ABORT markers, the leader-epoch
cache by the recovery rule (assign only when the epoch grows), and the
producer state for the snapshot.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from replog.formats.errors import FormatError
from replog.formats.kafka import offset_index, time_index, txn_index
from replog.formats.kafka.segment import BatchInfo, batch_records
from replog.formats.kafka.txn_index import AbortedTxn
from replog.recovery.kafka.epoch_cache import EpochCache
from replog.recovery.kafka.producer_state import ProducerState, marker_of

INDEX_INTERVAL_BYTES = 4096


@dataclass
class SegmentIndexes:
    offset_index: bytes
    time_index: bytes
    txn_index: bytes
    aborted: list[AbortedTxn] = field(default_factory=list)
    max_timestamp: int = -1
    next_offset: int | None = None


def rebuild_indexes(buf: bytes | memoryview, base_offset: int, batches: Iterable[BatchInfo],
                    epochs: EpochCache | None = None, producers: ProducerState | None = None,
                    interval: int = INDEX_INTERVAL_BYTES) -> SegmentIndexes:
    """Index files for `batches` (valid ones, in order) of the segment held in `buf`."""
    offsets: list[tuple[int, int]] = []
    times: list[tuple[int, int]] = []
    aborted: list[AbortedTxn] = []
    valid_bytes = last_entry = 0
    max_ts, offset_of_max = -1, base_offset
    next_offset = None
    for b in batches:
        if b.max_timestamp > max_ts:
            max_ts, offset_of_max = b.max_timestamp, b.last_offset
        if valid_bytes - last_entry > interval:
            offsets.append((b.last_offset, valid_bytes))
            _maybe_append_time(times, max_ts, offset_of_max)
            last_entry = valid_bytes
        valid_bytes += b.size
        next_offset = b.next_offset
        if b.magic == 2 and epochs is not None and b.partition_leader_epoch >= 0 and (
                epochs.latest_epoch is None or b.partition_leader_epoch > epochs.latest_epoch):
            epochs.assign(b.partition_leader_epoch, b.base_offset)
        if producers is not None:
            done = producers.update(b, _marker(buf, b))
            if done is not None:
                aborted.append(done)
    _maybe_append_time(times, max_ts, offset_of_max)
    return SegmentIndexes(offset_index.write_offset_index(offsets, base_offset),
                          time_index.write_time_index(times, base_offset),
                          txn_index.write_txn_index(aborted) if aborted else b"",
                          aborted, max_ts, next_offset)


def _maybe_append_time(times: list[tuple[int, int]], ts: int, offset: int) -> None:
    """`TimeIndex.maybeAppend`: only a strictly greater timestamp makes an entry."""
    if ts > (times[-1][0] if times else -1):
        if times and offset < times[-1][1]:
            return
        times.append((ts, offset))


def _marker(buf: bytes | memoryview, b: BatchInfo) -> tuple[int, int] | None:
    if not (b.is_control and b.magic == 2):
        return None
    try:
        return marker_of(batch_records(buf, b))
    except FormatError:
        return None
