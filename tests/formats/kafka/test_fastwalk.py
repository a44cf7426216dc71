"""The fast walk and fast record decode give exactly the reference's answers."""
from __future__ import annotations

import os

import pyarrow as pa
import pytest
from crc32c import crc32c
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from replog.formats.kafka import batch as v2
from replog.formats.kafka import fastrecords, fastwalk, legacy
from replog.formats.kafka.blocks import FIELDS
from replog.formats.kafka.fastwalk import FastWalk, fast_batch_columns, reference_batch_columns
from tests.formats.kafka.segments import TS, marker
from tests.realdata import REALDATA

pytestmark = pytest.mark.skipif(not fastwalk.HAVE_NUMBA, reason="numba not installed: nothing fast to compare")


def reference(buf: bytes, path: str, base_offset: int | None) -> tuple:
    """The oracle; inputs on which it fails itself are not a comparison (see `test_reference_gap`)."""
    try:
        return reference_batch_columns(buf, path, base_offset)
    except pa.ArrowInvalid:  # segment._read_legacy stores an unsigned magic (e.g. 130) in int8
        assume(False)


def assert_same_walk(buf: bytes, base_offset: int | None, path: str = "seg.log") -> None:
    fast = fast_batch_columns(buf, path, base_offset)
    ref = reference(buf, path, base_offset)
    assert fast[0].equals(ref[0]), (fast[0].to_pylist()[:3], ref[0].to_pylist()[:3])
    assert fast[1] == ref[1]
    assert [f.to_dict() for f in fast[2]] == [f.to_dict() for f in ref[2]]


def assert_same_records(buf: bytes, path: str = "seg.log") -> None:
    table = reference(buf, path, None)[0]
    fast = fastrecords.record_columns(buf, path, table)
    ref = fastrecords.reference_record_columns(buf, path, table)
    assert fast[0].equals(ref[0])
    assert [f.to_dict() for f in fast[1]] == [f.to_dict() for f in ref[1]]


# --- generated segments ------------------------------------------------------------

field = st.one_of(st.none(), st.binary(max_size=24))
headers = st.lists(st.tuples(st.sampled_from(["h", "trace", "é", ""]), field), max_size=2)


@st.composite
def batches(draw: st.DrawFn, offset: int) -> tuple[bytes, int]:
    """One entry starting at `offset`: v2 data (any codec), a control marker or a legacy message."""
    kind = draw(st.sampled_from(["data", "data", "data", "marker", "legacy"]))
    if kind == "marker":
        return marker(offset, commit=draw(st.booleans()), pid=7), offset + 1
    if kind == "legacy":
        return legacy.build_message(offset, b"k", draw(st.binary(max_size=16)), magic=1, timestamp=TS), offset + 1
    n = draw(st.integers(0, 4))
    recs = [v2.Record(offset + i, TS + draw(st.integers(-3, 3)), draw(field), draw(field), tuple(draw(headers)))
            for i in range(n)]
    raw = v2.build_batch(recs, base_offset=offset, codec=draw(st.sampled_from([0, 0, 1, 2, 3, 4])),
                         base_sequence=draw(st.sampled_from([-1, 0, 2**31 - 2])),
                         producer_id=draw(st.sampled_from([-1, 5])),
                         timestamp_type=draw(st.sampled_from([v2.CREATE_TIME, v2.LOG_APPEND_TIME])),
                         partition_leader_epoch=draw(st.integers(-1, 3)))
    return raw, offset + max(n, 1)


@st.composite
def segments(draw: st.DrawFn) -> bytes:
    parts, offset = [], draw(st.integers(0, 1000))
    for _ in range(draw(st.integers(0, 8))):
        offset += draw(st.sampled_from([0, 0, 0, 2, -3]))  # gaps and offsets going back
        raw, offset = draw(batches(max(offset, 0)))
        parts.append(raw)
    buf = bytearray(b"".join(parts))
    for _ in range(draw(st.integers(0, 3))):  # damage: flipped bytes anywhere
        if buf:
            buf[draw(st.integers(0, len(buf) - 1))] ^= draw(st.integers(1, 255))
    tail = draw(st.sampled_from(["none", "none", "zeros", "garbage", "truncate"]))
    if tail == "zeros":
        buf += bytes(draw(st.integers(1, 200)))
    elif tail == "garbage":
        buf += draw(st.binary(min_size=1, max_size=80))
    elif tail == "truncate" and buf:
        del buf[draw(st.integers(0, len(buf) - 1)):]
    return bytes(buf)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(segments(), st.sampled_from([None, 0, 500, 2**62]))
