"""Which leader loses least, on a real cluster: three replicas at three log ends, one frozen copy, then the cluster
run from that copy once per candidate leader, so the test can hold what each choice really lost against
`replog replay --what-if` of the copy.

The state (topic t on [2, 3, 4], __consumer_offsets on b2): A-0..9 everywhere; b4 frozen out of the ISR, A-10..14
on b2 and b3; b3 frozen out too, an idempotent producer writes P-15..19 to b2 alone (acks=all, b2 alone in the
ISR acknowledges them); two groups read from b2 and commit (one at 18 with the leader epoch of its last record,
one at 12 without). b2's high watermark (20) is waited for in its checkpoint; then every broker crashes (SIGKILL),
and the copy is taken with the controller (or ZooKeeper) frozen once it has fenced them; in ZooKeeper mode the
partition state znode is read first with ZooKeeper's own shell.

Premise of each run (stated, and what replay assumes by default): every node restarts from the copy. Only the
controller and the candidate start first; the candidate is made leader as replog's recommended command for that
choice says (the controller's own choice: nothing but starting it; any other: `kafka-leader-election.sh
--election-type unclean`, the lab's `elect_unclean`); then the other brokers start, the ISR fills, the leader takes
one new record, each group's Java consumer starts again from its commit (where it resumes, whether it detects a
truncation or resets), a consumer reads the partition, the committed offsets are read with the admin API, and
every broker stops cleanly.
"""
from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.brokers.broker_view import checkpoint
from tests.brokers.kafka_lab import BROKER_IDS, Cluster, wait_until
from tests.brokers.scenarios import ASSIGNMENT, TOPIC, copy_frozen, values, wait_isr, wait_leader
from tests.brokers.scenarios_clients import (
    Committed,
    GroupPlan,
    Resumed,
    close_producer,
    idempotent_producer,
    place_offsets_topic,
    read_and_commit,
    resume_java,
    send_each,
)

GROUPS = (GroupPlan("g-tail", 18, True), GroupPlan("g-mid", 12, False))
AFTER = b"N-after"     # one record the new leader takes, so that a consumer resuming at its old log end reads one
FENCE_WAIT = 12.0      # seconds: broker.session.timeout.ms (6 s) twice, for the controller to fence the dead brokers


@dataclass
class ThreeEnds:
    """The frozen copy and what the clients did before it."""
    copy: Path
    produced: list[tuple[int, bytes]]            # the idempotent producer's acknowledged writes
    committed: dict[str, Committed]
    offsets_replicas: list[int]
    partition_state: Path | None = None          # ZooKeeper mode: the partition state znode at the copy

    def controller_args(self) -> list[str]:
        """The controller's record replog is given: the KRaft metadata log, or ZooKeeper's partition state."""
        if self.partition_state is not None:
            return ["--partition-state", str(self.partition_state)]
        return ["--metadata", str(self.copy / "c1" / "__cluster_metadata-0")]

    def replicas(self) -> dict[str, Path]:
        return {f"b{b}": self.copy / f"b{b}" / f"{TOPIC}-0" for b in BROKER_IDS}


@dataclass
class Led:
    """One candidate's run from the copy: how it became leader, and the cluster's end state."""
    leader: int
    elected_by_tool: bool
    final: Path
    consumed: list[tuple[int, bytes]]
    resumed: dict[str, Resumed]                               # each group's Java consumer started again
    committed: dict[str, int] = field(default_factory=dict)   # group -> committed offset (admin API, at the end)


def three_log_ends(cluster: Cluster, work: Path) -> ThreeEnds:
    """The state of the module docstring, copied with every broker crashed and the controller frozen."""
    placed = place_offsets_topic(cluster)
    cluster.create_topic(TOPIC, ASSIGNMENT)
    producer = idempotent_producer(cluster)
    try:
        cluster.produce(TOPIC, values("A", 0, 10), acks="all")
        cluster.pause(4)
        wait_isr(cluster, [2, 3])
        cluster.produce(TOPIC, values("A", 10, 5), acks="all")
        cluster.pause(3)
        wait_isr(cluster, [2])
        written = values("P", 15, 5)
        produced = list(zip(send_each(producer, written), written, strict=True))
        committed = {plan.group: read_and_commit(cluster, plan) for plan in GROUPS}
    finally:
        close_producer(producer)
    wait_until(lambda: checkpoint(cluster.brokers[2].log_dir, "replication-offset-checkpoint", TOPIC) == 20, 60,
               "b2's high watermark 20 never reached its checkpoint")
    cluster.kill(*BROKER_IDS)
    time.sleep(FENCE_WAIT)
    copy, state = copy_frozen(cluster, work)
    return ThreeEnds(copy, produced, committed, placed, state)


