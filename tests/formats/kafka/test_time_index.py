from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replog.formats.kafka import time_index as ti
from replog.formats.kafka.names import parse_segment_file_name
from tests.realdata import real_files


def codes(findings):
    return [f.code for f in findings]


@st.composite
def entry_lists(draw):
    base = draw(st.integers(0, 2**62))
    rels = sorted(draw(st.lists(st.integers(1, 2**31 - 1), max_size=40)))
    stamps = sorted(draw(st.lists(st.integers(1, 2**63 - 1), min_size=len(rels), max_size=len(rels))))
    return base, [ti.TimeIndexEntry(t, base + r) for t, r in zip(stamps, rels, strict=True)]


@given(entry_lists())
def test_round_trip(case):
    base, entries = case
    read = ti.read_time_index(ti.write_time_index(entries, base), base)
    assert read.entries == entries and read.zero_tail_entries == 0 and read.findings == []


def test_padding_rule():
    data = ti.write_time_index([(1000, 3), (2000, 7)], 0) + bytes(12 * 5)
    read = ti.read_time_index(data, 0)
    assert read.entries == [(1000, 3), (2000, 7)] and read.zero_tail_entries == 5
    assert codes(read.findings) == ["KAFKA_INDEX_ZERO_TAIL"]


def test_zero_entry_at_slot_zero_is_real():
    read = ti.read_time_index(bytes(12) + ti.write_time_index([(5, 1)], 0), 0)
    assert read.entries == [(0, 0), (5, 1)] and read.findings == []


def test_non_decreasing_checks():
    equal = ti.write_time_index([(10, 1), (10, 1)], 0)  # non-decreasing is allowed
    assert ti.read_time_index(equal, 0).findings == []
    back_ts = ti.write_time_index([(10, 1), (9, 2)], 0)
    back_off = ti.write_time_index([(10, 2), (11, 1)], 0)
    for data in (back_ts, back_off):
        [f] = ti.read_time_index(data, 0).findings
        assert f.code == "KAFKA_INDEX_NOT_MONOTONIC" and f.position == 12


def test_size_not_multiple_and_negative_offset():
    read = ti.read_time_index(ti.ENTRY_STRUCT.pack(5, -3) + b"\x01" * 5, 100)
    assert codes(read.findings) == ["KAFKA_INDEX_SIZE_NOT_MULTIPLE", "KAFKA_INDEX_OUT_OF_RANGE"]
    assert read.findings[0].position == 12


def test_sanity_check_like_the_broker():
    good = ti.write_time_index([(1000, 3), (2000, 7)], 0)
    assert ti.sanity_check(good, 0) == []
    # the broker counts padding as entries: last timestamp 0 < first -> fails
    assert codes(ti.sanity_check(good + bytes(12), 0)) == ["KAFKA_INDEX_NOT_MONOTONIC"]
    assert codes(ti.sanity_check(good + b"\x00", 0)) == ["KAFKA_INDEX_SIZE_NOT_MULTIPLE"]
    assert codes(ti.sanity_check(ti.ENTRY_STRUCT.pack(5, -1), 0)) == ["KAFKA_INDEX_OUT_OF_RANGE"]


def test_writer_rejects_out_of_range():
    for bad in ([(1, 9)], [(1, 10 + 2**31)], [(2**63, 11)]):
        with pytest.raises(ValueError):
            ti.write_time_index(bad, 10)


def test_mutations_only_give_findings():
    rng = random.Random(11)
    good = ti.write_time_index([(1_700_000_000_000 + i, i * 3) for i in range(1, 40)], 0) + bytes(60)
    for _ in range(300):
        data = bytearray(good)
        for _ in range(rng.randint(1, 6)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        data = bytes(data[: rng.randint(0, len(data))])
        read = ti.read_time_index(data, 5)
        assert len(read.entries) + read.zero_tail_entries == len(data) // 12
        ti.sanity_check(data, 5)


def _real(pattern):
    return real_files(pattern, required=False)


def test_real_niloufar_timeindex():
    [path] = _real("niloufar-ldi-kraft/__consumer_offsets-6/*.timeindex")
    read = ti.read_time_index(path.read_bytes(), 0)
    assert [e.offset for e in read.entries] == [3, 7, 12] and read.findings == []
    assert read.entries[0].timestamp == 1769791783399


def test_real_jeongrae_6649_entries():
    [path] = _real("jeongrae-kraft/c3152aef/**/*.timeindex")
    base = parse_segment_file_name(path.name).base_offset
    read = ti.read_time_index(path.read_bytes(), base)
    assert len(read.entries) == 6649 and read.findings == []


def test_all_real_timeindexes_clean_and_rebuild_byte_exact():
    for path in _real("**/*.timeindex"):
        base = parse_segment_file_name(path.name).base_offset
        data = path.read_bytes()
        read = ti.read_time_index(data, base)
        assert read.findings == [] and ti.sanity_check(data, base) == [], path
        assert ti.write_time_index(read.entries, base) == data
