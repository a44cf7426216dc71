"""A queue offset two messages of one queue carry (recovery/rocketmq/offset_reuse.py), on stores written byte by
byte (tests/recovery/rocketmq/independent.py): the consume queue serves one (`ConsumeQueue#putMessagePositionInfo`
skips a unit below the queue's written end: `Build consume queue repeatedly`), `ls` counts what the queues serve,
`doctor` names both commit-log offsets and the one served, and calls the step back no gap.

The shape is the 5.3.3 DLedger lab's (tests/brokers/test_rocketmq_lab5.py, uncommitted tail): T/0 holds queue offsets
0..2, then a new leader gives queue offset 2 again to its next message, then 3.
"""
from __future__ import annotations

from pathlib import Path

from replog.recovery.rocketmq.doctor import diagnose_store
from replog.recovery.rocketmq.offset_reuse import reused_offsets
from replog.recovery.rocketmq.store_model import load_store
from replog.toolkit.rocketmq_views import store_rows
from tests.recovery.rocketmq.independent import Sent, Store

Served = dict[tuple[str, int], list[Sent]]


def reused_log() -> tuple[Store, Sent, Sent]:
    """T/0: queue offsets 0, 1, 2 (old), 2 (new), 3; T/1: 0, 1 untouched. Returns (store, old 2, new 2)."""
    s = Store(file_size=4096)
    for i in range(3):
        s.append("T", 0, f"old-{i}".encode())
        if i < 2:
            s.append("T", 1, f"other-{i}".encode())
    old = s.sent[-1]
    new = s.append("T", 0, b"new-2", queue_offset=2)
    s.append("T", 0, b"new-3", queue_offset=3)
    return s, old, new


def queues(s: Store, served_at_2: Sent | None) -> Served:
    """Every queue's units as the broker wrote them; slot T/0@2 names `served_at_2` (None: T/0 has no file)."""
    t0 = [x for x in s.sent if (x.topic, x.queue_id) == ("T", 0) and x.queue_offset != 2]
    t1 = [x for x in s.sent if (x.topic, x.queue_id) == ("T", 1)]
    return {("T", 1): t1} | ({} if served_at_2 is None else {("T", 0): sorted(t0 + [served_at_2],
                                                                           key=lambda x: x.queue_offset)})


def codes(root: Path) -> list[str]:
    findings, _ = diagnose_store(root)
    return [f.code for f in findings if f.severity != "info"]


def test_the_queue_keeps_the_message_it_indexed_first(tmp_path: Path) -> None:
    """The returning peer's case: it had indexed the old message; the new one's unit is skipped."""
    s, old, new = reused_log()
    root = s.write(tmp_path / "store", queues=queues(s, old))
    totals, rows = store_rows(load_store(root))
    assert totals["messages"] == len(s.sent) - 1, f"ls counts {totals['messages']}, the queues serve {len(s.sent) - 1}"
    assert totals.get("unreached_messages") == 1, f"ls unreached {totals.get('unreached_messages')}"
    t0 = next(r for r in rows if (r["topic"], r["queue_id"]) == ("T", 0))
    assert t0["messages"] == 4, f"T/0 row counts {t0['messages']}, its queue serves 4"
    findings, _ = diagnose_store(root)
    reused = [f for f in findings if f.code == "ROCKETMQ_QUEUE_OFFSET_REUSED"]
    assert len(reused) == 1, f"doctor: {[f.code for f in findings]}"
    d = reused[0].details
    assert (d["topic"], d["queue_id"], d["queue_offset"]) == ("T", 0, 2), f"reuse named at {d}"
    assert d["commitlog_offsets"] == [old.offset, new.offset], f"both offsets: {d['commitlog_offsets']}"
    assert (d["kept_offset"], d["unreached_offsets"]) == (old.offset, [new.offset]), f"kept/unreached: {d}"
    assert reused[0].severity == "warning", f"severity {reused[0].severity}"
    assert codes(root) == ["ROCKETMQ_QUEUE_OFFSET_REUSED"], f"doctor, besides the reuse: {codes(root)}"


def test_the_queue_keeps_the_new_message_when_its_unit_names_it(tmp_path: Path) -> None:
    """The restarted leader's case: its restart dropped the old unit, the new message took the slot."""
    s, old, new = reused_log()
    root = s.write(tmp_path / "store", queues=queues(s, new))
    (r,) = reused_offsets(load_store(root))
    assert (r.kept.physical_offset, [m.physical_offset for m in r.unreached]) == (new.offset, [old.offset]), (
        f"kept {r.kept.physical_offset}, unreached {[m.physical_offset for m in r.unreached]}")
    assert r.by_unit, "the slot's unit names the new message"
    assert store_rows(load_store(root))[0]["messages"] == len(s.sent) - 1, "ls counts the old message too"


def test_without_a_queue_file_the_dispatch_order_decides(tmp_path: Path) -> None:
    """A queue the broker rebuilds from the log: the first message takes the slot, the second is skipped."""
    s, old, new = reused_log()
    root = s.write(tmp_path / "store", queues=queues(s, None))
    (r,) = reused_offsets(load_store(root))
    assert (r.kept.physical_offset, r.by_unit) == (old.offset, False), f"kept {r.kept.physical_offset} {r.by_unit}"
    assert "ROCKETMQ_QUEUE_OFFSET_GAP" not in codes(root), "a reused offset is called a gap"


def test_a_step_back_to_an_offset_no_message_holds_stays_a_gap(tmp_path: Path) -> None:
    """Only an offset an earlier message holds is a reuse: 0, 1, 5, 3 has a gap and a step back, no reuse."""
    s = Store(file_size=4096)
    for qo in (0, 1, 5, 3):
        s.append("T", 0, f"m-{qo}".encode(), queue_offset=qo)
    root = s.write(tmp_path / "store")
    found = codes(root)
    assert "ROCKETMQ_QUEUE_OFFSET_REUSED" not in found, f"no offset repeats, doctor says {found}"
    assert found.count("ROCKETMQ_QUEUE_OFFSET_GAP") == 2, f"1 -> 5 and 5 -> 3 are gaps: {found}"
    assert store_rows(load_store(root))[0]["messages"] == 4, "every message is served"
