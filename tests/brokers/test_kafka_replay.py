"""replay and repair against real Kafka clusters: replog predicts from a copy taken mid-scenario, the brokers then
go on and converge, and what they did (read with kafka-dump-log, their log lines and their checkpoints) must be
what replog said: leader, truncation point, log start and end, high watermark, lost offsets, and every batch's
offsets, epoch and CRC after the fetch (replog's repaired replicas dumped by the same kafka-dump-log).

Premise (stated, as replog's output states it): the copy is taken with every live node frozen; the crashed
leader restarts from its own disk and the running brokers go on. replay assumes every replica restarts from the
copy; in these scenarios the running replicas follow an unchanged leader and have nothing to truncate, so both
premises lead to the same end.
"""
from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.brokers import broker_view as view
from tests.brokers.kafka_lab import Cluster, ClusterSpec, running_cluster
from tests.brokers.scenarios import (
    TOPIC,
    Outcome,
    diverge,
    every_replica_crashes,
    follower_behind_log_start,
    restart_from,
    two_unclean_elections,
    unclean_election,
    values,
)
from tests.toolkit.test_cli import replog_json

pytestmark = pytest.mark.brokers
FULL = pytest.mark.brokers_full

VERSIONS = {
    "3.9.1-kraft": ClusterSpec("3.9.1", "kraft"),
    "3.9.1-zk": ClusterSpec("3.9.1", "zk"),
    "3.9.1-zk-ibp-0.11.0-IV1": ClusterSpec("3.9.1", "zk", ibp="0.11.0-IV1"),
    "3.9.1-zk-ibp-0.10.2": ClusterSpec("3.9.1", "zk", ibp="0.10.2"),
    "4.0.2-kraft": ClusterSpec("4.0.2", "kraft"),
    "4.4.0-elr-on": ClusterSpec("4.4.0", "kraft", elr=True),
    "4.4.0-elr-off": ClusterSpec("4.4.0", "kraft", elr=False),
}


def cases(*ci: str, without: tuple[str, ...] = ()) -> list[Any]:
    """Every lab version but those `without`; those named run in `make test`, the rest in `make test-brokers`."""
    return [pytest.param(spec, id=label, marks=() if label in ci else FULL)
            for label, spec in VERSIONS.items() if label not in without]



def controller_args(outcome: Outcome) -> list[str]:
    if outcome.metadata is not None:
        return ["--metadata", str(outcome.metadata)]
    if outcome.partition_state is not None:
        return ["--partition-state", str(outcome.partition_state)]
    return []


def replica_args(root: Path, outcome: Outcome) -> list[str]:
    return [f"{name}={path}" for name, path in outcome.replicas(root).items()]


def premise_args(outcome: Outcome) -> list[str]:
    """The scenario's premise told to replog: the brokers that kept running after the copy."""
    return [arg for name in outcome.running for arg in ("--running", name)]


def lost_offsets(before: list[view.DumpedBatch], after: list[view.DumpedBatch]) -> list[int]:
    """Offsets of batches a replica held in the copy and no longer holds (same offsets and CRC) at the end."""
    kept = {(b.base_offset, b.last_offset, b.crc) for b in after}
    return [o for b in before if (b.base_offset, b.last_offset, b.crc) not in kept
            for o in range(b.base_offset, b.last_offset + 1)]


def check_replica(version: str, predicted: dict[str, Any], outcome: Outcome,
                  copy: list[view.DumpedBatch], final: list[view.DumpedBatch]) -> None:
    name = predicted["name"]
    log_dir = outcome.final / name
    truncated = view.truncations(outcome.outputs[name], TOPIC)
    assert predicted["truncated_to"] == (min(truncated) if truncated else None), f"{name}: truncation point"
    assert predicted["log_end_offset_after"] == view.log_end(final), f"{name}: log end offset"
    start = view.checkpoint(log_dir, "log-start-offset-checkpoint", TOPIC) or 0
    assert predicted["log_start_offset_after"] == start, f"{name}: log start offset"
    assert predicted["high_watermark_after"] == view.checkpoint(log_dir, "replication-offset-checkpoint", TOPIC), \
        f"{name}: high watermark"
    lost = lost_offsets(copy, final)
    assert predicted["lost"]["records"] == len(lost), f"{name}: lost records"
    assert predicted["lost"]["first_offset"] == (lost[0] if lost else None), f"{name}: first lost offset"
    assert predicted["lost"]["last_offset"] == (lost[-1] if lost else None), f"{name}: last lost offset"


