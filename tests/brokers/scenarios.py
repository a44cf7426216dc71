"""Scenarios run on a real cluster: each brings a partition into a state worth predicting, copies every node's data
with the cluster frozen (the copy replog reads), lets the brokers go on and converge, stops them cleanly, and
returns both the copy and where the brokers' files ended, for the tests to compare.

Premise of every scenario here: the copy is taken while the brokers that run are frozen; afterwards the dead
brokers restart from their own disks (the copy's state) and the running ones go on. replog replays with every
replica restarting from the copy; for the scenarios below both premises give the same truncations (a running
follower of an unchanged leader has nothing to truncate), which the tests state where they compare.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.brokers.broker_view import checkpoint
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
    consumed: list[tuple[int, bytes]] = field(default_factory=list)   # (offset, value) a consumer read at the end
    running: list[str] = field(default_factory=list)   # brokers that kept running after the copy (the premise)
    brokers: tuple[int, ...] = BROKER_IDS        # the replicas replog is given (a broker gone for good is left out)
    high_watermark: int | None = None            # the leader's high watermark at the end (admin API), when read

    def partition_dir(self, root: Path, broker: int) -> Path:
        return root / f"b{broker}" / f"{TOPIC}-0"

    def replicas(self, root: Path) -> dict[str, Path]:
        return {f"b{b}": self.partition_dir(root, b) for b in self.brokers}

    @property
    def metadata(self) -> Path | None:
        path = self.copy / "c1" / "__cluster_metadata-0"
        return path if path.is_dir() else None


def values(prefix: str, first: int, count: int) -> list[bytes]:
    return [f"{prefix}-{i:06d}".encode() for i in range(first, first + count)]


def wait_isr(cluster: Cluster, isr: list[int], timeout: float = 90) -> None:
    wait_until(lambda: sorted(cluster.partition(TOPIC).get("isr", [])) == sorted(isr), timeout,
               f"ISR of {TOPIC}-0 never became {isr} (now {cluster.partition(TOPIC)})")


def wait_leader(cluster: Cluster, leader: int, timeout: float = 90, topic: str = TOPIC) -> None:
    wait_until(lambda: cluster.partition(topic).get("leader") == leader, timeout,
               f"leader of {topic}-0 never became {leader} (now {cluster.partition(topic)})")


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


def converge_and_stop(cluster: Cluster, work: Path, marks: dict[str, int], isr: list[int] | None = None) -> Outcome:
    """Wait for a full ISR (or `isr`), note the leader, read the partition as a consumer, stop every node cleanly,
    copy the final state."""
    wait_isr(cluster, isr or ASSIGNMENT, timeout=120)
    state = cluster.partition(TOPIC)
    consumed = cluster.consume(TOPIC)
    cluster.stop_all()
    final = cluster.copy(work / "final")
    outputs = {f"b{n}": node.output()[marks.get(f"b{n}", 0):] for n, node in cluster.brokers.items()}
    return Outcome(work / "copy", final, int(state["leader"]), int(state["leader_epoch"]), outputs,
                   consumed=consumed)


def crash_and_elect(cluster: Cluster, leader: int, survivors: tuple[int, ...]) -> None:
    """The leader crashes; the frozen survivors come back; once the partition is leaderless the operator elects
    the first of them uncleanly; every survivor is back in the ISR before this returns (a next freeze must see
    the ISR shrink from there, not from the election's one-member ISR)."""
    cluster.kill(leader)
    cluster.resume(*survivors)
    wait_until(lambda: cluster.partition(TOPIC).get("leader") == -1, 90, "the partition never went leaderless")
    cluster.elect_unclean(TOPIC)
    wait_leader(cluster, survivors[0])
    wait_isr(cluster, list(survivors))


def diverge(cluster: Cluster, work: Path, new_records: int = 2) -> tuple[Path, Path | None]:
    """Scenario U's first half (docs/reference/real-brokers.md §2.5): the leader b2 takes acks=1 writes alone and
    crashes; b3 is elected uncleanly and takes new writes; the copy is taken now, b2 still down, the rest frozen."""
    cluster.create_topic(TOPIC, ASSIGNMENT)
    cluster.produce(TOPIC, values("A", 0, 10), acks="all")
    cluster.pause(3, 4)
    wait_isr(cluster, [2])
    cluster.produce(TOPIC, values("A", 10, 5), acks=1)
    crash_and_elect(cluster, 2, (3, 4))
    if new_records:
        cluster.produce(TOPIC, values("B", 10, new_records), acks="all")
    return copy_frozen(cluster, work)


def output_marks(cluster: Cluster) -> dict[str, int]:
    return {f"b{n}": len(node.output()) for n, node in cluster.brokers.items()}


def unclean_election(cluster: Cluster, work: Path, new_records: int = 2) -> Outcome:
    """Scenario U: after `diverge`, b2 returns on its own disk while b3 and b4 keep running; it must truncate its
    tail to where its epoch ends on b3 (KIP-101/KIP-279), or to its high watermark before KIP-101."""
    copy, state = diverge(cluster, work, new_records)
    return old_leader_returns(cluster, work, copy, state)


def old_leader_returns(cluster: Cluster, work: Path, copy: Path, state: Path | None) -> Outcome:
    """After the copy: b2 restarts from its own disk while b3 and b4 keep running, and the brokers converge."""
    marks = output_marks(cluster)
    cluster.restart(2)
    outcome = converge_and_stop(cluster, work, marks)
    outcome.copy, outcome.partition_state, outcome.running = copy, state, ["b3", "b4"]
    return outcome


def two_unclean_elections(cluster: Cluster, work: Path) -> Outcome:
    """Several leader changes in a row (KIP-279): b2 leads and takes A-10..14 alone and crashes; b3 is elected
    uncleanly, takes B-10..12 alone and crashes; b4 is elected uncleanly and takes C-10..11. The copy is taken
    then; b2 and b3 return, each with a tail of its own epoch, and must both truncate to 10."""
    cluster.create_topic(TOPIC, ASSIGNMENT)
    cluster.produce(TOPIC, values("A", 0, 10), acks="all")
    for leader, frozen, prefix, count in ((2, (3, 4), "A", 5), (3, (4,), "B", 3)):
        cluster.pause(*frozen)
        wait_isr(cluster, [leader])
        cluster.produce(TOPIC, values(prefix, 10, count), acks=1)
        crash_and_elect(cluster, leader, frozen)
    cluster.produce(TOPIC, values("C", 10, 2), acks=1)
    copy, state = copy_frozen(cluster, work)
    marks = output_marks(cluster)
    cluster.restart(2, 3)
    outcome = converge_and_stop(cluster, work, marks)
    outcome.copy, outcome.partition_state, outcome.running = copy, state, ["b4"]
    return outcome


def every_replica_crashes(cluster: Cluster, work: Path) -> Outcome:
    """The leader b2 alone takes acks=1 writes, then every replica crashes at once; the copy is taken with all of
    them down; all restart together and the controller picks the leader from its record (the last ISR member,
    or the ELR under KIP-966)."""
    cluster.create_topic(TOPIC, ASSIGNMENT)
    cluster.produce(TOPIC, values("A", 0, 10), acks="all")
    cluster.pause(3, 4)
    wait_isr(cluster, [2])
    cluster.produce(TOPIC, values("A", 10, 5), acks=1)
    cluster.kill(2, 3, 4)
    copy, state = copy_frozen(cluster, work)
    marks = output_marks(cluster)
    cluster.restart(*BROKER_IDS)
    outcome = converge_and_stop(cluster, work, marks)
    outcome.copy, outcome.partition_state = copy, state
    return outcome


def follower_behind_log_start(cluster: Cluster, work: Path) -> Outcome:
    """A follower (b4) frozen while DeleteRecords moves the log start past its log end, into the middle of a
    batch; it resumes (it kept running: no restart, same leader) and must start again from the leader's log
    start, then from the base of the batch holding it (`Partition.doAppendRecordsToFollowerOrFutureReplica`)."""
    cluster.create_topic(TOPIC, ASSIGNMENT)
    for first in (0, 5):
        cluster.produce_batch(TOPIC, values("A", first, 5))
    cluster.pause(4)
    wait_isr(cluster, [2, 3])
    for first in range(10, 30, 5):
        cluster.produce_batch(TOPIC, values("A", first, 5))
    cluster.delete_records(TOPIC, 22)
    # Premise: checkpoints flushed. The log start reaches its checkpoint every second here (60 s by default), the
    # first time 30 s after the broker started (LogManager's InitialTaskDelayMs): wait for it on the leader and b3.
    for n in (2, 3):
        wait_until(lambda n=n: checkpoint(cluster.brokers[n].log_dir, "log-start-offset-checkpoint", TOPIC) == 22, 60,
                   f"b{n}'s log start offset never reached its checkpoint")
    copy, state = copy_frozen(cluster, work)
    marks = output_marks(cluster)
    cluster.resume(4)
    outcome = converge_and_stop(cluster, work, marks)
    outcome.copy, outcome.partition_state, outcome.running = copy, state, ["b2", "b3", "b4"]
    return outcome


def restart_from(cluster: Cluster, repaired: Path, work: Path) -> Outcome:
    """The other premise: the whole cluster stops and every node restarts from `repaired` (a copy that replog
    repaired in place), the controller's metadata included."""
    marks = restart_on(cluster, repaired)
    return converge_and_stop(cluster, work, marks)


def restart_on(cluster: Cluster, repaired: Path) -> dict[str, int]:
    """Every node killed and started again on its dir of `repaired`; where each broker's output stood before."""
    cluster.kill(*BROKER_IDS)
    cluster.control.kill()
    for node in cluster.nodes:
        shutil.rmtree(node.log_dir)
        subprocess.run(["cp", "-a", "--sparse=always", str(repaired / node.name), str(node.log_dir)], check=True)
    marks = output_marks(cluster)
    cluster.start()
    return marks


# ----- startup recovery of damaged partitions

Damage = Callable[[Path], None]


def torn_tail(partition: Path) -> None:
    """The last segment cut in the middle of its last bytes (a crash mid-write, the page cache lost)."""
    log = sorted(partition.glob("*.log"))[-1]
    os.truncate(log, log.stat().st_size - 7)


def flipped_byte(partition: Path) -> None:
    """One byte inverted half-way through the last segment (a media error)."""
    log = sorted(partition.glob("*.log"))[-1]
    with log.open("r+b") as f:
        f.seek(log.stat().st_size // 2)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0xFF]))


def zeroed_region(partition: Path) -> None:
    """300 bytes zero-filled at 60% of the last segment (a lost write, preallocated space)."""
    log = sorted(partition.glob("*.log"))[-1]
    with log.open("r+b") as f:
        f.seek(log.stat().st_size * 3 // 5)
        f.write(bytes(300))


def missing_index(partition: Path) -> None:
    """Every offset and time index removed: the broker rebuilds them while it recovers."""
    for index in [*partition.glob("*.index"), *partition.glob("*.timeindex")]:
        index.unlink()


def corrupt_index(partition: Path) -> None:
    """The first segment's offset index overwritten with 0xFF (a torn index page): entries that point nowhere."""
    index = sorted(partition.glob("*.index"))[0]
    with index.open("r+b") as f:
        f.write(b"\xff" * min(64, index.stat().st_size))


def corrupt_epoch_checkpoint(partition: Path) -> None:
    """The leader-epoch checkpoint's entries replaced by a line that is no entry (a torn rewrite)."""
    (partition / "leader-epoch-checkpoint").write_text("0\n1\nnot an entry\n")


def corrupt_snapshot(partition: Path) -> None:
    """One byte of the newest producer snapshot inverted: its CRC no longer checks."""
    snapshot = sorted(partition.glob("*.snapshot"))[-1]
    with snapshot.open("r+b") as f:
        f.seek(snapshot.stat().st_size - 3)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0xFF]))


