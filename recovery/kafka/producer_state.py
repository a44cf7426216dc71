"""Producer state rebuilt from batch headers (`ProducerStateManager`, kafka.md §9-10).

Tracks per producer its epoch, last sequence and offsets, and open
transactions; an ABORT marker yields the aborted-transaction entry that the
segment's `.txnindex` must hold.
"""
from __future__ import annotations

from dataclasses import dataclass

from replog.formats.kafka import batch as v2
from replog.formats.kafka import control
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
