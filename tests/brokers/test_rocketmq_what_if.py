"""Issue 32: `replog replay --what-if` for RocketMQ against a real 5.3.3 controller-mode group. Two divergent
replicas after an unclean election, both brokers down, their stores and the controller's store copied
(`rocketmq_ha_scenarios.controller_decision`). replog ranks every candidate master from the copies; the lab then
restarts the group from the same copies once per candidate with that broker started first (the controller elects
it), starts the other, and reads what the group keeps with the brokers' own means: the master's commit-log end and
every consume-queue unit (admin API), the slave's truncation line and its end once caught up, and every message a
consumer reads (sequence numbers in the bodies). What each choice lost must be what replog predicted for it, and
the ranking must follow the measured losses.

Premise: nothing runs at the decision point; each candidate restarts from the copies (stores and controller).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.brokers.rocketmq_ha_scenarios import Decision, Led, controller_decision, lead_from_copy
from tests.brokers.rocketmq_scenarios import QUEUES, TOPIC
from tests.toolkit.test_cli import run_replog

pytestmark = pytest.mark.brokers
VERSION = "5.3.3"


def replog_json(*args: str) -> dict[str, Any]:
    done = run_replog(*args, "--protocol", "autoswitch", "--broker-version", VERSION, "--format", "json")
    assert done.returncode in (0, 1), f"replog {' '.join(args[:2])} exited {done.returncode}:\n{done.stderr}"
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def predicted_lost_seqs(decision: Decision, master: str) -> set[int]:
    """The sequence numbers of the messages `replay --leader master` lists as lost (from their keys `k<seq>`)."""
    stores = [f"{n}={p}" for n, p in decision.copies.items()]
    result = replog_json("replay", *stores, "--leader", master)
    seqs: set[int] = set()
    for r in result["replicas"]:
        lost = r["lost"]
        assert lost["messages_listed"] == lost["records"], f"{r['name']}: not every lost message listed"
        seqs |= {int(k[1:]) for m in lost["messages"] for k in m["keys"]}
    return seqs


def check_queues(led: Led) -> None:
    """The consumer's reads and the admin API's CQ units agree: the same units, one per message read."""
    for q in range(QUEUES):
        units = {(i, off) for i, off, _, _ in led.inspection.units[(TOPIC, q)]}
        read = {(qo, off) for queue, qo, off, _ in led.messages if queue == q}
        assert units == read, f"queue {q}: CQ units (admin API) and the consumer's reads differ"
        assert all(off < led.inspection.max_offset for _, off in units), f"queue {q}: a unit past the log end"


def check_choice(decision: Decision, choice: dict[str, Any], led: Led) -> int:
    """One candidate: replog's prediction against the run; returns the measured number of messages lost."""
    who = choice["leader"]
    held = set(decision.seqs["n0"]) | set(decision.seqs["n1"])
    kept = {seq for *_, seq in led.messages}
    lost = held - kept
    check_queues(led)
    assert kept <= held, f"{who}: the group serves messages nobody held: {sorted(kept - held)[:5]}"
    assert choice["lost"]["records"] == len(lost), (
        f"{who}: replog predicts {choice['lost']['records']} lost, the group lost {len(lost)}")
    assert predicted_lost_seqs(decision, who) == lost, f"{who}: the lost sequence numbers differ"
    acked = len(lost & set(decision.acked))
    assert choice["lost"]["acknowledged"] == acked, (
        f"{who}: replog says {choice['lost']['acknowledged']} acknowledged lost, SEND_OK lost: {acked}")
    reps = {r["name"]: r for r in choice["replicas"]}
    assert reps[who]["log_end_offset_after"] == led.inspection.max_offset, (
        f"{who}: master end, replog {reps[who]['log_end_offset_after']}, broker {led.inspection.max_offset}")
    other = next(n for n in reps if n != who)
    assert reps[other]["truncated_to"] == led.truncate_offset, (
        f"{who}: {other} truncation, replog {reps[other]['truncated_to']}, log 'truncateOffset is "
        f"{led.truncate_offset}'")
    assert reps[other]["log_end_offset_after"] == led.slave_end, (
        f"{who}: {other} end once caught up, replog {reps[other]['log_end_offset_after']}, broker {led.slave_end}")
    return len(lost)


def test_what_if_every_master(tmp_path: Path) -> None:
    decision = controller_decision(tmp_path / "decision", VERSION)
    predicted = replog_json("replay", *(f"{n}={p}" for n, p in decision.copies.items()), "--what-if")
    choices = predicted["choices"]
    assert sorted(c["leader"] for c in choices) == sorted(decision.copies), f"candidates: {choices}"
    measured = {}
    for choice in choices:
        led = lead_from_copy(decision, choice["leader"], tmp_path / f"lead-{choice['leader']}", VERSION)
        measured[choice["leader"]] = check_choice(decision, choice, led)
    ranked = [c["leader"] for c in sorted(choices, key=lambda c: c["rank"])]
    assert [measured[n] for n in ranked] == sorted(measured.values()), (
        f"ranking {ranked} does not follow the measured losses {measured}")
