"""Record batch, magic v2 (Kafka >= 0.11): header, records, CRC, writer.

`BATCH_HEADER` (construct) is the declarative source of truth for the 61-byte
header and `RECORD` for one record; `HEADER` (struct) and the varint loop in
`decode_records` are the hot path, checked against them in tests.
Byte positions below are relative to the batch start (docs/reference/kafka.md §2).
"""
from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import construct as cs
from crc32c import crc32c

from replog.formats.errors import FormatError
from replog.formats.kafka import codecs
from replog.formats.kafka.varint import encode_varint, read_varint, read_varlong
from replog.formats.layout import field_positions, struct_of

# The wire layout, in `DefaultRecordBatch`'s names; decoded, it is a `BatchInfo` (the block's names:
# base_timestamp -> first_timestamp, records_count -> count, batch_length -> size).
BATCH_HEADER = cs.Struct(
    "base_offset" / cs.Int64sb,
    "batch_length" / cs.Int32sb,            # bytes after this field: size = batch_length + 12
    "partition_leader_epoch" / cs.Int32sb,  # not covered by the CRC
    "magic" / cs.Int8sb,
    "crc" / cs.Int32ub,                     # CRC-32C of bytes [21, end)
    "attributes" / cs.Int16sb,
    "last_offset_delta" / cs.Int32sb,
    "base_timestamp" / cs.Int64sb,
    "max_timestamp" / cs.Int64sb,
    "producer_id" / cs.Int64sb,
    "producer_epoch" / cs.Int16sb,
    "base_sequence" / cs.Int32sb,
    "records_count" / cs.Int32sb,
)

VARINT = cs.ZigZag
RECORD_HEADER = cs.Struct("key" / cs.PascalString(VARINT, "utf8"),
                          "value" / cs.Prefixed(VARINT, cs.GreedyBytes))
RECORD_BODY = cs.Struct(
    "attributes" / cs.Int8ub,  # unsigned, as every decoder reads it (RECORD_SCHEMA's uint8; unused by Kafka)
    "timestamp_delta" / VARINT,
    "offset_delta" / VARINT,
    "key_length" / VARINT,
    "key" / cs.If(cs.this.key_length >= 0, cs.Bytes(cs.this.key_length)),
    "value_length" / VARINT,
    "value" / cs.If(cs.this.value_length >= 0, cs.Bytes(cs.this.value_length)),
    "header_count" / VARINT,
    "headers" / cs.Array(cs.this.header_count, cs.Struct(
        "key_length" / VARINT,
        "key" / cs.Bytes(cs.this.key_length),
        "value_length" / VARINT,
        "value" / cs.If(cs.this.value_length >= 0, cs.Bytes(cs.this.value_length)),
    )),
)
RECORD = cs.Prefixed(VARINT, RECORD_BODY)



HEADER = struct_of(BATCH_HEADER)
HEADER_SIZE = BATCH_HEADER.sizeof()  # 61
AT = field_positions(BATCH_HEADER)  # where each header field starts, e.g. AT["records_count"] == 57
LENGTH_OFFSET = AT["batch_length"]
LOG_OVERHEAD = AT["partition_leader_epoch"]  # offset + length fields: a batch's size is length + 12
CRC_START = AT["attributes"]  # the CRC covers attributes to the end
MAGIC = 2
MIN_RECORD_SIZE = 7  # length varint + attributes + 5 one-byte varints
MIN_RECORD_BODY = MIN_RECORD_SIZE - 1  # a record length below this is damage (reference and kernels alike)
# replog's own bound on the records it decodes from one batch (the broker's only bound is the batch's byte
# size, and a 9 MiB zstd batch of 12 M tiny records stays under the decompression ratio): a batch claiming
# more is a finding and its records are not decoded, as a decompression bomb's are not (`codecs`).
MAX_BATCH_RECORDS = 1 << 20
BLOCK_RECORDS = 1 << 16  # records decoded at a time from a batch that holds more (`record_blocks`)

CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40

CREATE_TIME, LOG_APPEND_TIME, NO_TIMESTAMP_TYPE = 0, 1, -1
TIMESTAMP_TYPE_NAMES = {CREATE_TIME: "CreateTime", LOG_APPEND_TIME: "LogAppendTime",
                        NO_TIMESTAMP_TYPE: "NoTimestampType"}
INT32_MAX = 2**31 - 1


