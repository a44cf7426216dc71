"""KRaft metadata records (`__cluster_metadata`, `*.checkpoint`, `bootstrap.checkpoint`) and KRaft control values.

A metadata record value is ``frameVersion`` (unsigned varint, must be 1),
``apiKey`` (unsigned varint), ``version`` (unsigned varint), then the
message body (server-common `AbstractApiMessageSerde`); every record type is
flexible from version 0. Type ids and layouts follow
`metadata/src/main/resources/common/metadata/*.json` of Kafka 4.4 (RegisterBrokerRecord
v4 and BrokerRegistrationChangeRecord v3 add `cordonedLogDirs`, read from 4.4's
generated classes); ids 6, 13 and 16 belong to records Kafka removed before release. Unknown types or versions come back
as ``{"type": id-or-name, "version": v, "raw": hex}``; bytes left after a
known record are an error, as in Kafka.

Control records of KRaft batches (`clients/.../common/message/`) are read at
schema version 0 as `ControlRecordUtils` does; their own ``version`` field is data.
"""
from __future__ import annotations

from replog.formats.errors import FormatError
from replog.formats.kafka.internal.protocol import (
    BOOL,
    BYTES,
    FLOAT64,
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
    Reader,
    Struct,
    json_view,
    write_uvarint,
)

FRAME_VERSION = 1
_F = "0+"


def _rec(name: str, valid: str, *fields: Field) -> Message:
    return Message(name, fields, valid=valid, flexible="0+")


_ENDPOINT = Struct("Endpoint", (Field("name", STRING), Field("host", STRING), Field("port", UINT16),
                                Field("securityProtocol", INT16)))
_FEATURE = Struct("Feature", (Field("name", STRING), Field("minSupportedVersion", INT16),
                              Field("maxSupportedVersion", INT16)))
_INT32S = Array(INT32)

