"""`__remote_log_metadata` record values (KIP-405) packed with `struct` from the storage module's message specs
(`kafka-storage-<v>.jar` `message/RemoteLogSegmentMetadata{,Update,Snapshot}Record.json`,
`RemotePartitionDeleteMetadataRecord.json`), independently of replog's decoder, for the kafka-dump-log corpus.

`RemoteLogMetadataSerde` writes each as `BytesApiMessageSerde` does (server-common
`AbstractApiMessageSerde.write`): unsigned varints frame version (1), api key, version (0), then the flexible
message body (compact strings, arrays and nullable bytes; a tagged-field section after every struct).
"""
from __future__ import annotations

import base64
import struct
from dataclasses import dataclass

from tests.brokers.share_state_records import uvarint

SEGMENT, UPDATE, PARTITION_DELETE, SNAPSHOT = 0, 1, 2, 3


@dataclass(frozen=True)
class TopicIdPartition:
    name: str
    topic_id: str
    partition: int


def _uuid(value: str) -> bytes:
    return base64.urlsafe_b64decode(value + "==")


def _compact_string(s: str) -> bytes:
    raw = s.encode()
    return uvarint(len(raw) + 1) + raw


def _nullable_bytes(b: bytes | None) -> bytes:
    return b"\x00" if b is None else uvarint(len(b) + 1) + b


def _tip(t: TopicIdPartition) -> bytes:
    return _compact_string(t.name) + _uuid(t.topic_id) + struct.pack(">i", t.partition) + b"\x00"


def _segment_id(t: TopicIdPartition, segment_id: str) -> bytes:
    return _tip(t) + _uuid(segment_id) + b"\x00"


def _epochs(epochs: dict[int, int]) -> bytes:
    return uvarint(len(epochs) + 1) + b"".join(struct.pack(">iq", e, o) + b"\x00" for e, o in epochs.items())


def _tags(txn_index_empty: bool | None) -> bytes:
    """TxnIndexEmpty (tag 0, 4.x's schema; an unknown tag to 3.9's), written when set."""
    return b"\x00" if txn_index_empty is None else b"\x01\x00\x01" + bytes([txn_index_empty])


def framed(api_key: int, body: bytes) -> bytes:
    return uvarint(1) + uvarint(api_key) + uvarint(0) + body


@dataclass(frozen=True)
class Segment:
    """The fields RemoteLogSegmentMetadataRecord and its snapshot record share."""

    start_offset: int
    end_offset: int
    broker_id: int
    max_timestamp: int
    event_timestamp: int
    epochs: dict[int, int]
    size: int
    custom: bytes | None
    state: int
    txn_index_empty: bool | None = None

    def body(self) -> bytes:
        return (struct.pack(">qqiqq", self.start_offset, self.end_offset, self.broker_id, self.max_timestamp,
                            self.event_timestamp) + _epochs(self.epochs) + struct.pack(">i", self.size)
                + _nullable_bytes(self.custom) + struct.pack(">b", self.state) + _tags(self.txn_index_empty))


def segment_metadata(t: TopicIdPartition, segment_id: str, s: Segment) -> bytes:
    return framed(SEGMENT, _segment_id(t, segment_id) + s.body())


def segment_snapshot(segment_id: str, s: Segment) -> bytes:
    return framed(SNAPSHOT, _uuid(segment_id) + s.body())


def segment_update(t: TopicIdPartition, segment_id: str, broker_id: int, event_timestamp: int,
                   custom: bytes | None, state: int) -> bytes:
    return framed(UPDATE, _segment_id(t, segment_id) + struct.pack(">iq", broker_id, event_timestamp)
                  + _nullable_bytes(custom) + struct.pack(">b", state) + b"\x00")


def partition_delete(t: TopicIdPartition, broker_id: int, event_timestamp: int, state: int) -> bytes:
    return framed(PARTITION_DELETE, _tip(t) + struct.pack(">iqb", broker_id, event_timestamp, state) + b"\x00")
