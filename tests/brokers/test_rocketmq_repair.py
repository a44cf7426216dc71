"""Issue 29's last target: a broker group started on every `replog repair` output serves every message of every
queue replog says it keeps, none it says is lost, with the consumer group's offsets intact, and doctor finds no
error in the outputs (tests/brokers/rocketmq_repair.py). The brokers' tools are the oracle: RmqDump (consumer
pull, sequence numbers), RmqInspect (CQ units through the admin API), RmqCommit progress (examineConsumeStats).

Premise: a classic 4.9.7 group diverged after a manual failover (slave ahead, different bytes past the common
end), both brokers stopped cleanly, the group restarted on replog's outputs; nothing sent afterwards.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.brokers.rocketmq_repair import VERSION, Diverged, Served, diverged_with_offsets, serve
from tests.brokers.rocketmq_scenarios import TOPIC
from tests.toolkit.test_cli import run_replog

pytestmark = [pytest.mark.brokers, pytest.mark.brokers_full]


def replog_json(*args: str) -> dict[str, Any]:
    done = run_replog(*args, "--format", "json")
    assert done.returncode in (0, 1), f"replog {' '.join(args)} exited {done.returncode}:\n{done.stderr}"
    result: dict[str, Any] = json.loads(done.stdout)
    return result


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


def check_served(d: Diverged, result: dict[str, Any], served: Served) -> None:
    """(1) Served = held minus replog's lost; nothing lost served; RmqDump agrees with the CQ units."""
    lost = lost_seqs(result)
    held = set(d.seqs["n0"]) | set(d.seqs["n1"])
    gone = set().union(*lost.values())
    kept = held - gone if result["leader"] == "n0" else set()
    seqs = [m[3] for m in served.messages]
    assert len(seqs) == len(set(seqs)), f"a message served twice: {sorted(seqs)}"
    assert not set(seqs) & gone, f"replog says lost, the broker serves: {sorted(set(seqs) & gone)}"
    assert set(seqs) == kept, (f"served {len(seqs)} != replog's kept {len(kept)}; not served "
                               f"{sorted(kept - set(seqs))[:10]}, unexpected {sorted(set(seqs) - kept)[:10]}")
    for q in sorted({m[0] for m in served.messages}):
        units = [(u[0], u[1]) for u in served.master.units[(TOPIC, q)]]
        pulled = [(qo, off) for qq, qo, off, _ in served.messages if qq == q]
        assert pulled == units, f"queue {q}: consumer pull {pulled[:5]}.. != CQ units {units[:5]}.."


def check_offsets(d: Diverged, result: dict[str, Any], served: Served) -> None:
    """(2) The group's offsets after == before the copy == replog's impact committed offsets."""
    before = {k: o for k, (_, o) in d.offsets_before.items()}
    after = {k: o for k, (_, o) in served.offsets.items()}
    assert before == d.committed, f"premise: committed {d.committed}, broker reported {before}"
    assert after == before, f"consumer offsets on the repaired group {after} != before the copy {before}"
    groups = result.get("impact", {}).get("consumer_groups", [])
    said = {(g["topic"], g["queue_id"]): g["committed_offset"] for g in groups
            if g["store"] == result["leader"] and g["group"] == "replog-lab-repair"}
    assert said == before, f"replog's impact committed offsets {said} != the broker's {before}"


def check_doctor(stores: dict[str, Path]) -> None:
    """(3) doctor on each repair output reports no error."""
    for name, store in stores.items():
        doc = replog_json("doctor", str(store))
        errors = [f for f in doc["findings"] if f["severity"] == "error"]
        assert not errors, f"doctor finds errors in repaired {name}: {errors}"


def test_repaired_group_serves_what_replog_keeps(tmp_path: Path) -> None:
    d = diverged_with_offsets(tmp_path)
    out = tmp_path / "repaired"
    result = replog_json("repair", *[f"{n}={p}" for n, p in d.copies.items()], "--protocol", "classic",
                         "--broker-version", VERSION, "--out", str(out))
    assert result["leader"] == "n0", f"master: replog {result['leader']}, brokers n0 (brokerId 0)"
    problems = {r["name"]: r["problems"] for r in result["repaired"] if r["problems"]}
    assert not problems, f"repair's own verification: {problems}"
    stores = {r["name"]: Path(r["path"]) for r in result["repaired"]}
    assert set(stores) == {"n0", "n1"}, f"repair wrote {sorted(stores)}"
    served = serve(stores, tmp_path / "served")
    assert served.slave_end == served.master.max_offset, (
        f"the slave on its repair output ends at {served.slave_end}, the master at {served.master.max_offset}")
    check_served(d, result, served)
    check_offsets(d, result, served)
    check_doctor(stores)
