"""The streaming record check (`RecordCheck` over a walk's blocks) gives exactly `record_findings`' answer.

The oracle is the reference path of `record_findings` (`deep_check` on every
CRC-valid batch). Segments are generated: v2 batches in every codec, legacy
v0/v1 messages (plain and compressed), and batches that stay CRC-valid while
their records are wrong: bytes of the records (or of the compressed payload)
changed, a wrong record count, a record area cut short, an undefined codec, a
decompression bomb, a last offset below the records', timestamps above the
batch's max or negative, offsets that do not rise. They are fed in blocks of
random sizes (and as the compiled walk yields them).
"""
from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from replog.formats.kafka import batch as v2
from replog.formats.kafka import codecs, fastwalk, legacy
from replog.formats.kafka.blocks import BatchBlock
from replog.formats.kafka.fastrecords import check_record_bounds
from replog.formats.kafka.fastwalk import FastWalk
from replog.formats.kafka.segment import BatchInfo, SegmentWalk
from replog.recovery.kafka.checks_segments import MAX_RECORD_FINDINGS, RecordCheck, deep_check, record_findings

pytestmark = pytest.mark.skipif(not fastwalk.HAVE_NUMBA, reason="numba not installed: nothing fast to compare")

TS = 1_700_000_000_000
PATH = "00000000000000000000.log"
NEVER = 1 << 62  # a fast threshold no buffer reaches: the reference path
_CRC = v2.AT["crc"]
# 2 MiB of zeros compress to a few hundred bytes: more than the 1 MiB a small payload may expand to.
BOMB = v2.build_batch([v2.Record(0, TS, None, bytes(2 << 20))], base_offset=0, codec=codecs.ZSTD)

V2_DAMAGE = ["none"] * 6 + ["record_bytes", "count", "cut", "bad_codec", "bomb", "last", "ts_max", "ts_negative",
                            "offsets_back"]


def recrc(raw: bytearray) -> bytes:
    """The v2 batch with its CRC recomputed over whatever it now holds."""
    raw[_CRC:_CRC + 4] = struct.pack(">I", v2.compute_crc(raw, 0, len(raw)))
    return bytes(raw)


def legacy_recrc(raw: bytearray) -> bytes:
    raw[12:16] = struct.pack(">I", zlib.crc32(raw[legacy.MAGIC_POSITION:]))
    return bytes(raw)


def rebase(raw: bytes, offset: int) -> bytes:
    """A v2 batch at another base offset (outside the CRC)."""
    return struct.pack(">q", offset) + raw[8:]


fields = st.one_of(st.none(), st.binary(max_size=12))
headers = st.lists(st.tuples(st.sampled_from(["h", "trace", "é"]), fields), max_size=2)


@st.composite
def v2_batch(draw: st.DrawFn, offset: int) -> tuple[bytes, int]:
    """A v2 batch at `offset`, maybe damaged; returns its bytes and the next offset."""
    damage = draw(st.sampled_from(V2_DAMAGE))
    if damage == "bomb":
        return rebase(BOMB, offset), offset + 1
    n = draw(st.integers(0, 5))
    codec = draw(st.sampled_from([0, 0, 0, 1, 2, 3, 4]))
    ts_type = draw(st.sampled_from([v2.CREATE_TIME, v2.CREATE_TIME, v2.LOG_APPEND_TIME]))
    ts = [TS + draw(st.integers(-3, 3)) if draw(st.integers(0, 9)) else draw(st.sampled_from([-1, 0]))
          for _ in range(n)]
    offsets = [offset + i for i in range(n)]
    if damage == "ts_negative" and n:
        ts[draw(st.integers(0, n - 1))] = draw(st.sampled_from([-2, -5, -TS]))
    if damage == "offsets_back" and n > 1:
        i = draw(st.integers(1, n - 1))
        offsets[i] = offsets[i - 1] - draw(st.integers(0, 2))
    recs = [v2.Record(o, t, draw(fields), draw(fields), tuple(draw(headers))) for o, t in zip(offsets, ts, strict=True)]
    kw: dict = {}
    if damage == "last" and n:
        kw["last_offset_delta"] = max(offsets) - offset - draw(st.integers(1, 3))
    if damage == "ts_max" and n:
        kw["max_timestamp"] = max(ts) - draw(st.integers(1, 10))
    raw = bytearray(v2.build_batch(recs, base_offset=offset, codec=codec, timestamp_type=ts_type,
                                   base_sequence=draw(st.sampled_from([-1, 0, 2**31 - 2])),
                                   producer_id=draw(st.sampled_from([-1, 5])), **kw))
    if damage == "record_bytes" and len(raw) > v2.HEADER_SIZE:
        for _ in range(draw(st.integers(1, 3))):
            raw[draw(st.integers(v2.HEADER_SIZE, len(raw) - 1))] ^= draw(st.integers(1, 255))
        raw = bytearray(recrc(raw))
    elif damage == "count":
        raw[v2.AT["records_count"]:v2.HEADER_SIZE] = struct.pack(">i", draw(st.sampled_from([-1, n + 1, n - 1, 10**6])))
        raw = bytearray(recrc(raw))
    elif damage == "cut" and len(raw) > v2.HEADER_SIZE:
        del raw[len(raw) - draw(st.integers(1, len(raw) - v2.HEADER_SIZE)):]
        raw[8:12] = struct.pack(">i", len(raw) - v2.LOG_OVERHEAD)
        raw = bytearray(recrc(raw))
    elif damage == "bad_codec":
        raw[v2.AT["attributes"] + 1] = (raw[v2.AT["attributes"] + 1] & ~v2.CODEC_MASK) | draw(st.integers(5, 7))
        raw = bytearray(recrc(raw))
    return bytes(raw), offset + max(n, 1)