DAMAGES: dict[str, Damage] = {"torn-tail": torn_tail, "flipped-byte": flipped_byte, "zeroed": zeroed_region,
                              "no-index": missing_index, "bad-index": corrupt_index, "bad-snapshot": corrupt_snapshot}


@dataclass
class RecoveryOutcome:
    damaged: Path            # b2's log dir, damaged, as replog reads it
    final: Path              # b2's log dir after the broker recovered it and stopped cleanly
    output: str              # what b2 logged while it recovered
    topics: list[str]


def crashed_partitions(cluster: Cluster, topics: list[str]) -> None:
    """Each topic a single replica on broker 2, written by an idempotent producer in batches of several records
    over several segments, then broker 2 crashed (SIGKILL: no `.kafka_cleanshutdown`, so at its next start the
    broker recovers every segment above its recovery point) and the cluster stopped."""
    for topic in topics:
        cluster.create_topic(topic, [2], wait_isr=False)
        producer = cluster.producer(acks="all", enable_idempotence=True, linger_ms=5, batch_size=16384,
                                    max_in_flight_requests_per_connection=5, retries=5)
        try:
            # ~2.4 MB: three segments of the broker's smallest size (1 MiB in 4.x), so rolled segments have
            # producer snapshots and full indexes
            futures = [producer.send(topic, value=f"{topic}-{i:05d}".encode() * 60, partition=0)
                       for i in range(2400)]
            for future in futures:
                future.get(timeout=30)
        finally:
            producer.close(timeout=10)
    cluster.kill(2)
    cluster.stop_all()


