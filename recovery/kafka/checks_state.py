"""Leader epochs and producer state, checked while the partition's batches stream by.

Epochs (docs/reference/kafka.md §11, §16.1.5): the checkpoint must be strictly increasing;
for every batch at or above the log start, the checkpoint's
`epoch_for_offset(base_offset)` must be the batch's `partition_leader_epoch`
(tolerates compaction; a data-less entry exactly at the log end is legal, one
past it is stale after a crash). Producer snapshots (§9): the entries the
batches can vouch for must equal the state replayed from the batches.
"""
from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from replog.formats.findings import Finding, finding
from replog.formats.kafka.blocks import BatchBlock
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
    """Fed every sound batch in log order (`feed` one, or `feed_block` a block of them, in any mix);
    reports epoch and snapshot findings at the end."""

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
        self._starts_array = np.array(self._starts, dtype=np.int64)
        self._epochs_array = np.array(self._epochs, dtype=np.int64)

    def feed(self, b: BatchInfo, path: str, marker: tuple[int, int] | None) -> AbortedTxn | None:
        if self._first_offset is None:
            self._first_offset = b.base_offset
        while self._pending and b.last_offset >= self._pending[0]:
            self._capture(self._pending.pop(0))
        if b.magic == 2 and b.partition_leader_epoch >= 0:
            self._check_epoch(b, path)
        return self.producers.update(b, marker)

    def feed_block(self, block: BatchBlock, path: str,
                   markers: Mapping[int, tuple[int, int] | None] | None = None) -> list[AbortedTxn]:
        """`feed` every row of `block` in order: the same aborted transactions, the same state after.

        `markers` maps a row index of the block to the (control type, coordinator epoch) `feed` would be
        given for that row; absent rows (or None) are fed without a marker. Nothing of the block is
        kept (it may be a view into a reused buffer).
        """
        n = len(block)
        if n == 0:
            return []
        if self._first_offset is None:
            self._first_offset = int(block.base_offset[0])
        self._check_epochs(block, path)
        aborted: list[AbortedTxn] = []
        start = 0
        for row, offsets in self._capture_rows(block):
            aborted += self._update_rows(block, markers, start, row)
            for offset in offsets:
                self._capture(offset)
            del self._pending[:len(offsets)]
            start = row
        aborted += self._update_rows(block, markers, start, n)
        return aborted

    def _capture_rows(self, block: BatchBlock) -> list[tuple[int, list[int]]]:
        """(row, snapshot offsets captured just before it) for the pending snapshots the block reaches:
        the first row whose last offset (or an earlier row's) reaches the offset."""
        reached = np.maximum.accumulate(block.last_offset)
        k = bisect.bisect_right(self._pending, int(reached[-1]))
        if k == 0:
            return []
        rows = np.searchsorted(reached, np.array(self._pending[:k], dtype=np.int64), side="left").tolist()
        out: list[tuple[int, list[int]]] = []
        for row, offset in zip(rows, self._pending[:k], strict=True):
            if out and out[-1][0] == row:
                out[-1][1].append(offset)
            else:
                out.append((row, [offset]))
        return out

    def _update_rows(self, block: BatchBlock, markers: Mapping[int, tuple[int, int] | None] | None,
                     start: int, stop: int) -> list[AbortedTxn]:
        if start == 0 and stop == len(block):
            return self.producers.update_block(block, markers)
        if start == stop:
            return []
        inside = {r - start: m for r, m in (markers or {}).items() if start <= r < stop}
        return self.producers.update_block(block[start:stop], inside)

    def _check_epochs(self, block: BatchBlock, path: str) -> None:
        """`_check_epoch` over the block's v2 rows with an epoch, the findings in row order."""
        keep = (block.magic == 2) & (block.partition_leader_epoch >= 0)
        if keep.all():  # the usual block: views, no copies
            rows, epoch, base = None, block.partition_leader_epoch, block.base_offset
        else:
            rows = np.flatnonzero(keep)
            if len(rows) == 0:
                return
            epoch, base = block.partition_leader_epoch[rows], block.base_offset[rows]
        self._saw_epochs = True
        before = np.empty_like(epoch)  # the latest epoch when each row comes
        before[0] = self._latest_epoch
        np.maximum(np.maximum.accumulate(epoch[:-1]), self._latest_epoch, out=before[1:])
        decreasing = np.flatnonzero(epoch < before)
        self._latest_epoch = max(self._latest_epoch, int(epoch.max()))
        mismatched = np.empty(0, dtype=np.int64)
        if self.epoch_entries is not None:
            checked = base >= self.log_start_offset
            if checked.all():
                mismatched = self._mismatches(epoch, base)
            elif checked.any():
                checked = np.flatnonzero(checked)
                mismatched = checked[self._mismatches(epoch[checked], base[checked])]
        count = len(decreasing) + len(mismatched)
        room = max(0, MAX_EPOCH_FINDINGS - self._epoch_findings)
        if count and room:
            # both codes share the cap in row order; a row's decrease comes before its mismatch
            which = np.concatenate([decreasing, mismatched])
            kinds = np.repeat([0, 1], [len(decreasing), len(mismatched)])
            order = np.lexsort((kinds, which))[:room]
            for i, kind in zip(which[order].tolist(), kinds[order].tolist(), strict=True):
                b = block.row(i if rows is None else int(rows[i]))
                e = b.partition_leader_epoch
                if kind == 0:
                    self.findings.append(finding("KAFKA_EPOCHS_DECREASING", path, position=b.position,
                                                 offset=b.base_offset,
                                                 message=f"batch epoch {e} after epoch {int(before[i])}"))
                else:
                    j = bisect.bisect_right(self._starts, b.base_offset) - 1
                    cached = self._epochs[j] if j >= 0 else None
                    self.findings.append(finding(
                        "KAFKA_EPOCH_CHECKPOINT_MISMATCH", self.epoch_path, position=None, offset=b.base_offset,
                        message=f"batch at offset {b.base_offset} ({path}, position {b.position}) has epoch {e}; "
                                f"the checkpoint gives epoch {cached} for that offset"))
        self._epoch_findings += count

    def _mismatches(self, epoch: np.ndarray, base: np.ndarray) -> np.ndarray:
        """Indices of the checked rows that report a checkpoint mismatch: a row whose epoch is not the
        checkpoint's, unless the checked row before it mismatched with the same epoch (carried across
        blocks in `_mismatch_epoch`)."""
        n, starts = len(base), self._starts_array
        # the checkpoint's epoch for each row, -1 before its first entry (a batch epoch is never negative,
        # and a negative checkpoint epoch is a mismatch too)
        known = np.concatenate([[-1], self._epochs_array])
        if n > 1 and bool((base[1:] >= base[:-1]).all()):  # offsets ascend: one run per checkpoint entry
            cuts = np.searchsorted(base, starts, side="left")
            expected = np.repeat(known, np.diff(cuts, prepend=0, append=n))
        else:
            expected = known[np.searchsorted(starts, base, side="right")]
        wrong = epoch != expected
        repeat = np.empty(n, dtype=bool)  # the checked row before mismatched with the same epoch
        repeat[0] = self._mismatch_epoch is not None and self._mismatch_epoch == int(epoch[0])
        np.logical_and(wrong[:-1], epoch[:-1] == epoch[1:], out=repeat[1:])
        self._mismatch_epoch = int(epoch[-1]) if wrong[-1] else None
        return np.flatnonzero(wrong & ~repeat)

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


