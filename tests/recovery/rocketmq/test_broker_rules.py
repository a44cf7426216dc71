"""The broker's recovery by version, its consume queues, and classic HA, on stores written byte by byte
from the broker's layout (tests/recovery/rocketmq/independent.py), never by replog's writers."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from replog.recovery.rocketmq.ha import CLASSIC, replay_paths
from replog.recovery.rocketmq.recover import recover_store
from replog.recovery.rocketmq.recovery_rule import rule_for
from replog.recovery.rocketmq.store_model import load_store
from tests.recovery.rocketmq.independent import T0, Sent, Store, units
from tests.toolkit.test_cli import run_replog

FILE = 1000   # six 148-byte messages a file, then a BLANK


def four_files(n: int = 24) -> Store:
    """Messages 0..23 of orders/0 and orders/1 in turn: files at 0 (0-5), 1000 (6-11), 2000 (12-17), 3000."""
    store = Store(FILE)
    for i in range(n):
        store.append("orders", i % 2, b"message-%05d-" % i + b"x" * 27)
    assert [s.offset // FILE for s in store.sent[::6]] == [0, 1, 2, 3]
    return store


@pytest.fixture
def damaged(tmp_path: Path) -> tuple[Path, list[Sent]]:
    """Bad body CRCs in the middle of file 1 (message 8), of file 2 (14) and at the start of file 3 (18)."""
    store = four_files()
    for i in (8, 14, 18):
        store.corrupt_body(store.sent[i])
    return store.write(tmp_path / "store"), store.sent


@pytest.mark.parametrize("version,rule,start,end", [
    ("4.9.8", "4.x-5.3.1", 1000, 8), ("5.3.1", "4.x-5.3.1", 1000, 8),
    ("5.3.2", "5.3.2-5.3.3", 3000, 18), ("5.3.3", "5.3.2-5.3.3", 3000, 18),
    (None, "5.3.4+", 2000, 14), ("5.3.4", "5.3.4+", 2000, 14)])
def test_normal_recovery_starts_where_the_version_says(damaged: tuple[Path, list[Sent]], version: str | None,
                                                       rule: str, start: int, end: int) -> None:
    """Clean shutdown (no abort), consume queues complete. Up to 5.3.1 the scan starts at the third file
    from the last and stops at message 8; 5.3.2-5.3.3 start at the newest file below the queues' end (3000)
    and stop at once (a damaged first record); later versions skip a file whose first record fails the
    check and start at 2000, stopping at message 14. Three versions, three logs."""
    root, sent = damaged
    model = load_store(root, rule=rule_for(version))
    assert model.recovery() == {"rule": rule, "broker_version": version, "mode": "normal", "scan_start": start}
    assert model.max_offset == sent[end].offset


def test_abnormal_recovery_before_and_after_the_full_check(tmp_path: Path) -> None:
    """After a crash the start file is the newest whose first record is old enough for the checkpoint.
    Up to 5.3.3 only its magic and timestamp are read: file 3 (first record damaged) qualifies and the
    log ends at 3000; later versions check the record and start at file 2, stopping at message 14.
    Through the CLI: recover says which rule it followed."""
    store = four_files()
    for i in (8, 14, 18):
        store.corrupt_body(store.sent[i])
    root = store.write(tmp_path / "store", abort=True)
    old = json.loads(run_replog("recover", str(root), "--out", str(tmp_path / "old"), "--broker-version",
                                "5.3.3", "--format", "json").stdout)
    assert old["recovery"]["rule"] == "5.3.2-5.3.3" and old["recovery"]["mode"] == "abnormal"
    assert (old["scan_start"], old["truncated_to"]) == (3000, 3000)
    new = recover_store(root, tmp_path / "new")
    assert new["recovery"]["rule"] == "5.3.4+" and new["recovery"]["broker_version"] is None
    assert (new["scan_start"], new["truncated_to"]) == (2000, store.sent[14].offset)


def test_ls_says_which_rule_and_refuses_a_bad_version(damaged: tuple[Path, list[Sent]]) -> None:
    root, sent = damaged
    d = json.loads(run_replog("ls", str(root), "--broker-version", "4.9.8", "--format", "json").stdout)
    assert d["store"]["recovery"]["rule"] == "4.x-5.3.1" and d["store"]["max_offset"] == sent[8].offset
    table = run_replog("ls", str(root), "--broker-version", "5.3.2", "--format", "table").stdout
    assert "5.3.2-5.3.3 rule" in table
    bad = run_replog("ls", str(root), "--broker-version", "five")
    assert bad.returncode == 2 and "not a RocketMQ version" in bad.stderr


def test_abnormal_recovery_keeps_the_queues_it_finds(tmp_path: Path) -> None:
    """The checkpoint starts the abnormal scan at file 2. orders/0's queue holds files 0-1's messages,
    orders/1 has no queue at all. The broker keeps orders/0's units and dispatches the rest from file 2 on;
    orders/1 gets a first file filled with pre-blank units up to its first dispatched message (queue
    offset 6). --rebuild-queues writes every unit instead."""
    store = four_files()
    lagging = {("orders", 0): [s for s in store.sent if s.queue_id == 0 and s.offset < 2000]}
    root = store.write(tmp_path / "store", queues=lagging, checkpoint=(T0 + 16_000, T0 + 16_000, 0), abort=True)
    d = json.loads(run_replog("recover", str(root), "--out", str(tmp_path / "out"), "--format", "json").stdout)
    assert d["scan_start"] == 2000 and d["truncated_to"] == store.end
    assert d["rebuilt"]["queues"] == {"mode": "broker", "kept": 6, "dispatched": 12}
    want = {q: [(s.offset, s.size) for s in store.sent if s.queue_id == q] for q in (0, 1)}
    assert [u[:2] for u in units(tmp_path / "out", "orders", 0)] == want[0]
    assert units(tmp_path / "out", "orders", 1) == [(0, 0x7FFFFFFF, 0)] * 6 + [
        (s.offset, s.size, u[2]) for s, u in zip(store.sent[13::2], units(tmp_path / "out", "orders", 1)[6:],
                                                strict=True)]
    assert [u[:2] for u in units(tmp_path / "out", "orders", 1)[6:]] == want[1][6:]
    d = json.loads(run_replog("recover", str(root), "--out", str(tmp_path / "all"), "--rebuild-queues",
                              "--format", "json").stdout)
    assert d["rebuilt"]["queues"]["mode"] == "rebuilt"
    assert [u[:2] for u in units(tmp_path / "all", "orders", 1)] == want[1]


def test_classic_ha_streams_over_different_slave_content(tmp_path: Path) -> None:
    """Classic HA compares offsets only: the slave reports its max offset and the master streams from
    there onto the slave's own five messages; the replay flags the mixed history where it starts."""
    master, slave = Store(FILE), Store(FILE)
    for i in range(20):
        for s in (master, slave):
            s.append("orders", i % 2, b"common-%05d" % i + b"y" * 29)
    x = master.end
    for i in range(10):
        master.append("orders", i % 2, b"master-%05d" % i + b"m" * 29)
    for i in range(5):
        slave.append("orders", i % 2, b"slave--%05d" % i + b"s" * 29)
    m, s = master.write(tmp_path / "m"), slave.write(tmp_path / "s")
    r = next(r for r in replay_paths([f"master={m}", f"slave={s}"], protocol=CLASSIC).to_dict()["replicas"]
             if r["name"] == "slave")
    assert r["status"] == "fetched" and r["diverged_at"] == x and r["log_end_offset_after"] == master.end
    assert [(f["code"], f["offset"]) for f in r["findings"]] == [("ROCKETMQ_HA_MIXED_CONTENT", x)]


