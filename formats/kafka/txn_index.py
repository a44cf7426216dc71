"""Transaction index `.txnindex` (reference §8.3): 34-byte entries, no header.

One entry per aborted transaction whose ABORT marker is in the segment, in
strictly increasing `last_offset` order. Never preallocated; a trailing partial
entry is ignored by the broker's iterator (we report it).
"""
from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import NamedTuple

import construct as cs

from replog.formats.findings import Finding, FindingSink
from replog.formats.layout import struct_of

ENTRY = cs.Struct(
    "version" / cs.Int16sb,             # 0; the broker reads the first byte only
    "producer_id" / cs.Int64sb,
    "first_offset" / cs.Int64sb,        # may lie in an earlier segment
    "last_offset" / cs.Int64sb,         # offset of the ABORT marker
    "last_stable_offset" / cs.Int64sb,  # LSO when the abort was written
)
ENTRY_STRUCT = struct_of(ENTRY)
ENTRY_SIZE = ENTRY_STRUCT.size  # 34
CURRENT_VERSION = 0


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = CURRENT_VERSION


class TxnIndexRead(NamedTuple):
    entries: list[AbortedTxn]
    findings: list[Finding]


def read_txn_index(buf, base_offset: int | None = None, *, path: str = "") -> TxnIndexRead:
    """Aborted transactions of a `.txnindex` and what is wrong with it.

    Entries with an unknown version are reported and left out; with
    `base_offset`, a `last_offset` below it is the broker's load-time check.
    """
    sink = FindingSink(path)
    size = len(buf)
    slots = size // ENTRY_SIZE
    if size % ENTRY_SIZE:
        sink.add("KAFKA_TXNINDEX_INVALID", position=slots * ENTRY_SIZE,
                 message=f"partial trailing entry of {size % ENTRY_SIZE} bytes (ignored by the broker)")
    entries: list[AbortedTxn] = []
    prev_last: int | None = None
    for slot, fields in enumerate(ENTRY_STRUCT.iter_unpack(memoryview(buf)[: slots * ENTRY_SIZE])):
        version, producer_id, first, last, lso = fields
        at = slot * ENTRY_SIZE
        if version != CURRENT_VERSION:
            sink.add("KAFKA_TXNINDEX_INVALID", position=at, offset=last,
                     message=f"entry {slot}: unknown version {version}", version=version)
            continue
        if prev_last is not None and last <= prev_last:
            sink.add("KAFKA_TXNINDEX_INVALID", position=at, offset=last,
                     message=f"entry {slot}: last offset {last} does not increase (previous {prev_last})")
        if base_offset is not None and last < base_offset:
            sink.add("KAFKA_TXNINDEX_INVALID", position=at, offset=last,
                     message=f"entry {slot}: last offset {last} is below the segment base {base_offset}")
        if first > last:
            sink.add("KAFKA_TXNINDEX_INVALID", position=at, offset=last,
                     message=f"entry {slot}: first offset {first} is after last offset {last}")
        prev_last = last
        entries.append(AbortedTxn(producer_id, first, last, lso, version))
    return TxnIndexRead(entries, sink.result())


def write_txn_index(entries: Iterable[AbortedTxn]) -> bytes:
    """The bytes of a `.txnindex` holding `entries` in the given order."""
    try:
        return b"".join(ENTRY_STRUCT.pack(e.version, e.producer_id, e.first_offset, e.last_offset,
                                          e.last_stable_offset) for e in entries)
    except struct.error as e:
        raise ValueError(f"aborted transaction field out of range: {e}") from None
