"""Record batch v2: fixed vectors from the reference, layout agreement, round trips, differential."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replog.formats.codes import CODES
from replog.formats.errors import FormatError
from replog.formats.kafka import batch as v2
from replog.formats.kafka import control
from replog.formats.kafka.varint import encode_varint, read_varint
from tests.brokers.share_state_records import uvarint

TS = 1700000000000

# docs/reference/kafka.md §2.1: one record, key null, value "hi", base offset 0, epoch 0.
WORKED_V2 = bytes.fromhex(
    "0000000000000000 0000003a 00000000 02 bbcc4115 0000 00000000"
    "0000018bcfe56800 0000018bcfe56800 ffffffffffffffff ffff ffffffff 00000001"
    "100000000104686900")
# docs/reference/kafka.md §3: COMMIT marker, producer 4242, coordinator epoch 5, offset 106, leader epoch 7.
WORKED_COMMIT = bytes.fromhex(
    "000000000000006a 00000042 00000007 02 f0c3d57f 0030 00000000"
    "0000018bcfe56800 0000018bcfe56800 0000000000001092 0000 ffffffff 00000001"
    "200000000800000001 0c00000000000500")


def test_worked_example_builds_byte_for_byte() -> None:
    built = v2.build_batch([v2.Record(0, TS, None, b"hi")], base_offset=0, partition_leader_epoch=0)
    assert built == WORKED_V2


def test_worked_example_reads() -> None:
    h = v2.read_header(WORKED_V2, 0)
    assert (h.base_offset, h.size, h.partition_leader_epoch, h.crc, h.count) == (0, 70, 0, 0xBBCC4115, 1)
    assert v2.compute_crc(WORKED_V2, 0, h.size) == h.crc
    [rec] = v2.decode_records(h, v2.records_payload(WORKED_V2, h))
    assert rec == v2.Record(0, TS, None, b"hi")


def test_commit_marker_matches_reference_bytes() -> None:
    built = control.build_marker_batch(offset=106, commit=True, producer_id=4242, producer_epoch=0,
                                       coordinator_epoch=5, timestamp=TS, partition_leader_epoch=7)
    assert built == WORKED_COMMIT
    h = v2.read_header(built, 0)
    assert h.is_control and h.is_transactional and h.size == 78
    [rec] = v2.decode_records(h, v2.records_payload(built, h))
    assert control.parse_control_key(rec.key).name == "COMMIT"
    assert control.parse_end_txn_marker(rec.value).coordinator_epoch == 5


def test_header_fast_path_agrees_with_layout() -> None:
    for data in (WORKED_V2, WORKED_COMMIT):
        parsed = v2.BATCH_HEADER.parse(data)
        fast = v2.read_header(data, 0)
        derived = {"batch_length": fast.size - v2.LOG_OVERHEAD,
                   "last_offset_delta": fast.last_offset - fast.base_offset,
                   "base_timestamp": fast.first_timestamp, "records_count": fast.count}
        assert {k: derived[k] if k in derived else getattr(fast, k) for k in parsed if not k.startswith("_")} == \
            {k: v for k, v in parsed.items() if not k.startswith("_")}, "the row decode differs from the layout"
        assert fast.crc_valid, "the header decode checks the CRC when not told"
        assert v2.BATCH_HEADER.build(parsed) == data[:v2.HEADER_SIZE]


@pytest.mark.parametrize("value", [0, -1, 1, 63, 64, -65, 2**31 - 1, -(2**31), 2**63 - 1, -(2**63)])
def test_varint_round_trip_and_reference_examples(value: int) -> None:
    enc = encode_varint(value)
    assert read_varint(enc, 0, 10) == (value, len(enc))


def test_varint_reference_encodings() -> None:
    assert [encode_varint(v).hex() for v in (0, -1, 1, 2, 63, 64)] == ["00", "01", "02", "04", "7e", "8001"]


def test_varint_agrees_with_the_oracle_from_the_definition() -> None:
    """replog's encoder against the lab oracle (`share_state_records.uvarint`, written from the base-128
    definition) of the zig-zag value (2v for v >= 0, -2v - 1 below), at every power of two in the int64 range;
    the oracle itself against the protobuf documentation's own examples (1, 150, 300)."""
    assert [uvarint(n).hex() for n in (1, 150, 300)] == ["01", "9601", "ac02"], "the oracle's base-128 varint"
    for bits in range(0, 64):
        for value in {v for v in (2**bits - 1, 2**bits, -(2**bits), -(2**bits) - 1) if -(2**63) <= v < 2**63}:
            zigzag = 2 * value if value >= 0 else -2 * value - 1
            assert encode_varint(value) == uvarint(zigzag), f"encode_varint({value})"


