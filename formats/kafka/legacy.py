"""Legacy Kafka messages, magic v0 and v1 (Kafka < 0.11; docs/reference/kafka.md §4).

A log entry is `offset int64 | message_size int32 | message`; the message is
`crc uint32 | magic | attributes | [timestamp, v1] | key | value`, and the
CRC-32 (IEEE) covers [magic, end). A compressed entry is a wrapper whose value
decompresses to further (uncompressed) entries: v0 inner offsets are absolute,
v1 inner offsets are relative to the wrapper, whose offset is the last one.

The construct layout below is the source of truth and the writer;
`read_legacy_entry` is the fast reader, checked against it in tests.
"""
from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from typing import NamedTuple

from construct import Adapter, Bytes, If, Int8sb, Int32sb, Int32ub, Int64sb, Rebuild, Struct, this

from replog.formats.errors import FormatError
from replog.formats.kafka import codecs
from replog.formats.kafka.batch import MAX_BATCH_RECORDS

# --- layout ------------------------------------------------------------------------


class _NullableBytes(Adapter):
    """int32 length then bytes; length -1 is a null (None)."""

    def _decode(self, obj, context, path):
        return obj.data

    def _encode(self, obj, context, path):
        return {"data": obj}


NULLABLE_BYTES = _NullableBytes(Struct(
    "length" / Rebuild(Int32sb, lambda ctx: -1 if ctx.data is None else len(ctx.data)),
    "data" / If(this.length >= 0, Bytes(this.length)),
))

# The CRC-covered part of a message: [magic, end).
_MESSAGE_FIELDS = (
    "magic" / Int8sb,
    "attributes" / Int8sb,
    "timestamp" / If(this.magic == 1, Int64sb),  # v1 only
    "key" / NULLABLE_BYTES,
    "value" / NULLABLE_BYTES,
)
MESSAGE = Struct(*_MESSAGE_FIELDS)
LEGACY_ENTRY = Struct(
    "offset" / Int64sb,
    "message_size" / Int32sb,  # bytes after this field: crc .. end of value
    "crc" / Int32ub,
    *_MESSAGE_FIELDS,
)

LOG_OVERHEAD = 12  # offset + message_size
MAGIC_POSITION = 16  # same for every magic: how readers dispatch
RECORD_OVERHEAD = {0: 14, 1: 22}  # minimum message_size per magic
CODEC_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08
NO_TIMESTAMP = -1
CREATE_TIME, LOG_APPEND_TIME, NO_TIMESTAMP_TYPE = "CreateTime", "LogAppendTime", "NoTimestampType"

_HEADER = struct.Struct(">qiIbb")  # offset, message_size, crc, magic, attributes
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")

# --- reader ------------------------------------------------------------------------


class LegacyEntry(NamedTuple):
    """One shallow log entry as it sits in the buffer (key/value are views)."""

    position: int
    offset: int
    size: int  # total entry bytes: 12 + message_size
    crc: int
    crc_valid: bool
    magic: int
    attributes: int
    codec: int
    timestamp_type: str
    timestamp: int
    key: memoryview | None
    value: memoryview | None


class LegacyRecord(NamedTuple):
    """One logical message, after unwrapping compression; offsets are absolute."""

    offset: int
    timestamp: int
    timestamp_type: str
    key: bytes | None
    value: bytes | None
    crc: int
    crc_valid: bool
    magic: int
    attributes: int


def _timestamp_type(magic: int, attributes: int) -> str:
    if magic == 0:
        return NO_TIMESTAMP_TYPE
    return LOG_APPEND_TIME if attributes & TIMESTAMP_TYPE_BIT else CREATE_TIME


def _read_bytes(buf: memoryview, pos: int, end: int, what: str, entry_pos: int,
                offset: int) -> tuple[memoryview | None, int]:
    """A nullable int32-length field that must end within the message."""
    if end - pos < 4:
        raise FormatError("KAFKA_RECORDS_UNDECODABLE", f"message ends before its {what} length",
                          entry_pos, offset)
    length = _I32.unpack_from(buf, pos)[0]
    pos += 4
    if length == -1:
        return None, pos
    if length < 0 or length > end - pos:
        raise FormatError("KAFKA_RECORDS_UNDECODABLE",
                          f"{what} length {length} does not fit the {end - pos} bytes left in the message",
                          entry_pos, offset)
    return buf[pos:pos + length], pos + length


