"""Messages no consume-queue unit names though their queue has gone past them (recovery/rocketmq/offset_reuse.py),
on stores written byte by byte (tests/recovery/rocketmq/independent.py): the broker serves a queue by its units and
writes a slot once (`ConsumeQueue#putMessagePositionInfo`: `Build consume queue repeatedly`), so `ls` counts the
messages the units name (and those past the queue's end, dispatched at start) and `doctor` names each other one,
the message its slot serves instead and both offsets.

The shapes are the 5.3.3 DLedger lab's (tests/brokers/test_rocketmq_lab5.py, uncommitted tail): T/0 holds queue
offsets 0..2, then a new leader gives queue offset 2 again to its next message, then 3.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from replog.recovery.rocketmq.doctor import diagnose_store
from replog.recovery.rocketmq.offset_reuse import unreached_messages
from replog.recovery.rocketmq.store_model import load_store
from replog.toolkit.rocketmq_views import store_rows
from tests.recovery.rocketmq.independent import Sent, Store


def reused_log() -> tuple[Store, list[Sent]]:
    """T/0: queue offsets 0, 1, 2 (old), 2 (new), 3; T/1: 0, 1. Returns (store, T/0's five messages)."""
    s = Store(file_size=4096)
    for i in range(3):
        s.append("T", 0, f"old-{i}".encode())
        if i < 2:
            s.append("T", 1, f"other-{i}".encode())
    s.append("T", 0, b"new-2", queue_offset=2)
    s.append("T", 0, b"new-3", queue_offset=3)
    return s, [x for x in s.sent if x.queue_id == 0]


def write(tmp_path: Path, s: Store, t0_slots: list[Sent] | None) -> Path:
    """The store with T/1 indexed and T/0's slots 0.. naming `t0_slots` in order (None: T/0 has no queue file)."""
    t1 = [x for x in s.sent if x.queue_id == 1]
    t0 = None if t0_slots is None else [replace(x, queue_offset=i) for i, x in enumerate(t0_slots)]
    return s.write(tmp_path / "store", queues={("T", 1): t1} | ({} if t0 is None else {("T", 0): t0}))


def findings(root: Path) -> dict[str, list[dict[str, object]]]:
    out: dict[str, list[dict[str, object]]] = {}
    for f in diagnose_store(root)[0]:
        if f.severity != "info":
            out.setdefault(f.code, []).append(f.details)
    return out


def test_a_queue_offset_reused_by_the_returning_peer(tmp_path: Path) -> None:
    """The old leader's case: slot 2 keeps the old message, slot 3 the unit its truncated tail left at the new
    message's position; the message carrying 3 finds its slot taken."""
    s, (o0, o1, o2, n2, n3) = reused_log()
    root = write(tmp_path, s, [o0, o1, o2, n2])
    totals, rows = store_rows(load_store(root))
    assert totals["messages"] == len(s.sent) - 1, f"ls counts {totals['messages']}, the queues serve {len(s.sent) - 1}"
    assert totals.get("unreached_messages") == 1, f"ls unreached {totals.get('unreached_messages')}"
    t0 = next(r for r in rows if (r["topic"], r["queue_id"]) == ("T", 0))
    assert t0["messages"] == 4, f"T/0 row counts {t0['messages']}, its queue serves 4"
    found = findings(root)
    assert len(found.get("ROCKETMQ_QUEUE_OFFSET_REUSED", [])) == 1, f"doctor: {sorted(found)}"
    d = found["ROCKETMQ_QUEUE_OFFSET_REUSED"][0]
    assert (d["topic"], d["queue_id"], d["queue_offset"]) == ("T", 0, 3), f"named at {d}"
    assert d["commitlog_offsets"] == [n2.offset, n3.offset], f"both offsets: {d['commitlog_offsets']}"
    assert (d["kept_offset"], d["kept_queue_offset"], d["unreached_offset"]) == (n2.offset, 2, n3.offset), (
        f"kept/unreached: {d}")
    assert "ROCKETMQ_CQ_ENTRY_MISMATCH" in found, "slot 3 names a message carrying 2: a mismatch doctor must see"


def test_the_restarted_leader_serves_the_new_message_at_the_reused_offset(tmp_path: Path) -> None:
    s, (o0, o1, o2, n2, n3) = reused_log()
    root = write(tmp_path, s, [o0, o1, n2, n3])
    (u,) = unreached_messages(load_store(root))
    assert (u.message.physical_offset, u.holder_offset) == (o2.offset, n2.offset), (
        f"unreached {u.message.physical_offset} (slot names {u.holder_offset}), expected {o2.offset} ({n2.offset})")
    assert u.holder is not None and u.holder.queue_offset == 2, "the holder carries the same queue offset"
    assert store_rows(load_store(root))[0]["messages"] == len(s.sent) - 1, "ls counts the old message too"
    assert sorted(findings(root)) == ["ROCKETMQ_QUEUE_OFFSET_GAP", "ROCKETMQ_QUEUE_OFFSET_REUSED"], (
        f"doctor: {sorted(findings(root))}")


def test_the_second_message_at_an_indexed_offset_is_skipped(tmp_path: Path) -> None:
    """Slot 2 written first with the old message: the new one carrying 2 is skipped, 3 goes on."""
    s, (o0, o1, o2, n2, n3) = reused_log()
    root = write(tmp_path, s, [o0, o1, o2, n3])
    assert [(u.message.physical_offset, u.holder_offset) for u in unreached_messages(load_store(root))] == [
        (n2.offset, o2.offset)], "the new message at offset 2 must be the one no queue reaches"


def test_messages_past_the_queue_end_or_without_queue_are_not_judged(tmp_path: Path) -> None:
    """The broker dispatches them at start: ls counts every one and doctor names none."""
    s, (o0, o1, *_rest) = reused_log()
    short = write(tmp_path / "a", s, [o0, o1])
    none = write(tmp_path / "b", s, None)
    for root in (short, none):
        assert unreached_messages(load_store(root)) == [], f"{root}: messages past the queue end judged"
        assert store_rows(load_store(root))[0]["messages"] == len(s.sent), f"{root}: ls leaves messages out"