class BatchInfo(NamedTuple):
    """One batch: the row view of a `BatchBlock` (`blocks.py`), one shape for v2 batches and legacy entries.

    The block's columns are these fields in this order; `BatchBlock.row(i)` and iterating a block give
    this type, and so does decoding one v2 header (`read_header`). It is the only per-batch object:
    made for the few rows a check flags, a record decode, or a small log read batch by batch (tests).
    Names are the block's: `first_timestamp` is the v2 header's base timestamp, `count` its records count.
    """

    position: int
    size: int
    magic: int
    base_offset: int
    last_offset: int
    count: int  # type: ignore[assignment]  # the brokers' name; shadows tuple.count on purpose
    partition_leader_epoch: int
    crc: int
    crc_valid: bool
    attributes: int
    codec: int
    timestamp_type: int
    first_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    is_transactional: bool
    is_control: bool
    has_delete_horizon: bool

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def end(self) -> int:
        return self.position + self.size

    @property
    def last_sequence(self) -> int:
        """The sequence of its last record (-1 without sequences): `DefaultRecordBatch.lastSequence`."""
        if self.base_sequence < 0:
            return -1
        return increment_sequence(self.base_sequence, self.last_offset - self.base_offset)


def read_header(buf: bytes | memoryview, pos: int, *, crc_valid: bool | None = None) -> BatchInfo:
    """Decode the v2 header at `pos` (the caller checked 61 bytes are there) into the block's row type.

    `crc_valid`: the caller's answer when its walk already checked the CRC; None checks it here (a pass
    over the whole batch, which a record decode that knows the answer should not pay twice)."""
    (base_offset, batch_length, epoch, magic, crc, attributes, last_delta, first_timestamp, max_timestamp,
     producer_id, producer_epoch, base_sequence, count) = HEADER.unpack_from(buf, pos)
    size = batch_length + LOG_OVERHEAD
    if crc_valid is None:
        crc_valid = compute_crc(buf, pos, size) == crc
    return BatchInfo(pos, size, magic, base_offset, base_offset + last_delta, count, epoch, crc, crc_valid,
                     attributes, attributes & CODEC_MASK,
                     LOG_APPEND_TIME if attributes & TIMESTAMP_TYPE_MASK else CREATE_TIME,
                     first_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence,
                     bool(attributes & TRANSACTIONAL_MASK), bool(attributes & CONTROL_MASK),
                     bool(attributes & DELETE_HORIZON_MASK))


def compute_crc(buf: bytes | memoryview, pos: int, size: int) -> int:
    """CRC-32C of batch bytes [21, size): what the stored CRC must equal."""
    return crc32c(buf[pos + CRC_START:pos + size])


