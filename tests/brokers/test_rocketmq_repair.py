"""Issue 29's last target: a broker group started on every `replog repair` output serves every message of every
queue replog says it keeps, none it says is lost, with the consumer group's offsets intact on master and slave, and
doctor finds no error in the outputs (tests/brokers/rocketmq_repair.py, rocketmq_repair_scenarios.py). The
brokers' tools are the oracle: RmqDump (consumer pull, sequence numbers), RmqInspect (CQ units through the admin
API), RmqCommit progress (examineConsumeStats), the slave's consumerOffset.json as it wrote it after a clean stop,
and in controller mode the slave's `truncateOffset is N` and the controller's SyncStateSet.

Premises: (classic 4.9.7) a group diverged after a manual failover (slave ahead, different bytes past the common
end), both brokers stopped cleanly, the group restarted on replog's outputs; (controller 5.3.3) an unclean
election left two divergent replicas, both brokers crashed, the controller cleared the master and stopped, the
group restarted on replog's outputs with the controller's copied store. Nothing is sent after either restart.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.brokers.rocketmq_lab import Inspection
from tests.brokers.rocketmq_repair import VERSION, diverged_with_offsets, serve
from tests.brokers.rocketmq_repair_scenarios import VERSION_5, ServedGroup, serve_controller, unclean_with_offsets
from tests.brokers.rocketmq_scenarios import QUEUES, TOPIC
from tests.toolkit.test_cli import replog_json

pytestmark = [pytest.mark.brokers, pytest.mark.brokers_full]



def lost_seqs(result: dict[str, Any]) -> dict[str, set[int]]:
    """Per store, the sequence numbers (keys "k<seq>") of what replog's repair says the store loses."""
    out: dict[str, set[int]] = {}
    for r in result["replicas"]:
        lists = [r["lost"], *([r["repair_plan"]["lost"]] if r.get("repair_plan") else [])]
        for lost in lists:
            assert lost["messages_listed"] == lost["records"], f"{r['name']}: lost messages not all listed"
            out.setdefault(r["name"], set()).update(
                int(k[1:]) for m in lost["messages"] for k in m["keys"] if k.startswith("k"))
    return out


def check_served(seqs_held: dict[str, list[int]], result: dict[str, Any], messages: list[tuple[int, int, int, int]],
                 master: Inspection) -> None:
    """(1) Served = held minus replog's lost; nothing lost served; RmqDump agrees with the master's CQ units."""
    lost = lost_seqs(result)
    held = set(seqs_held["n0"]) | set(seqs_held["n1"])
    gone = set().union(*lost.values())
    kept = held - gone
    seqs = [m[3] for m in messages]
    assert len(seqs) == len(set(seqs)), f"a message served twice: {sorted(seqs)}"
    assert not set(seqs) & gone, f"replog says lost, the broker serves: {sorted(set(seqs) & gone)}"
    assert set(seqs) == kept, (f"served {len(seqs)} != replog's kept {len(kept)}; not served "
                               f"{sorted(kept - set(seqs))[:10]}, unexpected {sorted(set(seqs) - kept)[:10]}")
    for q in range(QUEUES):
        units = [(u[0], u[1]) for u in master.units[(TOPIC, q)]]
        pulled = [(qo, off) for qq, qo, off, _ in messages if qq == q]
        assert pulled == units, f"queue {q}: consumer pull {pulled[:5]}.. != CQ units {units[:5]}.."


def check_offsets(committed: dict[tuple[str, int], int], offsets_before: dict[tuple[str, int], tuple[int, int]],
                  result: dict[str, Any], offsets_after: dict[tuple[str, int], tuple[int, int]]) -> None:
    """(2) The group's offsets after == before the copy == replog's impact committed offsets (the master's)."""
    before = {k: o for k, (_, o) in offsets_before.items()}
    after = {k: o for k, (_, o) in offsets_after.items()}
    assert before == committed, f"premise: committed {committed}, broker reported {before}"
    assert after == before, f"consumer offsets on the repaired group {after} != before the copy {before}"
    groups = result.get("impact", {}).get("consumer_groups", [])
    said = {(g["topic"], g["queue_id"]): g["committed_offset"] for g in groups
            if g["store"] == result["leader"] and g["group"] == "replog-lab-repair"}
    assert said == before, f"replog's impact committed offsets {said} != the broker's {before}"