def startup_recovery(cluster: Cluster, work: Path, damages: dict[str, Damage] = DAMAGES) -> RecoveryOutcome:
    """One crashed partition per damage (`crashed_partitions`), each damaged; the broker starts on them, recovers,
    leads every partition again and stops cleanly."""
    topics = [f"r-{name}" for name in damages]
    crashed_partitions(cluster, topics)
    for topic, damage in zip(topics, damages.values(), strict=True):
        damage(cluster.brokers[2].log_dir / f"{topic}-0")
    damaged = work / "damaged"
    subprocess.run(["cp", "-a", "--sparse=always", str(cluster.brokers[2].log_dir), str(damaged)], check=True)
    mark = len(cluster.brokers[2].output())
    cluster.start(brokers=(2,))
    for topic in topics:
        wait_leader(cluster, 2, topic=topic)
    cluster.stop_all()
    final = work / "final-b2"
    subprocess.run(["cp", "-a", "--sparse=always", str(cluster.brokers[2].log_dir), str(final)], check=True)
    return RecoveryOutcome(damaged, final, cluster.brokers[2].output()[mark:], topics)


def failed_log_dir(cluster: Cluster, work: Path) -> tuple[Path, str]:
    """A crashed partition whose leader-epoch checkpoint is malformed: the broker fails the whole log dir at load
    (`CheckpointFile` throws 'Malformed line', `LogDirFailureChannel` takes the dir offline) and, its only log dir
    gone, shuts down. Returns a copy of the damaged log dir and what the broker logged."""
    topic = "r-bad-epoch-checkpoint"
    crashed_partitions(cluster, [topic])
    corrupt_epoch_checkpoint(cluster.brokers[2].log_dir / f"{topic}-0")
    damaged = work / "damaged"
    subprocess.run(["cp", "-a", "--sparse=always", str(cluster.brokers[2].log_dir), str(damaged)], check=True)
    cluster.start(brokers=())
    b2 = cluster.brokers[2]
    b2.start()
    b2.wait_for_line(r"Shutdown broker because all log dirs in .* have failed")
    assert b2.proc is not None
    b2.proc.wait(timeout=120)
    return damaged, b2.output_since_start()


