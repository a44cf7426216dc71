"""`__consumer_offsets` records: keys and values of the group coordinator.

Key and value are each an int16 version followed by a message body. The key
version says what the record is (group-coordinator `*Key.json`):
0-1 offset commit, 2 classic group metadata, 3-8 consumer groups (KIP-848),
9-15 share groups (KIP-932), 16 regular expressions and 17-23 Streams groups (KIP-1071); the values of 3-23
are in `group_values`.
A null value is a tombstone (kafka-dump-log prints ``<DELETE>``).
Output follows kafka-dump-log's ``--offsets-decoder`` JSON:
``{"key": {"type", "version", "data"}, "value": {"version", "data"} | None}``.
Versions no schema here knows are reported with their raw hex, not an error.
"""
from __future__ import annotations

from typing import Any

from replog.formats.errors import FormatError
from replog.formats.kafka.internal.group_values import GROUP_VALUES
from replog.formats.kafka.internal.protocol import (
    BYTES,
    INT32,
    INT64,
    STRING,
    UUID,
    ZERO_UUID,
    Array,
    Field,
    Message,
    Struct,
    decode_version_prefixed,
    json_view,
    read_int16,
    to_bytes,
    version_prefixed,
)

# --- schemas (group-coordinator/src/main/resources/common/message/) -------------

OFFSET_COMMIT_KEY = Message("OffsetCommitKey", (
    Field("group", STRING), Field("topic", STRING), Field("partition", INT32)), valid="0-1")
GROUP_METADATA_KEY = Message("GroupMetadataKey", (Field("group", STRING),), valid="2")
_GROUP_KEY = (Field("groupId", STRING),)
_MEMBER_KEY = (Field("groupId", STRING), Field("memberId", STRING))

OFFSET_COMMIT_VALUE = Message("OffsetCommitValue", (
    Field("offset", INT64),
    Field("leaderEpoch", INT32, "3+", default=-1),
    Field("metadata", STRING),
    Field("commitTimestamp", INT64),
    Field("expireTimestamp", INT64, "1", default=-1),
    Field("topicId", UUID, "4+", tag=0, default=ZERO_UUID),   # 4.4 (OffsetCommitValue.json in its jar)
), valid="0-4", flexible="4+")

MEMBER_METADATA = Struct("MemberMetadata", (
    Field("memberId", STRING),
    Field("groupInstanceId", STRING, "3+", nullable="3+", default=None),
    Field("clientId", STRING),
    Field("clientHost", STRING),
    Field("rebalanceTimeout", INT32, "1+", default=-1),
    Field("sessionTimeout", INT32),
    Field("subscription", BYTES),
    Field("assignment", BYTES),
))
GROUP_METADATA_VALUE = Message("GroupMetadataValue", (
    Field("protocolType", STRING),
    Field("generation", INT32),
    Field("protocol", STRING, nullable="0+"),
    Field("leader", STRING, nullable="0+"),
    Field("currentStateTimestamp", INT64, "2+", default=-1),
    Field("members", Array(MEMBER_METADATA)),
), valid="0-4", flexible="4+")

# key version → (type name, key fields)
KEY_TYPES: dict[int, tuple[str, tuple[Field, ...]]] = {
    0: ("offset_commit", OFFSET_COMMIT_KEY.fields),
    1: ("offset_commit", OFFSET_COMMIT_KEY.fields),
    2: ("group_metadata", GROUP_METADATA_KEY.fields),
    3: ("consumer_group_metadata", _GROUP_KEY),
    4: ("consumer_group_partition_metadata", _GROUP_KEY),
    5: ("consumer_group_member_metadata", _MEMBER_KEY),
    6: ("consumer_group_target_assignment_metadata", _GROUP_KEY),
    7: ("consumer_group_target_assignment_member", _MEMBER_KEY),
    8: ("consumer_group_current_member_assignment", _MEMBER_KEY),
    9: ("share_group_partition_metadata", _GROUP_KEY),
    10: ("share_group_member_metadata", _MEMBER_KEY),
    11: ("share_group_metadata", _GROUP_KEY),
    12: ("share_group_target_assignment_metadata", _GROUP_KEY),
    13: ("share_group_target_assignment_member", _MEMBER_KEY),
    14: ("share_group_current_member_assignment", _MEMBER_KEY),
    15: ("share_group_state_partition_metadata", _GROUP_KEY),
    # 4.x (KIP-848 regular expressions, KIP-1071 Streams groups): record type ids and key fields of
    # group-coordinator `generated/CoordinatorRecordType` and `*Key` in the 4.4.0 jar (18 and 24 unused)
    16: ("consumer_group_regular_expression", (*_GROUP_KEY, Field("regularExpression", STRING))),
    17: ("streams_group_metadata", _GROUP_KEY),
    19: ("streams_group_member_metadata", _MEMBER_KEY),
    20: ("streams_group_target_assignment_metadata", _GROUP_KEY),
    21: ("streams_group_target_assignment_member", _MEMBER_KEY),
    22: ("streams_group_current_member_assignment", _MEMBER_KEY),
    23: ("streams_group_topology", _GROUP_KEY),
}

# Embedded consumer protocol (clients/.../ConsumerProtocol{Subscription,Assignment}.json)
_TOPIC_PARTITION = Struct("TopicPartition", (Field("topic", STRING), Field("partitions", Array(INT32))))
CONSUMER_SUBSCRIPTION = Message("ConsumerProtocolSubscription", (
    Field("topics", Array(STRING)),
    Field("userData", BYTES, nullable="0+", default=None),
    Field("ownedPartitions", Array(_TOPIC_PARTITION), "1+"),
    Field("generationId", INT32, "2+", default=-1),
    Field("rackId", STRING, "3+", nullable="3+", default=None),
), valid="0-3")
CONSUMER_ASSIGNMENT = Message("ConsumerProtocolAssignment", (
    Field("assignedPartitions", Array(_TOPIC_PARTITION)),
    Field("userData", BYTES, nullable="0+", default=None),
), valid="0-3")
CONSUMER_PROTOCOL_MAX = 3  # newer versions are read as the highest known (ConsumerProtocol.java)


