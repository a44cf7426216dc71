"""Scenarios run on a real cluster: each brings a partition into a state worth predicting, copies every node's data
with the cluster frozen (the copy replog reads), lets the brokers go on and converge, stops them cleanly, and
returns both the copy and where the brokers' files ended, for the tests to compare.

Premise of every scenario here: the copy is taken while the brokers that run are frozen; afterwards the dead
brokers restart from their own disks (the copy's state) and the running ones go on. replog replays with every
replica restarting from the copy; for the scenarios below both premises give the same truncations (a running
follower of an unchanged leader has nothing to truncate), which the tests state where they compare.
"""
from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from tests.brokers.kafka_lab import BROKER_IDS, TOOL_JVM, Cluster, wait_until

TOPIC = "t"
ASSIGNMENT = [2, 3, 4]


@dataclass
class Outcome:
    """A scenario's copy (what replog reads) and the brokers' end state (read with their own tools later)."""
    copy: Path                                   # node name -> its data dir, under here
    final: Path                                  # the same after the brokers converged and stopped cleanly
    leader: int                                  # the leader the cluster settled on (admin API)
    leader_epoch: int
    outputs: dict[str, str] = field(default_factory=dict)   # broker name -> what it logged after the copy
    partition_state: Path | None = None          # ZooKeeper mode: the partition state znode, as JSON

    def partition_dir(self, root: Path, broker: int) -> Path:
        return root / f"b{broker}" / f"{TOPIC}-0"

    def replicas(self, root: Path) -> dict[str, Path]:
        return {f"b{b}": self.partition_dir(root, b) for b in BROKER_IDS}

    @property
    def metadata(self) -> Path | None:
        path = self.copy / "c1" / "__cluster_metadata-0"
        return path if path.is_dir() else None


def values(prefix: str, first: int, count: int) -> list[bytes]:
    return [f"{prefix}-{i:06d}".encode() for i in range(first, first + count)]


def wait_isr(cluster: Cluster, isr: list[int], timeout: float = 90) -> None:
    wait_until(lambda: sorted(cluster.partition(TOPIC).get("isr", [])) == sorted(isr), timeout,
               f"ISR of {TOPIC}-0 never became {isr} (now {cluster.partition(TOPIC)})")


def wait_leader(cluster: Cluster, leader: int, timeout: float = 90) -> None:
    wait_until(lambda: cluster.partition(TOPIC).get("leader") == leader, timeout,
               f"leader of {TOPIC}-0 never became {leader} (now {cluster.partition(TOPIC)})")


def zk_partition_state(cluster: Cluster, dest: Path) -> Path:
    """The partition's state znode, read with ZooKeeper's own shell (ZooKeeper mode)."""
    cmd = ["java", *TOOL_JVM, *cluster.log4j, "-cp", cluster.cp, "org.apache.zookeeper.ZooKeeperMain",
           "-server", cluster.control.address, "get", f"/brokers/topics/{TOPIC}/partitions/0/state"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    line = next((x for x in done.stdout.splitlines() if x.startswith("{")), None)
    assert line, f"no partition state in ZooKeeper:\n{done.stdout}{done.stderr}"
    dest.write_text(line + "\n")
    return dest


def copy_frozen(cluster: Cluster, work: Path) -> tuple[Path, Path | None]:
    state = zk_partition_state(cluster, work / "partition-state.json") if cluster.spec.mode == "zk" else None
    with cluster.frozen():
        copy = cluster.copy(work / "copy")
    return copy, state


def converge_and_stop(cluster: Cluster, work: Path, marks: dict[str, int]) -> Outcome:
    """Wait for a full ISR, note the leader, stop every node cleanly, copy the final state."""
    wait_isr(cluster, ASSIGNMENT, timeout=120)
    state = cluster.partition(TOPIC)
    cluster.stop_all()
    final = cluster.copy(work / "final")
    outputs = {f"b{n}": node.output()[marks.get(f"b{n}", 0):] for n, node in cluster.brokers.items()}
    return Outcome(work / "copy", final, int(state["leader"]), int(state["leader_epoch"]), outputs)


def unclean_election(cluster: Cluster, work: Path, new_records: int = 2) -> Outcome:
    """Scenario U (real-brokers.md §2.5): the leader b2 takes acks=1 writes alone and crashes; b3 is elected
    uncleanly and takes new writes; the copy is taken now; then b2 returns and must truncate its tail."""
    cluster.create_topic(TOPIC, ASSIGNMENT)
    cluster.produce(TOPIC, values("A", 0, 10), acks="all")
    cluster.pause(3, 4)
    wait_isr(cluster, [2])
    cluster.produce(TOPIC, values("A", 10, 5), acks=1)
    cluster.kill(2)
    cluster.resume(3, 4)
    wait_until(lambda: cluster.partition(TOPIC).get("leader") == -1, 90, "the partition never went leaderless")
    cluster.elect_unclean(TOPIC)
    wait_leader(cluster, 3)
    wait_isr(cluster, [3, 4])
    if new_records:
        cluster.produce(TOPIC, values("B", 10, new_records), acks="all")
    copy, state = copy_frozen(cluster, work)
    marks = {name: len(node.output()) for name, node in ((f"b{n}", cluster.brokers[n]) for n in BROKER_IDS)}
    cluster.restart(2)
    outcome = converge_and_stop(cluster, work, marks)
    outcome.copy, outcome.partition_state = copy, state
    return outcome
