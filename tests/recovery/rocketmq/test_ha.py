"""HA replay (classic and auto-switch) and repair between stores built by the format writers."""
from __future__ import annotations

from pathlib import Path

import pytest

from replog.formats.errors import ReplogError
from replog.formats.rocketmq.commitlog import CommitLogWriter
from replog.formats.rocketmq.epoch_file import EpochRange
from replog.recovery.rocketmq.doctor import diagnose_store
from replog.recovery.rocketmq.ha import (
    AUTOSWITCH,
    CLASSIC,
    HA_TRANSFER_BATCH_SIZE,
    _frame_sizes,
    compare_logs,
    find_consistent_point,
    replay_paths,
)
from replog.recovery.rocketmq.repair import repair_stores
from replog.recovery.rocketmq.store_model import load_store
from tests.recovery.rocketmq.stores import FILE_SIZE, Built, append, build, spec, tree_digest

COMMON = [spec(i) for i in range(20)]


def prefix_end(specs: list[dict]) -> int:
    w, out = CommitLogWriter(FILE_SIZE), []
    for s in specs:
        append(w, out, s)
    return w.max_offset


def other(i: int) -> dict:
    return spec(i, body=f"other-{i:04d}".encode() * 4, tag="TagB")


def pair(tmp_path: Path, master_extra: list[dict], slave_extra: list[dict], *, epochs: bool = False,
         slave_epochs: list[tuple[int, int]] | None = None) -> tuple[Built, Built, int]:
    x = prefix_end(COMMON)
    m = build(tmp_path / "m", COMMON + master_extra, epochs=[(1, 0), (2, x)] if epochs else None)
    s = build(tmp_path / "s", COMMON + slave_extra, epochs=(slave_epochs or [(1, 0)]) if epochs else None)
    return m, s, x


def specs_of(m: Built, s: Built) -> list[str]:
    return [f"master={m.root}", f"slave={s.root}"]


def replica(d: dict, name: str) -> dict:
    return next(r for r in d["replicas"] if r["name"] == name)


def test_prefix_slave_fetches_only_and_repairs_identical(tmp_path: Path) -> None:
    m, s, x = pair(tmp_path, [spec(i) for i in range(20, 40)], [])
    before = tree_digest(tmp_path)
    result = replay_paths(specs_of(m, s), protocol=CLASSIC)
    d = result.to_dict()
    assert d["system"] == "rocketmq" and d["protocol"] == "classic" and d["leader"] == "master"
    r = replica(d, "slave")
    assert r["truncated_to"] is None and r["diverged_at"] is None and r["lost"]["records"] == 0
    assert (r["log_end_offset_before"], r["log_end_offset_after"]) == (x, m.max_offset)
    assert not any(e["kind"] in ("truncate", "stall") for e in d["events"])
    decide = next(e for e in d["events"] if e["kind"] == "decide")
    assert decide["transfer_from"] == x
    repaired = repair_stores(result, tmp_path / "out")
    assert all(rep.identical_to_master and not rep.problems for rep in repaired)
    assert (tmp_path / "out" / "slave" / "commitlog").is_dir()
    assert tree_digest(m.root) == {k[len("m/"):]: v for k, v in before.items() if k.startswith("m/")}
    assert tree_digest(s.root) == {k[len("s/"):]: v for k, v in before.items() if k.startswith("s/")}


def test_empty_slave_starts_at_the_masters_last_file(tmp_path: Path) -> None:
    m = build(tmp_path / "m", [spec(i) for i in range(30)])
    s = build(tmp_path / "s", [], cq=False, index=False)
    result = replay_paths(specs_of(m, s))
    d = result.to_dict()
    last_file = m.max_offset - m.max_offset % FILE_SIZE
    assert next(e for e in d["events"] if e["kind"] == "decide")["transfer_from"] == last_file
    r = replica(d, "slave")
    assert (r["log_start_offset_after"], r["log_end_offset_after"]) == (last_file, m.max_offset)
    repaired = {rep.name: rep for rep in repair_stores(result, tmp_path / "out")}
    assert repaired["slave"].identical_to_master and repaired["slave"].log_start_offset == last_file
    findings, _ = diagnose_store(tmp_path / "out" / "slave")
    assert not [f for f in findings if f.severity.value == "error"]