def test_varint_too_long_is_format_error() -> None:
    with pytest.raises(FormatError):
        read_varint(b"\xff\xff\xff\xff\xff\x01", 0)


headers_st = st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=16)), max_size=3)
record_st = st.tuples(st.none() | st.binary(max_size=40), st.none() | st.binary(max_size=200), headers_st,
                      st.integers(0, 5), st.integers(-1000, 10**6))


@st.composite
def batches(draw: st.DrawFn) -> tuple[int, list[v2.Record], dict]:
    base = draw(st.integers(0, 2**40))
    specs = draw(st.lists(record_st, min_size=1, max_size=12))
    offset, ts0, records = base, draw(st.integers(0, 2**42)), []
    for key, value, headers, gap, dts in specs:
        records.append(v2.Record(offset, ts0 + dts, key, value, tuple(headers)))
        offset += 1 + gap
    opts = dict(partition_leader_epoch=draw(st.integers(-1, 2**31 - 1)),
                codec=draw(st.sampled_from([0, 1, 2, 3, 4])),
                producer_id=draw(st.integers(-1, 2**62)), producer_epoch=draw(st.integers(-1, 32767)),
                base_sequence=draw(st.integers(-1, 2**31 - 1)), transactional=draw(st.booleans()))
    return base, records, opts


@settings(max_examples=150, deadline=None)
@given(batches())
def test_build_then_read_round_trip(case: tuple[int, list[v2.Record], dict]) -> None:
    base, records, opts = case
    data = v2.build_batch(records, base_offset=base, **opts)
    h = v2.read_header(data, 0)
    assert h.size == len(data) and v2.compute_crc(data, 0, h.size) == h.crc
    assert h.codec == opts["codec"] and h.partition_leader_epoch == opts["partition_leader_epoch"]
    assert h.last_offset == records[-1].offset and h.max_timestamp == max(r.timestamp for r in records)
    decoded = v2.decode_records(h, v2.records_payload(data, h))
    seq = opts["base_sequence"]
    expected = [v2.Record(r.offset, r.timestamp, r.key, r.value, r.headers, 0,
                          v2.increment_sequence(seq, r.offset - base) if seq >= 0 else -1) for r in records]
    assert decoded == expected


@settings(max_examples=100, deadline=None)
@given(record_st, st.integers(0, 2**20))
def test_record_encoder_agrees_with_layout(spec: tuple, delta: int) -> None:
    key, value, headers, _, dts = spec
    enc = v2.encode_record(delta, dts, key, value, headers)
    parsed = v2.RECORD.parse(enc)
    assert (parsed.offset_delta, parsed.timestamp_delta, parsed.key, parsed.value) == (delta, dts, key, value)
    assert [(h.key.decode(), h.value) for h in parsed.headers] == list(headers)
    assert v2.RECORD.build(parsed) == enc


def test_log_append_time_reports_max_timestamp_for_every_record() -> None:
    recs = [v2.Record(5, TS, b"k", b"a"), v2.Record(6, TS + 7, b"k", b"b")]
    data = v2.build_batch(recs, base_offset=5, timestamp_type=v2.LOG_APPEND_TIME, max_timestamp=TS + 99)
    h = v2.read_header(data, 0)
    assert [r.timestamp for r in v2.decode_records(h, v2.records_payload(data, h))] == [TS + 99] * 2


