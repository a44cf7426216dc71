"""Producer state rebuilt from batch headers (`ProducerStateManager`, docs/reference/kafka.md §9-10).

Tracks per producer its epoch, last sequence and offsets, and open
transactions; an ABORT marker yields the aborted-transaction entry that the
segment's `.txnindex` must hold.
"""
from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import cast, overload

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

    def forget_batches(self) -> None:
        """`ProducerStateEntry.maybeUpdateProducerEpoch` (apache/kafka storage/src/main/java/org/apache/kafka/
        storage/internals/log/ProducerStateEntry.java): an entry met with another producer epoch drops its
        batch metadata, so its sequence, last data offset and offset delta read as none (-1, -1, 0). A data
        batch adds its own right after; a transaction marker does not, which is how transactions v2 (KIP-890,
        the marker carrying the epoch + 1) leave a producer with no sequence."""
        self.last_sequence, self.last_offset, self.offset_delta = -1, -1, 0

    def to_snapshot(self) -> ProducerSnapshotEntry:
        return ProducerSnapshotEntry(self.producer_id, self.producer_epoch, self.last_sequence, self.last_offset,
                                     self.offset_delta, self.timestamp, self.coordinator_epoch,
                                     self.current_txn_first_offset)


RETAINED_BATCHES = 5   # ProducerStateEntry.NUM_BATCHES_TO_RETAIN


@dataclass
class BatchHistory:
    """A producer's last batches as the broker keeps them to answer a retry as a duplicate
    (`ProducerStateEntry.batchMetadata`, `findDuplicateBatch`): the same epoch rule as `ProducerEntry`,
    a batch or marker of another epoch forgets them (`maybeUpdateProducerEpoch`, via `forgets`). A kept
    batch is its row view (`BatchInfo`): the broker's `BatchMetadata` (producer epoch, first and last
    sequence, last offset) is its `producer_epoch`, `base_sequence`, `last_sequence` and `last_offset`."""

    producer_epoch: int = -1
    batches: deque[BatchInfo] = field(default_factory=lambda: deque(maxlen=RETAINED_BATCHES))

    def meet(self, producer_epoch: int) -> None:
        """A batch or marker of `producer_epoch` arrives."""
        if forgets(self.producer_epoch, producer_epoch):
            self.batches.clear()
        self.producer_epoch = producer_epoch

    def add(self, batch: BatchInfo) -> None:
        self.meet(batch.producer_epoch)
        self.batches.append(batch)

    def copy(self) -> BatchHistory:
        return BatchHistory(self.producer_epoch, deque(self.batches, RETAINED_BATCHES))


@overload
def forgets(held_epoch: int, met_epoch: int) -> bool: ...
@overload
def forgets(held_epoch: np.ndarray, met_epoch: np.ndarray) -> np.ndarray: ...
def forgets(held_epoch: int | np.ndarray, met_epoch: int | np.ndarray) -> bool | np.ndarray:
    """`ProducerStateEntry.maybeUpdateProducerEpoch` (apache/kafka storage/.../log/ProducerStateEntry.java): an
    entry met by a batch or marker of another producer epoch drops its batch metadata. Under transactions v2
    (KIP-890) every marker carries the epoch + 1, so every transaction ends with the producer's sequences
    forgotten. The one place of the rule: `ProducerState` (per batch and per block) and `BatchHistory` use it."""
    return held_epoch != met_epoch   # elementwise for arrays of epochs