METADATA_RECORDS: dict[int, Message] = {
    0: _rec("RegisterBrokerRecord", "0-4",
            Field("brokerId", INT32),
            Field("isMigratingZkBroker", BOOL, "2+"),
            Field("incarnationId", UUID),
            Field("brokerEpoch", INT64),
            Field("endPoints", Array(_ENDPOINT)),
            Field("features", Array(_FEATURE)),
            Field("rack", STRING, nullable=_F),
            Field("fenced", BOOL, default=True),
            Field("inControlledShutdown", BOOL, "1+"),
            Field("logDirs", Array(UUID), "3+", tag=0),
            Field("cordonedLogDirs", Array(UUID), "4+", nullable="4+", tag=1, default=None)),
    1: _rec("UnregisterBrokerRecord", "0", Field("brokerId", INT32), Field("brokerEpoch", INT64)),
    2: _rec("TopicRecord", "0", Field("name", STRING), Field("topicId", UUID)),
    3: _rec("PartitionRecord", "0-2",
            Field("partitionId", INT32, default=-1),
            Field("topicId", UUID),
            Field("replicas", _INT32S),
            Field("isr", _INT32S),
            Field("removingReplicas", _INT32S),
            Field("addingReplicas", _INT32S),
            Field("leader", INT32, default=-1),
            Field("leaderRecoveryState", INT8, tag=0, default=0),
            Field("leaderEpoch", INT32, default=-1),
            Field("partitionEpoch", INT32, default=-1),
            Field("directories", Array(UUID), "1+"),
            Field("eligibleLeaderReplicas", _INT32S, "2+", nullable="2+", tag=1, default=None),
            Field("lastKnownElr", _INT32S, "2+", nullable="2+", tag=2, default=None)),
    4: _rec("ConfigRecord", "0",
            Field("resourceType", INT8), Field("resourceName", STRING), Field("name", STRING),
            Field("value", STRING, nullable=_F)),
    5: _rec("PartitionChangeRecord", "0-2",
            Field("partitionId", INT32, default=-1),
            Field("topicId", UUID),
            Field("isr", _INT32S, nullable=_F, tag=0, default=None),
            Field("leader", INT32, tag=1, default=-2),
            Field("replicas", _INT32S, nullable=_F, tag=2, default=None),
            Field("removingReplicas", _INT32S, nullable=_F, tag=3, default=None),
            Field("addingReplicas", _INT32S, nullable=_F, tag=4, default=None),
            Field("leaderRecoveryState", INT8, tag=5, default=-1),
            Field("directories", Array(UUID), "1+", nullable="1+", tag=8, default=None),
            Field("eligibleLeaderReplicas", _INT32S, "2+", nullable="2+", tag=6, default=None),
            Field("lastKnownElr", _INT32S, "2+", nullable="2+", tag=7, default=None)),
    7: _rec("FenceBrokerRecord", "0", Field("id", INT32), Field("epoch", INT64)),
    8: _rec("UnfenceBrokerRecord", "0", Field("id", INT32), Field("epoch", INT64)),
    9: _rec("RemoveTopicRecord", "0", Field("topicId", UUID)),
    10: _rec("DelegationTokenRecord", "0",
             Field("owner", STRING), Field("requester", STRING), Field("renewers", Array(STRING)),
             Field("issueTimestamp", INT64), Field("maxTimestamp", INT64),
             Field("expirationTimestamp", INT64), Field("tokenId", STRING)),
    11: _rec("UserScramCredentialRecord", "0",
             Field("name", STRING), Field("mechanism", INT8), Field("salt", BYTES),
             Field("storedKey", BYTES), Field("serverKey", BYTES), Field("iterations", INT32)),
    12: _rec("FeatureLevelRecord", "0", Field("name", STRING), Field("featureLevel", INT16)),
    14: _rec("ClientQuotaRecord", "0",
             Field("entity", Array(Struct("EntityData", (
                 Field("entityType", STRING), Field("entityName", STRING, nullable=_F))))),
             Field("key", STRING), Field("value", FLOAT64), Field("remove", BOOL)),
    15: _rec("ProducerIdsRecord", "0",
             Field("brokerId", INT32), Field("brokerEpoch", INT64, default=-1),
             Field("nextProducerId", INT64)),
    17: _rec("BrokerRegistrationChangeRecord", "0-3",
             Field("brokerId", INT32), Field("brokerEpoch", INT64),
             Field("fenced", INT8, tag=0),
             Field("inControlledShutdown", INT8, "1+", tag=1),
             Field("logDirs", Array(UUID), "2+", tag=2),
             Field("cordonedLogDirs", Array(UUID), "3+", nullable="3+", tag=3, default=None)),
    18: _rec("AccessControlEntryRecord", "0",
             Field("id", UUID), Field("resourceType", INT8), Field("resourceName", STRING),
             Field("patternType", INT8), Field("principal", STRING), Field("host", STRING),
             Field("operation", INT8), Field("permissionType", INT8)),
    19: _rec("RemoveAccessControlEntryRecord", "0", Field("id", UUID)),
    20: _rec("NoOpRecord", "0"),
    21: _rec("ZkMigrationStateRecord", "0", Field("zkMigrationState", INT8)),
    22: _rec("RemoveUserScramCredentialRecord", "0", Field("name", STRING), Field("mechanism", INT8)),
    23: _rec("BeginTransactionRecord", "0", Field("name", STRING, nullable=_F, tag=0, default=None)),
    24: _rec("EndTransactionRecord", "0"),
    25: _rec("AbortTransactionRecord", "0", Field("reason", STRING, nullable=_F, tag=0, default=None)),
    26: _rec("RemoveDelegationTokenRecord", "0", Field("tokenId", STRING)),
    27: _rec("RegisterControllerRecord", "0",
             Field("controllerId", INT32), Field("incarnationId", UUID), Field("zkMigrationReady", BOOL),
             Field("endPoints", Array(_ENDPOINT)), Field("features", Array(_FEATURE))),
    # 4.0+: the ELR and last known ELR of the topic named (every topic when empty) cleared
    28: _rec("ClearElrRecord", "0", Field("topicName", STRING)),
    29: _rec("UnregisterControllerRecord", "0", Field("controllerId", INT32)),   # 4.4
}
RECORD_TYPES = {m.name: api_key for api_key, m in METADATA_RECORDS.items()}

_VOTER_V = Struct("Voter", (Field("voterId", INT32), Field("voterDirectoryId", UUID, "1+")))
CONTROL_VALUES: dict[int, Message] = {
    0: Message("EndTxnMarker", (Field("version", INT16), Field("coordinatorEpoch", INT32))),  # ABORT
    1: Message("EndTxnMarker", (Field("version", INT16), Field("coordinatorEpoch", INT32))),  # COMMIT
    2: _rec("LeaderChangeMessage", "0-1", Field("version", INT16), Field("leaderId", INT32),
            Field("voters", Array(_VOTER_V)), Field("grantingVoters", Array(_VOTER_V))),
    3: _rec("SnapshotHeaderRecord", "0", Field("version", INT16), Field("lastContainedLogTimestamp", INT64)),
    4: _rec("SnapshotFooterRecord", "0", Field("version", INT16)),
    5: _rec("KRaftVersionRecord", "0", Field("version", INT16), Field("kRaftVersion", INT16)),
    6: _rec("VotersRecord", "0", Field("version", INT16), Field("voters", Array(Struct("Voter", (
        Field("voterId", INT32), Field("voterDirectoryId", UUID),
        Field("endpoints", Array(Struct("Endpoint", (
            Field("name", STRING), Field("host", STRING), Field("port", UINT16))))),
        Field("kRaftVersionFeature", Struct("KRaftVersionFeature", (
            Field("minSupportedVersion", INT16), Field("maxSupportedVersion", INT16)))),
    ))))),
}
CONTROL_SCHEMA_VERSION = 0  # ControlRecordUtils.*_CURRENT_VERSION