def test_slave_ahead_stalls_in_classic_and_repair_cuts_to_the_common_prefix(tmp_path: Path) -> None:
    m, s, x = pair(tmp_path, [], [spec(i) for i in range(20, 30)])
    result = replay_paths(specs_of(m, s), protocol=CLASSIC)
    d = result.to_dict()
    r = replica(d, "slave")
    assert r["stall"]["cause"] == "slave_ahead" and result.stalled
    assert r["truncated_to"] is None and r["log_end_offset_after"] == r["log_end_offset_before"] == s.max_offset
    assert r["repair_plan"]["truncate_to"] == x and r["repair_plan"]["lost"]["records"] == 10
    repaired = {rep.name: rep for rep in repair_stores(result, tmp_path / "out")}
    assert repaired["slave"].identical_to_master and repaired["slave"].log_end_offset == x


@pytest.mark.parametrize(("version", "connection"), [
    ("4.9.7", "closed_at_each_report"), ("4.9.3", "closed_at_each_report"), ("4.9.2", "heartbeats_only"),
    ("5.3.3", "heartbeats_only"), (None, "unknown")])
def test_slave_ahead_connection_by_broker_version(tmp_path: Path, version: str | None, connection: str) -> None:
    """4.9.3-4.9.x (`HAConnection.ReadSocketService#processReadEvent`, #3016) close the connection of a slave whose
    report is past the master's end, at each report after the first; 5.x's `DefaultHAConnection` does not."""
    m, s, x = pair(tmp_path, [], [spec(i) for i in range(20, 30)])
    d = replay_paths(specs_of(m, s), protocol=CLASSIC, broker_version=version).to_dict()
    stall = replica(d, "slave")["stall"]
    assert stall["connection"] == connection, f"{version}: {stall}"
    closes = [e for e in d["events"] if e["kind"] == "disconnect"]
    assert bool(closes) == (connection == "closed_at_each_report"), f"{version}: disconnect events {closes}"
    if closes:
        assert (closes[0]["reported_offset"], closes[0]["master_max_offset"]) == (s.max_offset, x), closes[0]
        assert f"request offset={s.max_offset} greater than local commitLog offset={x}" in stall["explanation"]
    decide = next(e for e in d["events"] if e["kind"] == "decide")
    assert decide["transfer_from"] == s.max_offset, "the first report is the transfer position, unchecked"


def test_slave_ahead_truncated_at_the_consistent_point_under_autoswitch(tmp_path: Path) -> None:
    m, s, x = pair(tmp_path, [other(i) for i in range(20, 25)], [spec(i) for i in range(20, 30)], epochs=True)
    result = replay_paths(specs_of(m, s), protocol=AUTOSWITCH)
    d = result.to_dict()
    assert d["leader"] == "master"     # highest epoch
    r = replica(d, "slave")
    assert r["truncated_to"] == x and r["diverged_at"] == x and r["stall"] is None
    lost = r["lost"]
    assert lost["records"] == 10 and lost["first_offset"] == x
    assert {(q["topic"], q["queue_id"], q["first_queue_offset"], q["last_queue_offset"]) for q in lost["queues"]} \
        == {("orders", 0, 10, 14), ("orders", 1, 10, 14)}
    assert lost["messages"][0]["keys"] == ["Uk20", "k20"]
    assert r["epochs_after"] == [[1, 0], [2, x]] and r["log_end_offset_after"] == m.max_offset
    point = next(e for e in d["events"] if e["kind"] == "consistent_point")
    assert point["point"] == x
    repaired = {rep.name: rep for rep in repair_stores(result, tmp_path / "out")}
    assert repaired["slave"].identical_to_master and not repaired["slave"].problems
    assert (tmp_path / "out" / "slave" / "epochFileCheckpoint").read_text().splitlines()[2:] == ["1-0", f"2-{x}"]