def test_record_count_larger_than_bytes_is_rejected_without_allocating() -> None:
    data = bytearray(v2.build_batch([v2.Record(0, TS, None, b"x")], base_offset=0))
    data[57:61] = (2**31 - 1).to_bytes(4, "big")
    h = v2.read_header(bytes(data), 0)
    with pytest.raises(FormatError) as e:
        v2.decode_records(h, v2.records_payload(bytes(data), h))
    assert e.value.code == "KAFKA_BATCH_BAD_RECORD_COUNT"


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=1, max_size=300), st.integers(0, 10**6))
def test_random_record_bytes_only_raise_format_error(junk: bytes, seed: int) -> None:
    h = v2.read_header(WORKED_V2, 0)._replace(count=seed % 9)
    try:
        v2.decode_records(h, junk)
    except FormatError as e:
        assert e.code in CODES  # only a located, registered format error may come out


# --- differential: independent encoders and decoders -------------------------------

def _kafka_python_batch(codec: int, records: list[v2.Record], base: int) -> bytes:
    from kafka.record.default_records import DefaultRecordBatchBuilder
    b = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False, producer_id=-1,
                                  producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for r in records:
        b.append(r.offset - base, timestamp=r.timestamp, key=r.key, value=r.value, headers=list(r.headers))
    buf = bytearray(b.build())
    buf[0:8] = base.to_bytes(8, "big")  # the broker assigns the base offset; not covered by the CRC
    return bytes(buf)


def _aiokafka_batch(codec: int, records: list[v2.Record], base: int) -> bytes:
    from aiokafka.record.default_records import DefaultRecordBatchBuilder
    b = DefaultRecordBatchBuilder(2, codec, False, -1, -1, -1, 1 << 20)
    for r in records:
        b.append(r.offset - base, timestamp=r.timestamp, key=r.key, value=r.value, headers=list(r.headers))
    buf = bytearray(b.build())
    buf[0:8] = base.to_bytes(8, "big")
    return bytes(buf)


def _sample_records(base: int, n: int = 50) -> list[v2.Record]:
    return [v2.Record(base + i, TS + i * 3, None if i % 7 == 0 else f"key-{i}".encode(),
                      None if i % 11 == 5 else (f"value-{i}-" * (i % 5 + 1)).encode(),
                      ((f"h{i}", b"v"), ("n", None)) if i % 4 == 0 else ()) for i in range(n)]


def _available(encoder: str, codec: int) -> bool:
    if encoder == "kafka-python":
        import kafka.codec as c
    else:
        import aiokafka.codec as c  # type: ignore[no-redef]
    return {0: True, 1: c.has_gzip(), 2: c.has_snappy(), 3: c.has_lz4(), 4: c.has_zstd()}[codec]


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("encoder", ["kafka-python", "aiokafka"])
def test_batches_from_independent_encoders_decode_identically(encoder: str, codec: int) -> None:
    if not _available(encoder, codec):
        pytest.skip(f"{encoder} has no codec {codec} in this install")
    records = _sample_records(1000)
    build = _kafka_python_batch if encoder == "kafka-python" else _aiokafka_batch
    data = build(codec, records, 1000)
    h = v2.read_header(data, 0)
    assert v2.compute_crc(data, 0, h.size) == h.crc and h.codec == codec
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers)
            for r in v2.decode_records(h, v2.records_payload(data, h))] == \
        [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in records]


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_our_batches_decode_identically_in_aiokafka_and_kafka_python(codec: int) -> None:
    from aiokafka.record.default_records import DefaultRecordBatch as ABatch
    from kafka.record.default_records import DefaultRecordBatch as KBatch
    records = _sample_records(77)
    data = v2.build_batch(records, base_offset=77, codec=codec, partition_leader_epoch=3)
    for reader, enc in ((ABatch, "aiokafka"), (KBatch, "kafka-python")):
        if not _available(enc, codec):
            continue
        batch = reader(bytearray(data))
        assert batch.validate_crc()
        got = [(r.offset, r.timestamp, r.key, r.value, tuple((k, v) for k, v in r.headers)) for r in batch]
        assert got == [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in records], enc
