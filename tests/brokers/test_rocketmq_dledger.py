"""replog against a real DLedger group (RocketMQ 4.9.7, dledger 0.3.1.2): `ls`, `doctor` and `replay` on the stores
the brokers wrote, compared with what the brokers did (rocketmq_dledger's scenarios).

- replay, from the copies taken while the returning peer was down, predicts the leader, each peer's end once caught
  up, the returning peer's truncation (index and pos of the broker's `[HandleDoTruncate]` line) and what it loses:
  a message replog keeps must be served by the returning broker at the same physical offset and size for its queue
  offset and be the same message there (its keys, by the broker's `viewMessage`: a replacing message can reuse the
  offset and size), one replog calls lost must not be, and every lost one was a send never acknowledged.
- ls and doctor, on the live stores after the clean stop (read in place): the end the broker served, as many
  messages as its consume queues serve, and no defect.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from replog.recovery.rocketmq.offset_reuse import unreached_messages
from replog.recovery.rocketmq.store_model import load_store
from tests.brokers.rocketmq_dledger import TOPIC, DLedgerOutcome, leader_crash, uncommitted_tail
from tests.toolkit.test_cli import replog_json

pytestmark = pytest.mark.brokers
FULL = pytest.mark.brokers_full

SCENARIOS: dict[str, Callable[[Path], DLedgerOutcome]] = {
    "4.9.7-dledger-leader-crash": leader_crash,
    "4.9.7-dledger-uncommitted-tail": uncommitted_tail,
}


def cases(*ci: str) -> list[Any]:
    """Every scenario; the labels named run in `make test`, the rest in `make test-brokers`."""
    return [pytest.param(label, id=label, marks=() if label in ci else FULL) for label in SCENARIOS]



def check_replay(outcome: DLedgerOutcome) -> None:
    result = replog_json("replay", *[f"{n}={p}" for n, p in outcome.copies.items()])
    assert result["protocol"] == "dledger", f"replay protocol {result['protocol']}"
    assert result["leader"] == outcome.leader, (
        f"leader: replog {result['leader']} ({result['leader_election']['explanation']}), brokers {outcome.leader}")
    replicas = {r["name"]: r for r in result["replicas"]}
    for name, end in outcome.ends.items():
        assert replicas[name]["log_end_offset_after"] == end, (
            f"{name} end once caught up: replog {replicas[name]['log_end_offset_after']}, broker {end}")
    cuts = [(e["truncate_index"], e["pos"]) for e in result["events"]
            if e["kind"] == "truncate" and e["replica"] == outcome.returning]
    assert cuts == outcome.truncations, (
        f"{outcome.returning} truncation (index, pos): replog {cuts}, broker [HandleDoTruncate] {outcome.truncations}")
    check_lost(outcome, replicas[outcome.returning])


def check_lost(outcome: DLedgerOutcome, replica: dict[str, Any]) -> None:
    """replog's kept/lost split of the returning peer's copy against the consume-queue units its broker serves."""
    served = {(TOPIC, q): {i: (off, size) for i, off, size, _ in units}
              for (_, q), units in outcome.inspections[outcome.returning].units.items()}
    lost = {(m["queue_id"], m["queue_offset"], m["physical_offset"]) for m in replica["lost"]["messages"]}
    unindexed_from = unindexed_offset(replica)
    copy = load_store(outcome.copies[outcome.returning])
    for m in copy.messages:
        unit = served.get((m.topic, m.queue_id), {}).get(m.queue_offset)
        held = outcome.held.get(m.physical_offset)
        same = held is not None and held[:2] == (m.queue_id, m.queue_offset) and held[2] in m.user_keys()
        kept_by_broker = unit == (m.physical_offset, m.size) and same
        said_lost = (m.queue_id, m.queue_offset, m.physical_offset) in lost
        said_unindexed = not said_lost and m.physical_offset >= unindexed_from
        assert kept_by_broker != (said_lost or said_unindexed), (
            f"{m.topic}/{m.queue_id}@{m.queue_offset} (offset {m.physical_offset}): replog says "
            f"{'lost' if said_lost else 'unindexed' if said_unindexed else 'kept'}, the broker "
            f"{'serves' if kept_by_broker else 'does not serve'} it")
    keys = {int(k[1:]) for m in replica["lost"]["messages"] for k in m["keys"] if k[:1] == "k" and k[1:].isdigit()}
    assert keys <= set(outcome.failed), f"replog loses acknowledged sends {sorted(keys - set(outcome.failed))}"


def unindexed_offset(replica: dict[str, Any]) -> float:
    """Where replog says the peer's restart stops indexing its own messages (ROCKETMQ_DLEDGER_RESTART_UNINDEXED,
    5.2.0+); infinity when it does not say so."""
    cuts = [f["details"]["process_offset"] for f in replica.get("findings", [])
            if f["code"] == "ROCKETMQ_DLEDGER_RESTART_UNINDEXED"]
    return float(min(cuts)) if cuts else float("inf")


def check_stores(outcome: DLedgerOutcome, unindexed: dict[str, int] | None = None) -> None:
    """`unindexed`: per peer, the messages its restart left in the log but out of its consume queues (5.2.0+,
    from the broker's own lines). ls counts what the broker's queues serve, plus the messages it dispatches later
    (past a queue's end: `pending`); a message below its queue's end that no unit names is in the log, in no
    queue: doctor's ROCKETMQ_QUEUE_OFFSET_REUSED, checked against the broker's units (`check_unreached`)."""
    for name, store in outcome.stores.items():
        ls = replog_json("ls", str(store))["store"]
        assert ls["dledger"]["peer"] == name, f"{name}: ls reads peer {ls['dledger']['peer']}"
        assert ls["max_offset"] == outcome.ends[name], f"{name}: ls end {ls['max_offset']}, broker {outcome.ends[name]}"
        served = sum(len(u) for u in outcome.inspections[name].units.values())
        gap, later = (unindexed or {}).get(name, 0), pending(outcome, name)
        assert ls["messages"] == served + later, (
            f"{name}: ls counts {ls['messages']} messages, the broker serves {served} and has {later} of its "
            f"restart's unindexed tail past its queues' ends")
        doctor = replog_json("doctor", str(store))
        unreached = check_unreached(name, outcome, doctor["findings"])
        assert ls.get("unreached_messages", 0) == unreached, (
            f"{name}: ls says {ls.get('unreached_messages', 0)} unreached, doctor names {unreached}")
        # an unindexed tail: the broker itself writes the next units at the dropped slots ("[BUG]logic queue order
        # maybe wrong"), or, leading, reassigns the dropped queue offsets; a returning 5.x peer's stale units of its
        # truncated tail name other messages: doctor must see the units' mismatch with their messages' queue
        # offsets, or a queue offset repeated
        allowed = {"ROCKETMQ_CQ_ENTRY_MISMATCH", "ROCKETMQ_QUEUE_OFFSET_GAP"} if gap or unreached else set()
        if name == outcome.returning and outcome.truncations and outcome.dirty:
            # 5.2+: its abnormal restart dispatched its uncommitted tail too (DLedgerCommitLog#
            # dledgerRecoverAbnormally calls doDispatch per entry walked, committed or not), index entries included;
            # the Raft truncation ([HandleDoTruncate]) removes neither: the index names messages no longer there
            allowed |= {"ROCKETMQ_INDEX_INVALID"}
        bad = [f for f in doctor["findings"] if f["severity"] != "info"
               and f["code"] not in allowed | {"ROCKETMQ_QUEUE_OFFSET_REUSED"}]
        assert not bad, f"{name}: doctor on the store a broker wrote and stopped cleanly: {bad[:3]}"
        if gap:
            assert any(f["code"] in allowed and f["severity"] == "error" for f in doctor["findings"]), (
                f"{name}: the broker misaligned its queues after the unindexed tail, doctor finds no mismatch")


def pending(outcome: DLedgerOutcome, name: str) -> int:
    """Messages of the peer's restart gap (its `truncate dirty logic files` line to its data end) at or past
    their queue's end as the broker serves it: in the log, dispatched by no one yet."""
    if name not in outcome.dirty:
        return 0
    cut, end = outcome.dirty[name]
    ends = {q: max(i for i, _, _, _ in us) + 1 for (_, q), us in outcome.inspections[name].units.items() if us}
    return sum(1 for m in load_store(outcome.stores[name]).messages
               if cut <= m.physical_offset and m.end <= end and m.queue_offset >= ends.get(m.queue_id, 0))


def check_unreached(name: str, outcome: DLedgerOutcome, findings: list[dict[str, Any]]) -> int:
    """Each message replog says no queue reaches: doctor names it (ROCKETMQ_QUEUE_OFFSET_REUSED at its offset),
    the broker serves no unit naming it, and the broker's unit in its slot names the message replog says the slot
    serves instead. Returns how many."""
    said = sorted(f["offset"] for f in findings if f["code"] == "ROCKETMQ_QUEUE_OFFSET_REUSED")
    units = {(q, i): off for (_, q), us in outcome.inspections[name].units.items() for i, off, _, _ in us}
    served = set(units.values())
    unreached = unreached_messages(load_store(outcome.stores[name]))
    assert said == [u.message.physical_offset for u in unreached], f"{name}: doctor names {said}, ls {unreached}"
    for u in unreached:
        m = u.message
        assert m.physical_offset not in served, (
            f"{name}: replog says no queue reaches {m.queue_id}@{m.queue_offset} ({m.physical_offset}), the broker "
            f"serves it")
        assert units.get((m.queue_id, m.queue_offset)) == u.holder_offset, (
            f"{name} {m.queue_id}@{m.queue_offset}: replog says its slot serves {u.holder_offset}, the broker "
            f"{units.get((m.queue_id, m.queue_offset))}")
    return len(unreached)


@pytest.mark.parametrize("label", cases("4.9.7-dledger-leader-crash"))
def test_dledger_group_matches_brokers(tmp_path: Path, label: str) -> None:
    outcome = SCENARIOS[label](tmp_path)
    assert outcome.leader != outcome.old_leader, f"no new leader: {outcome.leader} led before and after"
    if label.endswith("uncommitted-tail"):
        assert outcome.truncations, f"premise: {outcome.returning} kept a tail its leader must truncate (no line)"
    check_replay(outcome)
    check_stores(outcome)
