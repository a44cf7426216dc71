from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replog.formats.errors import FormatError
from replog.formats.findings import Finding
from replog.formats.rocketmq.index_file import (
    ENTRY_SIZE,
    HEADER_SIZE,
    INDEX_ENTRY,
    INDEX_HEADER,
    IndexFile,
    IndexWriter,
    build_index,
    file_size_for,
    index_key_hash,
    message_keys,
)

SLOTS, NUM = 7, 40
triples = st.lists(st.tuples(st.sampled_from(["T#a", "T#b", "T#c", "T#d", "X#KEY1", "FooBar#KEY1"]),
                             st.integers(0, 2**40), st.integers(1_600_000_000_000, 1_700_000_000_000)),
                   max_size=NUM - 1)


def test_key_hash_matches_index_key_hash_method() -> None:
    assert index_key_hash("FooBar#KEY1") == 2081429752
    assert index_key_hash("abc") == 96354
    # "polygenelubricants".hashCode() == Integer.MIN_VALUE: Math.abs stays negative -> 0
    assert index_key_hash("polygenelubricants") == 0
    assert message_keys("T", {"KEYS": "a  b", "UNIQ_KEY": "U"}) == ["T#U", "T#a", "T#b"]


@settings(max_examples=100)
@given(triples)
def test_build_parse_round_trip(items: list[tuple[str, int, int]]) -> None:
    items = sorted(items, key=lambda t: t[2])
    raw = build_index(items, hash_slot_num=SLOTS, index_num=NUM)
    assert len(raw) == file_size_for(SLOTS, NUM)
    f = IndexFile(raw, hash_slot_num=SLOTS)
    assert f.index_num == NUM and f.header.index_count == len(items) + 1
    got = list(f.entries())
    assert [(e.key_hash, e.phy_offset) for e in got] == [(index_key_hash(k), p) for k, p, _ in items]
    assert list(f.check()) == []
    c = INDEX_HEADER.parse(raw)
    assert (c.begin_timestamp, c.end_timestamp, c.index_count, c.hash_slot_count) == (
        f.header.begin_timestamp, f.header.end_timestamp, f.header.index_count, f.header.hash_slot_count)
    for e in got:
        ce = INDEX_ENTRY.parse(raw[HEADER_SIZE + SLOTS * 4 + e.number * ENTRY_SIZE:][:ENTRY_SIZE])
        assert (ce.key_hash, ce.phy_offset, ce.time_diff, ce.prev_index) == \
            (e.key_hash, e.phy_offset, e.time_diff, e.prev_index)
    if items:
        begin = items[0][2]
        assert f.header.begin_timestamp == begin and f.header.end_phy_offset == items[-1][1]
        for key in {k for k, _, _ in items}:
            want = [p for k, p, ts in reversed(items) if index_key_hash(k) == index_key_hash(key)]
            assert f.lookup(key, 0, 2**62) == want


def test_capacity_like_the_broker() -> None:
    w = IndexWriter(hash_slot_num=3, index_num=5)
    assert [w.put_key(f"k{i}", i, 1000 + i) for i in range(5)] == [True] * 4 + [False]
    with pytest.raises(ValueError):
        build_index([("k", 1, 1)] * 5, hash_slot_num=3, index_num=5)


def test_time_diff_and_inherited_begin() -> None:
    w = IndexWriter(hash_slot_num=3, index_num=5, inherit_end_phy_offset=50, inherit_end_timestamp=10_000)
    w.put_key("a", 60, 15_500)   # diff computed against the inherited begin, then begin is reset
    w.put_key("a", 70, 17_999)
    f = IndexFile(w.to_bytes(), hash_slot_num=3)
    assert [e.time_diff for e in f.entries()] == [5, 2]
    assert (f.header.begin_timestamp, f.header.begin_phy_offset) == (15_500, 60)
    assert [e.prev_index for e in f.entries()] == [0, 1]


def test_cyclic_chain_terminates_and_is_reported() -> None:
    raw = bytearray(build_index([("a", 1, 1000), ("a", 2, 2000), ("a", 3, 3000)], hash_slot_num=1, index_num=6))
    entries_at = HEADER_SIZE + 4
    struct.pack_into(">i", raw, entries_at + 1 * ENTRY_SIZE + 16, 3)  # 1 -> 3 -> 2 -> 1 ...
    f = IndexFile(bytes(raw), hash_slot_num=1)
    chain = [e.number for e in f.chain(index_key_hash("a"))]
    assert chain == [3, 2, 1]  # bounded by the index count
    assert [x.position for x in f.check()] == [entries_at + ENTRY_SIZE]


def test_bad_geometry_and_header() -> None:
    with pytest.raises(FormatError):
        IndexFile(bytes(45), hash_slot_num=1)
    raw = bytearray(build_index([("a", 1, 1)], hash_slot_num=2, index_num=3))
    struct.pack_into(">i", raw, 36, 99)
    found = list(IndexFile(bytes(raw), hash_slot_num=2).check("f"))
    assert found and all(isinstance(x, Finding) and x.code == "ROCKETMQ_INDEX_INVALID" for x in found)


@settings(max_examples=60)
@given(st.lists(st.tuples(st.integers(0, 300), st.integers(1, 255)), max_size=10), st.binary(max_size=4))
def test_mutations_never_hang(flips: list[tuple[int, int]], key: bytes) -> None:
    raw = bytearray(build_index([("a", 1, 1000), ("b", 2, 2000), ("a", 3, 3000)], hash_slot_num=3,
                                index_num=12))
    for pos, x in flips:
        raw[pos % len(raw)] ^= x
    f = IndexFile(bytes(raw), hash_slot_num=3)
    list(f.check())
    for k in ("a", "b", key.hex()):
        try:
            f.lookup(k)
        except FormatError:
            pass