def start_on(cluster: Cluster, recovered: Path, topic: str) -> list[tuple[int, bytes]]:
    """Broker 2 started on `recovered` in place of its partition: it must start, lead and serve every record."""
    shutil.rmtree(cluster.brokers[2].log_dir / f"{topic}-0")
    subprocess.run(["cp", "-a", str(recovered), str(cluster.brokers[2].log_dir / f"{topic}-0")], check=True)
    cluster.restart(2)
    wait_leader(cluster, 2, topic=topic)
    return cluster.consume(topic)


# ----- producer state after committed transactions

JAVA = Path(__file__).with_name("java")


def committed_transactions(cluster: Cluster, work: Path, transactions: int = 3, records: int = 20,
                           aborted: int = 1) -> Path:
    """A transactional producer (Kafka's own Java client) runs `transactions` transactions to a topic on b2
    alone, transaction number `aborted` aborted (the broker indexes it in the segment's `.txnindex`), the others
    committed; the cluster stops cleanly, so b2 writes its producer snapshot; a copy of b2's partition comes back."""
    cluster.create_topic(TOPIC, [2])
    done = subprocess.run(["java", *TOOL_JVM, *cluster.log4j, "-cp", cluster.cp, str(JAVA / "TxnProducer.java"),
                           cluster.bootstrap, TOPIC, "lab-txn", str(transactions), str(records), str(aborted)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"the transactional producer failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
    cluster.stop_all()
    copy = work / "committed" / f"{TOPIC}-0"
    copy.parent.mkdir()
    subprocess.run(["cp", "-a", "--sparse=always", str(cluster.brokers[2].log_dir / f"{TOPIC}-0"), str(copy)],
                   check=True)
    return copy
