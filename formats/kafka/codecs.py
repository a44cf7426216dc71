"""Kafka compression codecs with the exact framings the Java client writes.

Codec ids live in the low three attribute bits of a v2 batch or a legacy
wrapper message (docs/reference/kafka.md §5). Decoding is bounded: a payload never expands
past `limit` bytes (default `output_limit(len(data))`), and any malformed
stream raises `FormatError`, never a library exception, so a walker can turn
damage into a finding. Framings:

* gzip: RFC 1952, concatenated members accepted (JDK `GZIPInputStream`).
* snappy: xerial `SnappyOutputStream` framing (16-byte header, then int32 BE
  chunk length + raw block), or one raw block when the header is absent
  (third-party producers; stored verbatim in v2 batches).
* lz4: Kafka's own LZ4 frame (`Lz4BlockOutputStream`), parsed here because
  magic 0 carries a deliberately wrong header checksum (KIP-57).
* zstd: plain frames, possibly without a content size; magic 2 only.
"""
from __future__ import annotations

import functools
import struct
import types
import zlib

import cramjam
import lz4.block
import zstandard

from replog.formats.errors import FormatError

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
CODEC_NAMES: dict[int, str] = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}

_UNDECODABLE = "KAFKA_RECORDS_UNDECODABLE"
_BOMB = "KAFKA_DECOMPRESSION_BOMB"

MIN_OUTPUT_LIMIT = 1 << 20
MAX_OUTPUT_LIMIT = 256 << 20
MAX_RATIO = 255


def output_limit(compressed_size: int) -> int:
    """Default bound on decoded bytes: a generous ratio, never above 256 MiB."""
    return min(MAX_OUTPUT_LIMIT, max(MIN_OUTPUT_LIMIT, MAX_RATIO * compressed_size))


def _bad(message: str) -> FormatError:
    return FormatError(_UNDECODABLE, message)


def _bomb(codec: int, limit: int) -> FormatError:
    return FormatError(_BOMB, f"{CODEC_NAMES[codec]} payload expands beyond {limit} bytes")


# --- xxHash32 (LZ4 frame header and block checksums) ---------------------------

_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF
_U32 = struct.Struct("<I")
_LANES = struct.Struct("<4I")


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _round(acc: int, lane: int) -> int:
    return (_rotl((acc + lane * _P2) & _M32, 13) * _P1) & _M32


def xxh32(data: bytes | memoryview, seed: int = 0) -> int:
    """xxHash32 as the LZ4 frame format uses it (pure Python; inputs are small)."""
    n = len(data)
    i = 0
    if n >= 16:
        v1, v2 = (seed + _P1 + _P2) & _M32, (seed + _P2) & _M32
        v3, v4 = seed & _M32, (seed - _P1) & _M32
        while i + 16 <= n:
            a, b, c, d = _LANES.unpack_from(data, i)
            v1, v2, v3, v4 = _round(v1, a), _round(v2, b), _round(v3, c), _round(v4, d)
            i += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while i + 4 <= n:
        h = (_rotl((h + _U32.unpack_from(data, i)[0] * _P3) & _M32, 17) * _P4) & _M32
        i += 4
    while i < n:
        h = (_rotl((h + data[i] * _P5) & _M32, 11) * _P1) & _M32
        i += 1
    h = ((h ^ (h >> 15)) * _P2) & _M32
    h = ((h ^ (h >> 13)) * _P3) & _M32
    return h ^ (h >> 16)


# --- gzip --------------------------------------------------------------------------

_GZIP_MAGIC = b"\x1f\x8b"
# What JDK GZIPOutputStream writes: deflate, no flags, mtime 0, XFL 0, OS 0.
_JAVA_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x00"


_inflate: types.ModuleType  # isal_zlib or zlib: the same API
try:  # ISA-L inflates the same streams 2-3x faster than zlib; zlib is the fallback
    from isal import isal_zlib as _inflate
except ImportError:  # pragma: no cover - isal is a dependency, but optional at run time
    _inflate = zlib
_INFLATE_ERRORS = (zlib.error, _inflate.error)


