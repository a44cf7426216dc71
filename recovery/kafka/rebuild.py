"""Rebuilding a segment's indexes, epochs and producer state from its batches.

This is `LogSegment.recover` (docs/reference/kafka.md §10.3) minus the truncation: one pass
over the batches builds `.index` and `.timeindex` with the broker's
`index.interval.bytes` rule, `.txnindex` from ABORT markers, the leader-epoch
cache by the recovery rule (assign only when the epoch grows), and the
producer state for the snapshot.

`rebuild_indexes` is the reference, one `BatchInfo` at a time. The writers use
the same rules over columns: `IndexBuilder` streams a segment's index entries
from its `BatchBlock`s, `assign_epochs` applies the recovery rule to a block,
and `ProducerState.update_block` replays the producers; tests hold them equal
to the reference.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from replog.formats.errors import FormatError
from replog.formats.jit import kernel
from replog.formats.kafka import offset_index, time_index, txn_index
from replog.formats.kafka.blocks import BatchBlock
from replog.formats.kafka.segment import BatchInfo, batch_records
from replog.formats.kafka.txn_index import AbortedTxn
from replog.recovery.kafka.epoch_cache import EpochCache
from replog.recovery.kafka.producer_state import ProducerState, marker_of

INDEX_INTERVAL_BYTES = 4096
_INT32_MAX, _INT64_MIN, _INT64_MAX = 2**31 - 1, -2**63, 2**63 - 1
# The entries as the index files store them (`offset_index.ENTRY`, `time_index.ENTRY`).
_OFFSET_ENTRY = offset_index.ENTRY_DTYPE
_TIME_ENTRY = time_index.ENTRY_DTYPE


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


# --- the same rules over columns ------------------------------------------------------------


def index_rows(size, last, max_ts, state, interval, offsets, positions, times, time_offsets):
    """`rebuild_indexes`' index rule over the next rows of a segment (a `jit.kernel`).

    `state` carries the loop's variables from block to block: bytes so far, position of the last
    offset entry, largest timestamp and its offset, the last time entry (or -1, INT64_MIN).
    The entries go to the four output arrays; returns (offset entries, time entries) written.
    """
    valid, last_entry, top, top_offset, time_top, time_offset = (state[0], state[1], state[2], state[3],
                                                                  state[4], state[5])
    n_offsets = n_times = 0
    for i in range(len(size)):
        if max_ts[i] > top:
            top, top_offset = max_ts[i], last[i]
        if valid - last_entry > interval:
            offsets[n_offsets], positions[n_offsets] = last[i], valid
            n_offsets += 1
            if top > time_top and top_offset >= time_offset:  # `_maybe_append_time`
                times[n_times], time_offsets[n_times] = top, top_offset
                time_top, time_offset = top, top_offset
                n_times += 1
            last_entry = valid
        valid += size[i]
    state[0], state[1], state[2], state[3], state[4], state[5] = (valid, last_entry, top, top_offset,
                                                                  time_top, time_offset)
    return n_offsets, n_times


class IndexBuilder:
    """The `.index` and `.timeindex` of one segment, built from its blocks as `rebuild_indexes` builds them.

    Feed every block of the segment in order: `feed` returns the bytes its rows add to each file
    (to be appended), `finish` the last time entry. Memory: one block's entries, whatever the segment.
    `compiled` runs the rule compiled by numba (`jit.kernel`): worth it from tens of thousands of rows.
    """

    def __init__(self, base_offset: int, interval: int = INDEX_INTERVAL_BYTES, *, compiled: bool = False) -> None:
        self.base_offset, self.interval = base_offset, interval
        self.state = np.array([0, 0, -1, base_offset, -1, _INT64_MIN], dtype=np.int64)
        self._rows = kernel(index_rows, compiled)

    def feed(self, block: BatchBlock) -> tuple[bytes, bytes]:
        """(offset index bytes, time index bytes) of the entries the next rows of the segment add."""
        n = len(block)
        if not n:
            return b"", b""
        offsets, positions, times, time_offsets = np.empty((4, n), dtype=np.int64)
        n_offsets, n_times = self._rows(block.size, block.last_offset, block.max_timestamp, self.state,
                                         self.interval, offsets, positions, times, time_offsets)
        return (offset_entries(offsets[:n_offsets], positions[:n_offsets], self.base_offset),
                time_entries(times[:n_times], time_offsets[:n_times], self.base_offset))

    def finish(self) -> bytes:
        """The time entry the end of the segment adds (the largest timestamp, when it is new)."""
        valid, last_entry, top, top_offset, time_top, time_offset = self.state.tolist()
        if top > time_top and top_offset >= time_offset:
            return time_entries(np.array([top]), np.array([top_offset]), self.base_offset)
        return b""


def _relative(offsets: np.ndarray, base_offset: int) -> np.ndarray | None:
    """offset - base as int32-range values, or None when one is outside [0, INT32_MAX] (exactly, no wrap)."""
    ok = (offsets >= base_offset) & (offsets <= min(base_offset + _INT32_MAX, _INT64_MAX))
    return offsets - base_offset if ok.all() else None


def offset_entries(offsets: np.ndarray, positions: np.ndarray, base_offset: int) -> bytes:
    """`offset_index.write_offset_index` of columns (which raises its error for an entry out of range)."""
    relative = _relative(offsets, base_offset)
    if relative is None or not ((positions >= 0) & (positions <= _INT32_MAX)).all():
        return offset_index.write_offset_index(zip(offsets.tolist(), positions.tolist(), strict=True), base_offset)
    out = np.empty(len(offsets), dtype=_OFFSET_ENTRY)
    out["relative_offset"], out["position"] = relative, positions
    return out.tobytes()


def time_entries(timestamps: np.ndarray, offsets: np.ndarray, base_offset: int) -> bytes:
    """`time_index.write_time_index` of columns (which raises its error for an entry out of range)."""
    relative = _relative(offsets, base_offset)
    if relative is None:
        return time_index.write_time_index(zip(timestamps.tolist(), offsets.tolist(), strict=True), base_offset)
    out = np.empty(len(offsets), dtype=_TIME_ENTRY)
    out["timestamp"], out["relative_offset"] = timestamps, relative
    return out.tobytes()


def epoch_rises(block: BatchBlock, latest: int) -> tuple[list[int], list[int]]:
    """(epochs, base offsets) of the rows where the recovery rule assigns an epoch, the latest epoch
    before the block being `latest` (-1: none): the v2 rows whose epoch exceeds it and every epoch of
    the rows before them (the latest is always the last one assigned). Python runs once per new epoch."""
    if not len(block) or block.partition_leader_epoch.max() <= latest:  # the usual block: no new epoch
        return [], []
    rows = np.flatnonzero((block.magic == 2) & (block.partition_leader_epoch >= 0))
    if not len(rows):
        return [], []
    epochs = block.partition_leader_epoch[rows]
    before = np.empty_like(epochs)
    before[0] = latest
    np.maximum(np.maximum.accumulate(epochs)[:-1], latest, out=before[1:])
    rising = epochs > before
    return epochs[rising].tolist(), block.base_offset[rows[rising]].tolist()


def assign_epochs(cache: EpochCache, block: BatchBlock) -> None:
    """The recovery rule of `rebuild_indexes` over a block: a v2 batch with an epoch above the cache's
    latest assigns it at its base offset."""
    for epoch, start in zip(*epoch_rises(block, _latest(cache)), strict=True):
        cache.assign(epoch, start)


class EpochRises:
    """The rows of a log where the recovery rule can assign an epoch, kept to be applied to a cache later.

    A row assigns when its epoch exceeds the cache's latest; with the cache starting at latest L, the
    rows that do are exactly the rows whose epoch exceeds every epoch before them (fed here, from -1)
    and L. So `assign_to` gives any cache what `assign_epochs` over the same rows would, and what is
    kept is one pair per rise of the epoch, whatever the length of the log.
    """

    def __init__(self) -> None:
        self.rises: list[tuple[int, int]] = []

    def feed(self, block: BatchBlock) -> None:
        epochs, starts = epoch_rises(block, self.rises[-1][0] if self.rises else -1)
        self.rises += zip(epochs, starts, strict=True)

    def assign_to(self, cache: EpochCache) -> None:
        for epoch, start in self.rises:
            if epoch > _latest(cache):
                cache.assign(epoch, start)


def _latest(cache: EpochCache) -> int:
    return -1 if cache.latest_epoch is None else cache.latest_epoch
