"""`__share_group_state` records (KIP-932): the share coordinator's ShareSnapshot and ShareUpdate keys and values.

The key is an int16 record type (0 ShareSnapshotKey, 1 ShareUpdateKey; `ShareCoordinatorRecordSerde` reads it
as the key's version in 4.0 and as the coordinator record's api key in 4.4), then a body that is the same in
every release: group id, topic id, partition. The value is an int16 version (0) then a flexible body whose
layout changed while the KIP was in preview, so it is read with the schemas of a given release:

- ``4.0``: share-coordinator/src/main/resources/common/message/Share{Snapshot,Update}Value.json at 4.0
  (uint16 SnapshotEpoch, no timestamps);
- ``4.4``: the same files at 4.4 (int32 SnapshotEpoch; ShareSnapshotValue with Create/WriteTimestamp; a
  tagged DeliveryCompleteCount, KIP-1226, in both).

A record written by one release's broker does not read with the other's schemas (kafka-dump-log of either
reports an error for it). A null value is a tombstone. Output follows kafka-dump-log's
``--share-group-state-decoder``: ``{"key": {"type", "version", "data"}, "value": {"version", "data"} | None}``,
where the key's `version` is its record type.
"""
from __future__ import annotations

from replog.formats.errors import FormatError
from replog.formats.kafka.internal.protocol import (
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    UINT16,
    UUID,
    Array,
    Field,
    Message,
    Struct,
    decode_version_prefixed,
    json_view,
    read_int16,
    with_trailing,
)

SCHEMA_RELEASES = ("4.0", "4.4")
_KEY_FIELDS = (Field("groupId", STRING), Field("topicId", UUID), Field("partition", INT32))
KEY_TYPES = {0: "ShareSnapshotKey", 1: "ShareUpdateKey"}
_STATE_BATCHES = Field("stateBatches", Array(Struct("StateBatch", (
    Field("firstOffset", INT64), Field("lastOffset", INT64), Field("deliveryState", INT8),
    Field("deliveryCount", INT16)))))
_DELIVERY_COMPLETE = Field("deliveryCompleteCount", INT32, tag=0, default=-1)


def _value(name: str, *fields: Field) -> Message:
    return Message(name, fields, valid="0", flexible="0+")


VALUES: dict[str, dict[int, Message]] = {
    "4.0": {
        0: _value("ShareSnapshotValue", Field("snapshotEpoch", UINT16), Field("stateEpoch", INT32),
                  Field("leaderEpoch", INT32), Field("startOffset", INT64), _STATE_BATCHES),
        1: _value("ShareUpdateValue", Field("snapshotEpoch", UINT16), Field("leaderEpoch", INT32),
                  Field("startOffset", INT64), _STATE_BATCHES),
    },
    "4.4": {
        0: _value("ShareSnapshotValue", Field("snapshotEpoch", INT32), Field("stateEpoch", INT32),
                  Field("leaderEpoch", INT32), Field("startOffset", INT64), _DELIVERY_COMPLETE,
                  Field("createTimestamp", INT64), Field("writeTimestamp", INT64), _STATE_BATCHES),
        1: _value("ShareUpdateValue", Field("snapshotEpoch", INT32), Field("leaderEpoch", INT32),
                  Field("startOffset", INT64), _DELIVERY_COMPLETE, _STATE_BATCHES),
    },
}


def decode_share_group_state(key: bytes | None, value: bytes | None, release: str = "4.4") -> dict:
    """Decode one `__share_group_state` record with `release`'s value schemas. Raises FormatError on
    malformed bytes (a value of the other release's layout among them)."""
    if key is None:
        raise FormatError("KAFKA_RECORDS_UNDECODABLE", "__share_group_state record without a key")
    decoded_key = decode_key(key)
    if value is None or decoded_key["type"] == "unknown":
        return {"key": decoded_key, "value": None if value is None else {"raw": bytes(value).hex()}}
    return {"key": decoded_key, "value": decode_value(decoded_key["version"], value, release)}


def decode_key(key: bytes) -> dict:
    record_type = read_int16(key)
    name = KEY_TYPES.get(record_type)
    if name is None:
        return {"type": "unknown", "version": record_type, "raw": bytes(key[2:]).hex()}
    data, end = Message(name, _KEY_FIELDS).decode(key, 0, 2)
    return with_trailing({"type": name, "version": record_type, "data": data}, key, end)


def decode_value(record_type: int, value: bytes, release: str) -> dict:
    """The value of a record of `record_type` (its key's int16) at the value's own version."""
    return decode_version_prefixed(VALUES[release][record_type], value)


def json_data(record_type: int, data: dict, release: str) -> dict:
    """A decoded value's `data` as the generated `Share*ValueJsonConverter.write` prints it: the tagged
    DeliveryCompleteCount left out at its default (-1)."""
    schema = VALUES[release].get(record_type)
    return data if schema is None else json_view(schema.fields, data)