# --- decoding ------------------------------------------------------------------

def decode_consumer_offsets(key: bytes | None, value: bytes | None) -> dict:
    """Decode one `__consumer_offsets` record. Raises FormatError on malformed bytes."""
    if key is None:
        raise FormatError("KAFKA_RECORDS_UNDECODABLE", "__consumer_offsets record without a key")
    decoded_key = decode_key(key)
    if value is None:
        return {"key": decoded_key, "value": None}
    return {"key": decoded_key, "value": decode_value(decoded_key["version"], value)}


def decode_key(key: bytes) -> dict:
    version = read_int16(key)
    known = KEY_TYPES.get(version)
    if known is None:
        return {"type": "unknown", "version": version, "raw": bytes(key[2:]).hex()}
    name, fields = known
    return {"type": name, **decode_version_prefixed(Message(name, fields, valid=str(version)), key)}


def decode_value(key_version: int, value: bytes) -> dict:
    """Decode a value whose schema the key's version selects."""
    schema = _value_schema(key_version)
    if schema is None:
        return {"version": read_int16(value), "raw": bytes(value[2:]).hex()}
    try:
        out = decode_version_prefixed(schema, value)
    except FormatError as exc:
        if key_version <= 2:
            raise
        # KIP-848 records changed shape during early access: degrade to raw, do not fail
        return {"version": read_int16(value), "raw": bytes(value[2:]).hex(), "error": exc.message}
    data = out.get("data")
    if key_version == 2 and data is not None and data["protocolType"] == "consumer":
        for member in data["members"]:
            member["subscription"] = decode_consumer_protocol(CONSUMER_SUBSCRIPTION, member["subscription"])
            member["assignment"] = decode_consumer_protocol(CONSUMER_ASSIGNMENT, member["assignment"])
    return out


def _value_schema(key_version: int) -> Message | None:
    if key_version in (0, 1):
        return OFFSET_COMMIT_VALUE
    if key_version == 2:
        return GROUP_METADATA_VALUE
    return GROUP_VALUES.get(key_version)


def decode_consumer_protocol(schema: Message, hex_bytes: str) -> dict | str:
    """Subscription/assignment bytes of a "consumer" group → dict; anything unparsable stays hex."""
    raw = bytes.fromhex(hex_bytes)
    try:
        version = read_int16(raw)
        if version < 0:
            return hex_bytes
        data, end = schema.decode(raw, min(version, CONSUMER_PROTOCOL_MAX), 2)
    except FormatError:
        return hex_bytes
    out = {"version": version, **data}
    if end < len(raw):
        out["unparsedTail"] = raw[end:].hex()
    return out


# --- encoding ------------------------------------------------------------------

def encode_key(version: int, data: dict) -> bytes:
    """Any known key type (its version is the record type)."""
    name, fields = KEY_TYPES[version]
    return version_prefixed(version, Message(name, fields, valid=str(version)).encode(data, version))


def encode_value(key_version: int, version: int, data: dict) -> bytes:
    """A value for the record type `key_version` at value `version` (decoded subscription dicts allowed)."""
    schema = _value_schema(key_version)
    if schema is None or not schema.supports(version):
        raise ValueError(f"no value schema for key version {key_version}, value version {version}")
    if key_version == 2:
        data = {**data, "members": [_encode_member_protocols(m) for m in data.get("members", [])]}
    return version_prefixed(version, schema.encode(data, version))


def _encode_member_protocols(member: dict) -> dict:
    out = dict(member)
    for name, schema in (("subscription", CONSUMER_SUBSCRIPTION), ("assignment", CONSUMER_ASSIGNMENT)):
        if isinstance(out.get(name), dict):
            out[name] = encode_consumer_protocol(schema, out[name])
    return out


def encode_consumer_protocol(schema: Message, data: dict) -> bytes:
    version = data["version"]
    body = schema.encode(data, min(version, CONSUMER_PROTOCOL_MAX))
    return version_prefixed(version, body) + to_bytes(data.get("unparsedTail", ""))


def encode_offset_commit_key(group: str, topic: str, partition: int, version: int = 1) -> bytes:
    return encode_key(version, {"group": group, "topic": topic, "partition": partition})


def encode_offset_commit_value(offset: int, metadata: str = "", commit_timestamp: int = -1, *,
                               leader_epoch: int = -1, expire_timestamp: int = -1,
                               version: int = 3) -> bytes:
    return encode_value(0, version, {"offset": offset, "leaderEpoch": leader_epoch, "metadata": metadata,
                                     "commitTimestamp": commit_timestamp,
                                     "expireTimestamp": expire_timestamp})


def encode_group_metadata_key(group: str) -> bytes:
    return encode_key(2, {"group": group})


def encode_group_metadata_value(data: dict[str, Any], version: int = 3) -> bytes:
    """`data` as decoded: protocolType, generation, protocol, leader, currentStateTimestamp, members."""
    return encode_value(2, version, data)


def json_value_data(key_version: int, data: dict) -> dict:
    """A decoded value's `data` as Kafka's generated JSON converters write it: tagged fields at their default
    left out, bytes as Base64 (members' decoded subscriptions and assignments as they are)."""
    schema = _value_schema(key_version)
    return data if schema is None else json_view(schema.fields, data)
