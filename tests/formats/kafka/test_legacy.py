"""Legacy v0/v1 messages: layout vs fast reader, round trips, kafka-python differential, damage."""
from __future__ import annotations

import struct
import types
import zlib

import cramjam
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replog.formats.errors import FormatError
from replog.formats.kafka import codecs, legacy
from replog.formats.kafka.codecs import GZIP, LZ4, NONE, SNAPPY, ZSTD
from replog.formats.kafka.legacy import (
    LEGACY_ENTRY,
    LegacyEntry,
    build_compressed,
    build_message,
    inner_records,
    read_legacy_entry,
)

FAST = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

int64 = st.integers(-(2**63), 2**63 - 1)
maybe_bytes = st.none() | st.binary(max_size=64)
messages = st.fixed_dictionaries({
    "offset": int64,
    "key": maybe_bytes,
    "value": maybe_bytes,
    "magic": st.sampled_from([0, 1]),
    "timestamp": int64,
    "timestamp_type": st.sampled_from([0, 1]),
})


def _walk(buf: bytes) -> list[LegacyEntry]:
    entries, pos = [], 0
    while pos < len(buf):
        e = read_legacy_entry(buf, pos)
        entries.append(e)
        pos += e.size
    return entries


def _records(buf: bytes) -> list[legacy.LegacyRecord]:
    return [r for e in _walk(buf) for r in inner_records(e)]


def _opt(v: memoryview | None) -> bytes | None:
    return None if v is None else bytes(v)


# --- layout vs fast reader, round trip ---------------------------------------------

@FAST
@given(messages)
def test_fast_reader_matches_construct_layout(m: dict) -> None:
    buf = build_message(m["offset"], m["key"], m["value"], magic=m["magic"], timestamp=m["timestamp"],
                        timestamp_type=m["timestamp_type"])
    parsed = LEGACY_ENTRY.parse(buf)
    e = read_legacy_entry(buf, 0)
    assert (e.offset, e.size, e.crc, e.magic, e.attributes) == (
        parsed.offset, 12 + parsed.message_size, parsed.crc, parsed.magic, parsed.attributes)
    assert e.timestamp == (parsed.timestamp if parsed.magic == 1 else -1)
    assert (_opt(e.key), _opt(e.value)) == (parsed.key, parsed.value)
    assert e.crc == zlib.crc32(buf[16:]) and e.crc_valid
    assert LEGACY_ENTRY.build(parsed) == buf


@FAST
@given(messages)
def test_round_trip(m: dict) -> None:
    buf = build_message(m["offset"], m["key"], m["value"], magic=m["magic"], timestamp=m["timestamp"],
                        timestamp_type=m["timestamp_type"])
    (r,) = inner_records(read_legacy_entry(buf, 0))
    assert (r.offset, r.key, r.value, r.magic, r.crc_valid) == (m["offset"], m["key"], m["value"], m["magic"], True)
    if m["magic"] == 0:
        assert (r.timestamp, r.timestamp_type) == (-1, "NoTimestampType")
        assert len(buf) == 12 + 14 + len(m["key"] or b"") + len(m["value"] or b"")
    else:
        assert r.timestamp == m["timestamp"]
        assert r.timestamp_type == ("LogAppendTime" if m["timestamp_type"] else "CreateTime")


record_lists = st.lists(st.tuples(st.integers(0, 2**40), maybe_bytes, maybe_bytes), min_size=1, max_size=8)


@FAST
@given(record_lists, st.sampled_from([0, 1]), st.sampled_from([GZIP, SNAPPY, LZ4]), st.integers(0, 2**40))
def test_compressed_round_trip(rows: list, magic: int, codec: int, base: int) -> None:
    records = [(base + i, ts, k, v) for i, (ts, k, v) in enumerate(rows)]
    buf = build_compressed(records, magic=magic, codec=codec)
    wrapper = read_legacy_entry(buf, 0)
    assert (wrapper.offset, wrapper.codec, wrapper.size) == (records[-1][0], codec, len(buf))
    if magic == 1:
        assert wrapper.timestamp == max(r[1] for r in records)
    got = inner_records(wrapper)
    assert [(r.offset, r.key, r.value) for r in got] == [(o, k, v) for o, _, k, v in records]
    assert [r.timestamp for r in got] == [ts if magic else -1 for _, ts, _, _ in records]
    assert all(r.crc_valid and r.magic == magic for r in got)


