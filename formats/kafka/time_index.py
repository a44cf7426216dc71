"""Time index `.timeindex` (reference §8.2): 12-byte entries, no header.

An entry (timestamp, relative offset) says: every record with a timestamp
above `timestamp` lies after offset base + relative offset. Preallocated like
the offset index; a slot > 0 with timestamp 0 and relative offset 0 is padding.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

import construct as cs
import numpy as np

from replog.formats.findings import Finding, finding
from replog.formats.kafka.offset_index import (
    IndexColumns,
    IndexRead,
    below_base,
    check_slots,
    not_whole_entries,
    relative_offset,
    slot_columns,
)
from replog.formats.layout import dtype_of, struct_of

ENTRY = cs.Struct(
    "timestamp" / cs.Int64sb,        # largest record timestamp up to the batch at offset
    "relative_offset" / cs.Int32sb,  # offset - segment base offset
)
ENTRY_STRUCT = struct_of(ENTRY)
ENTRY_SIZE = ENTRY_STRUCT.size  # 12
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
ENTRY_DTYPE = dtype_of(ENTRY)


class TimeIndexEntry(NamedTuple):
    timestamp: int
    offset: int  # absolute: base offset + relative offset


def read_time_index(buf, base_offset: int, *, path: str = "") -> IndexRead:
    """Entries of a `.timeindex`, the padding slot count, and what is wrong with it (`read_time_index_columns`
    as a list: one check). Offsets and timestamps must not decrease (`TimeIndex.maybeAppend` throws otherwise)."""
    columns = read_time_index_columns(buf, base_offset, path=path)
    return IndexRead(list(columns.entries()), columns.zero_tail_entries, columns.findings)


@dataclass(frozen=True, slots=True, eq=False)  # arrays: no element-wise ==
class TimeIndexColumns(IndexColumns):
    """A `.timeindex` as columns: slot i holds (`timestamps[i]`, `offsets[i]`)."""

    timestamps: np.ndarray

    def entries(self) -> Iterator[TimeIndexEntry]:
        """The entries as `read_time_index` lists them, one at a time."""
        for ts, rel in zip(self.timestamps.tolist(), self.relative_offsets.tolist(), strict=True):
            yield TimeIndexEntry(ts, self.base_offset + rel)


def read_time_index_columns(buf, base_offset: int, *, path: str = "") -> TimeIndexColumns:
    """`read_time_index` as columns: same padding count, same findings, vectorised checks."""
    sink, tail, raw = slot_columns(buf, ENTRY_SIZE, ENTRY_DTYPE, path)
    ts, rel = raw["timestamp"], raw["relative_offset"]
    prev_ts, prev_rel = np.roll(ts, 1), np.roll(rel, 1)
    check_slots(sink, base_offset, ENTRY_SIZE, rel, ts, negative=rel < 0, backwards=(rel < prev_rel) | (ts < prev_ts),
                negative_text=lambda s: f"negative relative offset {rel[s]}",
                backwards_text=lambda s: f"({ts[s]}, {rel[s]}) goes back from ({prev_ts[s]}, {prev_rel[s]})")
    return TimeIndexColumns(base_offset, rel, tail, sink.result(), timestamps=ts)


def write_time_index(entries: Iterable[TimeIndexEntry | tuple[int, int]], base_offset: int) -> bytes:
    """The bytes of a trimmed `.timeindex` holding `entries` (absolute offsets)."""
    out = bytearray()
    for timestamp, offset in entries:
        rel = relative_offset(offset, base_offset)
        if not INT64_MIN <= timestamp <= INT64_MAX:
            raise ValueError(f"timestamp {timestamp} does not fit in 64 bits")
        out += ENTRY_STRUCT.pack(timestamp, rel)
    return bytes(out)


def sanity_check(buf, base_offset: int, *, path: str = "") -> list[Finding]:
    """`TimeIndex.sanityCheck`: every slot counts as an entry, padding included.

    So a zero-padded index of positive timestamps fails (last timestamp 0 <
    first), exactly as it would in the broker.
    """
    out: list[Finding] = []
    slots = len(buf) // ENTRY_SIZE
    if slots:
        first_ts, _ = ENTRY_STRUCT.unpack_from(buf, 0)
        last_at = (slots - 1) * ENTRY_SIZE
        last_ts, last_rel = ENTRY_STRUCT.unpack_from(buf, last_at)
        if last_ts < first_ts:
            out.append(finding("KAFKA_INDEX_NOT_MONOTONIC", path, position=last_at,
                               offset=base_offset + last_rel,
                               message=f"last timestamp {last_ts} is below the first {first_ts}"))
        out += below_base(path, last_at, base_offset, last_rel)
    return out + not_whole_entries(buf, ENTRY_SIZE, "time index", path)
