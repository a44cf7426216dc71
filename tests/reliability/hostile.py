"""Builders of hostile inputs shared by the reliability tests (bombs, huge declared lengths)."""
from __future__ import annotations

import struct
import zlib

import zstandard
from crc32c import crc32c

from replog.formats.kafka import batch as v2
from replog.formats.kafka import codecs

CRC_START = 21  # Kafka's batch CRC covers attributes .. end


def empty_batch_template() -> bytes:
    """The minimal v2 batch: 61 bytes, no records (the CRC does not cover base_offset)."""
    b = v2.build_batch([], base_offset=0)
    assert len(b) == v2.HEADER_SIZE
    return b


def many_empty_batches(n: int) -> bytes:
    """`n` minimal batches at offsets 0..n-1: a segment of the smallest possible batches."""
    tmpl = empty_batch_template()
    out = bytearray(tmpl * n)
    pack = struct.Struct(">q").pack_into
    for i in range(n):
        pack(out, i * len(tmpl), i)
    return bytes(out)


def reframe(batch: bytes, payload: bytes) -> bytes:
    """Replace a v2 batch's records payload; fix its length field and CRC."""
    head = bytearray(batch[:v2.HEADER_SIZE]) + payload
    struct.pack_into(">i", head, 8, len(head) - 12)
    struct.pack_into(">I", head, 17, crc32c(bytes(head[CRC_START:])))
    return bytes(head)


def zeros_compressed(codec: int, total: int, chunk: int = 1 << 20) -> bytes:
    """`total` zero bytes compressed in a stream (never held in memory at once)."""
    zeros = bytes(chunk)
    if codec == codecs.ZSTD:
        c = zstandard.ZstdCompressor(level=3).compressobj()
        parts = [c.compress(zeros) for _ in range(total // chunk)]
        return b"".join(parts) + c.flush()
    if codec == codecs.GZIP:
        c = zlib.compressobj(9, zlib.DEFLATED, 31)
        parts = [c.compress(zeros) for _ in range(total // chunk)]
        return b"".join(parts) + c.flush()
    raise ValueError(codec)


def bomb_batch(codec: int, total: int = 512 << 20) -> bytes:
    """A v2 batch claiming one record whose compressed payload inflates to `total` bytes."""
    tmpl = v2.build_batch([v2.Record(0, 1, b"k", b"v")], base_offset=0, codec=codec)
    return reframe(tmpl, zeros_compressed(codec, total))


def many_records_batch(n: int) -> bytes:
    """One zstd v2 batch of `n` minimal records (null key and value, no headers; offsets 0..n-1): about
    twelve bytes a record before compression, 12:1 after, well under the decompression-bomb ratio.
    Records are laid out with numpy (a Python loop over 12 M records would take minutes)."""
    import numpy as np
    delta = np.arange(n, dtype=np.int64) << 1                # zig-zag offset deltas
    width = 1 + sum((delta >= (1 << k)).astype(np.int64) for k in (7, 14, 21, 28))
    body = 5 + width                                          # attributes, ts delta, delta, key, value, headers
    starts = np.concatenate(([0], np.cumsum(body + 1)[:-1]))
    out = np.zeros(int((body + 1).sum()), dtype=np.uint8)
    out[starts] = (body << 1).astype(np.uint8)                # the length varint: one byte, < 64
    for k in range(5):                                        # the offset delta varint, from byte 3
        sel = width > k
        out[starts[sel] + 3 + k] = (((delta[sel] >> (7 * k)) & 0x7F) | np.where(width[sel] > k + 1, 0x80, 0))
    tail = starts + 3 + width
    out[tail] = out[tail + 1] = 1                            # null key, null value (zig-zag -1)
    payload = zstandard.ZstdCompressor(level=3, write_content_size=False).compress(out.tobytes())
    head = bytearray(v2.build_batch([v2.Record(0, 1, None, None)], base_offset=0, codec=codecs.ZSTD)[:v2.HEADER_SIZE])
    struct.pack_into(">i", head, v2.AT["last_offset_delta"], n - 1)
    struct.pack_into(">i", head, v2.AT["records_count"], n)
    return reframe(bytes(head), payload)

