"""Zig-zag varints of magic-v2 records (protobuf style, little group first).

Limits match the broker's reader: 5 bytes for an int32, 10 for an int64
(`ByteUtils.readVarint` / `readVarlong`); longer encodings are corrupt.
"""
from __future__ import annotations

from replog.formats.errors import FormatError

_CODE = "KAFKA_RECORDS_UNDECODABLE"


def read_varint(buf: bytes | memoryview, pos: int, max_bytes: int = 5) -> tuple[int, int]:
    """Decode one zig-zag varint at `pos`; returns (value, next position)."""
    result = 0
    shift = 0
    end = len(buf)
    start = pos
    while True:
        if pos >= end:
            raise FormatError(_CODE, f"varint runs past the end of the records at byte {start}", start)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if pos - start >= max_bytes:
            raise FormatError(_CODE, f"varint longer than {max_bytes} bytes at byte {start}", start)


def read_varlong(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    return read_varint(buf, pos, 10)


def encode_varint(value: int) -> bytes:
    """Zig-zag encode a signed integer (int32 or int64 range)."""
    v = (value << 1) ^ (value >> 63)
    v &= 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def varint_size(value: int) -> int:
    return len(encode_varint(value))