# --- offsets and timestamps of compressed wrappers ---------------------------------

ROWS = [(100, 1000, b"a", b"1"), (101, 1500, None, b"2"), (102, 1200, b"c", None)]


def _inner_offsets(buf: bytes) -> list[int]:
    return [r.offset for r in inner_records(read_legacy_entry(buf, 0))]


def test_v1_inner_offsets_are_relative() -> None:
    buf = build_compressed(ROWS, magic=1, codec=GZIP)
    data = codecs.decompress(GZIP, read_legacy_entry(buf, 0).value, magic=1)
    assert [e.offset for e in _walk(data)] == [0, 1, 2]
    assert _inner_offsets(buf) == [100, 101, 102]
    assert _inner_offsets(build_compressed(ROWS, magic=1, codec=GZIP, wrapper_offset=500)) == [498, 499, 500]


def test_v1_wrapper_offset_zero_means_absolute() -> None:
    assert _inner_offsets(build_compressed(ROWS, magic=1, codec=GZIP, wrapper_offset=0)) == [0, 1, 2]


def test_v1_wrapper_offset_below_last_inner_is_invalid() -> None:
    buf = build_compressed(ROWS, magic=1, codec=GZIP, wrapper_offset=1)
    with pytest.raises(FormatError) as e:
        inner_records(read_legacy_entry(buf, 0))
    assert e.value.code == "KAFKA_RECORDS_UNDECODABLE" and e.value.offset == 1


def test_v0_inner_offsets_are_absolute() -> None:
    buf = build_compressed(ROWS, magic=0, codec=SNAPPY, wrapper_offset=102)
    data = codecs.decompress(SNAPPY, read_legacy_entry(buf, 0).value, magic=0)
    assert [e.offset for e in _walk(data)] == [100, 101, 102]
    assert _inner_offsets(buf) == [100, 101, 102]


def test_v1_log_append_time_wrapper_overrides_inner() -> None:
    buf = build_compressed(ROWS, magic=1, codec=LZ4, timestamp_type=1, log_append_time=9999)
    w = read_legacy_entry(buf, 0)
    assert (w.timestamp, w.timestamp_type) == (9999, "LogAppendTime")
    assert {(r.timestamp, r.timestamp_type) for r in inner_records(w)} == {(9999, "LogAppendTime")}
    create = inner_records(read_legacy_entry(build_compressed(ROWS, magic=1, codec=LZ4), 0))
    assert [(r.timestamp, r.timestamp_type) for r in create] == [(t, "CreateTime") for _, t, _, _ in ROWS]


# --- invalid wrappers ----------------------------------------------------------------

def _undecodable(buf: bytes) -> FormatError:
    with pytest.raises(FormatError) as e:
        inner_records(read_legacy_entry(buf, 0))
    return e.value


def test_null_wrapper_value() -> None:
    assert _undecodable(build_message(5, None, None, magic=1, attributes=GZIP)).code == "KAFKA_RECORDS_UNDECODABLE"


def test_zero_inner_messages() -> None:
    buf = build_message(5, None, codecs.compress(GZIP, b""), magic=1, attributes=GZIP)
    assert "no messages" in _undecodable(buf).message


def test_nested_compression() -> None:
    inner = build_compressed(ROWS, magic=1, codec=GZIP)
    buf = build_message(102, None, codecs.compress(SNAPPY, inner), magic=1, attributes=SNAPPY)
    assert "nested" in _undecodable(buf).message


def test_inner_magic_mismatch_and_trailing_garbage() -> None:
    inner = build_message(0, b"k", b"v", magic=0)
    buf = build_message(0, None, codecs.compress(GZIP, inner), magic=1, attributes=GZIP)
    assert "magic" in _undecodable(buf).message
    inner = build_message(0, b"k", b"v", magic=1) + b"\x00" * 5
    buf = build_message(0, None, codecs.compress(GZIP, inner), magic=1, attributes=GZIP)
    assert _undecodable(buf).code == "KAFKA_RECORDS_UNDECODABLE"