def read_legacy_entry(buf: bytes | memoryview, pos: int) -> LegacyEntry:
    """Parse the v0/v1 log entry starting at `pos`; FormatError if it cannot be one."""
    view = memoryview(buf).cast("B") if not isinstance(buf, memoryview) else buf
    total = len(view)
    if total - pos < LOG_OVERHEAD:
        raise FormatError("KAFKA_TRAILING_BYTES", f"{total - pos} bytes cannot hold a log entry header", pos)
    offset = _I64.unpack_from(view, pos)[0]
    message_size = _I32.unpack_from(view, pos + 8)[0]
    if message_size < RECORD_OVERHEAD[0]:
        raise FormatError("KAFKA_BATCH_LENGTH_TOO_SMALL",
                          f"message size {message_size} below the minimum of 14", pos, offset)
    end = pos + LOG_OVERHEAD + message_size
    if end > total:
        raise FormatError("KAFKA_TORN_TAIL",
                          f"entry of {LOG_OVERHEAD + message_size} bytes runs past the end of the data"
                          f" ({total - pos} bytes left)", pos, offset)
    _, _, crc, magic, attributes = _HEADER.unpack_from(view, pos)
    if magic not in RECORD_OVERHEAD:
        raise FormatError("KAFKA_BATCH_BAD_MAGIC", f"magic {magic} is not a legacy message (0 or 1)", pos, offset)
    if message_size < RECORD_OVERHEAD[magic]:
        raise FormatError("KAFKA_BATCH_LENGTH_TOO_SMALL",
                          f"message size {message_size} below the v{magic} minimum of {RECORD_OVERHEAD[magic]}",
                          pos, offset)
    p = pos + 18
    timestamp = NO_TIMESTAMP
    if magic == 1:
        timestamp = _I64.unpack_from(view, p)[0]
        p += 8
    key, p = _read_bytes(view, p, end, "key", pos, offset)
    value, p = _read_bytes(view, p, end, "value", pos, offset)
    crc_valid = zlib.crc32(view[pos + MAGIC_POSITION:end]) == crc
    return LegacyEntry(pos, offset, end - pos, crc, crc_valid, magic, attributes, attributes & CODEC_MASK,
                       _timestamp_type(magic, attributes), timestamp, key, value)


def _as_bytes(v: memoryview | None) -> bytes | None:
    return None if v is None else bytes(v)


def _record(e: LegacyEntry, offset: int, timestamp: int, timestamp_type: str) -> LegacyRecord:
    return LegacyRecord(offset, timestamp, timestamp_type, _as_bytes(e.key), _as_bytes(e.value),
                        e.crc, e.crc_valid, e.magic, e.attributes)


def _read_inner(data: bytes, wrapper: LegacyEntry) -> list[LegacyEntry]:
    """All entries of a decompressed wrapper value; damage is UNDECODABLE."""
    entries, pos = [], 0
    while pos < len(data):
        try:
            e = read_legacy_entry(data, pos)
        except FormatError as err:
            raise FormatError("KAFKA_RECORDS_UNDECODABLE",
                              f"inner message at byte {pos} of the decompressed value: {err.message}",
                              wrapper.position, wrapper.offset) from None
        if e.codec:
            raise FormatError("KAFKA_RECORDS_UNDECODABLE", f"nested compression in inner message at byte {pos}",
                              wrapper.position, wrapper.offset)
        if e.magic != wrapper.magic:
            raise FormatError("KAFKA_RECORDS_UNDECODABLE",
                              f"inner message magic {e.magic} differs from wrapper magic {wrapper.magic}",
                              wrapper.position, wrapper.offset)
        entries.append(e)
        pos += e.size
        if len(entries) > MAX_BATCH_RECORDS:
            raise FormatError("KAFKA_BATCH_TOO_MANY_RECORDS", f"more than {MAX_BATCH_RECORDS} inner messages: "
                              "replog decodes no more of one wrapper", wrapper.position, wrapper.offset)
    if not entries:
        raise FormatError("KAFKA_RECORDS_UNDECODABLE", "compressed wrapper holds no messages",
                          wrapper.position, wrapper.offset)
    return entries


