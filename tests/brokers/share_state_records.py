"""`__share_group_state` records (KIP-932) packed with `struct` from the share coordinator's message specs,
independently of replog's decoder, for the kafka-dump-log differential corpus.

Key (both layouts): int16 record type (0 ShareSnapshotKey, 1 ShareUpdateKey), then GroupId (int16-length
string), TopicId (16-byte uuid), Partition (int32): not flexible. Value: int16 version 0, then a flexible body
(compact arrays, a tagged-field section after every struct). The value bodies differ between Kafka releases
(the KIP was in preview in 4.0): `kafka-share-coordinator-4.0.2.jar` `common/message/Share{Snapshot,Update}
Value.json` has a uint16 SnapshotEpoch and no timestamps; 4.4.0's has an int32 SnapshotEpoch, Create/
WriteTimestamp in ShareSnapshotValue and a tagged DeliveryCompleteCount (tag 0, default -1).
"""
from __future__ import annotations

import base64
import struct
from dataclasses import dataclass

SNAPSHOT, UPDATE = 0, 1


@dataclass(frozen=True)
class StateBatch:
    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


def uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def key(record_type: int, group: str, topic_id: str, partition: int) -> bytes:
    """ShareSnapshotKey/ShareUpdateKey with the record type as the int16 prefix (the same bytes in 4.0 and 4.4)."""
    raw = group.encode()
    uuid = base64.urlsafe_b64decode(topic_id + "==")
    return struct.pack(">hh", record_type, len(raw)) + raw + uuid + struct.pack(">i", partition)


def _batches(batches: list[StateBatch]) -> bytes:
    """A compact array of StateBatch, each struct with its empty tagged-field section."""
    return uvarint(len(batches) + 1) + b"".join(
        struct.pack(">qqbh", b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) + b"\x00"
        for b in batches)


def _tags(delivery_complete_count: int | None) -> bytes:
    """The top-level tagged fields of a 4.4 value: DeliveryCompleteCount (tag 0) when not its default."""
    if delivery_complete_count is None or delivery_complete_count == -1:
        return b"\x00"
    return b"\x01" + uvarint(0) + uvarint(4) + struct.pack(">i", delivery_complete_count)


def snapshot_value_44(snapshot_epoch: int, state_epoch: int, leader_epoch: int, start_offset: int,
                      create_ts: int, write_ts: int, batches: list[StateBatch],
                      delivery_complete_count: int | None = None) -> bytes:
    """ShareSnapshotValue v0 as 4.4.0 writes it."""
    return (struct.pack(">hiiiqqq", 0, snapshot_epoch, state_epoch, leader_epoch, start_offset, create_ts, write_ts)
            + _batches(batches) + _tags(delivery_complete_count))


def update_value_44(snapshot_epoch: int, leader_epoch: int, start_offset: int, batches: list[StateBatch],
                    delivery_complete_count: int | None = None) -> bytes:
    """ShareUpdateValue v0 as 4.4.0 writes it."""
    return (struct.pack(">hiiq", 0, snapshot_epoch, leader_epoch, start_offset) + _batches(batches)
            + _tags(delivery_complete_count))


def snapshot_value_40(snapshot_epoch: int, state_epoch: int, leader_epoch: int, start_offset: int,
                      batches: list[StateBatch]) -> bytes:
    """ShareSnapshotValue v0 as 4.0.2 writes it (uint16 SnapshotEpoch, no timestamps)."""
    head = struct.pack(">hHiiq", 0, snapshot_epoch, state_epoch, leader_epoch, start_offset)
    return head + _batches(batches) + b"\x00"


def update_value_40(snapshot_epoch: int, leader_epoch: int, start_offset: int, batches: list[StateBatch]) -> bytes:
    """ShareUpdateValue v0 as 4.0.2 writes it."""
    return struct.pack(">hHiq", 0, snapshot_epoch, leader_epoch, start_offset) + _batches(batches) + b"\x00"