@pytest.mark.parametrize("magic", [0, 1])
def test_zstd_wrapper_rejected(magic: int) -> None:
    buf = build_message(0, None, codecs.compress(ZSTD, build_message(0, None, b"v", magic=magic)),
                        magic=magic, attributes=ZSTD)
    assert _undecodable(buf).code == "KAFKA_BATCH_BAD_CODEC"


def test_bomb_in_wrapper_reports_position() -> None:
    value = codecs.compress(GZIP, bytes(3 << 20))
    buf = build_message(0, None, b"x", magic=1) + build_message(7, None, value, magic=1, attributes=GZIP)
    first, e = _walk(buf)
    with pytest.raises(FormatError) as err:
        inner_records(e, limit=1 << 20)
    assert (err.value.code, err.value.position, err.value.offset) == ("KAFKA_DECOMPRESSION_BOMB", first.size, 7)


# --- fast reader error codes -------------------------------------------------------------

def test_reader_error_codes() -> None:
    good = build_message(3, b"key", b"value", magic=1, timestamp=5)
    cases = {
        "KAFKA_TRAILING_BYTES": good[:11],
        "KAFKA_TORN_TAIL": good[:-1],
        "KAFKA_BATCH_LENGTH_TOO_SMALL": good[:8] + struct.pack(">i", 13) + good[12:],
        "KAFKA_BATCH_BAD_MAGIC": good[:16] + b"\x02" + good[17:],
        "KAFKA_RECORDS_UNDECODABLE": good[:26] + struct.pack(">i", 1000) + good[30:],
    }
    for code, buf in cases.items():
        with pytest.raises(FormatError) as e:
            read_legacy_entry(buf, 0)
        assert e.value.code == code, code
        assert e.value.position == 0
    v1_too_small = build_message(3, None, None, magic=0)  # 14-byte message marked v1
    with pytest.raises(FormatError) as e:
        read_legacy_entry(v1_too_small[:16] + b"\x01" + v1_too_small[17:], 0)
    assert e.value.code == "KAFKA_BATCH_LENGTH_TOO_SMALL"


def test_reader_at_position_and_zero_copy() -> None:
    buf = build_message(1, b"k1", b"v1", magic=0) + build_message(2, None, b"v2", magic=1, timestamp=9)
    a, b = _walk(buf)
    assert (a.position, b.position, b.offset, b.timestamp) == (0, a.size, 2, 9)
    assert isinstance(b.value, memoryview) and bytes(b.value) == b"v2"


# --- damage ---------------------------------------------------------------------------------

MESSAGE_SET = (build_message(10, b"k", b"plain v0", magic=0)
               + build_compressed(ROWS, magic=1, codec=GZIP)
               + build_compressed(ROWS, magic=1, codec=SNAPPY)
               + build_compressed(ROWS, magic=0, codec=LZ4)
               + build_compressed(ROWS, magic=1, codec=LZ4)
               + build_message(200, None, b"plain v1", magic=1, timestamp=3))


@settings(max_examples=1500, deadline=None)
@given(st.data())
def test_mutations_raise_format_error_or_fail_crc(draw: st.DataObject) -> None:
    buf = bytearray(MESSAGE_SET)
    i = draw.draw(st.integers(0, len(buf) - 1))
    buf[i] ^= draw.draw(st.integers(1, 255))
    buf = bytes(buf[:draw.draw(st.integers(0, len(buf)))])
    pos = 0
    while pos < len(buf):
        try:
            e = read_legacy_entry(buf, pos)
        except FormatError:
            return
        if e.position + 16 <= i < e.position + e.size:  # the flip is inside this CRC's coverage
            assert not e.crc_valid
        try:
            inner_records(e, limit=1 << 20)
        except FormatError:
            pass
        pos += e.size


