"""Producer state rebuilt from batch headers (`ProducerStateManager`, kafka.md §9-10).

Tracks per producer its epoch, last sequence and offsets, and open
transactions; an ABORT marker yields the aborted-transaction entry that the
segment's `.txnindex` must hold.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

import numpy as np

from replog.formats.kafka import batch as v2
from replog.formats.kafka import control
from replog.formats.kafka.blocks import BatchBlock
from replog.formats.kafka.producer_snapshot import ProducerSnapshotEntry
from replog.formats.kafka.segment import BatchInfo
from replog.formats.kafka.txn_index import AbortedTxn


@dataclass
class ProducerEntry:
    producer_id: int
    producer_epoch: int = -1
    last_sequence: int = -1
    last_offset: int = -1
    offset_delta: int = 0
    timestamp: int = -1
    coordinator_epoch: int = -1
    current_txn_first_offset: int = -1

    def to_snapshot(self) -> ProducerSnapshotEntry:
        return ProducerSnapshotEntry(self.producer_id, self.producer_epoch, self.last_sequence, self.last_offset,
                                     self.offset_delta, self.timestamp, self.coordinator_epoch,
                                     self.current_txn_first_offset)


class ProducerState:
    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}
        self.ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction

    def update(self, b: BatchInfo, marker: tuple[int, int] | None = None) -> AbortedTxn | None:
        """Apply one v2 batch; `marker` is (control type, coordinator epoch) for markers."""
        if b.magic != 2 or b.producer_id < 0:
            return None
        entry = self.producers.setdefault(b.producer_id, ProducerEntry(b.producer_id))
        entry.producer_epoch = b.producer_epoch
        entry.timestamp = b.max_timestamp
        if marker is not None:
            return self._complete(entry, b, *marker)
        if b.base_sequence >= 0:
            entry.last_sequence = v2.increment_sequence(b.base_sequence, b.last_offset - b.base_offset)
        entry.last_offset, entry.offset_delta = b.last_offset, b.last_offset - b.base_offset
        if b.is_transactional and b.producer_id not in self.ongoing:
            self.ongoing[b.producer_id] = b.base_offset
            entry.current_txn_first_offset = b.base_offset
        return None

    def update_block(self, block: BatchBlock,
                     markers: Mapping[int, tuple[int, int] | None] | None = None) -> list[AbortedTxn]:
        """Apply the rows of `block` in order, as `update` on each would; the ABORTs' entries in order.

        `markers` maps a row index of the block to its (control type, coordinator epoch); rows not in it
        (or mapped to None) are applied as `update(row, None)` applies them. Python runs per producer id
        and per marker, not per row: a field a row sets is the producer's last row (of the kind that sets
        it); transactions open at the first transactional data row after the producer's previous marker.
        """
        sel = np.flatnonzero((block.magic == 2) & (block.producer_id >= 0))
        n = len(sel)
        if n == 0:
            return []
        pid = block.producer_id[sel]
        is_marker = np.zeros(n, dtype=bool)
        if markers:
            rows = np.array(sorted(r for r, m in markers.items() if m is not None), dtype=np.int64)
            at = np.minimum(np.searchsorted(sel, rows), n - 1)
            is_marker[at[sel[at] == rows]] = True
        data = ~is_marker

        order = np.argsort(pid, kind="stable")
        spid = pid[order]
        starts = np.flatnonzero(np.r_[True, spid[1:] != spid[:-1]])
        ends = np.r_[starts[1:], n]
        first, last = order[starts], order[ends - 1]
        last_data = np.maximum.reduceat(np.where(data[order], order, -1), starts)
        base_sequence = block.base_sequence[sel]
        with_seq = data & (base_sequence >= 0)
        last_seq = np.maximum.reduceat(np.where(with_seq[order], order, -1), starts)

        aborted, txn_fields = self._transactions(block, sel, pid, order, is_marker, markers or {})

        base, last_offset = block.base_offset[sel], block.last_offset[sel]
        ld, ls = np.maximum(last_data, 0), np.maximum(last_seq, 0)
        delta = last_offset - base
        seq_delta, seq_base = delta[ls], base_sequence[ls]
        wrap = seq_base > v2.INT32_MAX - seq_delta
        sequence = np.where(wrap, seq_delta - (v2.INT32_MAX - seq_base) - 1, seq_base + seq_delta)
        by_first = np.argsort(first)  # new producers enter the table in order of their first row
        columns = (spid[starts], block.producer_epoch[sel][last], block.max_timestamp[sel][last],
                   last_data, last_offset[ld], delta[ld], last_seq, sequence)
        producers = self.producers
        for p, epoch, ts, has_data, lo, od, has_seq, seq in zip(*(c[by_first].tolist() for c in columns),
                                                                strict=True):
            entry = producers.get(p)
            if entry is None:
                entry = producers[p] = ProducerEntry(p)
            entry.producer_epoch, entry.timestamp = epoch, ts
            if has_data >= 0:
                entry.last_offset, entry.offset_delta = lo, od
            if has_seq >= 0:
                entry.last_sequence = seq
        for p, (coordinator_epoch, txn_first) in txn_fields.items():
            entry = producers[p]
            if coordinator_epoch is not None:
                entry.coordinator_epoch = coordinator_epoch
            entry.current_txn_first_offset = txn_first
        return aborted

    def _transactions(self, block: BatchBlock, sel: np.ndarray, pid: np.ndarray, order: np.ndarray,
                      is_marker: np.ndarray, markers: Mapping[int, tuple[int, int] | None],
                      ) -> tuple[list[AbortedTxn], dict[int, tuple[int | None, int]]]:
        """Replay the markers and the rows that open a transaction, in row order (the only rows that
        touch `ongoing`): the ABORTs' entries, and per touched producer its final (coordinator epoch
        or None when unchanged, current transaction's first offset)."""
        fields: dict[int, tuple[int | None, int]] = {}
        opens = (~is_marker) & (block.is_transactional[sel] != 0)
        k = order[(opens | is_marker)[order]]  # grouped by producer, in row order within each
        if len(k) == 0:
            return [], fields
        kp, km = pid[k], is_marker[k]
        same = np.r_[False, kp[1:] == kp[:-1]]
        after_marker = same & np.r_[False, km[:-1]]
        was_open = np.isin(kp, np.fromiter(self.ongoing, dtype=np.int64, count=len(self.ongoing)))
        opening = ~km & (after_marker | ~(same | was_open))
        events = np.sort(np.r_[k[opening], k[km]])
        rows = sel[events]
        aborted: list[AbortedTxn] = []
        ongoing = self.ongoing
        for row, p, base, last, m in zip(rows.tolist(), pid[events].tolist(), block.base_offset[rows].tolist(),
                                         block.last_offset[rows].tolist(), is_marker[events].tolist(), strict=True):
            if not m:
                ongoing[p] = base
                fields[p] = (fields.get(p, (None, -1))[0], base)
                continue
            ctype, coordinator_epoch = cast(tuple[int, int], markers[row])  # a marker row: never None
            fields[p] = (coordinator_epoch, -1)
            txn_first = ongoing.pop(p, None)
            if ctype == control.ABORT and txn_first is not None:
                aborted.append(AbortedTxn(p, txn_first, last, self.last_stable_offset(last + 1)))
        return aborted, fields

    def _complete(self, entry: ProducerEntry, b: BatchInfo, ctype: int, coordinator_epoch: int) -> AbortedTxn | None:
        entry.coordinator_epoch = coordinator_epoch
        entry.current_txn_first_offset = -1
        first = self.ongoing.pop(b.producer_id, None)
        if ctype != control.ABORT or first is None:
            return None
        return AbortedTxn(b.producer_id, first, b.last_offset, self.last_stable_offset(b.last_offset + 1))

    def last_stable_offset(self, default: int) -> int:
        """First offset of the earliest open transaction, else `default`."""
        return min(self.ongoing.values(), default=default)

    def snapshot_entries(self) -> list[ProducerSnapshotEntry]:
        return [self.producers[pid].to_snapshot() for pid in sorted(self.producers)]


def marker_of(records: list[v2.Record]) -> tuple[int, int] | None:
    """(type, coordinator epoch) of a transaction marker batch's record, else None."""
    if not records:
        return None
    key = control.parse_control_key(records[0].key)
    if key.type not in (control.ABORT, control.COMMIT):
        return None
    return key.type, control.parse_end_txn_marker(records[0].value).coordinator_epoch