def test_content_divergence_is_streamed_over_and_flagged(tmp_path: Path) -> None:
    """Classic HA checks only offsets: the slave (own bytes from x on, 5 messages) reports its max offset
    and the master streams from there onto them. The broker leaves a mixed history at the master's max
    offset; the replay says so (a finding at x) and repair writes the operator's fix (cut at x, fetch)."""
    m, s, x = pair(tmp_path, [other(i) for i in range(20, 30)], [spec(i) for i in range(20, 25)])
    assert compare_logs(load_store(s.root), load_store(m.root))[0] == x
    d = replay_paths(specs_of(m, s), protocol=CLASSIC).to_dict()
    r = replica(d, "slave")
    assert r["stall"] is None and r["status"] == "fetched" and r["diverged_at"] == x
    assert r["log_end_offset_after"] == m.max_offset
    assert r["fetched"]["bytes"] == m.max_offset - s.max_offset
    assert [(f["code"], f["offset"]) for f in r["findings"]] == [("ROCKETMQ_HA_MIXED_CONTENT", x)]
    assert r["repair_plan"]["truncate_to"] == x


def test_no_consistent_point_needs_manual_intervention(tmp_path: Path) -> None:
    m, s, _ = pair(tmp_path, [other(i) for i in range(20, 25)], [spec(i) for i in range(20, 25)],
                   epochs=True, slave_epochs=[(1, 100)])
    d = replay_paths(specs_of(m, s), protocol=AUTOSWITCH).to_dict()
    r = replica(d, "slave")
    assert r["status"] == "manual" and r["stall"]["cause"] == "no_consistent_point"


def test_consistent_point_rule() -> None:
    local = [EpochRange(1, 0, 500), EpochRange(3, 500, 900)]
    master = [EpochRange(1, 0, 400), EpochRange(2, 400, 1000)]
    assert find_consistent_point(local, master) == 400
    assert find_consistent_point([EpochRange(3, 500, 900)], master) == -1
    assert find_consistent_point([EpochRange(2, 400, 700)], master) == 700


def test_frames_respect_batch_size_segments_and_epochs(tmp_path: Path) -> None:
    w = CommitLogWriter(65536)
    b = Built(tmp_path / "m", w)
    for i in range(300):
        append(w, b.messages, spec(i, body=bytes(200)))
    w.write_to(tmp_path / "m" / "commitlog")
    model = load_store(tmp_path / "m")
    frames = _frame_sizes(model, 0, None)
    assert all(0 < size <= HA_TRANSFER_BATCH_SIZE for _, size, _ in frames)
    assert all(off // 65536 == (off + size - 1) // 65536 for off, size, _ in frames)
    assert frames[0][0] == 0 and sum(size for _, size, _ in frames) == model.max_offset
    epochs = [EpochRange(1, 0, 1000), EpochRange(2, 1000, model.max_offset)]
    ef = _frame_sizes(model, 0, epochs)
    assert ef[0][:2] == (0, 1000) and ef[0][2].epoch == 2     # the boundary frame names the next epoch


def test_unknown_protocol_and_bad_leader(tmp_path: Path) -> None:
    m, s, _ = pair(tmp_path, [], [])
    with pytest.raises(ReplogError):
        replay_paths(specs_of(m, s), protocol="epoch")
    with pytest.raises(ReplogError):
        replay_paths(specs_of(m, s), leader="nobody")
    d = replay_paths(specs_of(m, s), leader="slave").to_dict()
    assert d["leader"] == "slave" and replica(d, "master")["status"] == "in_sync"
