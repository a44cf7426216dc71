"""`replog replay --what-if` against real clusters: for every candidate leader the lab runs the cluster from the same
frozen copy with that leader (`scenarios_what_if`), and what the cluster then lost must be what replog predicted
for that choice, read with the brokers' own means: kafka-dump-log of the copy's replicas and of the survivor's log
(lost batches by offsets and CRC, acknowledged when below the highest high watermark the copy's checkpoints hold),
a consumer's read of the partition at the end (records each group read that are gone, the producer's lost writes),
the group coordinator's committed offsets (admin API), and each group's Java consumer started again (where it
resumes, and whether it detects the truncation or resets, as replog's classification says). The ranking follows:
it is checked against the order the measured losses give.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.brokers import broker_view as view
from tests.brokers.kafka_lab import BROKER_IDS, Cluster, ClusterSpec, running_cluster
from tests.brokers.scenarios import TOPIC
from tests.brokers.scenarios_clients import COORDINATOR, GroupPlan
from tests.brokers.scenarios_what_if import (
    GROUPS,
    Led,
    ThreeEnds,
    lead_from_copy,
    tail_beyond_the_isr,
    three_log_ends,
)
from tests.brokers.test_kafka_impact import check_resume
from tests.brokers.test_kafka_replay import VERSIONS, replog_json

pytestmark = pytest.mark.brokers
FULL = pytest.mark.brokers_full
# 4.4.0 (KRaft, ELR on by default) in `make test`; 3.9.1 KRaft (no ELR) and ZooKeeper with REPLOG_LAB=all
WHAT_IF_CASES = [pytest.param(VERSIONS["4.4.0-elr-on"], id="4.4.0-elr-on"),
                 pytest.param(VERSIONS["3.9.1-kraft"], id="3.9.1-kraft", marks=FULL),
                 pytest.param(VERSIONS["3.9.1-zk"], id="3.9.1-zk", marks=FULL)]
MODES = {"kraft": "kraft", "zk": "zookeeper"}


def predicted(state: ThreeEnds) -> dict[str, Any]:
    return replog_json("replay", *(f"{n}={p}" for n, p in state.replicas().items()), *state.controller_args(),
                       "--what-if")


def measured_loss(spec: ClusterSpec, state: ThreeEnds, led: Led) -> tuple[int, int]:
    """(records lost, acknowledged ones): the copy's batches (kafka-dump-log) that the survivor's final log does
    not hold with the same offsets and CRC, each once; acknowledged when starting below the highest high
    watermark in the copy's replication-offset-checkpoints."""
    dirs = state.replicas() | {"final": led.final / f"b{led.leader}" / f"{TOPIC}-0"}
    dumped = view.replica_batches(spec.version, dirs)
    kept = {(b.base_offset, b.last_offset, b.crc) for b in dumped.pop("final")}
    lost = {(b.base_offset, b.last_offset, b.crc) for bs in dumped.values() for b in bs} - kept
    hws = [view.checkpoint(state.copy / n, "replication-offset-checkpoint", TOPIC) for n in dumped]
    top = max(h for h in hws if h is not None)
    records = sum(last - base + 1 for base, last, _ in lost)
    return records, sum(last - base + 1 for base, last, _ in lost if base < top)