def test_every_truncation_raises_format_error() -> None:
    for buf in (build_message(1, b"key", b"value", magic=0), build_compressed(ROWS, magic=1, codec=LZ4)):
        for cut in range(len(buf)):
            with pytest.raises(FormatError):
                read_legacy_entry(buf[:cut], 0)


# --- differential against kafka-python -----------------------------------------------------

@pytest.fixture
def kp(monkeypatch: pytest.MonkeyPatch) -> types.SimpleNamespace:
    """kafka-python's legacy record classes, with stand-ins for two missing C libraries.

    python-snappy and xxhash are not installed: snappy raw blocks come from
    cramjam, and xxh32 (used only for magic-0 LZ4 header checksums, which
    readers ignore) from our own codec module. The framings are kafka-python's.
    """
    kc = pytest.importorskip("kafka.codec")
    lr = pytest.importorskip("kafka.record.legacy_records")
    if not kc.has_snappy():
        monkeypatch.setattr(kc, "snappy", types.SimpleNamespace(
            compress=lambda b: bytes(cramjam.snappy.compress_raw(bytes(b))),
            decompress=lambda b: bytes(cramjam.snappy.decompress_raw(bytes(b)))))
    if kc.xxhash is None:
        monkeypatch.setattr(kc, "xxhash", types.SimpleNamespace(
            xxh32=lambda b: types.SimpleNamespace(digest=lambda: struct.pack(">I", codecs.xxh32(bytes(b))))))
    return types.SimpleNamespace(builder=lr.LegacyRecordBatchBuilder, batch=lr.LegacyRecordBatch)


CODECS = [NONE, GZIP, SNAPPY, LZ4]
rows = st.lists(st.tuples(st.integers(0, 2**41), maybe_bytes, maybe_bytes), min_size=1, max_size=6)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from([0, 1]), st.sampled_from(CODECS), rows)
def test_reads_what_kafka_python_writes(kp: types.SimpleNamespace, magic: int, codec: int, rows: list) -> None:
    builder = kp.builder(magic, codec, batch_size=1 << 30)
    crcs = [builder.append(i, timestamp=ts, key=k, value=v).crc for i, (ts, k, v) in enumerate(rows)]
    buf = bytes(builder.build())
    got = _records(buf)
    assert [(r.offset, r.key, r.value, r.crc, r.crc_valid) for r in got] == [
        (i, k, v, crc, True) for i, ((_, k, v), crc) in enumerate(zip(rows, crcs, strict=True))]
    assert [r.timestamp for r in got] == [ts if magic else -1 for ts, _, _ in rows]
    expected = [(r.offset, r.timestamp, r.key, r.value, r.checksum) for r in kp.batch(buf, magic)] \
        if codec else [(r.offset, r.timestamp, r.key, r.value, r.checksum)
                       for e in _walk(buf) for r in kp.batch(buf[e.position:e.position + e.size], magic)]
    assert [(r.offset, r.timestamp if magic else None, r.key, r.value, r.crc) for r in got] == expected


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from([0, 1]), st.sampled_from([GZIP, SNAPPY, LZ4]), rows, st.integers(0, 2**40))
def test_kafka_python_reads_what_we_write(kp: types.SimpleNamespace, magic: int, codec: int, rows: list,
                                          base: int) -> None:
    records = [(base + i, ts, k, v) for i, (ts, k, v) in enumerate(rows)]
    buf = build_compressed(records, magic=magic, codec=codec)
    theirs = list(kp.batch(buf, magic))
    assert [(r.offset, r.key, r.value) for r in theirs] == [(o, k, v) for o, _, k, v in records]
    assert [r.timestamp for r in theirs] == [ts if magic else None for _, ts, _, _ in records]
    assert all(r.validate_crc() for r in theirs) and kp.batch(buf, magic).validate_crc()
    plain = build_message(base, rows[0][1], rows[0][2], magic=magic, timestamp=rows[0][0])
    (r,) = kp.batch(plain, magic)
    assert (r.offset, r.key, r.value, r.validate_crc()) == (base, rows[0][1], rows[0][2], True)