def test_a_fresh_slave_with_only_a_checkpoint(tmp_path: Path) -> None:
    """A slave started once and stopped: a checkpoint beside an empty commitlog/. It is a store, and
    classic HA starts it at the start of the master's last file."""
    master = four_files(20)
    m = master.write(tmp_path / "m")
    s = Store(FILE).write(tmp_path / "s", checkpoint=(0, 0, 0))
    assert load_store(s).files == []
    d = replay_paths([f"master={m}", f"slave={s}"]).to_dict()
    last = master.end - master.end % FILE
    assert next(e for e in d["events"] if e["kind"] == "decide")["transfer_from"] == last
    r = next(r for r in d["replicas"] if r["name"] == "slave")
    assert (r["log_start_offset_after"], r["log_end_offset_after"]) == (last, master.end)


def test_a_gap_in_a_queue_is_appended_over_as_the_broker_does(tmp_path: Path) -> None:
    """orders/0's queue ends with file 0's messages (queue offsets 0-2); the scan starts at file 2. The
    broker dispatches queue offset 6 where the queue ends (3), logging "[BUG] logic queue order maybe
    wrong": file 1's messages never get units and later ones sit three places early."""
    store = four_files()
    lagging = {("orders", 0): [s for s in store.sent if s.queue_id == 0 and s.offset < 1000]}
    root = store.write(tmp_path / "store", queues=lagging, checkpoint=(T0 + 16_000, T0 + 16_000, 0), abort=True)
    recover_store(root, tmp_path / "out")
    want = [s for s in store.sent if s.queue_id == 0 and (s.offset < 1000 or s.offset >= 2000)]
    assert [u[:2] for u in units(tmp_path / "out", "orders", 0)] == [(s.offset, s.size) for s in want]
    assert len(want) == 9 and want[3].queue_offset == 6