@dataclass(frozen=True, slots=True)
class Record:
    """One record with absolute offset and timestamp; bytes are copies."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    attributes: int = 0
    sequence: int = -1


def increment_sequence(sequence: int, delta: int) -> int:
    """Producer sequences wrap at INT32_MAX (`DefaultRecordBatch.incrementSequence`)."""
    if sequence > INT32_MAX - delta:
        return delta - (INT32_MAX - sequence) - 1
    return sequence + delta


def check_record_count(header: BatchInfo) -> None:
    """Refuse to decode a batch claiming more than `MAX_BATCH_RECORDS` records (before any decompression)."""
    if header.count > MAX_BATCH_RECORDS:
        raise FormatError("KAFKA_BATCH_TOO_MANY_RECORDS",
                          f"{header.count} records claimed; replog decodes at most {MAX_BATCH_RECORDS} "
                          "of one batch: its records are not decoded", header.position, header.base_offset)


def records_payload(buf: bytes | memoryview, header: BatchInfo) -> bytes | memoryview:
    """The record bytes of a batch, decompressed (bounded) when a codec is set."""
    raw = buf[header.position + HEADER_SIZE:header.position + header.size]
    if header.codec == 0:
        return raw
    return codecs.decompress(header.codec, raw, magic=MAGIC)


def decode_records(header: BatchInfo, data: bytes | memoryview) -> list[Record]:
    """Parse exactly the header's `count` of records from `data`, as the broker's iterator does."""
    count = header.count
    if count < 0 or count > len(data) // MIN_RECORD_SIZE:
        raise FormatError("KAFKA_BATCH_BAD_RECORD_COUNT",
                          f"records count {count} impossible for {len(data)} bytes of records",
                          header.position, header.base_offset)
    check_record_count(header)
    log_append = header.timestamp_type == LOG_APPEND_TIME
    out: list[Record] = []
    pos = 0
    try:
        for _ in range(count):
            rec, pos = _decode_record(data, pos, header, log_append)
            out.append(rec)
    except FormatError as e:
        raise FormatError(e.code, f"record {len(out)}: {e.message}", header.position,
                          header.base_offset) from None
    if pos != len(data):
        raise FormatError("KAFKA_RECORDS_UNDECODABLE",
                          f"{len(data) - pos} bytes remain after {count} records",
                          header.position, header.base_offset)
    return out


def _decode_record(data: bytes | memoryview, pos: int, header: BatchInfo,
                   log_append: bool) -> tuple[Record, int]:
    length, pos = read_varint(data, pos)
    end = pos + length
    if length < MIN_RECORD_BODY or end > len(data):
        raise FormatError("KAFKA_RECORDS_UNDECODABLE", f"record length {length} out of bounds")
    attributes = data[pos]
    ts_delta, pos = read_varlong(data, pos + 1)
    offset_delta, pos = read_varint(data, pos)
    key, pos = _read_bytes(data, pos, end)
    value, pos = _read_bytes(data, pos, end)
    header_count, pos = read_varint(data, pos)
    if header_count < 0 or header_count > end - pos:
        raise FormatError("KAFKA_RECORDS_UNDECODABLE", f"header count {header_count} out of bounds")
    headers = []
    for _ in range(header_count):
        hkey, pos = _read_bytes(data, pos, end)
        if hkey is None:
            raise FormatError("KAFKA_RECORDS_UNDECODABLE", "negative header key length")
        hvalue, pos = _read_bytes(data, pos, end)
        headers.append((hkey.decode("utf-8", "replace"), hvalue))
    if pos != end:
        raise FormatError("KAFKA_RECORDS_UNDECODABLE",
                          f"record body is {length} bytes but its fields use {length - (end - pos)}")
    timestamp = header.max_timestamp if log_append else header.first_timestamp + ts_delta
    sequence = (increment_sequence(header.base_sequence, offset_delta)
                if header.base_sequence >= 0 else -1)
    return Record(header.base_offset + offset_delta, timestamp, key, value, tuple(headers),
                  attributes, sequence), end


def _read_bytes(data: bytes | memoryview, pos: int, end: int) -> tuple[bytes | None, int]:
    n, pos = read_varint(data, pos)
    if n < 0:
        return None, pos
    if pos + n > end:
        raise FormatError("KAFKA_RECORDS_UNDECODABLE", f"field of {n} bytes runs past its record")
    return bytes(data[pos:pos + n]), pos + n


# --- writer ---------------------------------------------------------------------


def encode_record(offset_delta: int, timestamp_delta: int, key: bytes | None,
                  value: bytes | None, headers: Sequence[tuple[str, bytes | None]] = (),
                  attributes: int = 0) -> bytes:
    """One record, length-prefixed, as `DefaultRecord.writeTo` lays it out."""
    parts = [bytes([attributes & 0xFF]), encode_varint(timestamp_delta), encode_varint(offset_delta)]
    for field in (key, value):
        parts.append(encode_varint(-1) if field is None else encode_varint(len(field)) + field)
    parts.append(encode_varint(len(headers)))
    for hkey, hvalue in headers:
        k = hkey.encode("utf-8")
        parts.append(encode_varint(len(k)) + k)
        parts.append(encode_varint(-1) if hvalue is None else encode_varint(len(hvalue)) + hvalue)
    body = b"".join(parts)
    return encode_varint(len(body)) + body


def build_batch(records: Sequence[Record], *, base_offset: int, partition_leader_epoch: int = -1,
                codec: int = 0, timestamp_type: int = CREATE_TIME, producer_id: int = -1,
                producer_epoch: int = -1, base_sequence: int = -1, transactional: bool = False,
                control: bool = False, delete_horizon: int | None = None,
                last_offset_delta: int | None = None, max_timestamp: int | None = None,
                magic: int = MAGIC, crc: int | None = None) -> bytes:
    """Serialize a v2 batch the way `MemoryRecordsBuilder` does.

    Record offsets and timestamps are absolute; deltas are taken against
    `base_offset` and the first record's timestamp (or `delete_horizon`).
    `last_offset_delta`, `max_timestamp`, `magic` and `crc` can be forced to
    build compacted batches or deliberately damaged ones for tests.
    """
    if records:
        base_ts = delete_horizon if delete_horizon is not None else records[0].timestamp
        max_ts = max(r.timestamp for r in records)
        last_delta = records[-1].offset - base_offset
    else:
        base_ts = delete_horizon if delete_horizon is not None else -1
        max_ts, last_delta = -1, 0
    if timestamp_type == LOG_APPEND_TIME and max_timestamp is None and records:
        max_ts = records[-1].timestamp
    payload = b"".join(encode_record(r.offset - base_offset, r.timestamp - base_ts, r.key, r.value,
                                     r.headers, r.attributes) for r in records)
    if codec:
        payload = codecs.compress(codec, payload, magic=MAGIC)
    attributes = (codec & CODEC_MASK) | (TIMESTAMP_TYPE_MASK if timestamp_type == LOG_APPEND_TIME else 0)
    attributes |= (TRANSACTIONAL_MASK if transactional else 0) | (CONTROL_MASK if control else 0)
    attributes |= DELETE_HORIZON_MASK if delete_horizon is not None else 0
    after_crc = HEADER.pack(0, 0, 0, 0, 0, attributes,
                            last_delta if last_offset_delta is None else last_offset_delta,
                            base_ts, max_ts if max_timestamp is None else max_timestamp,
                            producer_id, producer_epoch, base_sequence, len(records))[CRC_START:] + payload
    checksum = crc32c(after_crc) if crc is None else crc
    head = struct.pack(">qiibI", base_offset, len(after_crc) + 9, partition_leader_epoch, magic, checksum)
    return head + after_crc
