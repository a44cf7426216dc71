"""Counting the records of a stretch of offsets of a log, streamed from its batch columns.

A consumer's position can fall inside a batch (it commits the offset after its
last record), so a batch that straddles an end of the stretch is decoded to count
its records on each side; every other batch counts by its record count, so only
the batches at the two ends are ever decoded, and memory stays one block whatever
the stretch holds. Control batches (transaction markers) are skipped: consumers
never see them. Pieces may come out of offset order (the batches several
truncation rounds remove), so a log that is not ordered is read to its end.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from replog.formats.errors import FormatError, ReplogError
from replog.formats.fileio import mapped
from replog.formats.kafka.blocks import BatchBlock
from replog.formats.kafka.segment import BatchInfo, batch_records
from replog.recovery.kafka.replica_log import Piece, ReplicaLog
from replog.recovery.kafka.segment_pass import markers


@dataclass
class Span:
    """The data records of a stretch of offsets: how many, the lowest and highest offset, their time span."""

    records: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    first_timestamp: int | None = None
    last_timestamp: int | None = None

    def add(self, n: int, first: int, last: int, first_ts: int, last_ts: int) -> None:
        if n <= 0:
            return
        self.records += n
        self.first_offset = first if self.first_offset is None else min(self.first_offset, first)
        self.last_offset = last if self.last_offset is None else max(self.last_offset, last)
        if first_ts >= 0:
            self.first_timestamp = first_ts if self.first_timestamp is None else min(self.first_timestamp, first_ts)
        if last_ts >= 0:
            self.last_timestamp = last_ts if self.last_timestamp is None else max(self.last_timestamp, last_ts)


MarkedBlock = tuple[BatchBlock, dict[int, tuple[int, int] | None], Piece]


def marked_blocks(log: ReplicaLog, lo: int | None = None, with_markers: bool = True) -> Iterator[MarkedBlock]:
    """The log's blocks (from the first batch reaching `lo`) with the markers among their rows (decoded
    from the segment; none for in-memory pieces, or unless `with_markers`) and the piece each comes from."""
    for piece in (log.from_offset(lo) if lo is not None else log).pieces:
        on_disk = with_markers and piece.rows is None and bool(piece.file) and Path(piece.file).is_file()
        with mapped(piece.file) if on_disk else nullcontext(None) as buf:
            for block in piece.blocks():
                yield block, (markers(buf, block) if buf is not None else {}), piece


def span(log: ReplicaLog, lo: int, hi: int) -> Span:
    """The data records of `log` with offsets in [lo, hi)."""
    out = Span()
    if lo >= hi or not log:
        return out
    ordered = log.ordered
    for block, _, piece in marked_blocks(log, max(lo, 0) if ordered else None, False):
        b = block
        data = b.is_control == 0
        inside = data & (b.base_offset >= lo) & (b.last_offset < hi)
        if inside.any():
            stamped = b.first_timestamp[inside & (b.first_timestamp >= 0)]
            out.add(int(b.count[inside].sum()), int(b.base_offset[inside].min()), int(b.last_offset[inside].max()),
                    int(stamped.min()) if len(stamped) else -1, int(b.max_timestamp[inside].max()))
        for i in np.flatnonzero(data & ~inside & (b.base_offset < hi) & (b.last_offset >= lo)).tolist():
            _partial(piece, b.row(i), lo, hi, out)
        if ordered and len(b) and int(b.base_offset[-1]) >= hi:
            break
    return out


def _partial(piece: Piece, info: BatchInfo, lo: int, hi: int, out: Span) -> None:
    """Add the records of one batch that lie in [lo, hi); a batch that cannot be decoded counts by its offsets."""
    try:
        with mapped(piece.file) as buf:
            recs = [(r.offset, r.timestamp) for r in batch_records(buf, info) if lo <= r.offset < hi]
    except (FormatError, ReplogError, OSError):
        first, last = max(lo, info.base_offset), min(hi - 1, info.last_offset)
        out.add(last - first + 1, first, last, info.first_timestamp, info.max_timestamp)
        return
    if recs:
        stamps = [t for _, t in recs]
        out.add(len(recs), recs[0][0], recs[-1][0], min(stamps), max(stamps))


def first_timestamp_from(log: ReplicaLog, offset: int) -> int | None:
    """The timestamp of the first batch of an ordered `log` starting at or after `offset` (None: none does)."""
    for block, _, _ in marked_blocks(log, offset, False):
        at = np.flatnonzero(block.base_offset >= offset)
        if len(at):
            return int(block.first_timestamp[at[0]])
    return None


def lowest_offset(log: ReplicaLog) -> int | None:
    """The lowest base offset of a log whose pieces may be out of order."""
    return min((p.min_base for p in log.pieces), default=None)