def check_slave_offsets(committed: dict[tuple[str, int], int], slave_offsets: dict[tuple[str, int], int]) -> None:
    """(2b) The slave's offsets, as it wrote them after syncing from the master and a clean stop, are the
    committed ones (the group's retry topic aside)."""
    topic = {k: o for k, o in slave_offsets.items() if k[0] == TOPIC}
    assert topic == committed, f"the slave's consumerOffset.json {topic} != the committed offsets {committed}"


def check_doctor(stores: dict[str, Path]) -> None:
    """(3) doctor on each repair output reports no error."""
    for name, store in stores.items():
        doc = replog_json("doctor", str(store))
        errors = [f for f in doc["findings"] if f["severity"] == "error"]
        assert not errors, f"doctor finds errors in repaired {name}: {errors}"


def repaired(copies: dict[str, Path], protocol: str, version: str, out: Path) -> tuple[dict[str, Any], dict[str, Path]]:
    """`replog repair` of both copies into `out`: its JSON and the store it wrote for each, once its own
    verification found no problem and it wrote n0 and n1."""
    result = replog_json("repair", *[f"{n}={p}" for n, p in copies.items()], "--protocol", protocol,
                         "--broker-version", version, "--out", str(out))
    problems = {r["name"]: r["problems"] for r in result["repaired"] if r["problems"]}
    assert not problems, f"repair's own verification: {problems}"
    stores = {r["name"]: Path(r["path"]) for r in result["repaired"]}
    assert set(stores) == {"n0", "n1"}, f"repair wrote {sorted(stores)}"
    return result, stores


def test_repaired_group_serves_what_replog_keeps(tmp_path: Path) -> None:
    d = diverged_with_offsets(tmp_path)
    result, stores = repaired(d.copies, "classic", VERSION, tmp_path / "repaired")
    assert result["leader"] == "n0", f"master: replog {result['leader']}, brokers n0 (brokerId 0)"
    served = serve(stores, tmp_path / "served")
    assert served.slave_end == served.master.max_offset, (
        f"the slave on its repair output ends at {served.slave_end}, the master at {served.master.max_offset}")
    check_served(d.seqs, result, served.messages, served.master)
    check_offsets(d.committed, d.offsets_before, result, served.offsets)
    check_slave_offsets(d.committed, served.slave_offsets)
    check_doctor(stores)


def check_slave(result: dict[str, Any], served: ServedGroup, slave: str) -> None:
    """(4) The slave on its repair output: nothing to truncate (the master's truncateOffset is the end replog
    wrote), then the same end and the same CQ units as the master (admin API)."""
    written = {r["name"]: r for r in result["repaired"]}[slave]
    assert served.truncate_offset == written["log_end_offset"], (
        f"{slave}: the broker truncates at {served.truncate_offset}, replog wrote it to {written['log_end_offset']}")
    assert served.slave.max_offset == served.master.max_offset, (
        f"{slave} ends at {served.slave.max_offset} once in sync, the master at {served.master.max_offset}")
    for key, units in served.master.units.items():
        assert served.slave.units.get(key) == units, f"{slave}: CQ units of {key} differ from the master's"


def test_controller_repair_serves_what_replog_keeps(tmp_path: Path) -> None:
    """5.3.3 controller mode after an unclean election: repair with `--protocol autoswitch`, the group restarted on
    the outputs with the controller's copied store, replog's master started first."""
    u = unclean_with_offsets(tmp_path / "unclean")
    d = u.decision
    assert {k: o for k, o in u.slave_synced.items() if k[0] == TOPIC} == u.committed, (
        f"premise: n1 synced {u.slave_synced} before the split, committed {u.committed}")
    result, stores = repaired(d.copies, "autoswitch", VERSION_5, tmp_path / "repaired")
    assert result["leader"] == "n1", f"master: replog {result['leader']}, the controller's last master n1"
    served = serve_controller(stores, d.controller, "n1", tmp_path / "served")
    check_slave(result, served, "n0")
    check_served(d.seqs, result, served.messages, served.master)
    assert lost_seqs(result).get("n0") == set(range(100, 160)), (
        f"replog's lost {lost_seqs(result)}: n0's 60 own messages (seq 100..159) are what the election lost")
    check_offsets(u.committed, u.offsets_before, result, served.offsets)
    check_slave_offsets(u.committed, served.slave_offsets)
    check_doctor(stores)