def _gunzip(data: memoryview, limit: int) -> bytes:
    """Decode gzip members one after the other, like GZIPInputStream.

    After a member, bytes that do not start another gzip header are ignored,
    as the JDK does.
    """
    out = bytearray()
    rest: bytes | memoryview = data
    while True:
        d = _inflate.decompressobj(16 + _inflate.MAX_WBITS)
        try:
            out += d.decompress(rest, limit - len(out) + 1)
        except _INFLATE_ERRORS as e:
            raise _bad(f"gzip stream corrupt: {e}") from None
        if len(out) > limit:
            raise _bomb(GZIP, limit)
        if not d.eof:
            raise _bad("gzip stream truncated (no end of member)")
        rest = bytes(d.unused_data)  # bytes already (no copy); typed for the check below
        if not rest.startswith(_GZIP_MAGIC):
            return bytes(out)


def _gzip(data: bytes) -> bytes:
    c = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -zlib.MAX_WBITS)
    body = c.compress(data) + c.flush()
    trailer = struct.pack("<II", zlib.crc32(data) & _M32, len(data) & _M32)
    return _JAVA_GZIP_HEADER + body + trailer


# --- snappy ------------------------------------------------------------------------

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
XERIAL_CHUNK = 32 * 1024
_I32 = struct.Struct(">i")


def _snappy_raw_length(block: memoryview) -> int:
    """The uncompressed-length varint that starts a raw snappy block."""
    value = shift = 0
    for i in range(min(5, len(block))):
        b = block[i]
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            if value > _M32:
                break
            return value
        shift += 7
    raise _bad("snappy block has no valid uncompressed-length varint")


def _unsnappy_raw(block: memoryview, budget: int, limit: int) -> bytes:
    """One raw snappy block; its declared length is checked before decoding."""
    if _snappy_raw_length(block) > budget:
        raise _bomb(SNAPPY, limit)
    try:
        return bytes(cramjam.snappy.decompress_raw(block))
    except Exception as e:  # cramjam raises its own DecompressionError
        raise _bad(f"raw snappy block corrupt: {e}") from None


def _unsnappy(data: memoryview, limit: int) -> bytes:
    if data[:8] != XERIAL_MAGIC:
        return _unsnappy_raw(data, limit, limit)
    out = bytearray()
    pos, end = 16, len(data)
    if end < 16:
        raise _bad("xerial snappy header truncated")
    while pos < end:
        if data[pos:pos + 8] == XERIAL_MAGIC:  # a concatenated stream's header
            pos += 16
            continue
        if end - pos < 4:
            raise _bad(f"xerial snappy chunk length truncated at byte {pos}")
        size = _I32.unpack_from(data, pos)[0]
        pos += 4
        if size < 0 or size > end - pos:
            raise _bad(f"xerial snappy chunk length {size} at byte {pos - 4} exceeds the payload")
        out += _unsnappy_raw(data[pos:pos + size], limit - len(out), limit)
        pos += size
    return bytes(out)


def compress_snappy_raw(data: bytes | memoryview) -> bytes:
    """One raw snappy block without xerial framing (what some non-Java producers send)."""
    return bytes(cramjam.snappy.compress_raw(data))


def _snappy(data: bytes) -> bytes:
    view = memoryview(data)
    parts = [XERIAL_HEADER]
    for i in range(0, len(view), XERIAL_CHUNK):
        block = compress_snappy_raw(view[i:i + XERIAL_CHUNK])
        parts += [_I32.pack(len(block)), block]
    return b"".join(parts)


# --- lz4 (Kafka LZ4 frame) --------------------------------------------------------

LZ4_MAGIC = b"\x04\x22\x4d\x18"
_LZ4_FLG, _LZ4_BD = 0x60, 0x40  # version 01 + independent blocks; 64 KiB blocks
_LZ4_BLOCK_MAX = {4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20}
_LZ4_RAW_BIT = 0x80000000


def lz4_header_checksum(descriptor: bytes | memoryview) -> int:
    """HC byte: second byte of xxh32 over the descriptor (FLG..; v0: magic..)."""
    return (xxh32(descriptor) >> 8) & 0xFF


