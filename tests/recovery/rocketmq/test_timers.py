"""Timer files of a store built here (commit log by the format writer, timer files packed by hand in the broker's
field order): doctor's timer checks, the lost scheduled deliveries, and the timer files `recover` carries."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

from replog.formats.rocketmq.commitlog import CommitLogWriter, file_name, java_string_hash
from replog.recovery.rocketmq.doctor import diagnose_store
from replog.recovery.rocketmq.recover import recover_store
from replog.recovery.rocketmq.store_model import load_store
from replog.recovery.rocketmq.timers import TIMER_TOPIC, lost_deliveries, pending_deliveries
from replog.samples.rocketmq_stores import T0, Built, Written, finish
from tests.recovery.rocketmq.stores import tree_digest

CL_FILE = 8192
TL_FILE = 52 * 20 + 16
NSLOTS = 7 * 86400 * 2
READ_MS = T0 + 100_000                 # lastReadTimeMs: slots before it delivered
DUE = [T0 + 50_000, T0 + 200_000, T0 + 200_000, T0 + 300_000]   # message 0 delivered, 1..3 pending


def timer_message(w: CommitLogWriter, b: Built, i: int, due: int) -> None:
    props = {"TAGS": "T", "KEYS": f"t{i}", "UNIQ_KEY": f"Ut{i}", "REAL_TOPIC": "orders", "REAL_QID": "0",
             "TIMER_OUT_MS": str(due)}
    a = w.append(topic=TIMER_TOPIC, body=f"timer-{i}".encode() * 4, queue_id=0, properties=props,
                 born_timestamp=T0 + i, store_timestamp=T0 + 10 + i)
    b.messages.append(Written(a.physical_offset, a.size, TIMER_TOPIC, 0, a.queue_offset, "T", f"t{i}", T0 + 10 + i))


def unit(prev: int, write: int, delay: int, off: int, size: int, magic: int = 1) -> bytes:
    return struct.pack(">iqiqiqiiq", 52, prev, magic, write, delay, off, size, java_string_hash("orders"), 0)


def slot(time_slot: int, first: int, last: int, num: int) -> tuple[int, bytes]:
    return time_slot % NSLOTS * 32, struct.pack(">qqqii", time_slot, first, last, num, 0)


def timer_store(root: Path, *, abort: bool = False, epochs: list[tuple[int, int]] | None = None,
                dues: list[int] = DUE, first: int = 0) -> Built:
    """Three plain messages, then one timer message per due time (keys t<first>.., all moved into the timer log:
    lastTimerQueueOffset their count); with DUE, 1 and 2 share a slot."""
    w = CommitLogWriter(CL_FILE)
    b = Built(root, w)
    for i in range(3):
        a = w.append(topic="orders", body=b"plain" * 3, queue_id=0, properties={"TAGS": "A", "KEYS": f"k{i}",
                                                                                 "UNIQ_KEY": f"Uk{i}"},
                     born_timestamp=T0, store_timestamp=T0 + i)
        b.messages.append(Written(a.physical_offset, a.size, "orders", 0, a.queue_offset, "A", f"k{i}", T0 + i))
    for i, due in enumerate(dues):
        timer_message(w, b, first + i, due)
    finish(b, abort=abort, epochs=epochs)
    write_timer_files(root, [m for m in b.messages if m.topic == TIMER_TOPIC], dues)
    return b


def write_timer_files(root: Path, timers: list[Written], dues: list[int]) -> None:
    """A timer log with one unit per message (chained per due second), the wheel's slots, timercheck and
    timermetrics, as a broker that enqueued every one of `timers` writes them."""
    write = T0 + 20
    prev_of: dict[int, int] = {}
    slots: dict[int, tuple[int, int, int]] = {}
    log = b""
    for m, due in zip(timers, dues, strict=True):
        log += unit(prev_of.get(due, -1), write, due - write, m.offset, m.size)
        pos = len(log) - 52
        first, _, num = slots.get(due, (pos, pos, 0))
        slots[due], prev_of[due] = (first, pos, num + 1), pos
    (root / "timerlog").mkdir()
    (root / "timerlog" / file_name(0)).write_bytes(log.ljust(TL_FILE, b"\0"))
    wheel = bytearray(NSLOTS * 32)
    for due, (first, last, num) in slots.items():
        pos, data = slot(due // 1000, first, last, num)
        wheel[pos:pos + 32] = data
    (root / "timerwheel").write_bytes(bytes(wheel))
    check = struct.pack(">7q", READ_MS, len(log), len(timers), len(timers), 0, T0, 3).ljust(4096, b"\0")
    (root / "config" / "timercheck").write_bytes(check)
    pending = sum(1 for d in dues if d >= READ_MS)
    (root / "config" / "timermetrics").write_text(
        '{"dataVersion":{"counter":3,"stateVersion":0,"timestamp":1},"timingCount":{"orders":{"count":'
        + str(pending) + ',"timeStamp":1}}}')


def patch(path: Path, pos: int, data: bytes) -> None:
    buf = bytearray(path.read_bytes())
    buf[pos:pos + len(data)] = data
    path.write_bytes(bytes(buf))


def codes_at(findings) -> list[tuple[str, str, int | None]]:  # noqa: ANN001
    return [(f.code, Path(f.path).name, f.position) for f in findings if "TIMER" in f.code or "AHEAD" in f.code]


@pytest.fixture
def store(tmp_path: Path) -> Built:
    return timer_store(tmp_path / "store")


def test_sound_timer_files_have_no_findings_and_are_read(store: Built) -> None:
    findings, files = diagnose_store(store.root)
    assert [f.to_dict() for f in findings] == [], "a sound store with timers has no finding"
    names = {p.relative_to(store.root).as_posix() for p in files}
    assert {"timerwheel", f"timerlog/{file_name(0)}", "config/timercheck", "config/timermetrics"} <= names, \
        f"timer files not read: {names}"


def test_pending_deliveries_follow_the_checkpoint(store: Built) -> None:
    pending = pending_deliveries(load_store(store.root))
    assert [d.keys for d in pending] == [["t1"], ["t2"], ["t3"]], "message 0 is due before lastReadTimeMs"
    assert all(d.real_topic == "orders" and d.enqueued for d in pending), f"{pending}"


def test_unit_with_wrong_size_is_located(store: Built) -> None:
    patch(store.root / "timerlog" / file_name(0), 52 + 32, struct.pack(">i", 7))
    assert codes_at(diagnose_store(store.root)[0]) == [("ROCKETMQ_TIMER_LOG_INVALID", file_name(0), 52)]


def test_unit_pointing_at_a_plain_message(store: Built) -> None:
    plain = store.messages[0]
    patch(store.root / "timerlog" / file_name(0), 104 + 24, struct.pack(">qi", plain.offset, plain.size))
    found = codes_at(diagnose_store(store.root)[0])
    assert found == [("ROCKETMQ_TIMER_LOG_INVALID", file_name(0), 104)], f"{found}"


def test_slot_past_the_timer_log_end(store: Built) -> None:
    pos, data = slot(DUE[3] // 1000, 156, 5200, 1)
    patch(store.root / "timerwheel", pos, data)
    assert codes_at(diagnose_store(store.root)[0]) == [("ROCKETMQ_TIMER_WHEEL_INVALID", "timerwheel", pos)]


def test_broken_slot_chain(store: Built) -> None:
    patch(store.root / "timerlog" / file_name(0), 104 + 4, struct.pack(">q", 0))   # unit 2 -> unit 0 (other slot)
    pos, _ = slot(DUE[1] // 1000, 0, 0, 0)
    assert codes_at(diagnose_store(store.root)[0]) == [("ROCKETMQ_TIMER_WHEEL_INVALID", "timerwheel", pos)]


def test_checkpoint_ahead_and_missing(store: Built) -> None:
    patch(store.root / "config" / "timercheck", 8, struct.pack(">q", 52 * 9))
    assert codes_at(diagnose_store(store.root)[0]) == [("ROCKETMQ_CHECKPOINT_AHEAD", "timercheck", 8)]
    (store.root / "config" / "timercheck").unlink()
    assert codes_at(diagnose_store(store.root)[0]) == [("ROCKETMQ_TIMER_CHECKPOINT_INVALID", "timercheck", None)]


def test_recover_carries_timer_files_and_lists_lost_deliveries(tmp_path: Path) -> None:
    """A crash leaves the last timer message with a bad body CRC: recovery ends the log before it, its unit
    stays (the broker keeps it) and its delivery is reported lost; the timer queue offset is clamped."""
    b = timer_store(tmp_path / "store", abort=True)
    last = b.messages[-1]
    patch(b.root / "commitlog" / file_name(0), last.offset + 8, struct.pack(">i", 12345))
    found = codes_at(diagnose_store(b.root)[0])
    assert ("ROCKETMQ_TIMER_MESSAGE_LOST", file_name(0), 156) in found, f"{found}"
    before = tree_digest(b.root)
    result = recover_store(b.root, tmp_path / "out")
    assert tree_digest(b.root) == before, "the input changed"
    timers = result["rebuilt"]["timers"]
    assert timers["lost_scheduled_deliveries"]["count"] == 1, f"{timers}"
    assert timers["lost_scheduled_deliveries"]["deliveries"][0]["keys"] == ["t3"], f"{timers}"
    assert timers["checkpoint"]["last_timer_queue_offset"] == 3, "clamped to the kept timer queue's end"
    out = tmp_path / "out"
    for name in ("timerwheel", f"timerlog/{file_name(0)}", "config/timermetrics"):
        assert (out / name).read_bytes() == (b.root / name).read_bytes(), f"{name} not copied byte for byte"
    assert struct.unpack_from(">q", (out / "config" / "timercheck").read_bytes(), 16)[0] == 3, "timercheck written"
    after = codes_at(diagnose_store(out)[0])
    assert after == [("ROCKETMQ_TIMER_MESSAGE_LOST", file_name(0), 156)], f"output findings {after}"


def test_lost_deliveries_skip_what_was_delivered(store: Built) -> None:
    model = load_store(store.root)
    timers = [m for m in model.messages if m.topic == TIMER_TOPIC]
    assert [d.keys for d in lost_deliveries(model, timers[:2])] == [["t1"]], "t0 was delivered before the crash"
    (store.root / "config" / "timercheck").unlink()
    assert len(lost_deliveries(model, timers[:2])) == 2, "without a checkpoint every timer message is pending"


def test_ls_summary_of_the_timer_files(store: Built) -> None:
    from replog.recovery.rocketmq.timers import timer_summary
    from replog.toolkit.rocketmq_views import timers_line
    t = timer_summary(load_store(store.root))
    assert t is not None, "timer files present"
    assert (t["units"], t["timer_log_end"], t["metrics_pending"]) == (4, 208, 3), f"{t}"
    assert t["wheel_pending"] == 3, "slots of DUE[1] (2) and DUE[3] (1) lie at or after lastReadTimeMs"
    assert "4 timer-log units" in timers_line(t), timers_line(t)


def test_bad_timer_files_are_findings_not_tracebacks(store: Built) -> None:
    (store.root / "timerwheel").write_bytes(b"\x01" * 100)
    (store.root / "config" / "timercheck").write_bytes(b"\x00" * 10)
    (store.root / "config" / "timermetrics").write_text("{not json")
    (store.root / "timerlog" / file_name(TL_FILE)).write_bytes(b"\xff" * 7)
    found = {(c, n) for c, n, _ in codes_at(diagnose_store(store.root)[0])}
    other = {(f.code, Path(f.path).name) for f in diagnose_store(store.root)[0]}
    assert ("ROCKETMQ_TIMER_WHEEL_INVALID", "timerwheel") in found, f"{found}"
    assert ("ROCKETMQ_TIMER_CHECKPOINT_INVALID", "timercheck") in found, f"{found}"
    assert ("ROCKETMQ_CONFIG_INVALID", "timermetrics") in other, f"{other}"
    assert ("ROCKETMQ_TIMER_LOG_INVALID", file_name(TL_FILE)) in found, f"{found}"
    result = recover_store(store.root, store.root.parent / "out")
    assert result["rebuilt"]["timers"]["checkpoint"] is None, "an unreadable checkpoint is not rewritten"


def test_replay_and_impact_list_lost_scheduled_deliveries(tmp_path: Path) -> None:
    """The slave's own epoch-1 tail (two timer messages, no timer checkpoint: both pending) is truncated by the
    auto-switch replay: both scheduled deliveries are lost, in the replica's JSON and in the impact."""
    from replog.recovery.rocketmq.ha import AUTOSWITCH, replay_paths
    from replog.recovery.rocketmq.impact import analyze_rocketmq_impact
    from replog.samples.rocketmq_stores import FILE_SIZE, append, build, spec

    common = [spec(i) for i in range(20)]
    w = CommitLogWriter(FILE_SIZE)
    for s in common:
        append(w, [], s)
    x = w.max_offset
    m = build(tmp_path / "m", common + [spec(i, tag="TagB") for i in range(20, 22)], epochs=[(1, 0), (2, x)])
    sw = CommitLogWriter(FILE_SIZE)
    s = Built(tmp_path / "s", sw)
    for sp in common:
        append(sw, s.messages, sp)
    for i in range(2):
        timer_message(sw, s, i, T0 + 600_000)
    finish(s, epochs=[(1, 0)])
    result = replay_paths([f"master={m.root}", f"slave={s.root}"], protocol=AUTOSWITCH)
    slave = next(r for r in result.to_dict()["replicas"] if r["name"] == "slave")
    lost = slave["lost_scheduled_deliveries"]
    assert (lost["count"], lost["topics"]) == (2, ["orders"]), f"{lost}"
    assert [d["keys"] for d in lost["deliveries"]] == [["t0"], ["t1"]], f"{lost}"
    impact = analyze_rocketmq_impact(result).to_dict()
    assert impact["summary"]["scheduled_deliveries_lost"] == 2, f"{impact['summary']}"
    assert [x["store"] for x in impact["lost_scheduled_deliveries"]] == ["slave"], impact["lost_scheduled_deliveries"]


