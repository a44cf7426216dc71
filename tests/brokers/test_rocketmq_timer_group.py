"""Timer messages delivered exactly once by a 5.3.3 controller-mode group restarted on `replog repair --protocol
autoswitch` outputs after an unclean election (tests/brokers/rocketmq_timer_group.py): every timer message replog
says the group keeps is delivered once, none twice, none replog lists as lost. The brokers' pull consumer
(RmqTimerCount) is the oracle; replog's JSON is read only for what it claims.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.brokers.rocketmq_timer_group import (
    ALONE0,
    ALONE1,
    LONG,
    SHORT,
    VERSION,
    TimerGroupRun,
    serve_timers,
    timer_decision,
)
from tests.brokers.test_rocketmq_repair import lost_seqs, replog_json

pytestmark = [pytest.mark.brokers, pytest.mark.brokers_full]
TIMER_SEQS = set(SHORT) | set(LONG) | set(ALONE0) | set(ALONE1)


def check_premises(run: TimerGroupRun) -> None:
    """What the brokers delivered before the copy: SHORT once (n0, before the split); at each crash nothing of the
    pending ones (LONG, and the lone master's own)."""
    assert run.before_split == Counter({s: 1 for s in SHORT}), \
        f"premise: n0 delivered {sorted(run.before_split.items())} before the split, expected SHORT once"
    early0 = sorted(set(run.n0_at_crash) - set(SHORT))
    assert not early0, f"premise: n0 delivered {early0} before its crash (they were to be pending)"
    early1 = sorted(set(run.n1_at_crash) - set(SHORT))
    assert not early1, f"premise: n1 delivered {early1} before its crash (they were to be pending)"
    assert run.n1_at_crash == Counter({s: 1 for s in SHORT}), \
        f"premise: n1 at its crash serves {sorted(run.n1_at_crash.items())}, expected SHORT once"


def timer_claims(result: dict[str, Any]) -> set[int]:
    """The timer sequence numbers replog's repair says are lost (any store): its lost messages, and its lost
    scheduled deliveries (`lost_scheduled_deliveries`, by key) which must be the same ones."""
    lost = {s for seqs in lost_seqs(result).values() for s in seqs if s in TIMER_SEQS}
    scheduled = {int(k[1:]) for r in result["replicas"] for d in r["lost_scheduled_deliveries"]["deliveries"]
                 for k in d["keys"] if k.startswith("k")}
    assert scheduled == lost, f"replog's lost scheduled deliveries {sorted(scheduled)} != its lost timer messages"
    return lost


def check_delivered(delivered: Counter[int], lost: set[int], kept: set[int], where: str) -> None:
    """Each of `kept` (timer messages replog keeps, due by now) delivered exactly once; none replog lists as lost;
    nothing else. `where` names the step and the brokers' timer figures for the message."""
    twice = sorted(s for s, n in delivered.items() if n > 1)
    assert not twice, f"{where}: delivered more than once: {[(s, delivered[s]) for s in twice]}"
    served_lost = sorted(set(delivered) & lost)
    assert not served_lost, f"{where}: replog lists as lost, the group delivered: {served_lost}"
    missing = sorted(kept - set(delivered))
    assert not missing, f"{where}: replog keeps, the group never delivered: {missing}"
    other = sorted(set(delivered) - kept - lost)
    assert not other, f"{where}: deliveries not due yet or nobody sent as timer messages: {other}"


def repair(copies: dict[str, Path], out: Path) -> tuple[dict[str, Any], dict[str, Path]]:
    """`replog repair --protocol autoswitch` of both copies: its JSON and the store it wrote for each."""
    result = replog_json("repair", *[f"{n}={p}" for n, p in copies.items()], "--protocol", "autoswitch",
                         "--broker-version", VERSION, "--out", str(out))
    stores = {r["name"]: Path(r["path"]) for r in result["repaired"]}
    assert set(stores) == {"n0", "n1"}, f"repair wrote {sorted(stores)}"
    return result, stores


def test_timers_exactly_once_after_group_repair(tmp_path: Path) -> None:
    """The group on replog's outputs: n1 (replog's master, the controller's last) delivers the SHORT ones never
    again and the LONG ones once; n0, its slave on its repair output, takes over before ALONE1 is due and
    delivers ALONE1 once; ALONE0 (replog: lost) never. Then replog's own verification of its outputs is clean."""
    run = timer_decision(tmp_path / "unclean")
    check_premises(run)
    assert run.decision is not None, "premise: the decision ran"
    d = run.decision
    result, stores = repair(d.copies, tmp_path / "repaired")
    assert result["leader"] == "n1", f"master: replog {result['leader']}, the controller's last master n1"
    lost = timer_claims(result)
    assert lost == set(ALONE0), f"replog's lost timer messages {sorted(lost)} != n0's own (the election's loss)"
    first = set(SHORT) | set(LONG)
    served = serve_timers(stores, d.controller, "n1", tmp_path / "served", first, set(ALONE1))
    early = sorted(set(served.restarted) & set(ALONE1))
    assert not early, f"premise: ALONE1 {early} delivered before the failover (due later)"
    figures = f"master {served.master_stats}, slave {served.slave_stats} (before the failover)"
    check_delivered(served.restarted, lost, first, f"n1 restarted on its repair output; {figures}")
    check_delivered(served.failed_over, lost, TIMER_SEQS - lost, f"n0 after taking over; {figures}")
    problems = {r["name"]: r["problems"] for r in result["repaired"] if r["problems"]}
    assert not problems, f"repair's own verification of its outputs: {problems}"
