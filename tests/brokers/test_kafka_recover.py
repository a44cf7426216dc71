"""recover against the broker's own startup recovery: partitions a real broker wrote are damaged after a crash (torn
tail, flipped byte, zero-filled region, indexes removed, an index overwritten, a corrupt leader-epoch checkpoint,
a corrupt producer snapshot; none has a `.kafka_cleanshutdown`); the broker starts on them, recovers, and stops
cleanly; `replog recover` of the same damaged copies must keep exactly the batches the broker kept, the same
leader-epoch entries and the same producer state (batches and snapshots read back with the real kafka-dump-log,
the epoch checkpoint as the broker wrote it)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.brokers import broker_view as view
from tests.brokers.kafka_lab import ClusterSpec, running_cluster
from tests.brokers.scenarios import failed_log_dir, start_on, startup_recovery
from tests.toolkit.test_cli import run_replog

pytestmark = pytest.mark.brokers

SPECS = [
    pytest.param(ClusterSpec("3.9.1", "kraft"), id="3.9.1-kraft", marks=pytest.mark.brokers_full),
    pytest.param(ClusterSpec("4.0.2", "kraft"), id="4.0.2-kraft"),
    pytest.param(ClusterSpec("4.4.0", "kraft"), id="4.4.0-kraft", marks=pytest.mark.brokers_full),
]


@pytest.mark.parametrize("spec", SPECS)
def test_recover_keeps_what_the_broker_keeps(spec: ClusterSpec, tmp_path: Path) -> None:
    (tmp_path / "cluster").mkdir()
    with running_cluster(spec, tmp_path / "cluster") as cluster:
        outcome = startup_recovery(cluster, tmp_path)
    for topic in outcome.topics:
        out = tmp_path / "recovered" / topic
        done = run_replog("recover", str(outcome.damaged / f"{topic}-0"), "--out", str(out), "--format", "json")
        assert done.returncode in (0, 1), f"{topic}: replog recover exited {done.returncode}:\n{done.stderr}"
        report = json.loads(done.stdout)
        dumped = view.replica_batches(spec.version, {"broker": outcome.final / f"{topic}-0",
                                                     "replog": out / f"{topic}-0"})
        assert dumped["broker"], f"{topic}: the broker kept nothing: the scenario tests nothing"
        assert dumped["replog"] == dumped["broker"], f"{topic}: recovered batches differ from the broker's"
        assert report["truncated_to"] == view.log_end(dumped["broker"]) or report["truncated_to"] is None, \
            f"{topic}: truncated_to"
        check_epochs(topic, outcome.final / f"{topic}-0", out / f"{topic}-0")
        check_producer_state(spec.version, topic, outcome.final / f"{topic}-0", out / f"{topic}-0")


def epoch_entries(partition: Path) -> list[tuple[int, int]]:
    lines = (partition / "leader-epoch-checkpoint").read_text().splitlines()
    return [(int(epoch), int(offset)) for epoch, offset in (line.split() for line in lines[2:])]


def check_epochs(topic: str, broker: Path, ours: Path) -> None:
    """The broker's epoch cache after it recovered and led again: the entries recovery rebuilt, then one for the
    epoch it was elected in at restart (`Partition.makeLeader` assigns its start offset); replog's are the first."""
    theirs, mine = epoch_entries(broker), epoch_entries(ours)
    assert mine, f"{topic}: replog wrote no leader-epoch entry"
    assert theirs[:len(mine)] == mine, f"{topic}: leader-epoch entries (broker {theirs}, replog {mine})"
    assert len(theirs) == len(mine) + 1, f"{topic}: the broker's entries beyond the restart's own: {theirs}"


def check_producer_state(version: str, topic: str, broker: Path, ours: Path) -> None:
    """The idempotent producer's state: the broker's snapshot at its clean stop against the one replog wrote at the
    log end, both printed by kafka-dump-log."""
    theirs, mine = sorted(broker.glob("*.snapshot"))[-1], sorted(ours.glob("*.snapshot"))[-1]
    assert mine.name == theirs.name, f"{topic}: the last snapshot's name (the log end offset)"
    dumped = view.dump_entries(version, [theirs, mine])
    assert dumped[theirs], f"{topic}: the broker's snapshot holds no producer: the check tests nothing"
    assert dumped[mine] == dumped[theirs], f"{topic}: producer entries as kafka-dump-log prints them"


@pytest.mark.parametrize("spec", [
    pytest.param(ClusterSpec("3.9.1", "kraft"), id="3.9.1-kraft", marks=pytest.mark.brokers_full),
    pytest.param(ClusterSpec("4.4.0", "kraft"), id="4.4.0-kraft"),
])
def test_a_malformed_epoch_checkpoint_fails_the_log_dir_and_recover_makes_it_start(spec: ClusterSpec,
                                                                                   tmp_path: Path) -> None:
    """The broker takes the whole log dir offline on a malformed leader-epoch checkpoint and shuts down; doctor
    says so, and a broker started on `replog recover`'s output of the same partition starts, leads and serves
    every record the producer wrote."""
    (tmp_path / "cluster").mkdir()
    topic = "r-bad-epoch-checkpoint"
    with running_cluster(spec, tmp_path / "cluster") as cluster:
        damaged, output = failed_log_dir(cluster, tmp_path)
        assert "Malformed line in checkpoint file" in output, "the broker's reason for failing the log dir"
        partition = damaged / f"{topic}-0"
        doctor = run_replog("doctor", str(partition), "--format", "json")
        assert doctor.returncode == 1, f"doctor exited {doctor.returncode}:\n{doctor.stderr}"
        found = [f for f in json.loads(doctor.stdout)["findings"] if f["code"] == "KAFKA_CHECKPOINT_INVALID"]
        assert found, "doctor did not flag the malformed leader-epoch checkpoint"
        assert "fails the whole log dir" in found[0]["message"], "doctor's finding names the broker's reaction"
        done = run_replog("recover", str(partition), "--out", str(tmp_path / "recovered"), "--format", "json")
        assert done.returncode in (0, 1), f"replog recover exited {done.returncode}:\n{done.stderr}"
        consumed = start_on(cluster, tmp_path / "recovered" / f"{topic}-0", topic)
    expected = [f"{topic}-{i:05d}".encode() * 60 for i in range(2400)]
    assert consumed == list(enumerate(expected)), "records a consumer read from the broker started on recover's output"
