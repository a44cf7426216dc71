from __future__ import annotations

import random

import pytest
from crc32c import crc32c
from hypothesis import given
from hypothesis import strategies as st

from replog.formats.errors import FormatError
from replog.formats.kafka import producer_snapshot as ps
from tests.realdata import REALDATA, real_files


def ints(bits):
    return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)


ENTRIES = st.lists(st.builds(ps.ProducerSnapshotEntry, ints(64), ints(16), ints(32), ints(64), ints(32),
                             ints(64), ints(32), ints(64)), max_size=20)


@given(ENTRIES)
def test_round_trip(entries):
    snap = ps.parse_producer_snapshot(ps.build_producer_snapshot(entries))
    assert snap.entries == entries and snap.version == 1 and snap.crc_valid


@given(ENTRIES)
def test_construct_layout_agrees(entries):
    data = ps.build_producer_snapshot(entries)
    parsed = ps.SNAPSHOT.parse(data)
    assert parsed.version == 1 and parsed.entry_count == len(entries)
    assert parsed.crc == crc32c(data[6:])
    assert [ps.ProducerSnapshotEntry(**{k: v for k, v in e.items() if k != "_io"}) for e in parsed.entries] == entries
    rebuilt = ps.SNAPSHOT.build(dict(version=1, crc=parsed.crc, entry_count=len(entries),
                                     entries=[e._asdict() for e in entries]))
    assert rebuilt == data


def test_empty_snapshot_is_10_bytes():
    data = ps.build_producer_snapshot([])
    assert len(data) == 10
    assert ps.parse_producer_snapshot(data).crc == 0x48674BC7  # as in jeongrae-kraft ...712.snapshot


def test_crc_mismatch_strict_and_lenient():
    data = bytearray(ps.build_producer_snapshot([ps.ProducerSnapshotEntry(1, 0, 5, 10, 2, 99, -1, -1)]))
    data[20] ^= 1
    with pytest.raises(FormatError) as e:
        ps.parse_producer_snapshot(bytes(data))
    assert e.value.code == "KAFKA_SNAPSHOT_CRC_MISMATCH"
    snap = ps.parse_producer_snapshot(bytes(data), check_crc=False)
    assert not snap.crc_valid and len(snap.entries) == 1


@pytest.mark.parametrize("mutate", [
    lambda d: d[:9],                                   # short header
    lambda d: b"\x00\x02" + d[2:],                     # version 2
    lambda d: d[:6] + (10**9).to_bytes(4, "big") + d[10:],  # count far beyond the bytes
    lambda d: d[:6] + (-1 & 0xFFFFFFFF).to_bytes(4, "big") + d[10:],  # negative count
    lambda d: d + b"\x00",                             # trailing byte
    lambda d: d[:-1],                                  # truncated entry
])
def test_structural_defects_raise_invalid_even_when_lenient(mutate):
    data = ps.build_producer_snapshot([ps.ProducerSnapshotEntry(1, 0, 5, 10, 2, 99, -1, -1)])
    for check in (True, False):
        with pytest.raises(FormatError) as e:
            ps.parse_producer_snapshot(mutate(data), check_crc=check)
        assert e.value.code == "KAFKA_SNAPSHOT_INVALID"


def test_first_sequence():
    assert ps.ProducerSnapshotEntry(1, 0, 11, 11, 2, 0, -1, -1).first_sequence == 9


def test_mutations_only_raise_format_error():
    rng = random.Random(5)
    good = ps.build_producer_snapshot([ps.ProducerSnapshotEntry(i, 0, i, i, 0, i, -1, -1) for i in range(5)])
    for _ in range(300):
        data = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        try:
            ps.parse_producer_snapshot(bytes(data[: rng.randint(0, len(data))]), check_crc=rng.random() < 0.5)
        except FormatError:
            pass


def test_real_snapshots():
    files = real_files("**/*.snapshot")
    for path in files:
        data = path.read_bytes()
        snap = ps.parse_producer_snapshot(data)
        assert ps.build_producer_snapshot(snap.entries) == data, path
    donaldy = REALDATA / "donaldy-kafka271-zk/myTopic-0/00000000000000000038.snapshot"
    if donaldy.exists():
        snap = ps.parse_producer_snapshot(donaldy.read_bytes())
        assert sorted(e.producer_id for e in snap.entries) == [4001, 4002, 4003]
    empty = REALDATA / "jeongrae-kraft/c441d190/__cluster_metadata-0/00000000000000000712.snapshot"
    if empty.exists():
        snap = ps.parse_producer_snapshot(empty.read_bytes())
        assert snap.entries == [] and snap.crc == 0x48674BC7