def test_fast_walk_equals_reference(buf: bytes, base_offset: int | None) -> None:
    assert_same_walk(buf, base_offset)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(segments())
def test_fast_records_equal_reference(buf: bytes) -> None:
    assert_same_records(buf)


@settings(max_examples=30, deadline=None)
@given(segments(), st.integers(1, 4))
def test_small_chunks_give_the_same_rows(buf: bytes, chunk: int) -> None:
    walk = FastWalk(buf, "seg.log", None)
    table = pa.Table.from_batches(list(walk.column_chunks(chunk)), schema=fastwalk.BATCH_SCHEMA)
    ref = reference(buf, "seg.log", None)
    assert table.equals(ref[0]) and walk.valid_bytes == ref[1] and walk.findings == ref[2]


# --- kernels ------------------------------------------------------------------------


@settings(deadline=None)
@given(st.binary(max_size=300))
def test_crc_kernels_match_crc32c(data: bytes) -> None:
    arr = fastwalk.as_uint8(data)
    assert fastwalk.crc32c_kernel(arr, 0, len(data), fastwalk.CRC_TABLES) == crc32c(data)
    assert fastwalk.crc32c(data) == crc32c(data)


def test_kernel_header_fields_match_the_construct_layout() -> None:
    raw = v2.build_batch([v2.Record(9, TS, b"k", b"v")], base_offset=7, producer_id=3, producer_epoch=2,
                         base_sequence=11, partition_leader_epoch=4, transactional=True)
    table = fast_batch_columns(raw, "x", None)[0].to_pylist()[0]
    h = v2.BATCH_HEADER.parse(raw)
    assert (table["base_offset"], table["last_offset"], table["count"], table["crc"]) == (
        h.base_offset, h.base_offset + h.last_offset_delta, h.records_count, h.crc)
    assert (table["producer_id"], table["producer_epoch"], table["base_sequence"], table["attributes"],
            table["partition_leader_epoch"], table["crc_valid"]) == (
        h.producer_id, h.producer_epoch, h.base_sequence, h.attributes, h.partition_leader_epoch, True)


def test_without_numba_the_reference_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    buf = v2.build_batch([v2.Record(0, TS, b"k", b"v")], base_offset=0) + b"\0" * 10
    monkeypatch.setattr(fastwalk, "HAVE_NUMBA", False)
    monkeypatch.setattr(fastrecords, "HAVE_NUMBA", False)
    assert_same_walk(buf, 0)
    assert_same_records(buf)


# --- real broker files --------------------------------------------------------------


def test_real_segments() -> None:
    logs = sorted(REALDATA.rglob("*.log")) if REALDATA.is_dir() else []
    if not logs:
        pytest.skip("no real data")
    for path in logs:
        if path.stat().st_size > 64 << 20:
            continue
        buf = path.read_bytes()
        base = int(path.stem) if path.stem.isdigit() else None
        assert_same_walk(buf, base, os.fspath(path))
        assert_same_records(buf, os.fspath(path))


def test_a_small_segment_walks_with_a_buffer_sized_to_it() -> None:
    """Blocks are views into the walk's buffer: on a segment of a few batches that buffer is sized to
    the most entries the bytes can hold, not to a full block of every field (which a block kept by its
    consumer held, 10 MiB per small segment of a fleet). A v0 message of 26 bytes is the smallest entry."""
    from tests.recovery.kafka.independent import kp_batch

    buf = b"".join(kp_batch(k, k, 0, b"x") for k in range(3))
    if not fastwalk.HAVE_NUMBA:
        pytest.skip("numba not installed")
    [block] = list(FastWalk(buf, "seg.log", 0).blocks())
    assert block.cols.shape[1] == 3
    held = block.cols.base if block.cols.base is not None else block.cols
    assert held.nbytes <= len(FIELDS) * (len(buf) // 26 + 1 + 8) * 8