def tail_beyond_the_isr(cluster: Cluster, work: Path) -> ThreeEnds:
    """The controller's own choice is not the best: A-0..9 everywhere (acks=all); b3 and b4 frozen for a moment, b2
    takes A-10..14 with acks=1 and is killed at once, b3 and b4 resumed (they never fetched them, and stayed in the
    ISR: frozen well under replica.lag.time.max.ms). The controller fences b2 and elects b3, the first assignment
    replica in the ISR; then b3 and b4 crash too and the copy is taken (the controller may move the leadership to
    b4 if it fences b3 first). Waiting lets b3 or b4 lead (the controller's record: ISR, or the last known leader
    with ELR) and loses b2's five records (above every high watermark:
    acknowledged to acks=1 only; a fetch the followers had pending when frozen may still bring them the first of
    them); forcing b2 loses nothing. Premise: every node restarts from the copy."""
    cluster.create_topic(TOPIC, ASSIGNMENT)
    cluster.produce(TOPIC, values("A", 0, 10), acks="all")
    producer = cluster.producer(acks=1)        # made (bootstrap, metadata) before the freeze, which stays short
    try:
        assert producer.partitions_for(TOPIC) == {0}, f"the producer does not see {TOPIC}-0"
        cluster.pause(3, 4)
        for value in values("A", 10, 5):
            producer.send(TOPIC, value=value, key=value[:8], partition=0).get(timeout=30)
        cluster.kill(2)
    finally:
        cluster.resume(3, 4)
        producer._sender.force_close()   # noqa: SLF001 - its leader is dead: nothing left to flush
    wait_leader(cluster, 3)
    cluster.kill(3, 4)
    time.sleep(FENCE_WAIT)
    copy, state = copy_frozen(cluster, work)
    return ThreeEnds(copy, [], {}, [], state)


def restore(cluster: Cluster, copy: Path) -> None:
    """Every node killed and its data dir replaced by the copy's (the premise: all restart from the copy).
    ZooKeeper restarted from the copy holds the dead brokers' sessions again and expires them a session timeout
    later: the brokers count as crashed now, so `Cluster.restart` waits that long before registering them."""
    cluster.kill(*BROKER_IDS)
    cluster.control.kill()
    for node in cluster.nodes:
        shutil.rmtree(node.log_dir, ignore_errors=True)
        subprocess.run(["cp", "-a", "--sparse=always", str(copy / node.name), str(node.log_dir)], check=True)
    for broker in cluster.brokers.values():
        broker.killed_at = time.monotonic()


def lead_from_copy(cluster: Cluster, copy: Path, leader: int, by_tool: bool, work: Path,
                   groups: tuple[GroupPlan, ...] = GROUPS) -> Led:
    """The cluster from the copy with `leader` leading: started alone (the controller's own choice leads by
    itself; otherwise the unclean election tool makes it leader), then the others; the end state."""
    restore(cluster, copy)
    cluster.start(brokers=(leader,))
    if by_tool:
        wait_until(lambda: cluster.partition(TOPIC).get("leader") == -1, 90,
                   f"{TOPIC}-0 is not leaderless with b{leader} alone: {cluster.partition(TOPIC)}")
        cluster.elect_unclean(TOPIC)
    wait_leader(cluster, leader)
    cluster.restart(*(b for b in BROKER_IDS if b != leader))
    wait_isr(cluster, ASSIGNMENT, timeout=120)
    cluster.produce(TOPIC, [AFTER], acks="all")
    resumed = {plan.group: resume_java(cluster, plan.group) for plan in groups}
    consumed = cluster.consume(TOPIC)
    committed = committed_offsets(cluster, groups)
    cluster.stop_all()
    final = work / f"final-b{leader}"
    cluster.copy(final)
    return Led(leader, by_tool, final, consumed, resumed, committed)


def committed_offsets(cluster: Cluster, groups: tuple[GroupPlan, ...]) -> dict[str, int]:
    """Each group's committed offset on t-0, as the group coordinator answers the admin API."""
    from kafka.structs import TopicPartition
    out = {}
    for plan in groups:
        got = cluster.retrying(lambda g=plan.group: cluster.admin.list_group_offsets({g: None}))
        meta = got.get(plan.group, {}).get(TopicPartition(TOPIC, 0))
        if meta is not None:
            out[plan.group] = int(meta.offset)
    return out
