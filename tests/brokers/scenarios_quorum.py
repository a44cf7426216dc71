"""Broker-lab scenarios of the KRaft controller quorum itself: three voters (c1, c5, c6) and one broker (b2).

What the controllers did is read with their own tools and lines: `kafka-metadata-quorum describe --status` /
`--replication` (`MetadataQuorumCommand`), the raft client's log line "Truncated to offset N from Fetch response
from leader L" (`KafkaRaftClient.handleFetchResponse`), and `kafka-dump-log --cluster-metadata-decoder` of the
logs afterwards (`broker_view.dump_lines`).
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.brokers.kafka_lab import Cluster, ClusterSpec, Node, running_cluster, wait_until

METADATA = "__cluster_metadata-0"
LOST_TOPIC = "lost-topic"          # created while the leader is cut off: appended, never committed
LATER_TOPIC = "later-topic"        # created under the new leader: committed
# The isolated leader must stay leader long enough to append the topic's records: it resigns once a majority
# has not fetched for 1.5 x controller.quorum.fetch.timeout.ms (KIP-996 check quorum), so the timeout is raised.
QUORUM_CONFIG = {"controller.quorum.fetch.timeout.ms": "12000", "controller.quorum.election.timeout.ms": "1500"}


def quorum_spec(version: str) -> ClusterSpec:
    """Three voters by static `controller.quorum.voters` (every lab version takes it) and one broker."""
    return ClusterSpec(version, controllers=3, brokers=(2,), controller_config=dict(QUORUM_CONFIG))


@dataclass
class QuorumOutcome:
    copy: Path                                   # the three voters' log dirs, copied with the old leader dead
    old_leader: int
    old_epoch: int
    new_leader: int
    new_epoch: int
    epoch_start: int                             # the new leader's epochStartOffset, from its own log line
    truncated_to: list[int]                      # the old leader's "Truncated to offset N" lines after its restart
    status_before: dict[str, str]                # describe --status just before the copy
    status_after: dict[str, str]                 # and once the old leader caught up
    replication: str                             # describe --replication at the end
    topics: list[str]                            # the topics the cluster has at the end
    final_dirs: dict[int, Path] = field(default_factory=dict)   # each voter's metadata log after a clean stop


def status(cluster: Cluster) -> dict[str, str]:
    """`kafka-metadata-quorum describe --status` as a dict (LeaderId, LeaderEpoch, HighWatermark, ...)."""
    out = cluster.retrying(lambda: cluster.tool("org.apache.kafka.tools.MetadataQuorumCommand", "--bootstrap-server",
                                                cluster.bootstrap, "describe", "--status"), timeout=90)
    return {k.strip(): v.strip() for k, v in (line.split(":", 1) for line in out.splitlines() if ":" in line)}


def replication(cluster: Cluster) -> str:
    return str(cluster.retrying(lambda: cluster.tool("org.apache.kafka.tools.MetadataQuorumCommand",
                                                     "--bootstrap-server", cluster.bootstrap, "describe",
                                                     "--replication"), timeout=90))


ELECTED = r"Completed transition to Leader\(local.*?, epoch=(\d+), epochStartOffset=(\d+)"


def elections(node: Node) -> list[tuple[int, int]]:
    """(epoch, epoch start offset) of each time `node` became leader (raft `QuorumState.transitionTo` logs
    "Completed transition to Leader(localReplicaKey=.., epoch=N, epochStartOffset=S, ...)")."""
    return [(int(e), int(s)) for e, s in re.findall(ELECTED, node.output())]


def _elected(node: Node, epoch: int) -> bool:
    return any(e > epoch for e, _ in elections(node))


def uncommitted_metadata(spec: ClusterSpec, root: Path) -> QuorumOutcome:
    """The leader controller appends records no follower fetches, dies, and a new leader is elected.

    Premise: three voters and one broker keep running; both followers are frozen (SIGSTOP) while the leader is
    asked to create `LOST_TOPIC`, so it appends the topic's records (and its NoOpRecords) to its log alone; it is
    killed (SIGKILL: the page cache keeps what it wrote), and so is the broker, whose forwarding queue would
    retry the request on the next leader; the followers resume and elect one of themselves, the broker restarts
    and a topic is created under the new leader. The copy is taken then (the followers frozen while it is copied, the
    old leader dead). Afterwards the old leader restarts from its own disk and rejoins as a follower."""
    with running_cluster(spec, root) as cluster:
        first = status(cluster)
        old, old_epoch = int(first["LeaderId"]), int(first["LeaderEpoch"])
        followers = [n for n in cluster.controllers if n != old]
        for n in followers:
            cluster.controllers[n].pause()
        _create_unacknowledged(cluster, LOST_TOPIC)
        cluster.controllers[old].wait_for_line(r"Replayed TopicRecord for topic " + re.escape(LOST_TOPIC), timeout=30)
        time.sleep(1.0)                               # the raft client appends within its linger (25 ms)
        cluster.controllers[old].kill()
        # the broker forwards CreateTopics and retries it on the next controller (`NodeToControllerChannelManager`):
        # a crash drops its queue, so the lost topic is not created again under the new leader
        cluster.kill(2)
        for n in followers:
            cluster.controllers[n].resume()
        wait_until(lambda: any(_elected(cluster.controllers[n], old_epoch) for n in followers), 120,
                   "no follower became leader")
        cluster.restart(2)
        cluster.retrying(lambda: cluster.create_topic(LATER_TOPIC, [2]), timeout=90)
        before = status(cluster)
        with cluster.frozen():
            copy = cluster.copy(root / "copy")
        new, new_epoch = int(before["LeaderId"]), int(before["LeaderEpoch"])
        start = dict(elections(cluster.controllers[new])).get(new_epoch, -1)
        cluster.controllers[old].start()
        cluster.controllers[old].wait_for_line(r"Truncated to offset (\d+) from Fetch response", timeout=120)
        repl = caught_up(cluster, old, int(before["HighWatermark"]))
        after = status(cluster)
        topics = sorted(cluster.retrying(lambda: cluster.admin.list_topics()))
        truncated = [int(m) for m in re.findall(r"Truncated to offset (\d+) from Fetch response",
                                                cluster.controllers[old].output_since_start())]
        cluster.stop_all()
        finals = {n: node.log_dir / METADATA for n, node in cluster.controllers.items()}
        return QuorumOutcome(copy, old, old_epoch, new, new_epoch, start, truncated, before, after, repl, topics,
                             finals)


def _create_unacknowledged(cluster: Cluster, topic: str) -> None:
    """CreateTopics that the isolated leader appends but cannot commit: the request times out."""
    from kafka.admin import NewTopic
    try:
        cluster.admin.create_topics([NewTopic(topic, replica_assignments={0: [2]})], timeout_ms=3000)
    except Exception:  # noqa: BLE001 - the timeout is the expected answer: the records are not committed
        cluster.reset_admin()


def caught_up(cluster: Cluster, node: int, target: int, timeout: float = 120) -> str:
    """Wait until `describe --replication` shows `node` with a log end at or past `target` (columns found by
    the header: 3.9 and 4.x print a DirectoryId column before LogEndOffset); the last output."""
    deadline = time.monotonic() + timeout
    while True:
        text = replication(cluster)
        rows = [line.split() for line in text.splitlines() if line.strip()]   # log lines come first
        head = next((i for i, r in enumerate(rows) if "LogEndOffset" in r), None)
        if head is not None:
            at = rows[head].index("LogEndOffset")
            if any(r[0] == str(node) and len(r) > at and r[at].isdigit() and int(r[at]) >= target
                   for r in rows[head + 1:]):
                return text
        if time.monotonic() > deadline:
            raise AssertionError(f"c{node} never reached offset {target}:\n{text}")
        time.sleep(1)