def check_choice(spec: ClusterSpec, state: ThreeEnds, led: Led, choice: dict[str, Any]) -> tuple[int, ...]:
    """One candidate: replog's prediction against the run; the measured figures the ranking compares."""
    who = choice["leader"]
    records, acknowledged = measured_loss(spec, state, led)
    assert choice["lost"]["records"] == records, f"{who}: records lost (kafka-dump-log)"
    assert choice["lost"]["acknowledged"] == acknowledged, f"{who}: acknowledged records lost"
    final = dict(led.consumed)
    groups = {g["group"]: g for g in choice["consumer_groups"]["detail"]}
    assert sorted(groups) == sorted(state.committed), f"{who}: groups replog found"
    read_lost: set[int] = set()
    affected = 0      # groups that read records now gone, or whose consumer detected a truncation or reset
    for name, committed in state.committed.items():
        gone = {offset for offset, value in committed.read if final.get(offset) != value}
        assert groups[name]["records_consumed_lost"] == len(gone), f"{who}: records {name} read that are gone"
        assert groups[name]["committed_offset"] == led.committed[name], f"{who}: {name}'s committed offset (admin)"
        check_resume(groups[name], led.resumed[name], 0)
        read_lost |= gone
        affected += bool(gone or led.resumed[name].events)
    assert choice["consumer_groups"]["records_consumed_lost"] == len(read_lost), f"{who}: distinct records read, gone"
    writes = sum(1 for offset, value in state.produced if final.get(offset) != value)
    got = {p["producer_id"]: p["records_lost"] for p in choice["producers"]}
    assert sum(got.values()) == writes, f"{who}: the idempotent producer's acknowledged writes lost"
    assert choice["hanging_transactions"] == 0, f"{who}: no transactional producer ran"
    assert choice["consumer_groups"]["affected"] == affected, f"{who}: groups affected"
    return acknowledged, records, len(read_lost), affected, int(writes > 0)


def every_choice(spec: ClusterSpec, cluster: Cluster, state: ThreeEnds, work: Path,
                 groups: tuple[GroupPlan, ...]) -> dict[str, Any]:
    """replog's what-if of the copy, then the cluster from the copy once per candidate, made leader as replog's
    recommendation for that choice says; each choice checked, the ranking held against the measured order."""
    doc = predicted(state)
    choices = {c["leader"]: c for c in doc["choices"]}
    assert sorted(choices) == [f"b{b}" for b in BROKER_IDS], "one choice per replica"
    assert doc["mode"] == MODES[spec.mode], "the mode read from the controller's record"
    measured = {}
    for name, choice in choices.items():
        led = lead_from_copy(cluster, state.copy, choice["broker"], choice["how"] != "wait", work / f"run-{name}",
                             groups)
        measured[name] = check_choice(spec, state, led, choice)
    by_measure = sorted(measured, key=lambda n: (measured[n], choices[n]["how"] != "wait"))
    assert [c["leader"] for c in doc["choices"]] == by_measure, f"ranking, measured {measured}"
    assert doc["recommended"]["leader"] == by_measure[0], "recommended"
    return doc


@pytest.mark.parametrize("spec", WHAT_IF_CASES)
def test_every_leader_loses_what_replog_predicted(spec: ClusterSpec, tmp_path: Path) -> None:
    """Three log ends (20, 15, 10), an idempotent producer and two committed groups: waiting for b2 loses nothing."""
    (tmp_path / "cluster").mkdir()
    with running_cluster(spec, tmp_path / "cluster") as cluster:
        state = three_log_ends(cluster, tmp_path)
        assert state.offsets_replicas == [COORDINATOR], "__consumer_offsets-0 on b2"
        every_choice(spec, cluster, state, tmp_path, GROUPS)


@pytest.mark.parametrize("spec", [pytest.param(p.values[0], id=p.id, marks=FULL) for p in WHAT_IF_CASES[:2]])
def test_forcing_the_old_leader_beats_waiting(spec: ClusterSpec, tmp_path: Path) -> None:
    """b2's acks=1 tail beyond the ISR, b3 elected from the ISR, then every broker gone: the controller's own choice
    (b3, or b4 when b3 was fenced first) loses the tail, forcing b2 by the unclean election tool loses nothing, and
    replog recommends that."""
    (tmp_path / "cluster").mkdir()
    with running_cluster(spec, tmp_path / "cluster") as cluster:
        state = tail_beyond_the_isr(cluster, tmp_path)
        doc = every_choice(spec, cluster, state, tmp_path, ())
    rec = doc["recommended"]
    assert (rec["leader"], rec["how"]) == ("b2", "clean"), f"forcing b2 is recommended: {rec}"
    assert rec["command"].startswith("kafka-leader-election.sh"), rec["command"]
    waiting = next(c for c in doc["choices"] if c["how"] == "wait")
    assert waiting["leader"] in ("b3", "b4"), f"the controller's own choice: {waiting['leader']}"
    assert waiting["lost"]["records"] > 0, f"waiting for {waiting['leader']} loses b2's tail (as measured above)"
