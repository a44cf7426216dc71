"""Control records: transaction markers and KRaft control records (docs/reference/kafka.md §3).

A control batch (attribute bit 5) holds one record whose key is
`int16 version, int16 type`; an end-transaction marker's value is
`int16 version, int32 coordinator_epoch`.
"""
from __future__ import annotations

import struct
from typing import NamedTuple

import construct as cs

from replog.formats.errors import FormatError
from replog.formats.kafka.batch import Record, build_batch

CONTROL_KEY = cs.Struct("version" / cs.Int16sb, "type" / cs.Int16sb)
END_TXN_MARKER = cs.Struct("version" / cs.Int16sb, "coordinator_epoch" / cs.Int32sb)

_KEY = struct.Struct(">hh")
_MARKER = struct.Struct(">hi")

ABORT, COMMIT, LEADER_CHANGE, SNAPSHOT_HEADER, SNAPSHOT_FOOTER, KRAFT_VERSION, KRAFT_VOTERS = range(7)
CONTROL_TYPE_NAMES = {ABORT: "ABORT", COMMIT: "COMMIT", LEADER_CHANGE: "LEADER_CHANGE",
                      SNAPSHOT_HEADER: "SNAPSHOT_HEADER", SNAPSHOT_FOOTER: "SNAPSHOT_FOOTER",
                      KRAFT_VERSION: "KRAFT_VERSION", KRAFT_VOTERS: "KRAFT_VOTERS"}


class ControlKey(NamedTuple):
    version: int
    type: int

    @property
    def name(self) -> str:
        return CONTROL_TYPE_NAMES.get(self.type, "UNKNOWN")


class EndTxnMarker(NamedTuple):
    version: int
    coordinator_epoch: int


def parse_control_key(key: bytes | None) -> ControlKey:
    """Parse a control record key; short or negative-version keys are invalid."""
    return ControlKey(*_versioned(_KEY, key, "control record key", "control record key"))


def parse_end_txn_marker(value: bytes | None) -> EndTxnMarker:
    return EndTxnMarker(*_versioned(_MARKER, value, "transaction marker value", "transaction marker"))


def _versioned(layout: struct.Struct, raw: bytes | None, what: str, versioned: str) -> tuple[int, ...]:
    """The fields of a fixed layout that starts with an int16 version: FormatError for bytes shorter than the
    layout (`what` ... shorter than) or a negative version (`versioned` version ... < 0)."""
    if raw is None or len(raw) < layout.size:
        raise FormatError("KAFKA_CONTROL_RECORD_INVALID", f"{what} shorter than {layout.size} bytes")
    fields: tuple[int, ...] = layout.unpack_from(raw)
    if fields[0] < 0:
        raise FormatError("KAFKA_CONTROL_RECORD_INVALID", f"{versioned} version {fields[0]} < 0")
    return fields


def build_marker_batch(*, offset: int, commit: bool, producer_id: int, producer_epoch: int,
                       coordinator_epoch: int, timestamp: int, partition_leader_epoch: int = -1) -> bytes:
    """The 78-byte COMMIT/ABORT marker batch a transaction coordinator makes the leader write."""
    key = _KEY.pack(0, COMMIT if commit else ABORT)
    value = _MARKER.pack(0, coordinator_epoch)
    return build_batch([Record(offset, timestamp, key, value)], base_offset=offset,
                       partition_leader_epoch=partition_leader_epoch, producer_id=producer_id,
                       producer_epoch=producer_epoch, transactional=True, control=True)


def build_control_batch(*, offset: int, control_type: int, value: bytes, timestamp: int,
                        partition_leader_epoch: int = -1) -> bytes:
    """A KRaft control batch (LeaderChange, snapshot header/footer...)."""
    key = _KEY.pack(0, control_type)
    return build_batch([Record(offset, timestamp, key, value)], base_offset=offset,
                       partition_leader_epoch=partition_leader_epoch, control=True)
