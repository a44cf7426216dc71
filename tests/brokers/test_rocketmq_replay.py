"""replay against real RocketMQ brokers: copies of a master's and a slave's stores taken mid-scenario; `replog
replay` predicts from them what the returning broker does, the brokers then go on, and what they did (read with
their admin API and their log lines) must be what replog said: the master, where the master starts streaming
(classic) or where the returning broker truncates (auto-switch), what it loses, and its end once caught up.

Premise (stated in each scenario): the master keeps running; the other broker restarts from its copy on disk.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.brokers.rocketmq_scenarios import HAOutcome, classic_slave_restarts, unclean_election
from tests.toolkit.test_cli import run_replog

pytestmark = pytest.mark.brokers
FULL = pytest.mark.brokers_full

# label -> (broker version, replay protocol, scenario)
SCENARIOS: dict[str, tuple[str, str, Callable[[Path, str], HAOutcome]]] = {
    "4.9.7-classic-slave-restarts": ("4.9.7", "classic", classic_slave_restarts),
    "5.3.3-classic-slave-restarts": ("5.3.3", "classic", classic_slave_restarts),
    "5.3.3-controller-unclean-election": ("5.3.3", "autoswitch", unclean_election),
}


def cases(*ci: str) -> list[Any]:
    """Every scenario; the labels named run in `make test`, the rest in `make test-brokers`."""
    return [pytest.param(label, id=label, marks=() if label in ci else FULL) for label in SCENARIOS]


def replay(outcome: HAOutcome, protocol: str, version: str) -> dict[str, Any]:
    args = [f"{name}={path}" for name, path in outcome.copies.items()]
    done = run_replog("replay", *args, "--protocol", protocol, "--broker-version", version, "--format", "json")
    assert done.returncode in (0, 1), f"replay exited {done.returncode}:\n{done.stderr}"
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def bodies_lost(result: dict[str, Any], name: str) -> int:
    replica = next(r for r in result["replicas"] if r["name"] == name)
    return int(replica["lost"]["records"] or 0)


@pytest.mark.parametrize("label", cases("5.3.3-controller-unclean-election"))
def test_replay_matches_brokers(tmp_path: Path, label: str) -> None:
    version, protocol, scenario = SCENARIOS[label]
    outcome = scenario(tmp_path, version)
    result = replay(outcome, protocol, version)
    other = next(n for n in outcome.copies if n != outcome.master)
    assert result["leader"] == outcome.master, f"master: replog {result['leader']}, brokers {outcome.master}"
    replicas = {r["name"]: r for r in result["replicas"]}
    assert replicas[outcome.master]["log_end_offset_after"] == outcome.master_end, (
        f"master end: replog {replicas[outcome.master]['log_end_offset_after']}, broker {outcome.master_end}")
    back = replicas[other]
    assert back["log_end_offset_after"] == outcome.slave_end_after, (
        f"{other} end once caught up: replog {back['log_end_offset_after']}, broker {outcome.slave_end_after}")
    assert back["truncated_to"] == outcome.truncate_offset, (
        f"{other} truncation: replog {back['truncated_to']}, broker log 'truncateOffset is "
        f"{outcome.truncate_offset}'")
    assert bodies_lost(result, other) == len(outcome.lost_sent), (
        f"{other} loses {bodies_lost(result, other)} messages per replog, {len(outcome.lost_sent)} per the sends")
    if outcome.transfer_from is not None:
        decided = [e for e in result["events"] if e.get("kind") == "decide" and e.get("to") == other]
        assert decided, f"replay has no transfer decision for {other}: {result['events'][:5]}"
        assert decided[0]["transfer_from"] == outcome.transfer_from, (
            f"first transfer position: replog {decided[0]['transfer_from']}, master's log 'master transfer data "
            f"from {outcome.transfer_from}'")
