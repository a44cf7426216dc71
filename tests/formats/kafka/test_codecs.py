"""Kafka codecs: round trips, third-party framings, bombs and damaged streams."""
from __future__ import annotations

import gzip
import random
import struct
import tracemalloc
import types
import zlib

import cramjam
import lz4.frame
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replog.formats.errors import FormatError
from replog.formats.kafka import codecs
from replog.formats.kafka.codecs import GZIP, LZ4, NONE, SNAPPY, ZSTD, compress, decompress

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# (codec, magic) pairs Kafka allows
CODEC_MAGIC = [(c, m) for c in (NONE, GZIP, SNAPPY, LZ4) for m in (0, 1, 2)] + [(ZSTD, 2)]


def _payload(seed: int, size: int, repetitive: bool) -> bytes:
    """Cheap large payloads: random bytes or compressible text, by seed."""
    rnd = random.Random(seed)
    if not repetitive:
        return rnd.randbytes(size)
    words = [rnd.randbytes(rnd.randint(1, 12)) for _ in range(20)]
    out = bytearray()
    while len(out) < size:
        out += rnd.choice(words)
    return bytes(out[:size])


payloads = st.one_of(
    st.binary(max_size=600),
    st.builds(_payload, st.integers(0, 2**32), st.integers(0, 200_000), st.booleans()),
)


@FAST
@given(st.sampled_from(CODEC_MAGIC), payloads)
def test_round_trip(codec_magic: tuple[int, int], data: bytes) -> None:
    codec, magic = codec_magic
    assert decompress(codec, compress(codec, data, magic=magic), magic=magic) == data


@pytest.mark.parametrize("codec, magic", CODEC_MAGIC)
@pytest.mark.parametrize("size", [0, 1, 65535, 65536, 65537, 3 * 65536 + 5])
def test_round_trip_block_edges(codec: int, magic: int, size: int) -> None:
    data = _payload(size, size, size % 2 == 0)
    assert decompress(codec, compress(codec, data, magic=magic), magic=magic) == data


