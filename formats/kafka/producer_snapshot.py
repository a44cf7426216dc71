"""Producer-state snapshot `<20-digit offset>.snapshot` (reference §9).

Version 1 header (version, CRC-32C of bytes [6, end), entry count) followed by
46-byte entries. The broker deletes a snapshot it cannot read and tries the
next older one, so a strict parse answers "would the broker use this file".
"""
from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import NamedTuple

import construct as cs
from crc32c import crc32c

from replog.formats.errors import FormatError
from replog.formats.layout import struct_of

ENTRY = cs.Struct(
    "producer_id" / cs.Int64sb,
    "producer_epoch" / cs.Int16sb,
    "last_sequence" / cs.Int32sb,
    "last_offset" / cs.Int64sb,               # < 0: no batch metadata (markers only)
    "offset_delta" / cs.Int32sb,              # last_offset - first_offset of the last batch
    "timestamp" / cs.Int64sb,
    "coordinator_epoch" / cs.Int32sb,
    "current_txn_first_offset" / cs.Int64sb,  # -1: no open transaction
)
SNAPSHOT_HEADER = cs.Struct(
    "version" / cs.Int16sb,   # 1
    "crc" / cs.Int32ub,       # CRC-32C of bytes [6, end)
    "entry_count" / cs.Int32sb,
)
SNAPSHOT = cs.Struct(
    *SNAPSHOT_HEADER.subcons,
    "entries" / cs.Array(cs.this.entry_count, ENTRY),
    cs.Terminated,
)
HEADER_STRUCT = struct_of(SNAPSHOT_HEADER)
ENTRY_STRUCT = struct_of(ENTRY)
HEADER_SIZE = HEADER_STRUCT.size  # 10
ENTRY_SIZE = ENTRY_STRUCT.size    # 46
CRC_START = 6
VERSION = 1


class ProducerSnapshotEntry(NamedTuple):
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int

    @property
    def first_sequence(self) -> int:
        return self.last_sequence - self.offset_delta


class ProducerSnapshot(NamedTuple):
    version: int
    crc: int
    crc_valid: bool
    entries: list[ProducerSnapshotEntry]


def parse_producer_snapshot(buf, *, check_crc: bool = True) -> ProducerSnapshot:
    """Parse a producer snapshot; raises `FormatError` on any defect.

    With `check_crc=False` a CRC mismatch is returned as `crc_valid=False`
    instead (for dumping); structural defects always raise.
    """
    mv = memoryview(buf)
    if len(mv) < HEADER_SIZE:
        raise FormatError("KAFKA_SNAPSHOT_INVALID",
                          f"{len(mv)} bytes is shorter than the {HEADER_SIZE}-byte header", position=0)
    version, crc, count = HEADER_STRUCT.unpack_from(mv, 0)
    if version != VERSION:
        raise FormatError("KAFKA_SNAPSHOT_INVALID", f"unknown snapshot version {version}", position=0)
    body = len(mv) - HEADER_SIZE
    if count < 0 or body != count * ENTRY_SIZE:
        raise FormatError("KAFKA_SNAPSHOT_INVALID",
                          f"entry count {count} does not match {body} bytes of {ENTRY_SIZE}-byte entries",
                          position=CRC_START)
    crc_valid = crc32c(mv[CRC_START:]) == crc
    if check_crc and not crc_valid:
        raise FormatError("KAFKA_SNAPSHOT_CRC_MISMATCH",
                          f"stored CRC {crc:#010x} differs from computed {crc32c(mv[CRC_START:]):#010x}",
                          position=2)
    entries = [ProducerSnapshotEntry(*f) for f in ENTRY_STRUCT.iter_unpack(mv[HEADER_SIZE:])]
    return ProducerSnapshot(version, crc, crc_valid, entries)


def build_producer_snapshot(entries: Iterable[ProducerSnapshotEntry]) -> bytes:
    """The bytes of a version-1 snapshot holding `entries`, CRC filled in."""
    try:
        body = b"".join(ENTRY_STRUCT.pack(*e) for e in entries)
    except struct.error as e:
        raise ValueError(f"producer snapshot field out of range: {e}") from None
    tail = struct.pack(">i", len(body) // ENTRY_SIZE) + body
    return struct.pack(">hI", VERSION, crc32c(tail)) + tail
