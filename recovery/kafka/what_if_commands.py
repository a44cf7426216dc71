"""The commands that make a Kafka what-if choice happen, in the cluster's own mode (read from the inputs).

- The controller's own choice ("wait"): start that broker first. KRaft: the controller elects the
  first assignment replica in the ISR (or ELR), else the last known leader, once it registers
  (`PartitionChangeBuilder.electAnyLeader`, metadata/.../controller/PartitionChangeBuilder.java);
  ZooKeeper: the controller elects the first live ISR member in assignment order
  (`PartitionLeaderElectionAlgorithms.offlinePartitionLeaderElection`,
  core/src/main/scala/kafka/controller/PartitionStateMachine.scala, branch 3.9).
- Any other replica: it must be the only live replica of the partition, then an unclean election
  by Kafka's leader-election tool (`kafka-leader-election.sh`, class LeaderElectionCommand; it acts
  on a leaderless partition only, and an unclean election takes any live replica: KRaft
  `PartitionChangeBuilder.electAnyLeader`, ZooKeeper `offlinePartitionLeaderElection` with unclean
  allowed). ZooKeeper's controller writes the result to the partition state znode; KRaft's marks
  the leader RECOVERING. Then the other brokers start and truncate to its log.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from replog.recovery.advice import Recommendation, compare_words
from replog.recovery.kafka.controller import replica_broker_id

if TYPE_CHECKING:
    from replog.recovery.kafka.what_if import Choice

KRAFT, ZOOKEEPER, UNKNOWN = "kraft", "zookeeper", "unknown"
TOOL = "kafka-leader-election.sh"


def broker_words(broker: int | None, name: str) -> str:
    return f"broker {broker} ({name})" if broker is not None else f"the broker holding {name}"


def election_command(topic: str, partition: int, broker: int | None) -> str:
    where = f"<broker {broker}'s listener>" if broker is not None else "<its listener>"
    return f"{TOOL} --bootstrap-server {where} --election-type unclean --topic {topic} --partition {partition}"


def _others(best: Choice) -> str:
    """The other replicas' brokers, named as the operator knows them."""
    return ", ".join(broker_words(replica_broker_id(r.replica.name, r.replica.broker_id), r.replica.name)
                     for r in best.result.replicas if r.replica.name != best.leader)


def _mode_note(mode: str, topic: str, partition: int, broker: str, epoch: int | None) -> str:
    """What the controller records once the tool has run, in the cluster's mode."""
    at = f" in leader epoch {epoch}" if epoch is not None else ""
    if mode == KRAFT:
        return (f"the KRaft controller elects the only live replica, {broker}{at}, writes a PartitionChangeRecord "
                "with the ISR forced to it and its leader RECOVERING (an unclean election)")
    if mode == ZOOKEEPER:
        return (f"the ZooKeeper-mode controller elects the first live replica, {broker}{at}, and writes it to the "
                f"partition state /brokers/topics/{topic}/partitions/{partition}/state")
    return ("the cluster's mode is not in the inputs (give --metadata for KRaft or --partition-state for "
            f"ZooKeeper); the tool works in both: the controller elects the only live replica, {broker}")


def wait_steps(best: Choice, mode: str, topic: str, partition: int) -> tuple[str, list[str]]:
    """The controller's own choice: start its broker first."""
    me = broker_words(best.broker, best.leader)
    where = ("the KRaft controller" if mode == KRAFT else "the ZooKeeper-mode controller" if mode == ZOOKEEPER
             else "the controller")
    command = f"start {me} first"
    return command, [f"{command}, the other replicas' brokers still down",
                     f"{where} elects it by itself: {best.result.leader.explanation}",
                     f"then start {_others(best)}: they follow it and truncate to its log"]


def unclean_steps(best: Choice, mode: str, topic: str, partition: int) -> tuple[str, list[str]]:
    """Any other choice: the only live replica, then the leader-election tool's unclean election."""
    me = broker_words(best.broker, best.leader)
    command = election_command(topic, partition, best.broker)
    return command, [f"keep {_others(best)} stopped",
                     f"start {me} alone and wait until it has registered",
                     f"run: {command} (it acts on a leaderless partition only)",
                     _mode_note(mode, topic, partition, me, best.result.leader.leader_epoch),
                     f"then start {_others(best)}: they follow it and truncate to its log"]


def why(best: Choice, rest: Sequence[Choice]) -> str:
    """Why the recommended choice ranks first, against the runner-up, figure by figure."""
    head = (f"{best.leader} loses {best.loss.acknowledged:,} acknowledged records and {best.loss.records:,} in all"
            f", {best.impact.summary['records_consumed_lost']:,} records consumer groups read")
    if not rest:
        return head
    nxt = rest[0]
    figures = [("acknowledged records lost", best.loss.acknowledged, nxt.loss.acknowledged),
               ("records lost", best.loss.records, nxt.loss.records)]
    figures += [(label, best.impact.summary[k], nxt.impact.summary[k]) for label, k in (
        ("records consumed then lost", "records_consumed_lost"), ("consumer groups affected", "groups_affected"),
        ("producers with lost writes", "producers_with_lost_writes"), ("hanging transactions", "hanging_transactions"))]
    figures.append(("replicas whose fetcher fails", len(best.failed), len(nxt.failed)))
    if best.key() == nxt.key():
        return f"{head}; it ties with {nxt.leader}, and " + (
            "the controller's own choice wins a tie" if best.how == "wait" else "the first given wins a tie")
    return f"{head}; against the next best, {nxt.leader}: {compare_words(figures)}"


def recommend(best: Choice, rest: Sequence[Choice], mode: str, topic: str, partition: int) -> Recommendation:
    steps = wait_steps if best.how == "wait" else unclean_steps
    command, lines = steps(best, mode, topic, partition)
    return Recommendation(best.leader, best.broker, best.how, mode, command, lines, why(best, rest))
