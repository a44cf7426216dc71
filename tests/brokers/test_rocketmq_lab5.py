"""RocketMQ 5.3.3 lab gaps (issue 29): the DLedger commit log on 5.3.3 (rocketmq_dledger's scenarios, checked as
test_rocketmq_dledger checks 4.9.7); timer messages exactly once after `repair` of a controller-mode group; a
repaired controller-mode group under a fresh controller (tests/brokers/rocketmq_lab5.py).
"""
from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from replog.recovery.rocketmq.store_model import load_store
from tests.brokers.rocketmq_dledger import DLedgerOutcome, leader_crash, uncommitted_tail
from tests.brokers.rocketmq_lab5 import fresh_controller
from tests.brokers.rocketmq_repair_scenarios import VERSION_5, unclean_with_offsets
from tests.brokers.test_rocketmq_dledger import check_replay, check_stores, replog_json, unindexed_offset
from tests.brokers.test_rocketmq_repair import check_served

pytestmark = [pytest.mark.brokers, pytest.mark.brokers_full]
V5 = "5.3.3"

DLEDGER_5X: dict[str, Callable[[Path], DLedgerOutcome]] = {
    "5.3.3-dledger-leader-crash": partial(leader_crash, version=V5),
    "5.3.3-dledger-uncommitted-tail": partial(uncommitted_tail, version=V5),
}


@pytest.mark.parametrize("label", list(DLEDGER_5X))
def test_dledger_5x_matches_brokers(tmp_path: Path, label: str) -> None:
    """The 4.9.7 checks (test_rocketmq_dledger) on a 5.3.3 DLedger group."""
    outcome = DLEDGER_5X[label](tmp_path)
    assert outcome.leader != outcome.old_leader, f"no new leader: {outcome.leader} led before and after"
    if label.endswith("uncommitted-tail"):
        assert outcome.truncations, f"premise: {outcome.returning} kept a tail its leader must truncate (no line)"
    gap = check_restart_gap(outcome)
    unindexed = broker_unindexed(outcome)
    assert unindexed.get(outcome.returning, 0) == gap, (
        f"{outcome.returning}: replog unindexes {gap} messages, the broker's restart {unindexed}")
    check_replay(outcome)
    check_stores(outcome, unindexed)


def broker_unindexed(outcome: DLedgerOutcome) -> dict[str, int]:
    """Per broker whose last start truncated its queues, the messages between that `processOffset` and its data
    end (both from its own log lines): what it keeps in its log but no longer indexes."""
    out = {}
    for name, (cut, end) in outcome.dirty.items():
        live = load_store(outcome.stores[name])
        out[name] = sum(1 for m in live.messages if cut <= m.physical_offset and m.end <= end)
    return out


def check_restart_gap(outcome: DLedgerOutcome) -> int:
    """The returning peer restarted after kill -9 (its copy has `abort`): where replog says its 5.3.3 recovery stops
    indexing (DLedgerCommitLog#dledgerRecoverAbnormally) must be the `processOffset` of the broker's `truncate dirty
    logic files` line, and no line means replog names no gap. Returns how many messages replog says it unindexes."""
    assert (outcome.copies[outcome.returning] / "abort").is_file(), f"premise: {outcome.returning} stopped cleanly"
    result = replog_json("replay", *[f"{n}={p}" for n, p in outcome.copies.items()], "--broker-version", V5)
    replica = next(r for r in result["replicas"] if r["name"] == outcome.returning)
    said = unindexed_offset(replica)
    broker = float("inf") if outcome.process_offset is None else float(outcome.process_offset)
    assert said == broker, (
        f"{outcome.returning} unindexed from: replog {said}, broker's truncate-dirty line {outcome.process_offset}")
    return sum(f["details"]["unindexed"] for f in replica.get("findings", [])
               if f["code"] == "ROCKETMQ_DLEDGER_RESTART_UNINDEXED")


def test_repaired_group_under_a_fresh_controller(tmp_path: Path) -> None:
    """The controller-mode repair of test_rocketmq_repair (unclean election, `repair --protocol autoswitch`) started
    under a NEW controller. 5.3.3: each broker keeps the broker id its `brokerIdentity` holds, the new controller
    knows no broker set and refuses to register it (ReplicasInfoManager#registerBroker), so no master is elected.
    replog's repair output must say so: each store's `assumes` names the controller store and the file."""
    u = unclean_with_offsets(tmp_path / "unclean")
    result = replog_json("repair", *[f"{n}={p}" for n, p in u.decision.copies.items()], "--protocol", "autoswitch",
                         "--broker-version", VERSION_5, "--out", str(tmp_path / "repaired"))
    stores = {r["name"]: Path(r["path"]) for r in result["repaired"]}
    fresh = fresh_controller(stores, result["leader"], tmp_path / "fresh")
    refused = {n: any("hasn't been registered in controller" in line for line in lines)
               for n, lines in fresh.logs.items()}
    if fresh.master is not None:       # a fresh controller that elects: then it must serve what replog keeps
        check_served(u.decision.seqs, result, fresh.messages, fresh.master)
        return
    assert all(refused.values()), f"no master, yet not every broker was refused registration: {fresh.logs}"
    for r in result["repaired"]:
        assumes = r.get("assumes", [])
        assert any("controller" in a and "brokerIdentity" in a for a in assumes), (
            f"{r['name']}: a fresh controller elects no master (brokers: {fresh.logs[r['name']][:3]}), "
            f"replog's repair output assumes {assumes}")