def compare(spec: ClusterSpec, outcome: Outcome, tmp_path: Path, loses: bool = True,
            extra: tuple[str, ...] = ()) -> dict[str, Any]:
    """replay and repair of the copy against what the brokers did after it (`extra`: more replog options, e.g.
    settings no metadata log says); replay's JSON comes back for the caller's own checks."""
    predicted = replog_json("replay", *replica_args(outcome.copy, outcome), *controller_args(outcome),
                            "--protocol", spec.protocol, *premise_args(outcome), *extra)
    assert sorted(predicted["premise"]["running"]) == sorted(outcome.running), "the premise replog states"
    assert predicted["leader"] == f"b{outcome.leader}", "leader"
    if outcome.high_watermark is not None:
        lead = next(r for r in predicted["replicas"] if r["name"] == predicted["leader"])
        assert lead["high_watermark_after"] == outcome.high_watermark, "leader's high watermark (admin API)"
    copy = view.replica_batches(spec.version, outcome.replicas(outcome.copy))
    repaired = tmp_path / "repaired"
    replog_json("repair", *replica_args(outcome.copy, outcome), *controller_args(outcome), "--out", str(repaired),
                "--protocol", spec.protocol, *premise_args(outcome), *extra)
    final = view.replica_batches(spec.version, outcome.replicas(outcome.final))
    written = view.replica_batches(spec.version, outcome.replicas(repaired))
    for replica in predicted["replicas"]:
        name = replica["name"]
        check_replica(spec.version, replica, outcome, copy[name], final[name])
        assert written[name] == final[name], f"{name}: repaired batches (kafka-dump-log) differ from the broker's"
    assert any(r["lost"]["records"] for r in predicted["replicas"]) == loses, "records lost by the scenario"
    return predicted


def run_scenario(spec: ClusterSpec, tmp_path: Path, scenario: Callable[[Cluster, Path], Outcome]) -> Outcome:
    (tmp_path / "cluster").mkdir()
    with running_cluster(spec, tmp_path / "cluster") as cluster:
        return scenario(cluster, tmp_path)


@pytest.mark.parametrize("spec", cases("3.9.1-kraft", "3.9.1-zk-ibp-0.11.0-IV1", "4.4.0-elr-on"))
def test_unclean_election_then_the_old_leader_returns(spec: ClusterSpec, tmp_path: Path) -> None:
    """Scenario U: leader b2 alone takes acks=1 writes and crashes; b3 is elected uncleanly and takes new writes;
    b2 comes back and truncates to where its epoch ends on b3 (KIP-101/KIP-279), or to its high watermark."""
    compare(spec, run_scenario(spec, tmp_path, unclean_election), tmp_path)


@pytest.mark.parametrize("spec", cases())
def test_two_unclean_elections_in_a_row(spec: ClusterSpec, tmp_path: Path) -> None:
    """Two replicas return, each with a tail of a different epoch that the current leader never had."""
    compare(spec, run_scenario(spec, tmp_path, two_unclean_elections), tmp_path)


@pytest.mark.parametrize("spec", cases("4.0.2-kraft"))
def test_every_replica_crashes_at_once(spec: ClusterSpec, tmp_path: Path) -> None:
    """All three replicas crash; all restart; the controller's record decides the leader and nothing is lost."""
    compare(spec, run_scenario(spec, tmp_path, every_replica_crashes), tmp_path, loses=False)


# DeleteRecords needs followers that report their log start (Fetch v5, IBP 0.11.0): under IBP 0.10.2 the request
# waits for a low watermark that never moves and times out, as the broker means it to.
@pytest.mark.parametrize("spec", cases("4.4.0-elr-off", without=("3.9.1-zk-ibp-0.10.2",)))
def test_a_follower_behind_the_log_start(spec: ClusterSpec, tmp_path: Path) -> None:
    """DeleteRecords moves the log start inside a batch past a frozen follower's log end; it starts again (its
    records below the new log start are gone from it, as DeleteRecords meant)."""
    compare(spec, run_scenario(spec, tmp_path, follower_behind_log_start), tmp_path)


@pytest.mark.parametrize("spec", cases("4.4.0-elr-on", without=("3.9.1-zk-ibp-0.11.0-IV1", "3.9.1-zk-ibp-0.10.2")))
def test_a_cluster_restarted_on_repair_in_place_serves_what_repair_promised(spec: ClusterSpec,
                                                                           tmp_path: Path) -> None:
    """Premise: every node restarts from the copy, which `repair --in-place` fixed first. Every broker starts
    without truncating, the ISR fills, and a consumer reads exactly the records the leader held, in order."""
    (tmp_path / "cluster").mkdir()
    with running_cluster(spec, tmp_path / "cluster") as cluster:
        copy, state = diverge(cluster, tmp_path)
        restored = tmp_path / "restored"
        shutil.copytree(copy, restored, symlinks=True)
        outcome = Outcome(restored, restored, 3, -1, partition_state=state)
        replog_json("repair", *replica_args(restored, outcome), *controller_args(outcome), "--in-place",
                    "--backup", str(tmp_path / "backup"))
        promised = view.replica_batches(spec.version, outcome.replicas(restored))
        after = restart_from(cluster, restored, tmp_path)
    for name, output in after.outputs.items():
        assert view.truncations(output, TOPIC) == [], f"{name} truncated after starting on the repair"
    final = view.replica_batches(spec.version, after.replicas(after.final))
    for name, batches in promised.items():
        assert final[name] == batches, f"{name}: the broker's batches differ from what repair wrote"
    expected = values("A", 0, 10) + values("B", 10, 2)
    assert after.consumed == list(enumerate(expected)), "records a consumer read from the repaired cluster"