class ProducerState:
    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}
        self.ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction

    def update(self, b: BatchInfo, marker: tuple[int, int] | None = None) -> AbortedTxn | None:
        """Apply one v2 batch; `marker` is (control type, coordinator epoch) for markers."""
        if b.magic != 2 or b.producer_id < 0 or (b.is_control and marker is None):
            return None   # a control batch the cleaner emptied changes nothing (`ProducerAppendInfo.append`)
        entry = self.producers.setdefault(b.producer_id, ProducerEntry(b.producer_id))
        if forgets(entry.producer_epoch, b.producer_epoch):
            entry.forget_batches()
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
        block, markers = _without_emptied_controls(block, markers)
        keep = (block.magic == 2) & (block.producer_id >= 0)
        sel = None if keep.all() else np.flatnonzero(keep)  # None: every row (no copies)

        def take(column: np.ndarray) -> np.ndarray:
            return column if sel is None else column[sel]

        pid = take(block.producer_id)
        n = len(pid)
        if n == 0:
            return []
        is_marker = np.zeros(n, dtype=bool)
        marker_rows = [r for r, m in (markers or {}).items() if m is not None]
        if marker_rows:
            rows = np.array(marker_rows, dtype=np.int64)
            if sel is None:
                is_marker[rows[(rows >= 0) & (rows < n)]] = True
            else:
                at = np.minimum(np.searchsorted(sel, rows), n - 1)
                is_marker[at[sel[at] == rows]] = True
        has_markers = bool(is_marker.any())

        slot, slot_pid = _slots(pid)
        size, here = len(slot_pid), np.arange(n)
        last = _last_per_slot(size, slot, here)
        base_sequence = take(block.base_sequence)
        with_seq = base_sequence >= 0
        if has_markers:
            data = ~is_marker
            last_data = _last_per_slot(size, slot[data], here[data])
            with_seq &= data
        else:
            last_data = last
        all_seq = bool(with_seq.all())
        last_seq = last_data if all_seq else _last_per_slot(size, slot[with_seq], here[with_seq])

        transactional = take(block.is_transactional) != 0  # a marker row among them opens nothing
        aborted, txn_fields = self._transactions(block, sel, pid, slot, slot_pid, last >= 0, transactional,
                                                 is_marker, markers or {})

        used = np.flatnonzero(last >= 0)
        last, last_data = last[used], last_data[used]
        last_seq = last_data if all_seq else last_seq[used]
        base, last_offset = take(block.base_offset), take(block.last_offset)
        ld = np.maximum(last_data, 0)
        ls = ld if last_seq is last_data else np.maximum(last_seq, 0)
        delta = last_offset[ld] - base[ld]
        seq_delta = delta if ls is ld else last_offset[ls] - base[ls]
        seq_base = base_sequence[ls]
        wrap = seq_base > v2.INT32_MAX - seq_delta
        sequence = np.where(wrap, seq_delta - (v2.INT32_MAX - seq_base) - 1, seq_base + seq_delta)
        epoch = take(block.producer_epoch)
        forgot = self._last_epoch_change(slot, slot_pid, epoch)[used]
        columns = [slot_pid[used], epoch[last], take(block.max_timestamp)[last],
                   last_data, last_offset[ld], delta, last_seq, sequence, forgot]
        producers = self.producers
        if not all(p in producers for p in columns[0].tolist()):
            # new producers enter the table in order of their first row, as `update` adds them
            first = np.full(size, n, dtype=np.int64)
            np.minimum.at(first, slot, here)
            order = np.argsort(first[used], kind="stable")
            columns = [c[order] for c in columns]
        for p, e, ts, has_data, lo, od, has_seq, seq, f in zip(*(c.tolist() for c in columns), strict=True):
            entry = producers.get(p)
            if entry is None:
                entry = producers[p] = ProducerEntry(p)
            entry.producer_epoch, entry.timestamp = e, ts
            if has_data >= 0:
                entry.last_offset, entry.offset_delta = lo, od
            if has_seq >= 0:
                entry.last_sequence = seq
            if f > has_data:   # the epoch changed after the last row that set them: `forget_batches` there
                entry.last_offset, entry.offset_delta = -1, 0
            if f > has_seq:
                entry.last_sequence = -1
        for p, (coordinator_epoch, txn_first) in txn_fields.items():
            entry = producers[p]
            if coordinator_epoch is not None:
                entry.coordinator_epoch = coordinator_epoch
            entry.current_txn_first_offset = txn_first
        return aborted

    def _last_epoch_change(self, slot: np.ndarray, slot_pid: np.ndarray, epoch: np.ndarray) -> np.ndarray:
        """Per slot, the last row whose producer epoch differs from the producer's epoch just before it (its
        previous row in the block, else the epoch this state holds): where `update` calls `forget_batches`;
        -1 where none does."""
        n = len(slot)
        order = np.lexsort((np.arange(n), slot))          # rows grouped by slot, in row order within each
        s, e = slot[order], epoch[order]
        stored = np.array([self.producers[p].producer_epoch if p in self.producers else -1
                           for p in slot_pid[np.unique(s)].tolist()], dtype=np.int64)
        before = np.empty(n, dtype=np.int64)
        first = np.ones(n, dtype=bool)
        first[1:] = s[1:] != s[:-1]
        before[1:] = e[:-1]
        before[first] = stored
        changed = order[forgets(before, e)]   # elementwise
        out = np.full(len(slot_pid), -1, dtype=np.int64)
        np.maximum.at(out, slot[changed], changed)
        return out

    def _transactions(self, block: BatchBlock, sel: np.ndarray | None, pid: np.ndarray, slot: np.ndarray,
                      slot_pid: np.ndarray, used: np.ndarray, transactional: np.ndarray, is_marker: np.ndarray,
                      markers: Mapping[int, tuple[int, int] | None],
                      ) -> tuple[list[AbortedTxn], dict[int, tuple[int | None, int]]]:
        """Replay the markers and the rows that open a transaction, in row order (the only rows that
        touch `ongoing`): the ABORTs' entries, and per touched producer its final (coordinator epoch
        or None when unchanged, current transaction's first offset)."""
        fields: dict[int, tuple[int | None, int]] = {}
        touching = np.flatnonzero(transactional | is_marker)
        if len(touching) == 0:
            return [], fields
        group = slot[touching]
        if len(slot_pid) > 1 << 16:
            group = (np.cumsum(used) - 1)[group]  # dense: one code per producer of the block
        if int(group.max()) < 1 << 16:
            group = group.astype(np.uint16)  # a stable sort of 16-bit keys is a radix sort
        k = touching[np.argsort(group, kind="stable")]  # grouped by producer, in row order within each
        kc, km = slot[k], is_marker[k]
        same = np.empty(len(k), dtype=bool)
        same[0], same[1:] = False, kc[1:] == kc[:-1]
        after_marker = same.copy()
        after_marker[1:] &= km[:-1]
        open_slot = np.zeros(len(slot_pid), dtype=bool)
        if self.ongoing:
            keys = np.fromiter(self.ongoing, dtype=np.int64, count=len(self.ongoing))
            at = np.minimum(np.searchsorted(slot_pid, keys), len(slot_pid) - 1)
            open_slot[at[slot_pid[at] == keys]] = True
        opening = ~km & (after_marker | ~(same | open_slot[kc]))
        events = np.sort(np.concatenate([k[opening], k[km]]))
        rows = events if sel is None else sel[events]
        aborted: list[AbortedTxn] = []
        ongoing = self.ongoing
        # the last stable offsets: a heap of (first offset, producer) over `ongoing`, built at the first
        # ABORT; an entry no longer in `ongoing` is dropped when it comes to the top
        heap: list[tuple[int, int]] | None = None
        for row, p, base, last, m in zip(rows.tolist(), pid[events].tolist(),
                                         block.base_offset[rows].tolist(), block.last_offset[rows].tolist(),
                                         is_marker[events].tolist(), strict=True):
            if not m:
                ongoing[p] = base
                fields[p] = (fields.get(p, (None, -1))[0], base)
                if heap is not None:
                    heapq.heappush(heap, (base, p))
                continue
            ctype, coordinator_epoch = cast(tuple[int, int], markers[row])  # a marker row: never None
            fields[p] = (coordinator_epoch, -1)
            txn_first = ongoing.pop(p, None)
            if ctype == control.ABORT and txn_first is not None:
                if heap is None:
                    heap = [(first, q) for q, first in ongoing.items()]
                    heapq.heapify(heap)
                while heap and ongoing.get(heap[0][1]) != heap[0][0]:
                    heapq.heappop(heap)
                aborted.append(AbortedTxn(p, txn_first, last, heap[0][0] if heap else last + 1))
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


