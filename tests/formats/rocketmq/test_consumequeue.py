from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replog.formats.errors import FormatError
from replog.formats.findings import Finding
from replog.formats.rocketmq.consumequeue import (
    CQ_ENTRY,
    CQ_EXT_UNIT,
    PRE_BLANK,
    CQEntry,
    build_entry,
    build_ext_unit,
    build_files,
    ext_address_to_offset,
    offset_to_ext_address,
    read_entries,
    read_entry,
    read_ext_units,
    walk_consumequeue,
    write_queue,
)

i64 = st.integers(-2**63, 2**63 - 1)
i32 = st.integers(-2**31, 2**31 - 1)
entries = st.lists(st.tuples(st.integers(0, 2**63 - 1), st.integers(1, 2**31 - 1), i64), max_size=40)


@given(i64, i32, i64)
def test_entry_layout_agreement(off: int, size: int, tags: int) -> None:
    raw = build_entry(off, size, tags)
    assert raw == CQ_ENTRY.build({"commitlog_offset": off, "size": size, "tags_code": tags})
    e = read_entry(raw, 0, file_start=200)
    c = CQ_ENTRY.parse(raw)
    assert (e.commitlog_offset, e.size, e.tags_code, e.queue_offset) == (c.commitlog_offset, c.size,
                                                                          c.tags_code, 10)


@settings(max_examples=80)
@given(entries, st.integers(0, 12))
def test_files_round_trip(items: list[tuple[int, int, int]], start: int) -> None:
    files = build_files(items, file_size=200, start_queue_offset=start)
    got: list[CQEntry] = []
    for file_start, data in files.items():
        got += read_entries(data, file_start=file_start)
    real = [e for e in got if not e.is_pre_blank]
    assert [(e.commitlog_offset, e.size, e.tags_code) for e in real] == items
    assert [e.queue_offset for e in real] == list(range(start, start + len(items)))
    if items:
        assert len(got) - len(real) == start % 10  # fillPreBlank of the first file only


def test_walk_written_queue(tmp_path: Path) -> None:
    write_queue(tmp_path, "T", 3, [(i * 100, 100, 7) for i in range(25)], file_size=200)
    d = tmp_path / "consumequeue/T/3"
    out = list(walk_consumequeue(d))
    assert not [x for x in out if isinstance(x, Finding)]
    assert [x.queue_offset for x in out] == list(range(25))


def test_walk_damage(tmp_path: Path) -> None:
    files = build_files([(i * 100, 100, 0) for i in range(45)], file_size=200)
    d = tmp_path / "q"
    d.mkdir()
    f0 = bytearray(files[0])
    struct.pack_into(">qiq", f0, 60, -5, 100, 0)       # invalid entry at queue offset 3
    f0[80:100] = bytes(20)                              # zero hole at queue offset 4
    (d / f"{0:020d}").write_bytes(bytes(f0))
    (d / f"{400:020d}").write_bytes(files[400][:190] + b"\x01")   # wrong size, partial tail
    (d / f"{800:020d}").write_bytes(files[800][:100] + bytes(100))  # gap (600 missing), half written
    out = list(walk_consumequeue(d, file_size=200))
    found = [(f.code, Path(f.path).name[-3:], f.position) for f in out if isinstance(f, Finding)]
    assert found == [
        ("ROCKETMQ_CQ_INVALID", "000", 60),
        ("ROCKETMQ_CQ_INVALID", "000", 80),
        ("ROCKETMQ_FILE_NAME_MISMATCH", "400", None),
        ("ROCKETMQ_FILE_GAP", "400", None),
        ("ROCKETMQ_CQ_INVALID", "400", 180),
        ("ROCKETMQ_FILE_GAP", "800", None),
    ]


def test_pre_blank_and_ext_address() -> None:
    e = read_entry(build_entry(*PRE_BLANK), 0)
    assert e.is_pre_blank and e.is_valid and e.ext_address is None
    addr = offset_to_ext_address(1234)
    assert addr <= -(2**31) - 1 and ext_address_to_offset(addr) == 1234
    assert read_entry(build_entry(0, 10, addr), 0).ext_address == 1234
    assert ext_address_to_offset(-(2**31)) is None


@given(st.lists(st.tuples(i64, i64, st.binary(max_size=16)), max_size=10))
def test_ext_units_round_trip(units: list[tuple[int, int, bytes]]) -> None:
    blob = b"".join(build_ext_unit(*u) for u in units) + struct.pack(">h", -1) + bytes(10)
    got = list(read_ext_units(blob))
    assert [(u.tags_code, u.msg_store_time, u.filter_bitmap) for u in got] == units
    for u in units:
        raw = build_ext_unit(*u)
        c = CQ_EXT_UNIT.parse(raw)
        assert (c.size, c.tags_code, c.msg_store_time, c.filter_bitmap) == (len(raw), *u)


def test_ext_unit_bad_size() -> None:
    with pytest.raises(FormatError):
        list(read_ext_units(struct.pack(">h", 5) + bytes(30)))
    with pytest.raises(FormatError):
        list(read_ext_units(build_ext_unit(1, 2, b"ab")[:-1]))


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=450))
def test_random_bytes_only_findings(tmp_path: Path, blob: bytes) -> None:
    d = tmp_path / f"r{abs(hash(blob))}"
    d.mkdir()
    (d / f"{0:020d}").write_bytes(blob)
    out = list(walk_consumequeue(d, file_size=200))
    assert all(isinstance(x, (CQEntry, Finding)) for x in out)
    try:
        list(read_ext_units(blob))
    except FormatError:
        pass
