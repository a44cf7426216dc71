"""Segment walking: framing, damage as findings, valid_bytes as broker recovery computes it."""
from __future__ import annotations

import random

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replog.formats.kafka import batch as v2
from replog.formats.kafka.columns import BATCH_SCHEMA, column_chunks
from replog.formats.kafka.segment import SegmentWalk, batch_records, walk_segment
from tests.formats.kafka.segments import data_batch, marker, simple_segment


def codes(walk: SegmentWalk) -> list[str]:
    return [f.code for f in walk.findings]


def test_clean_segment_walks_every_batch() -> None:
    buf, positions = simple_segment(5, 3)
    walk = SegmentWalk(buf, "s.log", 0)
    infos = list(walk.batches())
    assert [i.position for i in infos] == positions
    assert [(i.base_offset, i.last_offset, i.count) for i in infos] == [(o, o + 2, 3) for o in range(0, 15, 3)]
    assert all(i.crc_valid for i in infos)
    assert walk.findings == [] and walk.valid_bytes == len(buf) and walk.next_offset == 15


def test_crc_damage_is_reported_and_walk_goes_on() -> None:
    buf, positions = simple_segment(5, 3)
    damaged = bytearray(buf)
    damaged[positions[2] + 70] ^= 0xFF  # a record byte of the third batch
    walk = walk_segment(bytes(damaged), "s.log", 0)
    assert walk.batch_count == 5
    [f] = walk.findings
    assert (f.code, f.position, f.offset, f.severity.value) == ("KAFKA_BATCH_CRC_MISMATCH", positions[2], 6, "error")
    assert walk.valid_bytes == positions[2]  # broker recovery truncates at the first invalid batch


def test_epoch_is_outside_the_crc() -> None:
    buf, positions = simple_segment(2, 3)
    damaged = bytearray(buf)
    damaged[positions[1] + 12:positions[1] + 16] = (9).to_bytes(4, "big")
    walk = SegmentWalk(bytes(damaged), "s.log", 0)
    infos = list(walk.batches())
    assert infos[1].partition_leader_epoch == 9 and infos[1].crc_valid


def test_torn_tail() -> None:
    buf, positions = simple_segment(3, 3)
    walk = walk_segment(buf[:-5], "s.log", 0)
    assert codes(walk) == ["KAFKA_TORN_TAIL"]
    assert walk.findings[0].position == positions[2] and walk.valid_bytes == positions[2]


def test_zero_filled_tail_is_a_warning_at_its_start() -> None:
    buf, _ = simple_segment(3, 3)
    walk = walk_segment(buf + bytes(4096), "s.log", 0)
    assert codes(walk) == ["KAFKA_ZERO_TAIL"]
    assert walk.findings[0].position == len(buf) and walk.findings[0].severity.value == "warning"
    assert walk.valid_bytes == len(buf) and walk.zero_tail


def test_short_trailing_garbage() -> None:
    buf, _ = simple_segment(2, 3)
    walk = walk_segment(buf + b"\x01\x02\x03", "s.log", 0)
    assert codes(walk) == ["KAFKA_TRAILING_BYTES"]


def test_length_below_minimum_stops_the_walk() -> None:
    buf, positions = simple_segment(3, 3)
    damaged = bytearray(buf)
    damaged[positions[1] + 8:positions[1] + 12] = (5).to_bytes(4, "big")
    walk = walk_segment(bytes(damaged), "s.log", 0)
    assert codes(walk) == ["KAFKA_BATCH_LENGTH_TOO_SMALL"]
    assert walk.batch_count == 1 and walk.findings[0].position == positions[1]


def test_impossible_length_is_not_allocated() -> None:
    buf, positions = simple_segment(2, 3)
    damaged = bytearray(buf)
    damaged[positions[1] + 8:positions[1] + 12] = (2**31 - 1).to_bytes(4, "big")
    walk = walk_segment(bytes(damaged), "s.log", 0)
    assert codes(walk) == ["KAFKA_TORN_TAIL"] and walk.batch_count == 1


def test_segment_name_mismatch_and_overflow() -> None:
    buf, _ = simple_segment(2, 3, start=100)
    assert "KAFKA_SEGMENT_NAME_MISMATCH" in codes(walk_segment(buf, "s.log", 150))
    far = data_batch(2**31 + 5)
    assert "KAFKA_SEGMENT_OFFSET_OVERFLOW" in codes(walk_segment(far, "s.log", 0))


def test_offsets_going_backwards_and_gaps() -> None:
    buf = data_batch(0) + data_batch(10) + data_batch(5)
    walk = walk_segment(buf, "s.log", 0)
    assert codes(walk) == ["KAFKA_OFFSET_GAP", "KAFKA_OFFSETS_NOT_INCREASING"]
    gap = walk.findings[0]
    assert gap.severity.value == "info" and gap.details == {"gap_start": 3, "gap_end": 9}


def test_invalid_control_record_ends_valid_bytes() -> None:
    good = data_batch(0)
    bad_marker = v2.build_batch([v2.Record(3, 0, b"\x00", b"")], base_offset=3, control=True)
    walk = walk_segment(good + bad_marker + data_batch(4), "s.log", 0)
    assert codes(walk) == ["KAFKA_CONTROL_RECORD_INVALID"] and walk.valid_bytes == len(good)


def test_markers_are_valid_control_batches() -> None:
    buf = data_batch(0, pid=7) + marker(3, commit=True, pid=7)
    walk = SegmentWalk(buf, "s.log", 0)
    infos = list(walk.batches())
    assert walk.findings == [] and infos[1].is_control and infos[1].is_transactional


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_compressed_batches_decode(codec: int) -> None:
    buf = data_batch(0, 20, codec=codec) + data_batch(20, 5, codec=codec)
    walk = SegmentWalk(buf, "s.log", 0)
    infos = list(walk.batches())
    assert [r.offset for i in infos for r in batch_records(buf, i)] == list(range(25))


def test_max_bytes_limits_the_walk_without_tail_findings() -> None:
    buf, positions = simple_segment(4, 3)
    walk = walk_segment(buf, "s.log", 0, limit=positions[2] + 10)
    assert walk.batch_count == 2 and walk.findings == []


def test_columns_match_the_walk() -> None:
    buf, positions = simple_segment(7, 2)
    walk = SegmentWalk(buf, "s.log", 0)
    chunks = list(column_chunks("s.log", walk.batches(), chunk=3))
    assert [c.num_rows for c in chunks] == [3, 3, 1]
    table = pa.Table.from_batches(chunks, BATCH_SCHEMA)
    assert table.column("position").to_pylist() == positions
    assert table.column("base_offset").to_pylist() == list(range(0, 14, 2))
    assert all(table.column("crc_valid").to_pylist())


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 8))
def test_random_mutations_never_raise(seed: int, flips: int) -> None:
    buf, _ = simple_segment(6, 3)
    rng = random.Random(seed)
    data = bytearray(buf)
    for _ in range(flips):
        data[rng.randrange(len(data))] = rng.randrange(256)
    cut = rng.choice([len(data), rng.randrange(len(data) + 1)])
    walk = SegmentWalk(bytes(data[:cut]), "s.log", 0)
    for info in walk.batches():
        try:
            batch_records(bytes(data[:cut]), info)
        except Exception as e:  # only FormatError may escape a decode
            from replog.formats.errors import FormatError
            assert isinstance(e, FormatError), repr(e)
    assert walk.valid_bytes <= cut