def _without_emptied_controls(block: BatchBlock, markers: Mapping[int, tuple[int, int] | None] | None,
                              ) -> tuple[BatchBlock, Mapping[int, tuple[int, int] | None] | None]:
    """The block less its control rows that are no marker (`update` skips them), markers renumbered."""
    if not block.is_control.any():
        return block, markers
    found = markers or {}
    emptied = [r for r in np.flatnonzero(block.is_control == 1).tolist() if found.get(r) is None]
    if not emptied:
        return block, markers
    keep = np.ones(len(block), dtype=bool)
    keep[emptied] = False
    rows = np.flatnonzero(keep)
    new_row = {old: new for new, old in enumerate(rows.tolist())}
    return block[rows], {new_row[r]: m for r, m in found.items() if r in new_row}


def _slots(pid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(slot of each row, producer id of each slot, ascending): the ids' offsets from the smallest when they
    span little (no sort), else their ranks."""
    lo, hi = int(pid.min()), int(pid.max())
    if hi - lo < max(2 * len(pid), 1 << 12):
        return pid - lo, np.arange(lo, hi + 1, dtype=np.int64)
    slot_pid, slot = np.unique(pid, return_inverse=True)
    return slot, slot_pid


def _last_per_slot(size: int, slot: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The last of `rows` of each slot 0..size-1, -1 where a slot has none."""
    out = np.full(size, -1, dtype=np.int64)
    np.maximum.at(out, slot, rows)
    return out