def test_the_timer_metrics_backup_is_read(store: Built) -> None:
    """A 5.3.3 broker with timers on leaves `config/timermetrics.bak` (TimerMetrics#persist): read, not unknown."""
    cfg = store.root / "config"
    (cfg / "timermetrics.bak").write_bytes((cfg / "timermetrics").read_bytes())
    findings, files = diagnose_store(store.root)
    assert [f.to_dict() for f in findings] == [], "a sound backup has no finding"
    assert cfg / "timermetrics.bak" in files, f"the backup is not read: {files}"
    (cfg / "timermetrics.bak").write_text("{not json")
    bad = {(f.code, Path(f.path).name) for f in diagnose_store(store.root)[0]}
    assert ("ROCKETMQ_CONFIG_INVALID", "timermetrics.bak") in bad, f"a broken backup is a finding: {bad}"


def test_repair_gives_the_slave_its_masters_timer_files(tmp_path: Path) -> None:
    """A controller-mode slave whose own timer messages (epoch 1) the election lost: its log past the common prefix
    becomes the master's, so its own timer log (units for its lost messages, at offsets now holding the master's
    bytes) and its timercheck (lastTimerQueueOffset counting them) no longer describe its log. A broker never
    revises them (nothing in AutoSwitchHAClient's truncation touches the timer store); as slave it enqueues only
    past that offset, so on taking over it never delivers the master's timer messages there (lab:
    tests/brokers/test_rocketmq_timer_group.py). repair writes the master's timer files, which describe the same
    bytes, as a slave in step keeps them (SlaveSynchronize#syncTimerCheckPoint, #syncTimerMetrics, 5.3.3)."""
    from replog.recovery.rocketmq.ha import AUTOSWITCH, replay_paths
    from replog.recovery.rocketmq.repair import repair_stores

    plain_end = timer_store(tmp_path / "probe", dues=[]).writer.max_offset
    m = timer_store(tmp_path / "m", epochs=[(1, 0), (2, plain_end)])
    b = timer_store(tmp_path / "s", epochs=[(1, 0)], dues=[T0 + 400_000, T0 + 400_000], first=10)
    before = tree_digest(b.root)
    result = replay_paths([f"m={m.root}", f"s={b.root}"], protocol=AUTOSWITCH)
    slave = next(r for r in result.to_dict()["replicas"] if r["name"] == "s")
    assert slave["lost_scheduled_deliveries"]["count"] == 2, f"premise: {slave['lost_scheduled_deliveries']}"
    written = {r.name: r for r in repair_stores(result, tmp_path / "out")}
    assert tree_digest(b.root) == before, "the input changed"
    out = Path(written["s"].path)
    assert written["s"].problems == [], f"repair's own verification of the slave: {written['s'].problems}"
    for name in ("timerwheel", f"timerlog/{file_name(0)}", "config/timermetrics", "config/timercheck"):
        assert (out / name).read_bytes() == (Path(written["m"].path) / name).read_bytes(), \
            f"the slave's {name} is not its master's"
    timer = [f for f in diagnose_store(out)[0] if f.code.startswith("ROCKETMQ_TIMER")]
    assert timer == [], f"timer findings on the repaired slave: {[f.to_dict() for f in timer]}"
