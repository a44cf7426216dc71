"""`partition.metadata` (reference §8.6): the topic id of a replica dir.

    version: 0
    topic_id: <22-char base64url of the 16 UUID bytes>      (no trailing newline)

Read as `PartitionMetadataReadBuffer` does: two lines split on `:\\s+`,
version >= 0, the all-zero UUID rejected; later lines are ignored, as there.
"""
from __future__ import annotations

import base64
import re
import uuid
from typing import NamedTuple

from replog.formats.errors import FormatError

CODE = "KAFKA_PARTITION_METADATA_INVALID"
CURRENT_VERSION = 0
_KEY_SEP = re.compile(r":[ \t\n\x0b\f\r]+")
_B64URL_22 = re.compile(r"[A-Za-z0-9_-]{22}", re.ASCII)
_JAVA_INT = re.compile(r"[+-]?[0-9]+", re.ASCII)
_EOL = re.compile(r"\r\n|\r|\n")


class PartitionMetadata(NamedTuple):
    version: int
    topic_id: str  # 22-char base64url, as Kafka prints it

    @property
    def topic_id_uuid(self) -> uuid.UUID:
        return topic_id_to_uuid(self.topic_id)


def topic_id_to_uuid(text: str) -> uuid.UUID:
    """Kafka `Uuid.fromString`, strict: exactly 22 canonical base64url chars."""
    if not _B64URL_22.fullmatch(text):
        raise ValueError(f"{text[:40]!r} is not 22 base64url characters")
    raw = base64.urlsafe_b64decode(text + "==")
    if uuid_to_topic_id(uuid.UUID(bytes=raw)) != text:
        raise ValueError(f"{text!r} is not the canonical encoding of a UUID (stray low bits)")
    return uuid.UUID(bytes=raw)


def uuid_to_topic_id(value: uuid.UUID) -> str:
    """Kafka `Uuid.toString`: base64url of the 16 bytes without padding."""
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode("ascii")


def _value(line: str | None, key: str, position: int) -> str:
    parts = _KEY_SEP.split(line, maxsplit=1) if line is not None else []
    if len(parts) != 2 or parts[0] != key:
        raise FormatError(CODE, f"malformed line, expected '{key}: ...': {(line or '')[:80]!r}",
                          position=position)
    return parts[1]


def parse_partition_metadata(data: bytes) -> PartitionMetadata:
    """Version and topic id of a `partition.metadata`; `FormatError` on any defect."""
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as e:
        raise FormatError(CODE, f"not UTF-8: {e.reason}", position=e.start) from None
    lines = _EOL.split(text, maxsplit=2)
    first = lines[0] if text else None
    version_text = _value(first, "version", 0)
    if not _JAVA_INT.fullmatch(version_text) or not 0 <= int(version_text) < 2**31:
        raise FormatError(CODE, f"unrecognized version {version_text[:40]!r}", position=0)
    eol = _EOL.search(text)
    second_at = len(text[: eol.end()].encode("utf-8")) if eol else len(data)
    second = lines[1] if len(lines) > 1 else None
    topic_text = _value(second, "topic_id", second_at)
    try:
        topic_uuid = topic_id_to_uuid(topic_text)
    except ValueError as e:
        raise FormatError(CODE, f"invalid topic id: {e}", position=second_at) from None
    if topic_uuid.int == 0:
        raise FormatError(CODE, "the all-zero topic id is reserved", position=second_at)
    return PartitionMetadata(int(version_text), topic_text)


def build_partition_metadata(meta: PartitionMetadata) -> bytes:
    """Bytes as the broker writes them: two lines, no trailing newline."""
    if not 0 <= meta.version < 2**31:
        raise ValueError(f"version {meta.version} out of range")
    if topic_id_to_uuid(meta.topic_id).int == 0:
        raise ValueError("the all-zero topic id is reserved")
    return f"version: {meta.version}\ntopic_id: {meta.topic_id}".encode()