def test_codec_names() -> None:
    assert codecs.CODEC_NAMES == {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


@pytest.mark.parametrize("codec", [5, 6, 7, -1])
def test_unknown_codec(codec: int) -> None:
    for call in (lambda: decompress(codec, b"x"), lambda: compress(codec, b"x")):
        with pytest.raises(FormatError) as e:
            call()
        assert e.value.code == "KAFKA_BATCH_BAD_CODEC"


@pytest.mark.parametrize("magic", [0, 1])
def test_zstd_rejected_for_legacy_magic(magic: int) -> None:
    frame = compress(ZSTD, b"abc")
    with pytest.raises(FormatError) as e:
        decompress(ZSTD, frame, magic=magic)
    assert e.value.code == "KAFKA_BATCH_BAD_CODEC"
    with pytest.raises(FormatError):
        compress(ZSTD, b"abc", magic=magic)


def test_output_limit() -> None:
    assert codecs.output_limit(0) == 1 << 20
    assert codecs.output_limit(10_000) == 255 * 10_000
    assert codecs.output_limit(1 << 30) == codecs.MAX_OUTPUT_LIMIT


# --- gzip --------------------------------------------------------------------------

def test_gzip_java_header_and_stdlib_interop() -> None:
    data = _payload(1, 50_000, True)
    ours = compress(GZIP, data)
    assert ours[:10] == b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x00"  # JDK GZIPOutputStream
    assert gzip.decompress(ours) == data
    assert decompress(GZIP, gzip.compress(data, compresslevel=1)) == data


def test_gzip_concatenated_members_and_trailing_garbage() -> None:
    a, b = b"first member ", b"second member"
    assert decompress(GZIP, gzip.compress(a) + gzip.compress(b)) == a + b
    assert decompress(GZIP, gzip.compress(a) + b"\x00" * 7) == a  # JDK ignores non-gzip tail


def test_gzip_truncated() -> None:
    z = gzip.compress(_payload(2, 10_000, False))
    with pytest.raises(FormatError) as e:
        decompress(GZIP, z[:-10])
    assert e.value.code == "KAFKA_RECORDS_UNDECODABLE"


# --- snappy -------------------------------------------------------------------------

def test_snappy_xerial_layout() -> None:
    data = _payload(3, 100_000, True)
    framed = compress(SNAPPY, data)
    assert framed[:16] == b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01"
    pos, chunks = 16, []
    while pos < len(framed):
        (n,) = struct.unpack_from(">i", framed, pos)
        chunks.append(bytes(cramjam.snappy.decompress_raw(framed[pos + 4:pos + 4 + n])))
        pos += 4 + n
    assert [len(c) for c in chunks] == [32768, 32768, 32768, 100_000 - 3 * 32768]
    assert b"".join(chunks) == data


@FAST
@given(payloads)
def test_snappy_raw_path(data: bytes) -> None:
    assert decompress(SNAPPY, codecs.compress_snappy_raw(data)) == data


def test_snappy_repeated_header_is_accepted() -> None:
    a, b = _payload(4, 40_000, True), _payload(5, 3_000, False)
    assert decompress(SNAPPY, compress(SNAPPY, a) + compress(SNAPPY, b)) == a + b


def test_snappy_chunk_length_past_end() -> None:
    framed = bytearray(compress(SNAPPY, b"hello world" * 100))
    struct.pack_into(">i", framed, 16, 1 << 30)
    with pytest.raises(FormatError) as e:
        decompress(SNAPPY, bytes(framed))
    assert e.value.code == "KAFKA_RECORDS_UNDECODABLE"


@pytest.fixture
def kafka_python_snappy(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """kafka-python's codec module, its `snappy` (python-snappy) stood in by cramjam.

    python-snappy is not installed here, so the raw block coder comes from
    cramjam; the xerial framing under test is kafka-python's own code.
    """
    kc = pytest.importorskip("kafka.codec")
    shim = types.SimpleNamespace(compress=lambda b: bytes(cramjam.snappy.compress_raw(bytes(b))),
                                 decompress=lambda b: bytes(cramjam.snappy.decompress_raw(bytes(b))))
    monkeypatch.setattr(kc, "snappy", shim)
    return kc


@pytest.mark.parametrize("size", [0, 10, 32768, 100_001])
def test_snappy_kafka_python_xerial_interop(kafka_python_snappy: types.ModuleType, size: int) -> None:
    kc = kafka_python_snappy
    data = _payload(size, size, True)
    theirs = kc.snappy_encode(data, xerial_compatible=True)
    assert theirs[:8] == codecs.XERIAL_MAGIC
    assert decompress(SNAPPY, theirs) == data
    assert decompress(SNAPPY, kc.snappy_encode(data, xerial_compatible=False)) == data
    if size:  # kafka-python needs > 16 bytes to recognise the xerial header
        assert kc.snappy_decode(compress(SNAPPY, data)) == data


# --- lz4 -----------------------------------------------------------------------------

@FAST
@given(st.binary(max_size=300))
def test_xxh32_matches_lz4_content_checksum(data: bytes) -> None:
    frame = lz4.frame.compress(data, content_checksum=True, store_size=False, block_linked=False)
    assert codecs.xxh32(data) == struct.unpack("<I", frame[-4:])[0]


def test_xxh32_known_values() -> None:
    assert codecs.xxh32(b"") == 0x02CC5D05
    assert codecs.xxh32(b"abc") == 0x32D153FF


def test_lz4_header_matches_lz4_frame_library() -> None:
    data = _payload(6, 150_000, True)
    ours = compress(LZ4, data, magic=1)
    ref = lz4.frame.compress(data, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False,
                             store_size=False, content_checksum=False)
    assert ours[:7] == ref[:7] and ours[4:6] == b"\x60\x40"
    assert ours.endswith(b"\x00\x00\x00\x00")
    assert lz4.frame.decompress(ours) == data  # the library verifies our HC


@FAST
@given(payloads, st.booleans(), st.booleans(), st.booleans(),
       st.sampled_from([lz4.frame.BLOCKSIZE_MAX64KB, lz4.frame.BLOCKSIZE_MAX256KB, lz4.frame.BLOCKSIZE_MAX1MB]))
def test_lz4_frames_from_lz4_library(data: bytes, content_checksum: bool, block_checksum: bool,
                                     store_size: bool, block_size: int) -> None:
    frame = lz4.frame.compress(data, block_size=block_size, content_checksum=content_checksum,
                               block_checksum=block_checksum, store_size=store_size, block_linked=False)
    assert decompress(LZ4, frame, magic=2) == data


def test_lz4_v0_broken_header_checksum() -> None:
    data = _payload(7, 90_000, True)
    frame = compress(LZ4, data, magic=0)
    assert frame[6] == (codecs.xxh32(frame[:6]) >> 8) & 0xFF
    assert frame[6] != (codecs.xxh32(frame[4:6]) >> 8) & 0xFF
    assert decompress(LZ4, frame, magic=0) == data
    for magic in (1, 2):
        with pytest.raises(FormatError) as e:
            decompress(LZ4, frame, magic=magic)
        assert e.value.code == "KAFKA_RECORDS_UNDECODABLE"
    with pytest.raises(RuntimeError):  # the reference decoder agrees the HC is wrong
        lz4.frame.decompress(frame)


def test_lz4_dependent_blocks_rejected() -> None:
    frame = lz4.frame.compress(_payload(8, 200_000, True), block_linked=True,
                               block_size=lz4.frame.BLOCKSIZE_MAX64KB)
    with pytest.raises(FormatError, match="dependent"):
        decompress(LZ4, frame)


def test_lz4_raw_block_and_oversized_block() -> None:
    data = _payload(9, 70_000, False)  # incompressible: blocks stored raw
    frame = compress(LZ4, data, magic=2)
    assert struct.unpack_from("<I", frame, 7)[0] == 0x80000000 | 65536
    assert decompress(LZ4, frame) == data
    bad = bytearray(frame)
    struct.pack_into("<I", bad, 7, 0x80000000 | 65537)
    with pytest.raises(FormatError):
        decompress(LZ4, bytes(bad))


# --- zstd ----------------------------------------------------------------------------

def test_zstd_frame_without_content_size_and_concatenated() -> None:
    a, b = _payload(10, 300_000, True), _payload(11, 5_000, False)
    fa = compress(ZSTD, a)
    assert zstandard.get_frame_parameters(fa).content_size == zstandard.CONTENTSIZE_UNKNOWN
    assert decompress(ZSTD, fa + zstandard.ZstdCompressor().compress(b)) == a + b
    with pytest.raises(FormatError) as e:
        decompress(ZSTD, fa[:-3])
    assert e.value.code == "KAFKA_RECORDS_UNDECODABLE"


# --- bombs ---------------------------------------------------------------------------

BOMB_SIZE = 200 << 20


def _streamed(comp, chunks: int = BOMB_SIZE >> 20) -> bytes:
    zeros = bytes(1 << 20)
    return b"".join(comp.compress(zeros) for _ in range(chunks)) + comp.flush()


@pytest.fixture(scope="module")
def bombs() -> dict[int, bytes]:
    return {
        GZIP: _streamed(zlib.compressobj(9, zlib.DEFLATED, 31)),
        ZSTD: _streamed(zstandard.ZstdCompressor().compressobj()),
        SNAPPY: b"\xff\xff\xff\xff\x0f" + b"\x00" * 64,  # raw block claiming 4 GiB
        LZ4: compress(LZ4, bytes(4 << 20)),
    }


@pytest.mark.parametrize("codec", [GZIP, ZSTD, SNAPPY, LZ4])
def test_decompression_bomb(bombs: dict[int, bytes], codec: int) -> None:
    limit = (1 << 20) if codec == LZ4 else None  # LZ4's ratio is at most ~255
    tracemalloc.start()
    try:
        with pytest.raises(FormatError) as e:
            decompress(codec, bombs[codec], limit=limit)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert e.value.code == "KAFKA_DECOMPRESSION_BOMB"
    assert peak < 2 * codecs.output_limit(len(bombs[codec])) + (8 << 20) < BOMB_SIZE


def test_xerial_snappy_bomb_checked_per_chunk() -> None:
    chunk = compress(SNAPPY, bytes(32768))[16:]
    framed = codecs.XERIAL_HEADER + chunk * 40  # 1.25 MiB out of ~2 KiB
    with pytest.raises(FormatError) as e:
        decompress(SNAPPY, framed, limit=1 << 20)
    assert e.value.code == "KAFKA_DECOMPRESSION_BOMB"
    assert decompress(SNAPPY, framed, limit=40 * 32768) == bytes(40 * 32768)


# --- damaged streams -----------------------------------------------------------------

SAMPLE = _payload(12, 20_000, True)
COMPRESSED = {cm: compress(cm[0], SAMPLE, magic=cm[1]) for cm in CODEC_MAGIC if cm[0] != NONE}
COMPRESSED[(SNAPPY, 9)] = codecs.compress_snappy_raw(SAMPLE)  # magic 9 = raw snappy, read as magic 2


@settings(max_examples=1500, deadline=None)
@given(st.sampled_from(sorted(COMPRESSED)), st.data())
def test_mutations_only_raise_format_error(key: tuple[int, int], draw: st.DataObject) -> None:
    codec, magic = key
    buf = bytearray(COMPRESSED[key])
    for _ in range(draw.draw(st.integers(1, 4))):
        i = draw.draw(st.integers(0, len(buf) - 1))
        buf[i] ^= draw.draw(st.integers(1, 255))
    cut = draw.draw(st.integers(0, len(buf)))
    try:
        out = decompress(codec, bytes(buf[:cut]), magic=min(magic, 2), limit=1 << 20)
    except FormatError as e:
        assert e.code in ("KAFKA_RECORDS_UNDECODABLE", "KAFKA_DECOMPRESSION_BOMB")
    else:
        assert len(out) <= 1 << 20


@FAST
@given(st.sampled_from([GZIP, SNAPPY, LZ4, ZSTD]), st.binary(max_size=200))
def test_garbage_only_raises_format_error(codec: int, junk: bytes) -> None:
    for prefix in (b"", codecs.XERIAL_HEADER, codecs.LZ4_MAGIC + b"\x60\x40\x82", b"\x28\xb5\x2f\xfd",
                   b"\x1f\x8b\x08\x00"):
        try:
            decompress(codec, prefix + junk, limit=1 << 16)
        except FormatError:
            pass