def lagging_queues(tmp_path: Path, every_queue: bool) -> tuple[Path, Store]:
    """A cleanly stopped store (no abort) whose orders/0 queue lacks its last two units, and orders/1 its last
    two too when `every_queue` (then the queues' maximum physical offset is behind the log's end)."""
    store = four_files()
    lag = {q: [s for s in store.sent if s.queue_id == q] for q in (0, 1)}
    queues = {("orders", q): sents[:-2] if q == 0 or every_queue else sents for q, sents in lag.items()}
    return store.write(tmp_path / "store", queues=queues), store


@pytest.mark.parametrize("version", ["4.9.7", "5.3.3"])
def test_normal_recovery_leaves_a_lagging_queue_alone(tmp_path: Path, version: str) -> None:
    """No abort: the broker runs its normal recovery, which dispatches nothing below the queues' maximum
    physical offset (4.9.7 and 5.3.3 brokers started on such a store keep the queue two units short)."""
    root, store = lagging_queues(tmp_path, every_queue=False)
    d = recover_store(root, tmp_path / "out", broker_version=version)
    assert d["recovery"]["mode"] == "normal", f"recovery mode {d['recovery']}"
    want = [(s.offset, s.size) for s in store.sent if s.queue_id == 0][:-2]
    assert [u[:2] for u in units(tmp_path / "out", "orders", 0)] == want, "orders/0 after normal recovery"
    assert d["rebuilt"]["queues"]["dispatched"] == 0, f"dispatched {d['rebuilt']['queues']}"


@pytest.mark.parametrize(("version", "skipped"), [("4.9.7", 0), ("5.3.3", 1)])
def test_normal_recovery_dispatches_past_the_queues_maximum(tmp_path: Path, version: str, skipped: int) -> None:
    """Every queue lags: 4.x's reput service dispatches from the queues' maximum on (all four messages get
    units); 5.3.3's normal recovery dispatches only records strictly above it, so the record starting exactly
    there (orders/0's message 20) gets none; the last three land at the queues' ends."""
    root, store = lagging_queues(tmp_path, every_queue=True)
    d = recover_store(root, tmp_path / "out", broker_version=version)
    assert d["recovery"]["mode"] == "normal", f"recovery mode {d['recovery']}"
    tail = store.sent[-4:]
    missing = tail[:skipped]
    for q in (0, 1):
        want = [(s.offset, s.size) for s in store.sent if s.queue_id == q and s not in missing]
        assert [u[:2] for u in units(tmp_path / "out", "orders", q)] == want, f"orders/{q} ({version})"
