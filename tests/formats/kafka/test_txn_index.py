from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replog.formats.kafka import txn_index as tx

I64 = st.integers(-(2**63), 2**63 - 1)


def codes(read):
    return [f.code for f in read.findings]


@st.composite
def txn_lists(draw):
    lasts = sorted(set(draw(st.lists(st.integers(0, 2**62), max_size=30))))
    return [tx.AbortedTxn(draw(I64), draw(st.integers(0, last)), last, draw(I64)) for last in lasts]


@given(txn_lists())
def test_round_trip(entries):
    read = tx.read_txn_index(tx.write_txn_index(entries), 0)
    assert read.entries == entries and read.findings == []


@given(st.lists(st.tuples(I64, I64, I64, I64), max_size=10))
def test_construct_layout_matches_writer(rows):
    entries = [tx.AbortedTxn(*r) for r in rows]
    data = tx.write_txn_index(entries)
    built = tx.cs.GreedyRange(tx.ENTRY).build(
        [dict(version=0, producer_id=e.producer_id, first_offset=e.first_offset,
              last_offset=e.last_offset, last_stable_offset=e.last_stable_offset) for e in entries])
    assert built == data
    assert [tx.AbortedTxn(p.producer_id, p.first_offset, p.last_offset, p.last_stable_offset, p.version)
            for p in tx.cs.GreedyRange(tx.ENTRY).parse(data)] == tx.read_txn_index(data).entries


def test_partial_trailing_entry():
    data = tx.write_txn_index([tx.AbortedTxn(1, 5, 9, 10)]) + b"\x00" * 10
    read = tx.read_txn_index(data)
    assert read.entries == [(1, 5, 9, 10, 0)]
    assert codes(read) == ["KAFKA_TXNINDEX_INVALID"] and read.findings[0].position == 34


def test_unknown_version_is_left_out():
    data = tx.ENTRY_STRUCT.pack(1, 1, 5, 9, 10) + tx.write_txn_index([tx.AbortedTxn(1, 12, 15, 16)])
    read = tx.read_txn_index(data)
    assert read.entries == [(1, 12, 15, 16, 0)]
    assert codes(read) == ["KAFKA_TXNINDEX_INVALID"] and read.findings[0].details["version"] == 1


def test_last_offset_must_increase_and_not_be_below_base():
    data = tx.write_txn_index([tx.AbortedTxn(1, 5, 20, 21), tx.AbortedTxn(2, 6, 20, 21)])
    read = tx.read_txn_index(data, 10)
    assert codes(read) == ["KAFKA_TXNINDEX_INVALID"] and read.findings[0].position == 34
    assert codes(tx.read_txn_index(data[:34], 30)) == ["KAFKA_TXNINDEX_INVALID"]


def test_writer_rejects_out_of_range():
    with pytest.raises(ValueError):
        tx.write_txn_index([tx.AbortedTxn(2**63, 0, 1, 2)])


def test_mutations_only_give_findings():
    rng = random.Random(3)
    good = tx.write_txn_index([tx.AbortedTxn(i, i * 10, i * 10 + 5, i * 10 + 6) for i in range(20)])
    for _ in range(300):
        data = bytearray(good)
        for _ in range(rng.randint(1, 6)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        read = tx.read_txn_index(bytes(data[: rng.randint(0, len(data))]), rng.randint(0, 300))
        assert len(read.entries) <= 20
