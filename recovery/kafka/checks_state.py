"""Leader epochs and producer state, checked while the partition's batches stream by.

Epochs (kafka.md §11, §16.1.5): the checkpoint must be strictly increasing;
for every batch at or above the log start, the checkpoint's
`epoch_for_offset(base_offset)` must be the batch's `partition_leader_epoch`
(tolerates compaction; a data-less entry exactly at the log end is legal, one
past it is stale after a crash). Producer snapshots (§9): the entries the
batches can vouch for must equal the state replayed from the batches.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from replog.formats.findings import Finding, finding
from replog.formats.kafka.checkpoint import EpochEntry
from replog.formats.kafka.producer_snapshot import ProducerSnapshotEntry
from replog.formats.kafka.segment import BatchInfo
from replog.formats.kafka.txn_index import AbortedTxn
from replog.recovery.kafka.producer_state import ProducerState

MAX_EPOCH_FINDINGS = 50


def epoch_line_positions(data: bytes) -> list[int]:
    """Byte position of each entry line (the lines after version and count)."""
    starts, pos = [], 0
    for line in bytes(data).splitlines(keepends=True):
        starts.append(pos)
        pos += len(line)
    return starts[2:]


def check_epoch_checkpoint_order(entries: list[EpochEntry], positions: list[int], path: str) -> list[Finding]:
    out: list[Finding] = []
    for i in range(1, len(entries)):
        prev, cur = entries[i - 1], entries[i]
        if cur.epoch <= prev.epoch or cur.start_offset <= prev.start_offset:
            out.append(finding("KAFKA_EPOCH_CHECKPOINT_NOT_MONOTONIC", path,
                               position=positions[i] if i < len(positions) else None, offset=cur.start_offset,
                               message=f"entry {i} ({cur.epoch}, {cur.start_offset}) does not follow "
                                       f"({prev.epoch}, {prev.start_offset})"))
    for i, e in enumerate(entries):
        if e.epoch < 0 or e.start_offset < 0:
            out.append(finding("KAFKA_EPOCH_CHECKPOINT_NOT_MONOTONIC", path,
                               position=positions[i] if i < len(positions) else None, offset=e.start_offset,
                               message=f"entry {i}: negative epoch or offset ({e.epoch}, {e.start_offset}); "
                                       "the broker fails to load this log"))
    return out


@dataclass
class StateChecker:
    """Fed every sound batch in log order; reports epoch and snapshot findings at the end."""

    epoch_entries: list[EpochEntry] | None
    epoch_path: str
    epoch_positions: list[int]
    log_start_offset: int
    snapshots: dict[int, tuple[str, list[ProducerSnapshotEntry]]] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    producers: ProducerState = field(default_factory=ProducerState)
    _latest_epoch: int = -1
    _mismatch_epoch: int | None = None
    _epoch_findings: int = 0
    _captured: dict[int, dict[int, tuple[int, int, int]]] = field(default_factory=dict)
    _pending: list[int] = field(default_factory=list)
    _first_offset: int | None = None
    _saw_epochs: bool = False

    def __post_init__(self) -> None:
        self._pending = sorted(self.snapshots)
        if self.epoch_entries:
            ordered = sorted(self.epoch_entries, key=lambda e: e.start_offset)
            self._starts = [e.start_offset for e in ordered]
            self._epochs = [e.epoch for e in ordered]
        else:
            self._starts, self._epochs = [], []

    def feed(self, b: BatchInfo, path: str, marker: tuple[int, int] | None) -> AbortedTxn | None:
        if self._first_offset is None:
            self._first_offset = b.base_offset
        while self._pending and b.last_offset >= self._pending[0]:
            self._capture(self._pending.pop(0))
        if b.magic == 2 and b.partition_leader_epoch >= 0:
            self._check_epoch(b, path)
        return self.producers.update(b, marker)

    def _check_epoch(self, b: BatchInfo, path: str) -> None:
        epoch = b.partition_leader_epoch
        self._saw_epochs = True
        if epoch < self._latest_epoch:
            self._add("KAFKA_EPOCHS_DECREASING", path, b.position, b.base_offset,
                      f"batch epoch {epoch} after epoch {self._latest_epoch}")
        self._latest_epoch = max(self._latest_epoch, epoch)
        if self.epoch_entries is None or b.base_offset < self.log_start_offset:
            return
        i = bisect.bisect_right(self._starts, b.base_offset) - 1
        cached = self._epochs[i] if i >= 0 else None
        if cached != epoch:
            if self._mismatch_epoch != epoch:
                self._add("KAFKA_EPOCH_CHECKPOINT_MISMATCH", self.epoch_path, None, b.base_offset,
                          f"batch at offset {b.base_offset} ({path}, position {b.position}) has epoch {epoch}; "
                          f"the checkpoint gives epoch {cached} for that offset")
                self._mismatch_epoch = epoch
        else:
            self._mismatch_epoch = None

    def _capture(self, offset: int) -> None:
        self._captured[offset] = {pid: (e.producer_epoch, e.last_sequence, e.last_offset)
                                  for pid, e in self.producers.producers.items()}

    def finish(self, log_end_offset: int) -> list[Finding]:
        for offset in self._pending:
            self._capture(offset)
        self._pending = []
        self._finish_epochs(log_end_offset)
        for offset, (path, entries) in sorted(self.snapshots.items()):
            self._check_snapshot(offset, path, entries, log_end_offset)
        return self.findings

    def _finish_epochs(self, leo: int) -> None:
        if self.epoch_entries is None:
            if self._saw_epochs:
                self._add("KAFKA_EPOCH_CHECKPOINT_MISMATCH", self.epoch_path, None, None,
                          "no leader-epoch-checkpoint although the batches carry leader epochs")
            return
        for i, e in enumerate(self.epoch_entries):
            if e.start_offset > leo:
                pos = self.epoch_positions[i] if i < len(self.epoch_positions) else None
                self.findings.append(finding(
                    "KAFKA_EPOCH_BEYOND_LOG_END", self.epoch_path, position=pos, offset=e.start_offset,
                    message=f"epoch {e.epoch} starts at {e.start_offset}, past the log end {leo} "
                            "(stale after a crash; the broker drops it at load)"))

    def _check_snapshot(self, offset: int, path: str, entries: list[ProducerSnapshotEntry], leo: int) -> None:
        if offset > leo:
            self.findings.append(finding("KAFKA_SNAPSHOT_MISMATCH", path, offset=offset,
                                         message=f"snapshot at {offset} is past the log end {leo}; "
                                                 "the broker deletes it at load"))
            return
        state = self._captured.get(offset, {})
        first = self._first_offset if self._first_offset is not None else leo
        for i, e in enumerate(entries):
            if e.last_offset < first or e.last_offset >= offset:
                continue  # the batches that wrote it are gone (retention) or not covered
            ours = state.get(e.producer_id)
            theirs = (e.producer_epoch, e.last_sequence, e.last_offset)
            if ours != theirs:
                self.findings.append(finding(
                    "KAFKA_SNAPSHOT_MISMATCH", path, position=10 + 46 * i, offset=e.last_offset,
                    message=f"producer {e.producer_id}: snapshot has (epoch, last sequence, last offset) {theirs}, "
                            f"the batches give {ours}"))

    def _add(self, code: str, path: str, position: int | None, offset: int | None, message: str) -> None:
        if self._epoch_findings < MAX_EPOCH_FINDINGS:
            self.findings.append(finding(code, path, position=position, offset=offset, message=message))
        self._epoch_findings += 1


