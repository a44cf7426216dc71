"""Offset index `.index` (reference §8.1): 8-byte entries, no header.

An entry (relative offset, position) says: the append starting at byte
`position` of the `.log` ends at offset base + relative offset. Index files
of an active segment are preallocated (10 MiB) and after a crash keep their
zero-filled tail; a `(0, 0)` slot after slot 0 is such padding (slot 0 may be
a genuine `(0, 0)` entry), the same rule `DumpLogSegments` uses.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

import construct as cs
import numpy as np

from replog.formats.fileview import data_end
from replog.formats.findings import Finding, FindingSink, finding
from replog.formats.layout import dtype_of, struct_of

ENTRY = cs.Struct(
    "relative_offset" / cs.Int32sb,  # offset - segment base offset
    "position" / cs.Int32sb,         # byte position of a batch start in the .log
)
ENTRY_STRUCT = struct_of(ENTRY)
ENTRY_DTYPE = dtype_of(ENTRY)
ENTRY_SIZE = ENTRY_STRUCT.size  # 8
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_SCAN_CHUNK = 1 << 16


class OffsetIndexEntry(NamedTuple):
    offset: int    # absolute: base offset + relative offset
    position: int


class IndexRead(NamedTuple):
    """What a fixed-entry index holds: real entries, padding slots, findings."""

    entries: list
    zero_tail_entries: int
    findings: list[Finding]


def end_of_data(buf, limit: int) -> int:
    """One past the last non-zero byte of buf[:limit], scanning from the end in chunks.

    Keeps memory flat on a 10 MiB preallocated tail: no per-slot objects, only
    one 64 KiB copy at a time. The holes of a sparse file (a preallocated index
    is one) are zeros: the scan starts where its last data does, unread GiBs of
    holes after it cost nothing.
    """
    mv = memoryview(buf)
    end = data_end(buf, limit)
    while end > 0:
        start = max(0, end - _SCAN_CHUNK)
        kept = len(bytes(mv[start:end]).rstrip(b"\0"))
        if kept:
            return start + kept
        end = start
    return 0


def split_slots(buf, entry_size: int, sink: FindingSink) -> tuple[int, int]:
    """(number of slots holding entries, number of trailing padding slots).

    Padding = the all-zero slots after the last non-zero byte, from slot 1 on
    (slot 0 is an entry even when zero). Reports a partial trailing entry and
    the padding; a zero slot *followed* by data is left to the entry checks.
    """
    size = len(buf)
    slots = size // entry_size
    if size % entry_size:
        sink.add("KAFKA_INDEX_SIZE_NOT_MULTIPLE", position=slots * entry_size,
                 message=f"{size} bytes is not a multiple of {entry_size}; "
                         f"{size % entry_size} trailing bytes ignored")
    if not slots:
        return 0, 0
    data_slots = max(1, -(-end_of_data(buf, slots * entry_size) // entry_size))
    tail = slots - data_slots
    if tail:
        sink.add("KAFKA_INDEX_ZERO_TAIL", position=data_slots * entry_size,
                 message=f"{tail} preallocated zero slots after {data_slots} entries", count=tail)
    return data_slots, tail


def last_entry(buf, base_offset: int) -> OffsetIndexEntry | None:
    """The last entry of a `.index` without reading the whole file: the last slot before the zero
    padding, found by bisection over slots (entries only grow and padding is all zero, so slots are
    data then padding; slot 0 is data even when zero). On a damaged index the answer may be any slot:
    a caller checks it against the `.log`. None for an empty file."""
    slots = len(buf) // ENTRY_SIZE
    if not slots:
        return None
    lo, hi = 0, slots   # slot lo holds data; slots from hi on are padding
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ENTRY_STRUCT.unpack_from(buf, mid * ENTRY_SIZE) == (0, 0):
            hi = mid
        else:
            lo = mid
    rel, pos = ENTRY_STRUCT.unpack_from(buf, lo * ENTRY_SIZE)
    return OffsetIndexEntry(base_offset + rel, pos)


def read_offset_index(buf, base_offset: int, *, path: str = "") -> IndexRead:
    """Entries of a `.index`, the padding slot count, and what is wrong with it (`read_offset_index_columns`
    as a list: one check)."""
    columns = read_offset_index_columns(buf, base_offset, path=path)
    return IndexRead(list(columns.entries()), columns.zero_tail_entries, columns.findings)


@dataclass(frozen=True, slots=True, eq=False)  # arrays: no element-wise ==
class IndexColumns:
    """An index file (`.index` or `.timeindex`) as columns, no object per entry: what its list reader reads,
    with the same padding count and findings, as int64 arrays that own their memory (the file can be unmapped).
    Both indexes store int32 offsets relative to the segment's base offset: `relative_offsets` as stored,
    `offsets` with the base offset added."""

    base_offset: int
    relative_offsets: np.ndarray
    zero_tail_entries: int
    findings: list[Finding]

    def __len__(self) -> int:
        return len(self.relative_offsets)

    @property
    def offsets(self) -> np.ndarray:
        """Absolute offsets, int64 (saturated at INT64_MAX: see `absolute_offsets`)."""
        return absolute_offsets(self.base_offset, self.relative_offsets)[0]


@dataclass(frozen=True, slots=True, eq=False)
class OffsetIndexColumns(IndexColumns):
    """A `.index` as columns: slot i holds (`offsets[i]`, `positions[i]`)."""

    positions: np.ndarray

    def entries(self) -> Iterator[OffsetIndexEntry]:
        """The entries as `read_offset_index` lists them, one at a time."""
        for rel, pos in zip(self.relative_offsets.tolist(), self.positions.tolist(), strict=True):
            yield OffsetIndexEntry(self.base_offset + rel, pos)


def absolute_offsets(base_offset: int, relative: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """(base + relative as int64, mask of the entries above INT64_MAX or None).

    An offset only exceeds int64 when the base offset is within 2^31 of
    INT64_MAX; such an offset is stored as INT64_MAX and flagged in the mask,
    so a comparison with a batch offset (an int64) can be corrected.
    """
    if not INT64_MIN - INT32_MIN <= base_offset <= INT64_MAX:
        raise ValueError(f"base offset {base_offset} is outside the 64-bit range")
    rel = relative.astype(np.int64, copy=False)
    if base_offset <= INT64_MAX - INT32_MAX:
        return rel + np.int64(base_offset), None
    room = INT64_MAX - base_offset  # < 2^31
    over = rel > room
    return np.where(over, np.int64(INT64_MAX), rel + np.int64(base_offset)), (over if over.any() else None)


def read_offset_index_columns(buf, base_offset: int, *, path: str = "") -> OffsetIndexColumns:
    """`read_offset_index` as columns: same padding count, same findings, vectorised checks."""
    sink, tail, raw = slot_columns(buf, ENTRY_SIZE, ENTRY_DTYPE, path)
    rel, pos = raw["relative_offset"], raw["position"]
    prev_rel, prev_pos = np.roll(rel, 1), np.roll(pos, 1)
    check_slots(sink, base_offset, ENTRY_SIZE, rel, pos, negative=(rel < 0) | (pos < 0),
                backwards=(rel <= prev_rel) | (pos <= prev_pos),
                negative_text=lambda s: f"negative relative offset or position ({rel[s]}, {pos[s]})",
                backwards_text=lambda s: f"({rel[s]}, {pos[s]}) does not follow ({prev_rel[s]}, {prev_pos[s]})")
    return OffsetIndexColumns(base_offset, rel, tail, sink.result(), positions=pos)


def slot_columns(buf, entry_size: int, dtype: np.dtype, path: str) -> tuple[FindingSink, int, dict[str, np.ndarray]]:
    """A fixed-entry index's data slots (`split_slots`) as int64 columns by field name, with its padding slot
    count and the sink holding what `split_slots` found."""
    sink = FindingSink(path)
    data_slots, tail = split_slots(buf, entry_size, sink)
    raw = np.frombuffer(buf, dtype=dtype, count=data_slots)
    return sink, tail, {name: raw[name].astype(np.int64) for name in dtype.names or ()}


def check_slots(sink: FindingSink, base_offset: int, entry_size: int, rel: np.ndarray, other: np.ndarray, *,
                negative: np.ndarray, backwards: np.ndarray, negative_text: Callable[[int], str],
                backwards_text: Callable[[int], str]) -> None:
    """The slot rules of a fixed-entry index (`.index` and `.timeindex` alike), in slot order: a negative
    value is out of range; a (0, 0) slot after slot 0 is padding followed by entries; otherwise an entry
    must not go back from the slot before it (what `backwards` says, per index)."""
    later = np.arange(len(rel)) > 0
    padding = ~negative & later & (rel == 0) & (other == 0)
    backwards = ~negative & ~padding & later & backwards
    for slot in kept_slots(sink, np.flatnonzero(negative | padding | backwards)):
        at, r = slot * entry_size, int(rel[slot])
        if negative[slot]:
            sink.add("KAFKA_INDEX_OUT_OF_RANGE", position=at, offset=base_offset + r,
                     message=f"slot {slot}: {negative_text(slot)}")
        elif padding[slot]:
            sink.add("KAFKA_INDEX_NOT_MONOTONIC", position=at, offset=base_offset,
                     message=f"slot {slot}: padding entry (0, 0) followed by non-zero entries")
        else:
            sink.add("KAFKA_INDEX_NOT_MONOTONIC", position=at, offset=base_offset + r,
                     message=f"slot {slot}: {backwards_text(slot)}")


def kept_slots(sink: FindingSink, flagged: np.ndarray) -> list[int]:
    """The flagged slots `sink` still has room for; the rest are counted as dropped right away.

    Same outcome as adding every flagged slot (a full sink only counts), without
    building the findings it would drop.
    """
    room = max(0, sink.limit - len(sink.items))
    sink.dropped += max(0, len(flagged) - room)
    return flagged[:room].tolist()


def write_offset_index(entries: Iterable[OffsetIndexEntry | tuple[int, int]], base_offset: int) -> bytes:
    """The bytes of a trimmed `.index` holding `entries` (absolute offsets)."""
    out = bytearray()
    for offset, position in entries:
        rel = relative_offset(offset, base_offset)
        if not 0 <= position <= INT32_MAX:
            raise ValueError(f"position {position} outside [0, 2^31-1]")
        out += ENTRY_STRUCT.pack(rel, position)
    return bytes(out)


def sanity_check(buf, base_offset: int, *, path: str = "") -> list[Finding]:
    """`OffsetIndex.sanityCheck`: the broker's view, where every slot counts as an entry."""
    out: list[Finding] = []
    slots = len(buf) // ENTRY_SIZE
    if slots:
        rel, _ = ENTRY_STRUCT.unpack_from(buf, (slots - 1) * ENTRY_SIZE)
        out += below_base(path, (slots - 1) * ENTRY_SIZE, base_offset, rel)
    return out + not_whole_entries(buf, ENTRY_SIZE, "index", path)