@st.composite
def legacy_entry(draw: st.DrawFn, offset: int) -> tuple[bytes, int]:
    """A v0/v1 message or compressed wrapper at `offset`, maybe damaged (CRC kept valid)."""
    magic = draw(st.integers(0, 1))
    if draw(st.booleans()):
        raw = bytearray(legacy.build_message(offset, draw(fields), draw(fields), magic=magic,
                                             timestamp=TS + draw(st.integers(-2, 2))))
        if draw(st.integers(0, 3)) == 0:  # a key or value length that does not fit: the walk cannot read it
            at = legacy.LOG_OVERHEAD + 6 + (8 if magic else 0)
            at += draw(st.sampled_from([0, 4 + max(0, struct.unpack_from(">i", raw, at)[0])]))
            raw[at:at + 4] = struct.pack(">i", draw(st.integers(-3, 40)))
            raw = bytearray(legacy_recrc(raw))
        return bytes(raw), offset + 1
    n = draw(st.integers(1, 3))
    recs = [(offset + i, TS + i, b"k%d" % i, draw(fields)) for i in range(n)]
    damage = draw(st.sampled_from(["none", "none", "value_bytes", "wrapper_offset"]))
    wrapper = offset + n - 1 - draw(st.integers(1, 2)) if damage == "wrapper_offset" else None
    raw = bytearray(legacy.build_compressed(recs, magic=magic, codec=draw(st.sampled_from([1, 2, 3])),
                                            wrapper_offset=wrapper))
    if damage == "value_bytes":
        value_at = legacy.LOG_OVERHEAD + 6 + (8 if magic else 0) + 4 + 4  # after attributes, timestamp, lengths
        for _ in range(draw(st.integers(1, 3))):
            raw[draw(st.integers(value_at, len(raw) - 1))] ^= draw(st.integers(1, 255))
        raw = bytearray(legacy_recrc(raw))
    return bytes(raw), offset + n


@st.composite
def segments(draw: st.DrawFn) -> bytes:
    parts, offset = [], draw(st.integers(0, 1000))
    for _ in range(draw(st.integers(0, 12))):
        offset = max(0, offset + draw(st.sampled_from([0, 0, 0, 0, 2, -3])))
        raw, offset = draw(v2_batch(offset) if draw(st.integers(0, 5)) else legacy_entry(offset))
        parts.append(raw)
    buf = bytearray(b"".join(parts))
    if buf and draw(st.integers(0, 4)) == 0:  # plain damage too: flipped bytes, a torn tail
        buf[draw(st.integers(0, len(buf) - 1))] ^= draw(st.integers(1, 255))
    if buf and draw(st.integers(0, 4)) == 0:
        del buf[draw(st.integers(0, len(buf) - 1)):]
    return bytes(buf)


def reference(buf: bytes, batches: list[BatchInfo]) -> list[dict]:
    return [f.to_dict() for f in record_findings(buf, batches, PATH, fast_threshold=NEVER)]


def stream(buf: bytes | memoryview, batches: list[BatchInfo], sizes: list[int], fast: bool = True) -> list[dict]:
    """`RecordCheck` fed the batches as blocks of the given sizes (cycled)."""
    check = RecordCheck(buf, PATH, fast=fast)
    start, k = 0, 0
    while start < len(batches):
        size = sizes[k % len(sizes)]
        check.feed(BatchBlock.from_infos(batches[start:start + size]))
        start, k = start + size, k + 1
    return [f.to_dict() for f in check.finish()]


SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(segments(), st.lists(st.integers(1, 6), min_size=1, max_size=4))
def test_stream_equals_reference(buf: bytes, sizes: list[int]) -> None:
    batches = list(SegmentWalk(buf, PATH, 0).batches())
    ref = reference(buf, batches)
    assert stream(buf, batches, sizes) == ref
    assert stream(buf, batches, sizes, fast=False) == ref
    assert [f.to_dict() for f in record_findings(buf, batches, PATH, fast_threshold=0)] == ref


@SETTINGS
@given(segments(), st.integers(1, 8))
def test_stream_over_the_compiled_walk_equals_reference(buf: bytes, chunk: int) -> None:
    """As doctor feeds it: the blocks of `FastWalk`, views into one reused buffer."""
    check = RecordCheck(buf, PATH, fast=True)
    for block in FastWalk(buf, PATH, 0).blocks(chunk):
        check.feed(block)
    assert [f.to_dict() for f in check.finish()] == reference(buf, list(SegmentWalk(buf, PATH, 0).batches()))


@SETTINGS
@given(segments(), st.sampled_from([1, 40, 300, 5000]))
def test_payload_chunks_do_not_change_the_flags(buf: bytes, chunk_bytes: int) -> None:
    """Decompressed payloads checked a few bytes at a time (a payload larger than the chunk on its own)."""
    batches = [b for b in SegmentWalk(buf, PATH, 0).batches() if b.crc_valid and 0 <= b.magic <= 2]
    block, rows = BatchBlock.from_infos(batches), np.arange(len(batches))
    small = check_record_bounds(buf, block, rows, chunk_bytes=chunk_bytes)
    default = check_record_bounds(buf, block, rows)
    assert small.rows.tolist() == default.rows.tolist()
    assert {k: (e.code, e.message, e.position) for k, e in small.errors.items()} == \
        {k: (e.code, e.message, e.position) for k, e in default.errors.items()}


@st.composite
def any_rows(draw: st.DrawFn, buf: bytes) -> list[BatchInfo]:
    """Rows no walk would give: real or arbitrary positions, columns that disagree with the bytes."""
    real = [b for b in SegmentWalk(buf, PATH, 0).batches()]
    rows = []
    for _ in range(draw(st.integers(1, 8))):
        b = draw(st.sampled_from(real)) if real and draw(st.booleans()) else None
        position = b.position if b else draw(st.integers(0, len(buf) - 1))
        base = b.base_offset if b else draw(st.integers(0, 2000))
        base += draw(st.sampled_from([0, 0, 0, -1, 1]))
        last = (b.last_offset if b else base + draw(st.integers(-1, 5))) + draw(st.sampled_from([0, 0, 0, -1, 1]))
        max_ts = (b.max_timestamp if b else TS) + draw(st.sampled_from([0, 0, 0, -1, 1, -TS]))
        rows.append(BatchInfo(position, b.size if b and draw(st.booleans()) else draw(st.integers(0, len(buf))),
                              b.magic if b and draw(st.booleans()) else draw(st.integers(0, 2)), base, last,
                              0, 0, 0, True, 0, draw(st.integers(0, 7)), draw(st.sampled_from([0, 1, -1])),
                              TS, max_ts, -1, -1, -1, False, False, False))
    return rows


@SETTINGS
@given(st.data())
def test_any_rows_equal_reference(data: st.DataObject) -> None:
    """`record_findings` takes any rows: the kernel must agree with the reference on rows whose
    columns contradict the bytes, or that point into the middle of a batch."""
    buf = data.draw(segments().filter(len))
    rows = data.draw(any_rows(buf))
    try:
        ref = reference(buf, rows)
    except Exception:  # noqa: BLE001 - the reference itself fails on such a row: not a comparison
        assume(False)
    assert stream(buf, rows, data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))) == ref


@SETTINGS
@given(st.integers(0, 1), fields, fields, st.sampled_from(["key", "value", "size"]), st.integers(-3, 40),
       st.integers(3, 7))
