"""A partition's `remote_log_snapshot`: the remote-log metadata TopicBasedRemoteLogMetadataManager cached (KIP-405).

Kafka 3.0 to 3.7 kept, in each partition dir, the remote segments' metadata it had consumed from
`__remote_log_metadata`, so a restarted broker need not read the topic again (apache/kafka storage/src/main/java/
org/apache/kafka/server/log/remote/metadata/storage/RemoteLogMetadataSnapshotFile.java, branch 3.7; 3.7 creates it
empty when nothing was cached). 3.8 removed the file (KAFKA-16161, commit 3a379dae0ce): newer brokers neither write
nor read it, but a cluster upgraded from 3.7 keeps the old files. Layout, big-endian:

    header: version int16 (0, `Snapshot.CURRENT_VERSION`) | metadata partition int32 | metadata partition offset
            int64 | entries int32                                                     (18 bytes, `HEADER_SIZE`)
    entry:  length int32 | a `RemoteLogMetadataSerde` message, always a RemoteLogSegmentMetadataSnapshotRecord
            (api key 3; `formats.kafka.internal.remote_log_metadata`)

`read` returns no snapshot for an empty file and throws on a version other than 0, a short length or entry, an
entry that is not a snapshot record (its cast fails) or an entry count other than the header's; each is a
`FormatError` here. Entries are decoded one at a time (`iter_entries`): memory does not grow with the file.
"""
from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from replog.formats.errors import FormatError
from replog.formats.kafka.internal.protocol import write_uvarint
from replog.formats.kafka.internal.remote_log_metadata import FRAME_VERSION, MESSAGES, decode_remote_log_metadata

FILE_NAME = "remote_log_snapshot"          # RemoteLogMetadataSnapshotFile.COMMITTED_LOG_METADATA_SNAPSHOT_FILE_NAME
HEADER = struct.Struct(">hiqi")
LENGTH = struct.Struct(">i")
CURRENT_VERSION = 0
SNAPSHOT_RECORD = 3                        # RemoteLogSegmentMetadataSnapshotRecord's api key
CODE = "KAFKA_REMOTE_LOG_SNAPSHOT_INVALID"


@dataclass(frozen=True)
class SnapshotHeader:
    version: int
    metadata_partition: int                # the `__remote_log_metadata` partition it was consumed from
    metadata_partition_offset: int         # consumed up to this offset of it
    entries: int


@dataclass
class RemoteLogSnapshot:
    header: SnapshotHeader
    segments: list[dict[str, Any]] = field(default_factory=list)   # each entry's decoded record `data`


def parse_header(data: bytes) -> SnapshotHeader:
    if len(data) < HEADER.size:
        raise FormatError(CODE, f"remote_log_snapshot: header needs {HEADER.size} bytes, file has {len(data)}", 0)
    version, partition, offset, entries = HEADER.unpack_from(data, 0)
    if version != CURRENT_VERSION:
        raise FormatError(CODE, f"remote_log_snapshot: version {version}, Kafka reads only {CURRENT_VERSION} "
                                "(Snapshot: 'Unexpected version received')", 0)
    if entries < 0:
        raise FormatError(CODE, f"remote_log_snapshot: negative entry count {entries}", 14)
    return SnapshotHeader(version, partition, offset, entries)


def iter_entries(data: bytes, pos: int = HEADER.size) -> Iterator[tuple[int, dict[str, Any]]]:
    """(position, decoded snapshot record data) of each entry after the header, as Kafka's `read` loop reads them."""
    while pos < len(data):
        if len(data) - pos < LENGTH.size:
            raise FormatError(CODE, "remote_log_snapshot: an entry's length is cut short (Kafka: 'Invalid amount "
                                    "of data read for the length of an entry')", pos)
        (length,) = LENGTH.unpack_from(data, pos)
        if length < 0 or len(data) - pos - LENGTH.size < length:
            raise FormatError(CODE, f"remote_log_snapshot: an entry of {length} bytes at {pos} does not fit the "
                                    "file (Kafka: 'Invalid amount of data read')", pos)
        body = data[pos + LENGTH.size:pos + LENGTH.size + length]
        yield pos, _snapshot_record(body, pos)
        pos += LENGTH.size + length


def _snapshot_record(body: bytes, pos: int) -> dict[str, Any]:
    try:
        decoded = decode_remote_log_metadata(body)
    except FormatError as e:
        raise FormatError(CODE, f"remote_log_snapshot: the entry at {pos} cannot be decoded: {e.message}",
                          pos) from None
    if (decoded is None or decoded.get("apiKey") != SNAPSHOT_RECORD or "data" not in decoded
            or "trailingBytes" in decoded):
        what = "bytes after the record" if decoded and "trailingBytes" in decoded else \
            f"api key {decoded.get('apiKey') if decoded else None}"
        raise FormatError(CODE, f"remote_log_snapshot: the entry at {pos} is not a RemoteLogSegmentMetadataSnapshot"
                                f"Record ({what}); Kafka's read casts every entry to one", pos)
    data: dict[str, Any] = decoded["data"]
    return data


def parse_remote_log_snapshot(data: bytes) -> RemoteLogSnapshot | None:
    """The whole snapshot (None for an empty file, as Kafka reads it). Raises FormatError as Kafka's read fails."""
    if not data:
        return None
    header = parse_header(data)
    snap = RemoteLogSnapshot(header)
    for _, entry in iter_entries(data):
        snap.segments.append(entry)
    if len(snap.segments) != header.entries:
        raise FormatError(CODE, f"remote_log_snapshot: the header counts {header.entries} entries, the file holds "
                                f"{len(snap.segments)} (Kafka: 'Unexpected entries in the snapshot file')", 14)
    return snap


def build_remote_log_snapshot(metadata_partition: int, metadata_partition_offset: int,
                              segments: list[dict[str, Any]], version: int = 0) -> bytes:
    """The file `RemoteLogMetadataSnapshotFile.write` writes for these snapshot records (`version` is the record's
    schema version, 0 in every Kafka that wrote the file)."""
    out = bytearray(HEADER.pack(CURRENT_VERSION, metadata_partition, metadata_partition_offset, len(segments)))
    for segment in segments:
        body = bytearray()
        for value in (FRAME_VERSION, SNAPSHOT_RECORD, version):
            write_uvarint(body, value)
        body += MESSAGES[SNAPSHOT_RECORD].encode(segment, version)
        out += LENGTH.pack(len(body)) + body
    return bytes(out)
