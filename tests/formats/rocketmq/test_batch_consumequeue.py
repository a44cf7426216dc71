"""BatchConsumeQueue units (`formats.rocketmq.batch_consumequeue`) against bytes laid out independently from
`BatchConsumeQueue#putBatchMessagePositionInfo` (apache/rocketmq 5.3.3): offset i64, size i32, tag code i64, store
time i64, base offset i64, batch size i16, compacted offset i32 (-1), 4 reserved zero bytes = 46 bytes."""
from __future__ import annotations

import struct
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from replog.formats.discovery import FileKind, classify_file
from replog.formats.findings import Finding
from replog.formats.rocketmq.batch_consumequeue import (
    BCQ_ENTRY,
    UNIT_SIZE,
    build_entry,
    build_file,
    read_units,
    walk_batch_queue,
)
from replog.recovery.rocketmq.doctor import diagnose_store
from replog.toolkit.dump_rocketmq import batch_consumequeue_entries
from tests.recovery.rocketmq.independent import Store, java_hash

INNER_BATCH = 0x80
I64 = st.integers(-(2**63), 2**63 - 1)


def unit(offset: int, size: int, tags: int, store_time: int, base: int, batch: int) -> bytes:
    return struct.pack(">qiqqqhii", offset, size, tags, store_time, base, batch, -1, 0)


def test_unit_layout_matches_the_broker() -> None:
    raw = unit(4096, 300, 7, 1_700_000_000_000, 12, 3)
    assert UNIT_SIZE == 46 == len(raw), "CQ_STORE_UNIT_SIZE"
    assert build_entry(4096, 300, 7, 1_700_000_000_000, 12, 3) == raw, "the writer lays the unit out as the broker"
    parsed = BCQ_ENTRY.parse(raw)
    assert (parsed.msg_base_offset, parsed.batch_size, parsed.compacted_offset) == (12, 3, -1), \
        "MSG_BASE_OFFSET_INDEX 28, MSG_BATCH_SIZE_INDEX 36, MSG_COMPACT_OFFSET_INDEX 38"
    assert raw[28:36] == struct.pack(">q", 12) and raw[36:38] == struct.pack(">h", 3), "field positions"


@given(st.lists(st.tuples(st.integers(0, 2**62), st.integers(1, 2**31 - 1), I64, I64, st.integers(0, 2**62),
                          st.integers(1, 2**15 - 1)), max_size=20))
def test_units_round_trip(units: list[tuple[int, int, int, int, int, int]]) -> None:
    data = build_file(units, file_size=UNIT_SIZE * 24)
    got = [(e.commitlog_offset, e.size, e.tags_code, e.store_time, e.msg_base_offset, e.batch_size)
           for e in read_units(data)]
    assert got == units, "every unit read back, none past them (the zero tail ends the queue)"


def test_walk_reports_a_base_offset_gap(tmp_path: Path) -> None:
    d = tmp_path / "q"
    d.mkdir()
    (d / f"{0:020d}").write_bytes(unit(0, 100, 0, 1, 0, 3) + unit(100, 100, 0, 1, 4, 1) + bytes(UNIT_SIZE * 8))
    found = [f for f in walk_batch_queue(sorted(d.iterdir())) if isinstance(f, Finding)]
    assert [(f.code, f.position) for f in found] == [("ROCKETMQ_QUEUE_OFFSET_GAP", UNIT_SIZE)], \
        f"the second unit's base 4 does not follow 0 + 3: {found}"


def batch_store(tmp_path: Path, *, wrong_batch: bool = False) -> Path:
    """Two inner-batch records (3 and 2 messages) on B/0 and their batch consume queue."""
    s = Store(file_size=8192)
    sent = []
    for base, num in ((0, 3), (3, 2)):
        sent.append((s.append("B", 0, b"batch", props={"INNER_NUM": str(num), "INNER_BASE": str(base)},
                              sys_flag=INNER_BATCH, queue_offset=base), base, num))
    root = s.write(tmp_path / "store", queues={})
    d = root / "batchconsumequeue" / "B" / "0"
    d.mkdir(parents=True)
    data = b"".join(unit(m.offset, m.size, java_hash(m.tags), m.store_ts, base, num + (wrong_batch and base > 0))
                    for m, base, num in sent)
    (d / f"{0:020d}").write_bytes(data + bytes(UNIT_SIZE * 10))
    return root


def test_doctor_verifies_batch_units(tmp_path: Path) -> None:
    findings, read = diagnose_store(batch_store(tmp_path))
    assert findings == [], f"batch units match their records, and queue offsets step by INNER_NUM: {findings}"
    assert any("batchconsumequeue" in str(p) for p in read), "the batch queue files are read"


def test_doctor_reports_a_wrong_batch_size(tmp_path: Path) -> None:
    findings, _ = diagnose_store(batch_store(tmp_path, wrong_batch=True))
    assert [f.code for f in findings] == ["ROCKETMQ_CQ_ENTRY_MISMATCH"], f"batch size 3 for 2 messages: {findings}"


def test_dump_classifies_and_lists_batch_units(tmp_path: Path) -> None:
    d = tmp_path / "store" / "batchconsumequeue" / "B" / "0"
    d.mkdir(parents=True)
    path = d / f"{0:020d}"
    path.write_bytes(unit(0, 100, 1, 2, 0, 3) + unit(100, 90, 1, 3, 3, 2) + bytes(UNIT_SIZE * 8))
    assert classify_file(path) is FileKind.ROCKETMQ_BATCH_CONSUMEQUEUE, "named by its batchconsumequeue/ parent"
    got = [(e["base_offset"], e["batch_size"]) for e in batch_consumequeue_entries(path)]
    assert got == [(0, 3), (3, 2)], f"one batch_cq_entry per unit: {got}"


@given(st.binary(max_size=200))
def test_any_bytes_give_units_or_findings(data: bytes) -> None:
    """Bad input is a finding, never a traceback (a file of any length and content)."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"{0:020d}"
        path.write_bytes(data)
        items = list(walk_batch_queue([path]))
    assert all(isinstance(i, Finding) or i.is_valid for i in items), "only valid units and findings"