def test_legacy_messages_the_walk_cannot_read(magic: int, key: bytes | None, value: bytes | None, where: str,
                                              length: int, offset: int) -> None:
    """A legacy row over a message whose lengths do not fit (given as if CRC-valid): the reference's answer."""
    raw = bytearray(legacy.build_message(5, key, value, magic=magic, timestamp=TS))
    at = legacy.LOG_OVERHEAD + 6 + (8 if magic else 0)
    if where == "size":
        at = 8
    elif where == "value":
        at += 4 + max(0, len(key or b""))
    raw[at:at + 4] = struct.pack(">i", length)
    buf = bytes(raw) + legacy.build_message(6, b"k", b"v", magic=magic)
    rows = [BatchInfo(0, len(raw), magic, offset, offset + 1, 1, -1, 0, True, 0, 0, -1, TS, TS, -1, -1, -1,
                      False, False, False)]
    assert stream(buf, rows, [1]) == reference(buf, rows)


def _bad_segment(count: int) -> bytes:
    """`count` CRC-valid batches with a problem each (every kind), between clean ones."""
    out, offset = bytearray(), 0
    for i in range(count):
        recs = [v2.Record(offset + j, TS + j, b"k", b"v") for j in range(3)]
        kind = i % 4
        if kind == 0:
            out += v2.build_batch(recs, base_offset=offset, last_offset_delta=1)
        elif kind == 1:
            out += v2.build_batch(recs, base_offset=offset, max_timestamp=TS, codec=codecs.LZ4)
        elif kind == 2:
            raw = bytearray(v2.build_batch(recs, base_offset=offset))
            raw[v2.HEADER_SIZE] = 0x7F  # a record length beyond the batch
            out += recrc(raw)
        else:
            raw = bytearray(v2.build_batch(recs, base_offset=offset, codec=codecs.GZIP))
            raw[v2.HEADER_SIZE + 12:] = bytes(len(raw) - v2.HEADER_SIZE - 12)
            out += recrc(raw)
        offset += 3
        out += v2.build_batch([v2.Record(offset, TS, b"k", b"v")], base_offset=offset)
        offset += 1
    return bytes(out)


@pytest.mark.parametrize("sizes", [[1], [7], [3, 50], [1000]])
def test_the_cap_and_the_order_are_the_reference_s(sizes: list[int]) -> None:
    buf = _bad_segment(MAX_RECORD_FINDINGS + 30)
    batches = list(SegmentWalk(buf, PATH, 0).batches())
    ref = reference(buf, batches)
    assert len(ref) == MAX_RECORD_FINDINGS
    assert stream(buf, batches, sizes) == ref


def test_a_full_check_reads_nothing_more() -> None:
    buf = _bad_segment(MAX_RECORD_FINDINGS)
    check = RecordCheck(buf, PATH, fast=True)
    check.feed(BatchBlock.from_infos(list(SegmentWalk(buf, PATH, 0).batches())))
    assert check.full
    check.feed(BatchBlock.from_infos([BatchInfo(0, 10**9, 2, 0, 0, 1, 0, 0, True, 0, 0, 0, 0, 0, -1, -1, -1,
                                                False, False, False)]))  # would fail if it were read
    assert len(check.finish()) == MAX_RECORD_FINDINGS


@pytest.mark.parametrize("codec", [codecs.GZIP, codecs.SNAPPY, codecs.LZ4, codecs.ZSTD])
def test_undecodable_payload_is_placed_at_its_batch(codec: int) -> None:
    """A CRC-valid batch whose compressed payload is garbage: the codec's error carries no position,
    the finding is at the batch (the earlier compiled path raised KeyError: None here)."""
    good = v2.build_batch([v2.Record(i, TS + i, b"k", b"v" * 50) for i in range(3)], base_offset=0)
    bad = bytearray(v2.build_batch([v2.Record(3 + i, TS + i, b"k", b"v" * 50) for i in range(3)],
                                   base_offset=3, codec=codec))
    for i in range(v2.HEADER_SIZE + 10, len(bad)):
        bad[i] ^= 0x5A
    buf = good + recrc(bad)
    batches = list(SegmentWalk(buf, PATH, 0).batches())
    assert all(b.crc_valid for b in batches)
    ref = reference(buf, batches)
    assert [(f["code"], f["position"], f["offset"]) for f in ref] == [("KAFKA_RECORDS_UNDECODABLE", len(good), 3)]
    assert stream(buf, batches, [1]) == stream(buf, batches, [2]) == ref
    flagged = check_record_bounds(buf, BatchBlock.from_infos(batches), np.arange(2))
    assert flagged.rows.tolist() == [1]
    assert (flagged.errors[1].position, flagged.errors[1].offset) == (len(good), 3)


def test_a_bomb_is_a_bomb_at_its_batch() -> None:
    buf = rebase(BOMB, 5)
    batches = list(SegmentWalk(buf, PATH, 5).batches())
    ref = reference(buf, batches)
    assert [(f["code"], f["position"], f["offset"]) for f in ref] == [("KAFKA_DECOMPRESSION_BOMB", 0, 5)]
    assert stream(buf, batches, [1]) == ref


