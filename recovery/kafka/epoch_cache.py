"""The broker's leader-epoch cache (`LeaderEpochFileCache`, docs/reference/kafka.md §11), without I/O.

Entries `(epoch, start_offset)` strictly increase in both fields after every
operation; the methods mirror the broker's, including its edge cases.
"""
from __future__ import annotations

from collections.abc import Iterable

from replog.formats.kafka.checkpoint import EpochEntry

UNDEFINED = (-1, -1)


class EpochCache:
    def __init__(self, entries: Iterable[EpochEntry | tuple[int, int]] = ()) -> None:
        """Load like the broker does: every checkpoint entry replayed through `assign`."""
        self.entries: list[EpochEntry] = []
        for epoch, start in entries:
            self.assign(epoch, start)

    def __repr__(self) -> str:
        return f"EpochCache({[tuple(e) for e in self.entries]})"

    @property
    def latest_epoch(self) -> int | None:
        return self.entries[-1].epoch if self.entries else None

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that `epoch` starts at `start_offset`; returns False for a no-op."""
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"cannot assign epoch {epoch} at offset {start_offset}")
        if self.entries and self.entries[-1].epoch == epoch and start_offset >= self.entries[-1].start_offset:
            return False
        while self.entries and (self.entries[-1].epoch >= epoch or self.entries[-1].start_offset >= start_offset):
            self.entries.pop()
        self.entries.append(EpochEntry(epoch, start_offset))
        return True

    def with_entries_from(self, other: EpochCache, offset: int) -> EpochCache:
        """A copy of this cache with `other`'s entries that start at or past `offset` assigned on top."""
        out = EpochCache(self.entries)
        for e in other.entries:
            if e.start_offset >= offset and (out.latest_epoch is None or e.epoch > out.latest_epoch):
                out.assign(e.epoch, e.start_offset)
        return out

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, exclusive end offset) as OffsetsForLeaderEpoch answers it."""
        if requested_epoch == -1 or not self.entries:
            return UNDEFINED
        if requested_epoch == self.entries[-1].epoch:
            return requested_epoch, log_end_offset
        higher = next((e for e in self.entries if e.epoch > requested_epoch), None)
        if higher is None:
            return UNDEFINED
        if requested_epoch < self.entries[0].epoch:
            return requested_epoch, self.entries[0].start_offset
        floor = max((e for e in self.entries if e.epoch <= requested_epoch), key=lambda e: e.epoch)
        return floor.epoch, higher.start_offset

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop entries starting at or after `end_offset` (the log was truncated there)."""
        if end_offset >= 0 and self.entries and self.entries[-1].start_offset >= end_offset:
            while self.entries and self.entries[-1].start_offset >= end_offset:
                self.entries.pop()

    def truncate_from_start(self, start_offset: int) -> None:
        """Drop entries at or below the new log start, keeping the last one's epoch at it."""
        removed: EpochEntry | None = None
        while self.entries and self.entries[0].start_offset <= start_offset:
            removed = self.entries.pop(0)
        if removed is not None:
            self.entries.insert(0, EpochEntry(removed.epoch, start_offset))

    def epoch_for_offset(self, offset: int) -> int | None:
        previous: int | None = None
        for e in self.entries:
            if e.start_offset == offset:
                return e.epoch
            if e.start_offset > offset:
                return previous
            previous = e.epoch
        return previous

    def previous_epoch(self, epoch: int) -> int | None:
        lower = [e.epoch for e in self.entries if e.epoch < epoch]
        return lower[-1] if lower else None

    def clear(self) -> None:
        self.entries.clear()