def _lz4_header(data: memoryview, check_hc: bool) -> tuple[int, int, bool, bool]:
    """Parse magic, FLG, BD, [content size], HC; returns (pos, block max, block crc, content crc)."""
    if len(data) < 7 or data[:4] != LZ4_MAGIC:
        raise _bad("lz4 frame magic missing")
    flg, bd = data[4], data[5]
    if flg >> 6 != 1 or flg & 0x03:
        raise _bad(f"lz4 frame FLG 0x{flg:02x}: unsupported version or reserved bits set")
    if not flg & 0x20:
        raise _bad("lz4 frame uses dependent blocks, which Kafka does not support")
    block_max = _LZ4_BLOCK_MAX.get((bd >> 4) & 0x07)
    if bd & 0x8F or block_max is None:
        raise _bad(f"lz4 frame BD 0x{bd:02x} invalid")
    hc_pos = 6 + (8 if flg & 0x08 else 0)
    if len(data) <= hc_pos:
        raise _bad("lz4 frame descriptor truncated")
    if check_hc and data[hc_pos] != lz4_header_checksum(data[4:hc_pos]):
        raise _bad("lz4 frame header checksum wrong (a magic-0 frame read as magic 1/2?)")
    return hc_pos + 1, block_max, bool(flg & 0x10), bool(flg & 0x04)


def _unlz4(data: memoryview, magic: int, limit: int) -> bytes:
    pos, block_max, block_crc, content_crc = _lz4_header(data, check_hc=magic != 0)
    out = bytearray()
    end = len(data)
    while True:
        if end - pos < 4:
            raise _bad(f"lz4 frame truncated: no block size at byte {pos}")
        word = _U32.unpack_from(data, pos)[0]
        pos += 4
        if word == 0:
            if content_crc and end - pos < 4:  # present, not verified (as in Kafka)
                raise _bad("lz4 frame content checksum truncated")
            return bytes(out)
        size = word & ~_LZ4_RAW_BIT
        if size > block_max or size + (4 if block_crc else 0) > end - pos:
            raise _bad(f"lz4 block size {size} at byte {pos - 4} exceeds the block maximum or the payload")
        block = data[pos:pos + size]
        pos += size
        if block_crc:
            if _U32.unpack_from(data, pos)[0] != xxh32(block):
                raise _bad(f"lz4 block checksum wrong at byte {pos}")
            pos += 4
        out += block if word & _LZ4_RAW_BIT else _lz4_block(block, block_max)
        if len(out) > limit:
            raise _bomb(LZ4, limit)


def _lz4_block(block: memoryview, block_max: int) -> bytes:
    try:
        return lz4.block.decompress(block, uncompressed_size=block_max)
    except Exception as e:  # lz4.block.LZ4BlockError
        raise _bad(f"lz4 block corrupt: {e}") from None


def _lz4(data: bytes, magic: int) -> bytes:
    descriptor = bytes([_LZ4_FLG, _LZ4_BD])
    hc = lz4_header_checksum(LZ4_MAGIC + descriptor if magic == 0 else descriptor)
    parts = [LZ4_MAGIC, descriptor, bytes([hc])]
    view = memoryview(data)
    block_max = _LZ4_BLOCK_MAX[4]
    for i in range(0, len(view), block_max):
        chunk = view[i:i + block_max]
        block = lz4.block.compress(chunk, store_size=False)
        if len(block) >= len(chunk):
            parts += [_U32.pack(len(chunk) | _LZ4_RAW_BIT), bytes(chunk)]
        else:
            parts += [_U32.pack(len(block)), block]
    parts.append(b"\x00\x00\x00\x00")
    return b"".join(parts)


# --- zstd --------------------------------------------------------------------------



def _zstd_window(limit: int) -> int:
    """Window bound: enough for any frame Kafka writes, never a claimed 2 GiB."""
    size = 8 << 20
    while size < limit and size < (1 << 27):
        size <<= 1
    return size


