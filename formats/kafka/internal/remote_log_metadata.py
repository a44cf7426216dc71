"""`__remote_log_metadata` records (KIP-405): what TopicBasedRemoteLogMetadataManager writes about tiered segments.

Each record's value is one metadata message framed by `RemoteLogMetadataSerde` through `BytesApiMessageSerde`
(server-common/src/main/java/org/apache/kafka/server/common/serialization/AbstractApiMessageSerde.java): unsigned
varints frame version (1), api key and version, then the flexible message body. The api keys and schemas are
storage/src/main/resources/message/*.json: 0 RemoteLogSegmentMetadataRecord, 1 RemoteLogSegmentMetadataUpdateRecord,
2 RemotePartitionDeleteMetadataRecord, 3 RemoteLogSegmentMetadataSnapshotRecord. TxnIndexEmpty (tag 0 of 0 and 3)
came with 4.0; 3.9's schema reads it as an unknown tag, so it is decoded here either way. The key is not used.
Output: ``{"type": <record name>, "frameVersion", "apiKey", "version", "data"}``.
"""
from __future__ import annotations

from replog.formats.kafka.internal.protocol import (
    BOOL,
    BYTES,
    INT8,
    INT32,
    INT64,
    STRING,
    UUID,
    Array,
    Field,
    Message,
    Reader,
    Struct,
)

FRAME_VERSION = 1
_TOPIC_ID_PARTITION = Struct("TopicIdPartitionEntry", (
    Field("name", STRING), Field("id", UUID), Field("partition", INT32)))
_SEGMENT_ID = Field("remoteLogSegmentId", Struct("RemoteLogSegmentIdEntry", (
    Field("topicIdPartition", _TOPIC_ID_PARTITION), Field("id", UUID))))
_SEGMENT_FIELDS = (
    Field("startOffset", INT64), Field("endOffset", INT64), Field("brokerId", INT32),
    Field("maxTimestampMs", INT64), Field("eventTimestampMs", INT64),
    Field("segmentLeaderEpochs", Array(Struct("SegmentLeaderEpochEntry", (
        Field("leaderEpoch", INT32), Field("offset", INT64))))),
    Field("segmentSizeInBytes", INT32), Field("customMetadata", BYTES, nullable="0+", default=None),
    Field("remoteLogSegmentState", INT8), Field("txnIndexEmpty", BOOL, tag=0, default=False))


def _message(name: str, *fields: Field) -> Message:
    return Message(name, fields, valid="0", flexible="0+")


MESSAGES = {
    0: _message("RemoteLogSegmentMetadataRecord", _SEGMENT_ID, *_SEGMENT_FIELDS),
    1: _message("RemoteLogSegmentMetadataUpdateRecord", _SEGMENT_ID, Field("brokerId", INT32),
                Field("eventTimestampMs", INT64), Field("customMetadata", BYTES, nullable="0+", default=None),
                Field("remoteLogSegmentState", INT8)),
    2: _message("RemotePartitionDeleteMetadataRecord", Field("topicIdPartition", _TOPIC_ID_PARTITION),
                Field("brokerId", INT32), Field("eventTimestampMs", INT64), Field("remotePartitionDeleteState", INT8)),
    3: _message("RemoteLogSegmentMetadataSnapshotRecord", Field("segmentId", UUID), *_SEGMENT_FIELDS),
}
# storage-api RemoteLogSegmentState / RemotePartitionDeleteState: the enum constant of each id
SEGMENT_STATES = ("COPY_SEGMENT_STARTED", "COPY_SEGMENT_FINISHED", "DELETE_SEGMENT_STARTED", "DELETE_SEGMENT_FINISHED")
PARTITION_DELETE_STATES = ("DELETE_PARTITION_MARKED", "DELETE_PARTITION_STARTED", "DELETE_PARTITION_FINISHED")


def decode_remote_log_metadata(value: bytes | None) -> dict | None:
    """One `__remote_log_metadata` record's value; None for a null value. A frame, api key or version no schema
    here reads is returned with the body as `raw` hex, bytes after the message as `trailingBytes` (Kafka's serde
    refuses both; the caller says so). Raises FormatError on a body its schema cannot read."""
    if value is None:
        return None
    r = Reader(value)
    frame = r.uvarint()
    head: dict = {"frameVersion": frame}
    if frame != FRAME_VERSION:
        return {**head, "raw": bytes(value[r.pos:]).hex()}
    api_key, version = r.uvarint(), r.uvarint()
    message = MESSAGES.get(api_key)
    head.update(apiKey=api_key, version=version)
    if message is None or not message.supports(version):
        return {**head, "raw": bytes(value[r.pos:]).hex()}
    data, end = message.decode(value, version, r.pos)
    out = {"type": message.name, **head, "data": data}
    if end < len(value):
        out["trailingBytes"] = bytes(value[end:]).hex()
    return out
