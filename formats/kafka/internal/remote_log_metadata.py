"""`__remote_log_metadata` records (KIP-405): what TopicBasedRemoteLogMetadataManager writes about tiered segments.

Each record's value is one metadata message framed by `RemoteLogMetadataSerde` through `BytesApiMessageSerde`
(server-common/src/main/java/org/apache/kafka/server/common/serialization/AbstractApiMessageSerde.java): unsigned
varints frame version (1), api key and version, then the flexible message body. The api keys and schemas are
storage/src/main/resources/message/*.json: 0 RemoteLogSegmentMetadataRecord, 1 RemoteLogSegmentMetadataUpdateRecord,
2 RemotePartitionDeleteMetadataRecord, 3 RemoteLogSegmentMetadataSnapshotRecord. TxnIndexEmpty (tag 0 of 0 and 3)
came with 4.0; 3.9's schema reads it as an unknown tag, so it is decoded here either way. The key is not used.
Output: ``{"type": <record name>, "apiKey", "version", "data"}``.
"""
from __future__ import annotations

from replog.formats.errors import FormatError
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
    """One `__remote_log_metadata` record's value; None for a null value. Raises FormatError on bytes no frame,
    api key or schema reads (trailing bytes among them: `BytesApiMessageSerde` reads the whole value)."""
    if value is None:
        return None
    r = Reader(value)
    frame = r.uvarint()
    if frame != FRAME_VERSION:
        raise r.fail(f"frame version {frame}, not {FRAME_VERSION}")
    api_key, version = r.uvarint(), r.uvarint()
    message = MESSAGES.get(api_key)
    if message is None or not message.supports(version):
        raise r.fail(f"no remote log metadata record of api key {api_key} version {version}")
    data, end = message.decode(value, version, r.pos)
    if end != len(value):
        raise FormatError("KAFKA_RECORDS_UNDECODABLE", f"{len(value) - end} bytes after the {message.name}",
                          position=end)
    return {"type": message.name, "apiKey": api_key, "version": version, "data": data}