# --- metadata records ------------------------------------------------------------

def decode_metadata_record(value: bytes | memoryview) -> dict:
    """Decode one metadata record value. Raises FormatError on malformed bytes."""
    reader = Reader(value)
    frame = reader.uvarint()
    if frame != FRAME_VERSION:
        raise FormatError("KAFKA_RECORDS_UNDECODABLE",
                          f"metadata record frame version {frame} (only {FRAME_VERSION} exists)", position=0)
    api_key = _short(reader, "type")
    version = _short(reader, "version")
    schema = METADATA_RECORDS.get(api_key)
    if schema is None or not schema.supports(version):
        return {"type": api_key if schema is None else schema.name, "version": version,
                "raw": bytes(value[reader.pos:]).hex()}
    data, end = schema.decode(value, version, reader.pos)
    if end != len(value):
        raise FormatError("KAFKA_RECORDS_UNDECODABLE",
                          f"{len(value) - end} byte(s) of garbage after {schema.name}", position=end)
    return {"type": schema.name, "version": version, "data": data}


def json_data(record: dict) -> dict:
    """A decoded record's `data` as Kafka's MetadataJsonConverters write it (tagged fields at their default
    left out, bytes as Base64); a record of an unknown type or version as it is."""
    schema = METADATA_RECORDS.get(RECORD_TYPES.get(record.get("type", ""), -1))
    if schema is None or "data" not in record:
        return record.get("data", {})
    return json_view(schema.fields, record["data"])


def _short(reader: Reader, what: str) -> int:
    value = reader.uvarint()
    if value > 0x7FFF:
        raise reader.fail(f"metadata record {what} {value} too large")
    return value


def encode_metadata_record(record_type: str | int, data: dict, version: int = 0) -> bytes:
    """Frame + type + version + body; `record_type` is a name ("TopicRecord") or an api key."""
    api_key = RECORD_TYPES[record_type] if isinstance(record_type, str) else record_type
    schema = METADATA_RECORDS[api_key]
    if not schema.supports(version):
        raise ValueError(f"{schema.name} has no version {version}")
    out = bytearray()
    for n in (FRAME_VERSION, api_key, version):
        write_uvarint(out, n)
    return bytes(out) + schema.encode(data, version)


def encode_topic_record(name: str, topic_id: str) -> bytes:
    return encode_metadata_record("TopicRecord", {"name": name, "topicId": topic_id})


def encode_partition_record(data: dict, version: int = 0) -> bytes:
    return encode_metadata_record("PartitionRecord", data, version)


def encode_partition_change_record(data: dict, version: int = 0) -> bytes:
    return encode_metadata_record("PartitionChangeRecord", data, version)


def encode_register_broker_record(data: dict, version: int = 0) -> bytes:
    return encode_metadata_record("RegisterBrokerRecord", data, version)


def encode_feature_level_record(name: str, feature_level: int) -> bytes:
    return encode_metadata_record("FeatureLevelRecord", {"name": name, "featureLevel": feature_level})


def encode_config_record(resource_type: int, resource_name: str, name: str, value: str | None) -> bytes:
    return encode_metadata_record("ConfigRecord", {"resourceType": resource_type, "resourceName": resource_name,
                                                   "name": name, "value": value})


# --- control records -------------------------------------------------------------

def decode_control_value(control_type: int, value: bytes | memoryview) -> dict:
    """Decode a control record's value by its control type (key field `type`). Raises FormatError."""
    schema = CONTROL_VALUES.get(control_type)
    if schema is None:
        return {"type": control_type, "raw": bytes(value).hex()}
    data, end = schema.decode(value, CONTROL_SCHEMA_VERSION)
    out = {"type": schema.name, "version": data["version"], "data": data}
    if end < len(value):
        out["trailingBytes"] = bytes(value[end:]).hex()
    return out


def encode_control_value(control_type: int, data: dict) -> bytes:
    return CONTROL_VALUES[control_type].encode(data, CONTROL_SCHEMA_VERSION)