def _offset_shift(wrapper: LegacyEntry, last_inner: int) -> int:
    """What to add to inner offsets: 0 (absolute) or the v1 relative base."""
    if wrapper.magic == 0 or wrapper.offset == 0:
        return 0
    if wrapper.offset < last_inner:
        raise FormatError("KAFKA_RECORDS_UNDECODABLE",
                          f"wrapper offset {wrapper.offset} below last inner relative offset {last_inner}",
                          wrapper.position, wrapper.offset)
    return wrapper.offset - last_inner


def inner_records(entry: LegacyEntry, *, limit: int | None = None) -> list[LegacyRecord]:
    """The logical messages of an entry: itself, or its decompressed inner messages."""
    if entry.codec == codecs.NONE:
        return [_record(entry, entry.offset, entry.timestamp, entry.timestamp_type)]
    if entry.value is None:
        raise FormatError("KAFKA_RECORDS_UNDECODABLE", "compressed wrapper has a null value",
                          entry.position, entry.offset)
    try:
        data = codecs.decompress(entry.codec, entry.value, magic=entry.magic, limit=limit)
    except FormatError as err:
        raise FormatError(err.code, err.message, entry.position, entry.offset) from None
    inner = _read_inner(data, entry)
    shift = _offset_shift(entry, inner[-1].offset)
    append_time = entry.timestamp_type == LOG_APPEND_TIME
    return [_record(e, e.offset + shift,
                    entry.timestamp if append_time else e.timestamp,
                    entry.timestamp_type if entry.magic else NO_TIMESTAMP_TYPE)
            for e in inner]


# --- writer ------------------------------------------------------------------------


def build_message(offset: int, key: bytes | None, value: bytes | None, *, magic: int,
                  timestamp: int = NO_TIMESTAMP, timestamp_type: int = 0, attributes: int = 0) -> bytes:
    """One log entry with its CRC; v0 drops timestamp and timestamp type."""
    if magic not in RECORD_OVERHEAD:
        raise ValueError(f"legacy magic must be 0 or 1, not {magic}")
    fields = {
        "magic": magic,
        "attributes": attributes | (TIMESTAMP_TYPE_BIT if magic == 1 and timestamp_type else 0),
        "timestamp": timestamp if magic == 1 else None,
        "key": key,
        "value": value,
    }
    body = MESSAGE.build(fields)
    return LEGACY_ENTRY.build({"offset": offset, "message_size": 4 + len(body),
                               "crc": zlib.crc32(body), **fields})


def build_compressed(records: Sequence[tuple[int, int, bytes | None, bytes | None]], *, magic: int, codec: int,
                     wrapper_offset: int | None = None, timestamp_type: int = 0,
                     log_append_time: int | None = None) -> bytes:
    """A compressed wrapper over (offset, timestamp, key, value) records, as Java writes it.

    Inner offsets are absolute for v0 and relative to the first record for v1;
    the wrapper offset defaults to the last record's offset. The v1 wrapper
    timestamp is the max inner timestamp (CreateTime) or `log_append_time`.
    """
    if not records:
        raise ValueError("a compressed wrapper needs at least one record")
    base = records[0][0] if magic == 1 else 0
    inner = b"".join(build_message(off - base, key, value, magic=magic, timestamp=ts)
                     for off, ts, key, value in records)
    max_ts = max(ts for _, ts, _, _ in records)
    wrapper_ts = log_append_time if timestamp_type and log_append_time is not None else max_ts
    return build_message(records[-1][0] if wrapper_offset is None else wrapper_offset, None,
                         codecs.compress(codec, inner, magic=magic), magic=magic, timestamp=wrapper_ts,
                         timestamp_type=timestamp_type, attributes=codec)
