"""Producer state and open transactions of a replica's log, read from its batch headers in blocks.

The broker's `ProducerStateManager` rebuilt over a `ReplicaLog` (`ProducerState.update_block`, markers
decoded per control batch only), plus, for the producers being watched, the last batch metadata
the broker keeps per producer to answer a retried batch as a duplicate
(`ProducerStateEntry.NUM_BATCHES_TO_RETAIN` = 5, cleared when the producer epoch changes).
A control batch emptied by the cleaner changes nothing (`ProducerState`, as `ProducerAppendInfo.append`).

`scan_log` can stop to copy the state at given offsets (the state after every batch below the
offset): replicas that share a prefix then need their own walk only from where they part.
"""
from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from replog.formats.fileio import mapped
from replog.formats.kafka.blocks import BatchBlock
from replog.recovery.kafka.producer_state import BatchHistory, ProducerState
from replog.recovery.kafka.replica_log import Piece, ReplicaLog
from replog.recovery.kafka.segment_pass import markers


@dataclass(frozen=True)
class OpenTxn:
    producer_id: int
    producer_epoch: int
    first_offset: int
    last_timestamp: int      # of the producer's last batch here


@dataclass
class ProducerScan:
    """The producer state after the batches fed so far."""

    watch: frozenset[int] = frozenset()
    state: ProducerState = field(default_factory=ProducerState)
    recent: dict[int, BatchHistory] = field(default_factory=dict)
    max_timestamp: int = -1

    def copy(self) -> ProducerScan:
        return ProducerScan(self.watch, copy.deepcopy(self.state),
                            {p: h.copy() for p, h in self.recent.items()}, self.max_timestamp)

    def feed(self, block: BatchBlock, block_markers: dict[int, tuple[int, int] | None]) -> None:
        """Apply the rows of `block` (sound batches in log order); `block_markers` as `segment_pass.markers`."""
        if not len(block):
            return
        self.max_timestamp = max(self.max_timestamp, int(block.max_timestamp.max()))
        if self.watch:
            self._remember(block, block_markers)
        self.state.update_block(block, block_markers)

    def _remember(self, block: BatchBlock, block_markers: dict[int, tuple[int, int] | None]) -> None:
        rows = np.flatnonzero(np.isin(block.producer_id, np.fromiter(self.watch, dtype=np.int64))
                              & (block.magic == 2))
        for i in rows.tolist():
            control = bool(block.is_control[i])
            if control and block_markers.get(i) is None:
                continue   # emptied by the cleaner: changes nothing
            pid, epoch = int(block.producer_id[i]), int(block.producer_epoch[i])
            kept = self.recent.setdefault(pid, BatchHistory())
            if control or int(block.base_sequence[i]) < 0:
                kept.meet(epoch)   # a marker forgets the batches of another epoch too
                continue
            kept.add(block.row(i))

    def open_transactions(self) -> list[OpenTxn]:
        return open_transactions(self.state)

    def last_stable_offset(self, high_watermark: int) -> int:
        """The first offset a read_committed consumer may not read past (`UnifiedLog.lastStableOffset`)."""
        return min(self.state.last_stable_offset(high_watermark), high_watermark)


def open_transactions(state: ProducerState) -> list[OpenTxn]:
    """The transactions no marker has closed yet, by first offset."""
    out = []
    for pid, first in state.ongoing.items():
        entry = state.producers[pid]
        out.append(OpenTxn(pid, entry.producer_epoch, first, entry.timestamp))
    return sorted(out, key=lambda t: t.first_offset)


def _piece_blocks(piece: Piece, start: int | None) -> Iterator[tuple[BatchBlock, dict[int, tuple[int, int] | None]]]:
    """The piece's batches with base offset >= `start` and their markers (none for in-memory pieces)."""
    on_disk = piece.rows is None and bool(piece.file) and Path(piece.file).is_file()
    with mapped(piece.file) if on_disk else nullcontext(None) as buf:
        for block in piece.blocks():
            if start is not None:
                block = block[block.base_offset >= start]
            if not len(block):
                continue
            found = markers(buf, block) if buf is not None else {}
            yield block, found


def scan_log(log: ReplicaLog, scan: ProducerScan, start: int | None = None,
             capture: Iterable[int] = ()) -> dict[int, ProducerScan]:
    """Feed `scan` the log's batches with base offset >= `start` (all when None), in order; returns a
    copy of the state at each `capture` offset (after every fed batch below it)."""
    pending = sorted(set(capture))
    out: dict[int, ProducerScan] = {}
    pieces = log.from_offset(start).pieces if start is not None else log.pieces
    for piece in pieces:
        for block, found in _piece_blocks(piece, start):
            while pending and int(block.base_offset[-1]) >= pending[0]:
                cut = int(np.searchsorted(block.base_offset, pending[0], side="left"))
                scan.feed(block[:cut], {r: m for r, m in found.items() if r < cut})
                found = {r - cut: m for r, m in found.items() if r >= cut}
                block = block[cut:]
                out[pending.pop(0)] = scan.copy()
            scan.feed(block, found)
    for offset in pending:
        out[offset] = scan.copy()
    return out