def relative_offset(offset: int, base_offset: int) -> int:
    """What an index entry stores of `offset`: its distance from the segment's base offset, in 32 bits
    (`AbstractIndex#relativeOffset` throws outside them); ValueError there."""
    rel = offset - base_offset
    if not 0 <= rel <= INT32_MAX:
        raise ValueError(f"offset {offset} is outside the 32-bit range of base {base_offset}")
    return rel


def below_base(path: str, at: int, base_offset: int, last_rel: int) -> list[Finding]:
    """The sanity checks' last-entry rule (`OffsetIndex` / `TimeIndex#sanityCheck`): the last slot's offset must
    not be below the base offset."""
    if last_rel >= 0:
        return []
    return [finding("KAFKA_INDEX_OUT_OF_RANGE", path, position=at, offset=base_offset + last_rel,
                    message=f"last offset {base_offset + last_rel} is below the base offset {base_offset}")]


def not_whole_entries(buf, entry_size: int, what: str, path: str) -> list[Finding]:
    """The sanity checks' size rule: the file holds whole entries."""
    if not len(buf) % entry_size:
        return []
    return [finding("KAFKA_INDEX_SIZE_NOT_MULTIPLE", path, position=len(buf) // entry_size * entry_size,
                    message=f"{what} length {len(buf)} is not a multiple of {entry_size}")]
