"""RocketMQ 5.3.3 lab gaps (issue 29): the DLedger commit log on 5.3.3 (rocketmq_dledger's scenarios, checked as
test_rocketmq_dledger checks 4.9.7); timer messages exactly once after `repair` of a controller-mode group; a
repaired controller-mode group under a fresh controller (tests/brokers/rocketmq_lab5.py).
"""
from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from tests.brokers.rocketmq_dledger import DLedgerOutcome, leader_crash, uncommitted_tail
from tests.brokers.test_rocketmq_dledger import check_replay, check_stores, replog_json, unindexed_offset

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
    check_restart_gap(outcome)
    check_replay(outcome)
    check_stores(outcome)


def check_restart_gap(outcome: DLedgerOutcome) -> None:
    """Premise of the 5.x split: the returning peer restarted after kill -9 (its copy has `abort`), and replog
    names where its 5.3.3 recovery stops indexing (DLedgerCommitLog#dledgerRecoverAbnormally) - the broker logs the
    same `processOffset` in its `truncate dirty logic files` line."""
    assert (outcome.copies[outcome.returning] / "abort").is_file(), f"premise: {outcome.returning} stopped cleanly"
    result = replog_json("replay", *[f"{n}={p}" for n, p in outcome.copies.items()], "--broker-version", V5)
    replica = next(r for r in result["replicas"] if r["name"] == outcome.returning)
    said = unindexed_offset(replica)
    assert said != float("inf"), f"replog names no unindexed tail for {outcome.returning}"
    assert int(said) == outcome.process_offset, (
        f"{outcome.returning} recovery end: replog {int(said)}, broker's truncate-dirty line {outcome.process_offset}")
