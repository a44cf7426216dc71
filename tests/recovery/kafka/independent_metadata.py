"""A KRaft metadata log written without replog's encoders: records from the schemas, batches by kafka-python.

Each record value is `frameVersion apiKey version body` as unsigned varints
(server-common `AbstractApiMessageSerde`); bodies follow the flexible-version
rules of Kafka's message generator (compact arrays and strings: length + 1 as
an unsigned varint, null as 0; a UUID as 16 bytes; tagged fields at the end,
sorted by tag, each `tag size value`) and the field lists of
`metadata/src/main/resources/common/metadata/{TopicRecord,PartitionRecord,
PartitionChangeRecord,BeginTransactionRecord,AbortTransactionRecord,FeatureLevelRecord,ConfigRecord,
ClearElrRecord}.json`.
"""
from __future__ import annotations

import base64
import struct
from pathlib import Path

import pytest

TS = 1_700_000_000_000


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def uuid(text: str) -> bytes:
    """A topic id as Kafka prints it (base64url, no padding) -> its 16 bytes."""
    return base64.urlsafe_b64decode(text + "==")


def int32s(values: list[int] | None) -> bytes:
    """A compact (nullable) array of int32."""
    if values is None:
        return uvarint(0)
    return uvarint(len(values) + 1) + b"".join(struct.pack(">i", v) for v in values)


def tagged(fields: dict[int, bytes]) -> bytes:
    out = uvarint(len(fields))
    for tag in sorted(fields):
        out += uvarint(tag) + uvarint(len(fields[tag])) + fields[tag]
    return out


def value(api_key: int, version: int, body: bytes) -> bytes:
    return uvarint(1) + uvarint(api_key) + uvarint(version) + body


def topic_record(name: str, topic_id: str) -> bytes:
    raw = name.encode()
    return value(2, 0, uvarint(len(raw) + 1) + raw + uuid(topic_id) + tagged({}))


def partition_record(topic_id: str, partition: int, replicas: list[int], isr: list[int], leader: int,
                     leader_epoch: int, partition_epoch: int = 0, recovering: bool = False) -> bytes:
    """PartitionRecord version 0: the tagged LeaderRecoveryState (tag 0) only when not its default 0."""
    body = (struct.pack(">i", partition) + uuid(topic_id) + int32s(replicas) + int32s(isr) + int32s([])
            + int32s([]) + struct.pack(">i", leader) + struct.pack(">ii", leader_epoch, partition_epoch))
    return value(3, 0, body + tagged({0: b"\x01"} if recovering else {}))


def partition_change(topic_id: str, partition: int, *, leader: int | None = None, isr: list[int] | None = None,
                     recovery: int | None = None, elr: list[int] | None = None,
                     last_known_elr: list[int] | None = None) -> bytes:
    """PartitionChangeRecord: tags 0 ISR, 1 Leader, 5 LeaderRecoveryState; version 2 when the ELR (tag 6) or the
    last known ELR (tag 7) is set."""
    tags: dict[int, bytes] = {}
    if isr is not None:
        tags[0] = int32s(isr)
    if leader is not None:
        tags[1] = struct.pack(">i", leader)
    if recovery is not None:
        tags[5] = struct.pack(">b", recovery)
    if elr is not None:
        tags[6] = int32s(elr)
    if last_known_elr is not None:
        tags[7] = int32s(last_known_elr)
    v2 = elr is not None or last_known_elr is not None
    return value(5, 2 if v2 else 0, struct.pack(">i", partition) + uuid(topic_id) + tagged(tags))


def string(text: str | None) -> bytes:
    """A compact (nullable) string."""
    if text is None:
        return uvarint(0)
    raw = text.encode()
    return uvarint(len(raw) + 1) + raw


def feature_level(name: str, level: int) -> bytes:
    """FeatureLevelRecord version 0 (api key 12): name, int16 level."""
    return value(12, 0, string(name) + struct.pack(">h", level) + tagged({}))


def config(resource_type: int, resource: str, key: str, text: str | None) -> bytes:
    """ConfigRecord version 0 (api key 4): int8 resource type (2 topic, 4 broker), resource name, name, value."""
    return value(4, 0, struct.pack(">b", resource_type) + string(resource) + string(key) + string(text) + tagged({}))


def clear_elr(topic: str) -> bytes:
    """ClearElrRecord version 0 (api key 28, 4.0+): the topic name, empty for every topic."""
    return value(28, 0, string(topic) + tagged({}))


def begin_transaction() -> bytes:
    return value(23, 0, tagged({}))


def abort_transaction() -> bytes:
    return value(25, 0, tagged({}))


def batch(offset: int, values: list[bytes], epoch: int = 1) -> bytes:
    """One v2 batch of null-key records by kafka-python, base offset and leader epoch patched in."""
    records = pytest.importorskip("kafka.record.default_records")
    builder = records.DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                                producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                                batch_size=1 << 20)
    for i, v in enumerate(values):
        builder.append(i, timestamp=TS + offset + i, key=None, value=v, headers=[])
    raw = bytearray(builder.build())
    struct.pack_into(">q", raw, 0, offset)
    struct.pack_into(">i", raw, 12, epoch)
    return bytes(raw)


def write_metadata_log(log_dir: Path, values: list[bytes], per_batch: int = 1) -> Path:
    """`log_dir/__cluster_metadata-0/00000000000000000000.log` holding `values` at offsets 0, 1, ..."""
    d = log_dir / "__cluster_metadata-0"
    d.mkdir(parents=True, exist_ok=True)
    chunks = [values[i:i + per_batch] for i in range(0, len(values), per_batch)]
    offsets = [i * per_batch for i in range(len(chunks))]
    (d / "00000000000000000000.log").write_bytes(b"".join(batch(o, c) for o, c in zip(offsets, chunks, strict=True)))
    return d


def write_meta_properties(log_dir: Path, node_id: int) -> None:
    """A KRaft log dir's meta.properties (Java Properties text)."""
    log_dir.mkdir(parents=True, exist_ok=True)
    (log_dir / "meta.properties").write_text(f"#\n#Tue Nov 14 06:46:06 UTC 2023\nnode.id={node_id}\nversion=1\n"
                                             "cluster.id=hSCzevIQRUa-ojqTd_8C5w\n")


def config_record(resource_type: int, resource_name: str, name: str, setting: str | None) -> bytes:
    """ConfigRecord version 0: resource type (int8), resource name, config name, nullable value."""
    def text(s: str | None) -> bytes:
        return uvarint(0) if s is None else uvarint(len(s.encode()) + 1) + s.encode()
    return value(4, 0, struct.pack(">b", resource_type) + text(resource_name) + text(name) + text(setting)
                 + tagged({}))
