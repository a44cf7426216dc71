from __future__ import annotations

import os
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replog.formats.findings import FindingSink
from replog.formats.kafka import offset_index as oi
from replog.formats.kafka.names import parse_segment_file_name
from tests.realdata import real_files


def codes(read):
    return [f.code for f in read.findings]


@st.composite
def entry_lists(draw):
    base = draw(st.integers(0, 2**62))
    rels = sorted(set(draw(st.lists(st.integers(1, 2**31 - 1), max_size=40))))
    positions = sorted(set(draw(st.lists(st.integers(1, 2**31 - 1), min_size=len(rels), max_size=len(rels) + 5))))
    # not strict: after dedup there may be more or fewer positions than offsets; pair what both have
    return base, [oi.OffsetIndexEntry(base + r, p) for r, p in zip(rels, positions, strict=False)]


@given(entry_lists())
def test_round_trip(case):
    base, entries = case
    read = oi.read_offset_index(oi.write_offset_index(entries, base), base)
    assert read.entries == entries
    assert read.zero_tail_entries == 0
    assert read.findings == []


def test_zero_tail_is_padding_but_slot_zero_is_an_entry():
    data = oi.write_offset_index([(0, 0), (5, 4100)], 0) + bytes(8 * 3)
    read = oi.read_offset_index(data, 0)
    assert read.entries == [(0, 0), (5, 4100)]
    assert read.zero_tail_entries == 3
    assert codes(read) == ["KAFKA_INDEX_ZERO_TAIL"]
    assert read.findings[0].details["count"] == 3
    assert read.findings[0].position == 16


def test_all_zero_file_has_one_entry_then_padding():
    read = oi.read_offset_index(bytes(8 * 4), 42)
    assert read.entries == [(42, 0)] and read.zero_tail_entries == 3


def test_padding_followed_by_data_is_a_finding():
    data = oi.write_offset_index([(10, 4100)], 0) + bytes(8) + oi.write_offset_index([(20, 9000)], 0)
    read = oi.read_offset_index(data, 0)
    assert "KAFKA_INDEX_NOT_MONOTONIC" in codes(read)
    bad = [f for f in read.findings if f.code == "KAFKA_INDEX_NOT_MONOTONIC"]
    assert bad[0].position == 8
    assert read.zero_tail_entries == 0


def test_size_not_multiple():
    data = oi.write_offset_index([(3, 4730), (7, 9571)], 0) + b"\x00\x01\x02"
    read = oi.read_offset_index(data, 0)
    assert read.entries == [(3, 4730), (7, 9571)]
    [f] = read.findings
    assert f.code == "KAFKA_INDEX_SIZE_NOT_MULTIPLE" and f.position == 16


def test_not_monotonic_position_and_offset():
    data = oi.write_offset_index([(10, 5000), (9, 6000), (12, 6000)], 0)
    read = oi.read_offset_index(data, 0)
    assert [f.position for f in read.findings] == [8, 16]
    assert set(codes(read)) == {"KAFKA_INDEX_NOT_MONOTONIC"}


def test_negative_fields_are_out_of_range():
    data = oi.ENTRY_STRUCT.pack(-1, 5)
    assert codes(oi.read_offset_index(data, 10)) == ["KAFKA_INDEX_OUT_OF_RANGE"]
    assert codes_of(oi.sanity_check(data, 10)) == ["KAFKA_INDEX_OUT_OF_RANGE"]


def codes_of(findings):
    return [f.code for f in findings]


def test_sanity_check_like_the_broker():
    good = oi.write_offset_index([(3, 4730)], 0) + bytes(16)  # padding passes: last offset == base
    assert oi.sanity_check(good, 0) == []
    assert codes_of(oi.sanity_check(good + b"\x01", 0)) == ["KAFKA_INDEX_SIZE_NOT_MULTIPLE"]
    assert oi.sanity_check(b"", 0) == []


def test_writer_rejects_out_of_range():
    for bad in ([(9, 1)], [(10 + 2**31, 1)], [(11, -1)]):
        with pytest.raises(ValueError):
            oi.write_offset_index(bad, 10)


def test_preallocated_10mib_tail_is_counted_without_entries():
    size = 10 * 1024 * 1024 // 8 * 8
    data = bytearray(size)
    data[:16] = oi.write_offset_index([(3, 4730), (7, 9571)], 0)
    read = oi.read_offset_index(memoryview(data), 0)
    assert read.entries == [(3, 4730), (7, 9571)]
    assert read.zero_tail_entries == size // 8 - 2


def test_findings_are_capped():
    data = b"".join(oi.ENTRY_STRUCT.pack(100 - i, 100 - i) for i in range(1, 99)) * 30
    read = oi.read_offset_index(data, 0)
    assert len(read.findings) == FindingSink(".").limit
    assert read.findings[-1].details["suppressed"] > 0


def test_mutations_only_give_findings():
    rng = random.Random(7)
    good = oi.write_offset_index([(i * 10, i * 4100) for i in range(1, 50)], 0) + bytes(64)
    for _ in range(300):
        data = bytearray(good)
        for _ in range(rng.randint(1, 6)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        data = data[: rng.randint(0, len(data))]
        read = oi.read_offset_index(bytes(data), rng.randint(0, 2**40))
        assert len(read.entries) + read.zero_tail_entries == len(data) // 8
        oi.sanity_check(bytes(data), 0)


def _real(pattern):
    return real_files(pattern, required=False)


def test_real_niloufar_index():
    [path] = _real("niloufar-ldi-kraft/__consumer_offsets-6/*.index")
    read = oi.read_offset_index(path.read_bytes(), 0, path=str(path))
    assert read.entries == [(3, 4730), (7, 9571)]
    assert read.findings == [] and read.zero_tail_entries == 0


def test_real_jeongrae_6648_entries():
    [path] = _real("jeongrae-kraft/c3152aef/**/*.index")
    base = parse_segment_file_name(path.name).base_offset
    read = oi.read_offset_index(path.read_bytes(), base, path=str(path))
    assert len(read.entries) == 6648 and read.findings == []
    assert oi.write_offset_index(read.entries, base) == path.read_bytes()


def test_all_real_indexes_are_clean_and_rebuild_byte_exact():
    for path in _real("**/*.index"):
        base = parse_segment_file_name(path.name).base_offset
        data = path.read_bytes()
        read = oi.read_offset_index(data, base, path=str(path))
        assert read.findings == [], path
        assert oi.sanity_check(data, base) == []
        assert oi.write_offset_index(read.entries, base) == data
        assert all(e.position > 0 for e in read.entries), os.fspath(path)


@given(st.lists(st.integers(1, 1000), min_size=1, max_size=60), st.integers(0, 200), st.booleans())
def test_last_entry_bisects_past_the_padding(steps: list[int], padding: int, zero_first: bool) -> None:
    """The last entry of an index of growing entries and a zero tail, found without reading it all."""
    from replog.formats.kafka.offset_index import ENTRY_STRUCT, last_entry

    rel = pos = 0 if zero_first else 5
    entries = []
    for step in steps:
        entries.append((rel, pos))
        rel, pos = rel + step, pos + 3 * step
    data = b"".join(ENTRY_STRUCT.pack(*e) for e in entries) + b"\0" * (8 * padding)
    assert last_entry(data, 100) == (100 + entries[-1][0], entries[-1][1])
    assert last_entry(b"", 100) is None