def test_a_last_offset_beyond_int64_is_judged_by_the_reference() -> None:
    """Base offset near 2**63: the header's last offset does not fit int64 (no block can hold it)."""
    base = 2**63 - 2
    buf = (v2.build_batch([v2.Record(base, TS, b"k", b"v")], base_offset=base)
           + v2.build_batch([v2.Record(base + 1, TS, b"k", b"v")], base_offset=base + 1, last_offset_delta=5))
    batches = list(SegmentWalk(buf, PATH).batches())
    assert batches[-1].last_offset > 2**63 - 1
    assert [f.to_dict() for f in record_findings(buf, batches, PATH, fast_threshold=0)] == reference(buf, batches)


def test_a_record_offset_beyond_int64_is_the_reference_s_mismatch() -> None:
    """The last offset fits int64, a record's does not: the reference says LAST_OFFSET_MISMATCH (the
    earlier compiled path said RECORDS_UNDECODABLE, 'outside 64 bits')."""
    base = 2**63 - 2
    buf = v2.build_batch([v2.Record(base, TS, b"k", b"v"), v2.Record(base + 5, TS, b"k", b"v")], base_offset=base,
                         last_offset_delta=1)
    batches = list(SegmentWalk(buf, PATH).batches())
    ref = reference(buf, batches)
    assert [f["code"] for f in ref] == ["KAFKA_BATCH_LAST_OFFSET_MISMATCH"]
    assert stream(buf, batches, [1]) == ref


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.sampled_from([0, 1, 2, 3, 4]),
                          st.sampled_from([v2.CREATE_TIME, v2.LOG_APPEND_TIME]), st.lists(headers, max_size=6)),
                min_size=1, max_size=8))
def test_clean_batches_are_cleared_by_the_kernel(shapes: list) -> None:
    """Valid batches (and plain legacy messages) never reach the reference: the kernel is exact, not just safe."""
    parts, offset = [], 0
    for n, codec, ts_type, hdrs in shapes:
        recs = [v2.Record(offset + i, TS + i, b"k" * i or None, b"v" * (i * 40),
                          tuple(hdrs[i] if i < len(hdrs) else ())) for i in range(n)]
        parts.append(v2.build_batch(recs, base_offset=offset, codec=codec, timestamp_type=ts_type))
        parts.append(legacy.build_message(offset + max(n, 1), b"k", None, magic=n % 2, timestamp=TS))
        offset += max(n, 1) + 1
    buf = b"".join(parts)
    batches = list(SegmentWalk(buf, PATH, 0).batches())
    assert not reference(buf, batches)
    flagged = check_record_bounds(buf, BatchBlock.from_infos(batches), np.arange(len(batches)))
    assert flagged.rows.tolist() == [] and not flagged.errors


def test_past_the_budget_compressed_batches_are_left_unread() -> None:
    buf = _bad_segment(8)
    batches = list(SegmentWalk(buf, PATH, 0).batches())
    rows = np.arange(len(batches))
    everything = check_record_bounds(buf, BatchBlock.from_infos(batches), rows)
    assert len(everything.errors) == 2  # the two gzip batches with zeroed payloads
    budget = check_record_bounds(buf, BatchBlock.from_infos(batches), rows, budget=1)
    assert not budget.errors  # the first row is flagged in place: no payload is worth reading
    assert set(everything.rows.tolist()) <= set(budget.rows.tolist())
    unread = set(budget.rows.tolist()) - set(everything.rows.tolist())
    assert all(deep_check(buf, batches[i], PATH) is None for i in unread)


def test_any_buffer_type_gives_the_same_answer() -> None:
    """bytes, a writable buffer and a memoryview (as a mapped file is) check alike."""
    buf = _bad_segment(12) + legacy.build_message(10**6, b"k", b"v", magic=1, timestamp=TS)
    batches = list(SegmentWalk(buf, PATH, 0).batches())
    ref = reference(buf, batches)
    assert len(ref) == 12
    for other in (memoryview(bytearray(buf)), memoryview(buf)):
        assert stream(other, batches, [5]) == ref


def test_without_numba_the_reference_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    from replog.formats.kafka import fastrecords
    buf = _bad_segment(5)
    batches = list(SegmentWalk(buf, PATH, 0).batches())
    monkeypatch.setattr(fastrecords, "HAVE_NUMBA", False)
    assert stream(buf, batches, [3]) == reference(buf, batches)
