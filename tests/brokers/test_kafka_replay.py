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

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.brokers import broker_view as view
from tests.brokers.kafka_lab import ClusterSpec, running_cluster
from tests.brokers.scenarios import TOPIC, Outcome, diverge, restart_from, unclean_election, values
from tests.toolkit.test_cli import run_replog

pytestmark = pytest.mark.brokers
FULL = pytest.mark.brokers_full

SPECS = [
    pytest.param(ClusterSpec("3.9.1", "kraft"), id="3.9.1-kraft"),
    pytest.param(ClusterSpec("3.9.1", "zk"), id="3.9.1-zk", marks=FULL),
    pytest.param(ClusterSpec("4.0.2", "kraft"), id="4.0.2-kraft", marks=FULL),
    pytest.param(ClusterSpec("4.4.0", "kraft", elr=True), id="4.4.0-elr-on"),
    pytest.param(ClusterSpec("4.4.0", "kraft", elr=False), id="4.4.0-elr-off", marks=FULL),
]


def replog_json(*args: str) -> dict[str, Any]:
    done = run_replog(*args, "--format", "json")
    assert done.returncode in (0, 1), f"replog {' '.join(args)} exited {done.returncode}:\n{done.stderr}"
    return json.loads(done.stdout)


def controller_args(outcome: Outcome) -> list[str]:
    if outcome.metadata is not None:
        return ["--metadata", str(outcome.metadata)]
    if outcome.partition_state is not None:
        return ["--partition-state", str(outcome.partition_state)]
    return []


def replica_args(root: Path, outcome: Outcome) -> list[str]:
    return [f"{name}={path}" for name, path in outcome.replicas(root).items()]


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


@pytest.mark.parametrize("spec", SPECS)
def test_unclean_election_then_the_old_leader_returns(spec: ClusterSpec, tmp_path: Path) -> None:
    """Scenario U: leader b2 alone takes acks=1 writes and crashes; b3 is elected uncleanly and takes new writes;
    b2 comes back and truncates to where its epoch ends on b3 (KIP-101/KIP-279), or to its high watermark."""
    (tmp_path / "cluster").mkdir()
    with running_cluster(spec, tmp_path / "cluster") as cluster:
        outcome = unclean_election(cluster, tmp_path)
    predicted = replog_json("replay", *replica_args(outcome.copy, outcome), *controller_args(outcome))
    assert predicted["leader"] == f"b{outcome.leader}", "leader"
    copy = view.replica_batches(spec.version, outcome.replicas(outcome.copy))
    repaired = tmp_path / "repaired"
    replog_json("repair", *replica_args(outcome.copy, outcome), *controller_args(outcome), "--out", str(repaired))
    final = view.replica_batches(spec.version, outcome.replicas(outcome.final))
    written = view.replica_batches(spec.version, outcome.replicas(repaired))
    for replica in predicted["replicas"]:
        name = replica["name"]
        check_replica(spec.version, replica, outcome, copy[name], final[name])
        assert written[name] == final[name], f"{name}: repaired batches (kafka-dump-log) differ from the broker's"
    assert any(r["lost"]["records"] for r in predicted["replicas"]), "the scenario lost nothing: it tests nothing"


REPAIR_SPECS = [
    pytest.param(ClusterSpec("3.9.1", "kraft"), id="3.9.1-kraft", marks=FULL),
    pytest.param(ClusterSpec("4.4.0", "kraft"), id="4.4.0-kraft"),
]


@pytest.mark.parametrize("spec", REPAIR_SPECS)
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
