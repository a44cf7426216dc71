"""Scenarios around min.insync.replicas and eligible leader replicas (KIP-966) on a real cluster: the high watermark
that stops while the ISR is below min.insync.replicas (brokers 3.7+), a clean election from the ELR after the leader
dies, and an ELR member that shut down uncleanly and so leaves the ELR as it registers again (4.x, ELR on).

Each copies every node's data with the live nodes frozen (the copy replog reads), lets the brokers go on and
converge, stops them cleanly and returns both, as `scenarios.py` does. Each states its premise: which brokers keep
running after the copy and which restart from their own disks (the copy's state); checkpoints are the brokers' own
(the high watermark is checkpointed every second in the lab).
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.brokers import broker_view as view
from tests.brokers.broker_view import checkpoint
from tests.brokers.kafka_lab import Cluster, wait_until
from tests.brokers.scenarios import (
    ASSIGNMENT,
    TOPIC,
    Outcome,
    converge_and_stop,
    copy_frozen,
    output_marks,
    values,
    wait_isr,
    wait_leader,
)

ACKED, UNCOMMITTED = 10, 5   # records written with acks=all first, then with acks=1 to the leader alone
SESSION_TIMEOUT = 6.0        # the lab controller's broker.session.timeout.ms, in seconds


def fenced(cluster: Cluster, broker: int, elr_size: int | None = None) -> None:
    """Wait until the controller has fenced `broker` for its expired session in its metadata log, where a copy sees
    it. The controller logs "Fencing broker N at epoch E because its session has timed out" as it builds the records
    (`ReplicationControlManager.maybeFenceOneStaleBroker` -> `handleBrokerFenced`: the partition changes taking N
    out of every ISR, then N's BROKER_REGISTRATION_CHANGE_RECORD fenced=1), but the raft thread appends them to
    `__cluster_metadata-0` only later (`KafkaRaftClient.maybeAppendBatches`, after `controller.quorum.append.linger.ms`,
    25 ms by default; about 200 ms later in the lab under load): a copy taken right after the line can still show N
    leading. So the line, then the controller's log read with the real kafka-dump-log until N is fenced there and,
    with `elr_size`, the partition change is there too (`leaderless_in_elr`)."""
    cluster.control.wait_for_line(rf"Fencing broker {broker} at epoch \d+ because its session has timed out", 90)
    seen: list[tuple[bool, dict[str, Any] | None]] = []

    def in_the_log() -> bool:
        records = view.metadata_records(cluster.spec.version, cluster.control.log_dir)
        seen.append((view.broker_fenced(records, broker), view.metadata_partition(records, TOPIC)))
        is_fenced, partition = seen[-1]
        return is_fenced and (elr_size is None or leaderless_in_elr(partition, broker, elr_size))
    try:
        wait_until(in_the_log, 60, f"c1's metadata log: b{broker} fenced (ELR of {elr_size})", every=1.0)
    except AssertionError as timed_out:
        raise AssertionError(f"{timed_out}; last read (fenced, partition): {seen[-1:]}") from None


def leaderless_in_elr(partition: dict[str, Any] | None, broker: int, elr_size: int) -> bool:
    """No leader, an empty ISR and `broker` among `elr_size` eligible leader replicas: fencing the last ISR member
    with ELR on (KIP-966, `PartitionChangeBuilder`) moves it into the ELR. With min ISR 2 of 3 replicas the ELR then
    holds two: the broker and the follower that left the ISR second, b3 or b4, whichever of the two frozen followers
    the controller fenced last (their last heartbeats decide)."""
    return (partition is not None and partition["leader"] == -1 and partition["isr"] == []
            and broker in partition["elr"] and len(partition["elr"]) == elr_size)


def settled(cluster: Cluster, isr: list[int] = ASSIGNMENT) -> None:
    """The ISR is `isr` and every member's checkpointed high watermark is the leader's (ListOffsets latest): a
    follower that returns with nothing to fetch learns the high watermark only from a later fetch response, so a
    clean stop right after it rejoins the ISR can leave its old one on disk."""
    wait_isr(cluster, isr, timeout=120)
    high_watermark = cluster.log_end(TOPIC)
    for n in isr:
        log_dir = cluster.brokers[n].log_dir
        wait_until(lambda d=log_dir: checkpoint(d, "replication-offset-checkpoint", TOPIC) == high_watermark, 60,
                   f"b{n}'s checkpointed high watermark never reached {high_watermark}")


def leader_alone_under_min_isr(cluster: Cluster, min_isr: int) -> None:
    """The topic (min.insync.replicas `min_isr`) takes ACKED records from every replica; b3 and b4 freeze, the ISR
    shrinks to the leader b2 alone, which takes UNCOMMITTED more with acks=1 (acks=1 ignores min.insync.replicas)."""
    cluster.create_topic(TOPIC, ASSIGNMENT, {"min.insync.replicas": str(min_isr)})
    cluster.produce(TOPIC, values("A", 0, ACKED), acks="all")
    cluster.pause(3, 4)
    wait_isr(cluster, [2])
    cluster.produce(TOPIC, values("A", ACKED, UNCOMMITTED), acks=1)


def hw_stops_under_min_isr(cluster: Cluster, work: Path) -> Outcome:
    """The high watermark stops while the ISR is smaller than min.insync.replicas (3 = the replication factor).

    After `leader_alone_under_min_isr`, b4 crashes for good (its replica is not given to replog: it never returns);
    the copy is taken (b2 and the controller frozen, b3 still frozen). Premise: b2 and b3 keep running, b3 resumes
    and catches up, the ISR becomes [2, 3], still below 3, so the leader's high watermark stays where the shrink
    left it (`Partition.maybeIncrementLeaderHW`, 3.7+); the cluster then stops cleanly."""
    leader_alone_under_min_isr(cluster, min_isr=3)
    cluster.kill(4)
    copy, state = copy_frozen(cluster, work)
    marks = output_marks(cluster)
    cluster.resume(3)
    settled(cluster, [2, 3])
    high_watermark = cluster.log_end(TOPIC)   # ListOffsets latest, read_uncommitted: the leader's high watermark
    # no consumer read at the end (converge_and_stop's): kafka-python's metadata refresh fails on 4.x while the
    # dead b4 is still registered; the batches are read from the files with kafka-dump-log instead
    current = cluster.partition(TOPIC)
    cluster.stop_all()
    outputs = {f"b{n}": node.output()[marks.get(f"b{n}", 0):] for n, node in cluster.brokers.items()}
    outcome = Outcome(copy, cluster.copy(work / "final"), int(current["leader"]), int(current["leader_epoch"]),
                      outputs, partition_state=state, running=["b2", "b3"])
    outcome.brokers, outcome.high_watermark = (2, 3), high_watermark
    return outcome


def elr_member_elected(cluster: Cluster, work: Path) -> Outcome:
    """ELR on (4.x): the leader dies and an ELR member is elected cleanly.

    After `leader_alone_under_min_isr` (min.insync.replicas 2): the controller fences the frozen b3 and b4 one at a
    time, so the first fenced leaves an ISR that still meets min ISR and the other goes from the ISR into the ELR
    (usually b3 first, ELR [4]; their last heartbeats decide: [3] was seen too). b2 crashes (SIGKILL) and is fenced:
    ISR empty, ELR [2, 4] or [2, 3], no leader. The copy is taken once the controller's metadata log holds that
    (`fenced`; its log line alone comes too early). Premise: b3 and b4 keep running (they resume, are unfenced,
    and the controller elects from the ELR); b2 restarts from its own disk, without a clean-shutdown marker, and
    truncates its acks=1 tail."""
    leader_alone_under_min_isr(cluster, min_isr=2)
    cluster.kill(2)
    fenced(cluster, 2, elr_size=2)
    copy, state = copy_frozen(cluster, work)
    marks = output_marks(cluster)
    cluster.resume(3, 4)
    wait_until(lambda: cluster.partition(TOPIC).get("leader", -1) in (3, 4), 90,
               f"no ELR member became leader (now {cluster.partition(TOPIC)})")
    cluster.restart(2)
    settled(cluster)
    outcome = converge_and_stop(cluster, work, marks)
    outcome.copy, outcome.partition_state, outcome.running = copy, state, ["b3", "b4"]
    return outcome


def unclean_shutdown_leaves_elr(cluster: Cluster, work: Path) -> Outcome:
    """ELR on (4.x): a broker that shut down uncleanly leaves the ELR when it registers again, so it is not elected.

    min.insync.replicas 2. b3 stops cleanly (the ISR [2, 4] still meets min ISR: no ELR), then b4 stops cleanly (ISR
    [2], ELR [4]); b2 alone takes acks=1 records and crashes (SIGKILL, no `.kafka_cleanshutdown`): fenced, ISR empty,
    ELR [2, 4], no leader. The copy is taken with every broker down. Premise: all three restart from their own disks.
    b2 registers with no previous broker epoch, an unclean shutdown: the controller takes it out of the ELR
    (`ReplicationControlManager.handleBrokerShutdown`), so b4, which shut down cleanly, is elected; b2 truncates."""
    cluster.create_topic(TOPIC, ASSIGNMENT, {"min.insync.replicas": "2"})
    cluster.produce(TOPIC, values("A", 0, ACKED), acks="all")
    for broker, isr in ((3, [2, 4]), (4, [2])):
        cluster.brokers[broker].stop()
        cluster.reset_admin()
        wait_isr(cluster, isr)
    cluster.produce(TOPIC, values("A", ACKED, UNCOMMITTED), acks=1)
    cluster.kill(2)
    fenced(cluster, 2, elr_size=2)
    copy, state = copy_frozen(cluster, work)
    marks = output_marks(cluster)
    cluster.restart(2, 3, 4)
    wait_leader(cluster, 4)
    settled(cluster)
    outcome = converge_and_stop(cluster, work, marks)
    outcome.copy, outcome.partition_state = copy, state
    return outcome


def last_known_leader(cluster: Cluster, work: Path) -> Outcome:
    """ELR on (4.x): every replica crashes; as they register again after their unclean shutdowns the ELR empties, and
    the controller elects the last known leader (`lastKnownElr`), uncleanly.

    After `leader_alone_under_min_isr` (min.insync.replicas 2; ELR [4] or [3], see `elr_member_elected`), the frozen
    b3 and b4 crash (the lab resumes a frozen broker for an instant before SIGKILL: a heartbeat may unfence it, so
    their sessions are left to time out again), then b2 crashes and is fenced: ISR empty, ELR [2, 4] or [2, 3], last
    known leader 2, no leader. The copy is taken with every broker down. Premise: all three restart from their own
    disks; none has a clean-shutdown marker."""
    leader_alone_under_min_isr(cluster, min_isr=2)
    cluster.kill(3, 4)
    time.sleep(SESSION_TIMEOUT + 3)
    cluster.kill(2)
    fenced(cluster, 2, elr_size=2)
    copy, state = copy_frozen(cluster, work)
    marks = output_marks(cluster)
    marks["c1"] = len(cluster.control.output())
    cluster.restart(2, 3, 4)
    wait_leader(cluster, 2)
    settled(cluster)
    outcome = converge_and_stop(cluster, work, marks)
    outcome.outputs["c1"] = cluster.control.output()[marks["c1"]:]
    outcome.copy, outcome.partition_state = copy, state
    return outcome