def _unzstd(data: memoryview, limit: int) -> bytes:
    """One bounded pass in C; the frames' block headers are walked first because
    the stream reader stops silently where a frame is cut short."""
    _check_zstd_frames(data)
    dctx = _zstd_decompressor(_zstd_window(limit))
    out = bytearray()
    try:
        with dctx.stream_reader(data, read_across_frames=True) as reader:
            while chunk := reader.read(1 << 20):
                out += chunk
                if len(out) > limit:
                    raise _bomb(ZSTD, limit)
    except zstandard.ZstdError as e:
        raise _bad(f"zstd stream corrupt: {e}") from None
    return bytes(out)


@functools.lru_cache(maxsize=8)
def _zstd_decompressor(max_window: int) -> zstandard.ZstdDecompressor:
    """Contexts are costly to create and hold no state between stream readers: reuse them."""
    return zstandard.ZstdDecompressor(max_window_size=max_window)


_ZSTD_MAGIC = 0xFD2FB528
_FCS_SIZES = (0, 2, 4, 8)
_DICT_ID_SIZES = (0, 1, 2, 4)


def _check_zstd_frames(data: memoryview) -> None:
    """Every frame (and skippable frame) is complete and the frames fill the payload exactly."""
    pos, end = 0, len(data)
    if end == 0:
        raise _bad("empty zstd payload")
    while pos < end:
        if end - pos < 8:
            raise _bad(f"zstd frame truncated at byte {pos}")
        magic = int.from_bytes(data[pos:pos + 4], "little")
        if magic & 0xFFFFFFF0 == 0x184D2A50:  # skippable frame
            pos += 8 + int.from_bytes(data[pos + 4:pos + 8], "little")
            continue
        if magic != _ZSTD_MAGIC:
            raise _bad(f"no zstd frame magic at byte {pos}")
        fhd = data[pos + 4]
        single = fhd >> 5 & 1
        fcs = _FCS_SIZES[fhd >> 6] or (1 if single else 0)
        pos += 5 + (0 if single else 1) + _DICT_ID_SIZES[fhd & 3] + fcs
        last = 0
        while not last:
            if pos + 3 > end:
                raise _bad(f"zstd frame truncated at byte {pos}")
            header = int.from_bytes(data[pos:pos + 3], "little")
            last, kind, size = header & 1, header >> 1 & 3, header >> 3
            if kind == 3:
                raise _bad(f"reserved zstd block type at byte {pos}")
            pos += 3 + (1 if kind == 1 else size)
        pos += 4 if fhd >> 2 & 1 else 0
    if pos != end:
        raise _bad("zstd frame truncated")


def _zstd(data: bytes) -> bytes:
    # Like zstd-jni's stream: level 3, no content size in the frame header.
    return zstandard.ZstdCompressor(level=3, write_content_size=False).compress(data)


# --- entry points ------------------------------------------------------------------

def _check_codec(codec: int, magic: int) -> None:
    if codec not in CODEC_NAMES:
        raise FormatError("KAFKA_BATCH_BAD_CODEC", f"compression codec {codec} is not defined")
    if codec == ZSTD and magic < 2:
        raise FormatError("KAFKA_BATCH_BAD_CODEC", f"zstd is not allowed in magic {magic} messages")


def decompress(codec: int, data: bytes | memoryview, *, magic: int = 2,
               limit: int | None = None) -> bytes:
    """Decode one compressed payload; at most `limit` bytes, or FormatError."""
    _check_codec(codec, magic)
    view = memoryview(data).cast("B")
    if codec == NONE:
        return bytes(view)
    if limit is None:
        limit = output_limit(len(view))
    if not len(view):
        raise _bad(f"empty {CODEC_NAMES[codec]} payload")
    if codec == GZIP:
        return _gunzip(view, limit)
    if codec == SNAPPY:
        return _unsnappy(view, limit)
    if codec == LZ4:
        return _unlz4(view, magic, limit)
    return _unzstd(view, limit)


def compress(codec: int, data: bytes, *, magic: int = 2) -> bytes:
    """Encode a payload the way the Java producer frames it for this magic."""
    _check_codec(codec, magic)
    if codec == NONE:
        return bytes(data)
    if codec == GZIP:
        return _gzip(data)
    if codec == SNAPPY:
        return _snappy(data)
    if codec == LZ4:
        return _lz4(data, magic)
    return _zstd(data)
