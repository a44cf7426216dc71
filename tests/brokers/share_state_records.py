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

SNAPSHOT, UPDATE = 0, 1


# One StateBatch of the spec, as the values lay it out: FirstOffset (int64), LastOffset (int64), DeliveryState (int8),
# DeliveryCount (int16). A plain tuple in the spec's field order, packed as it stands, rather than a record type
# mirroring replog's (`recovery.kafka.share_state.StateBatch`): the oracle reads the spec, not the code it checks.
StateBatch = tuple[int, int, int, int]
_STATE_BATCH = struct.Struct(">qqbh")


def uvarint(n: int) -> bytes:
    """Kafka's unsigned varint (`ByteUtils.writeUnsignedVarint`: protobuf's base-128 varint, unsigned LEB128) as its
    definition states it, from the binary digits of `n`: cut into groups of seven from the least significant end,
    one byte per group, the low group first, the top bit set on every byte but the last. Written from the definition
    on purpose, not as the shift-and-mask loop replog's encoder runs (formats/kafka/varint.py), so that this oracle
    cannot share a mistake with the code it checks."""
    digits = format(n, "b")
    groups = [digits[max(0, end - 7):end] for end in range(len(digits), 0, -7)]
    return bytes(int(group, 2) | (0x80 if k < len(groups) - 1 else 0) for k, group in enumerate(groups))


def key(record_type: int, group: str, topic_id: str, partition: int) -> bytes:
    """ShareSnapshotKey/ShareUpdateKey with the record type as the int16 prefix (the same bytes in 4.0 and 4.4)."""
    raw = group.encode()
    uuid = base64.urlsafe_b64decode(topic_id + "==")
    return struct.pack(">hh", record_type, len(raw)) + raw + uuid + struct.pack(">i", partition)


def _batches(batches: list[StateBatch]) -> bytes:
    """A compact array of StateBatch, each struct with its empty tagged-field section."""
    return uvarint(len(batches) + 1) + b"".join(
        _STATE_BATCH.pack(*b) + b"\x00" for b in batches)


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
