"""Tiered storage (KIP-405, issue 28 item 3): a topic whose old segments live in remote storage only.

The cluster runs Kafka's own local-filesystem RemoteStorageManager, `LocalTieredStorage`, from the kafka-storage
test jar (`jars.tiered_jar`), with the default TopicBasedRemoteLogMetadataManager (`__remote_log_metadata`).
Segments roll by time (`segment.ms`: 4.x refuses a `segment.bytes` under 1 MiB) and leave the brokers' disks a
second after they are copied (`local.retention.ms`), so the partition's local log start rises above its log start
while every record stays readable from remote storage. The log start itself is raised once by DeleteRecords, so
the checkpointed log start is neither 0 nor the local one.

What the brokers say is read with their own means: ListOffsets earliest (`--time -2`) and earliest-local
(`--time -4`, KIP-1005) with `GetOffsetShell`, consumption from the log start (served from remote storage), their
log lines, and the files LocalTieredStorage keeps under its directory.
"""
from __future__ import annotations

import dataclasses
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.brokers.jars import LOCAL_TIERED_STORAGE, tiered_jar
from tests.brokers.kafka_lab import BROKER_IDS, Cluster, ClusterSpec, wait_until
from tests.brokers.scenarios import ASSIGNMENT, TOPIC, Outcome, converge_and_stop, copy_frozen, output_marks, wait_isr

SEGMENT_MS = 1000
DELETED_BEFORE = 3                            # DeleteRecords raises the log start here
TOPIC_CONFIG = {"remote.storage.enable": "true", "segment.ms": str(SEGMENT_MS), "local.retention.ms": "1000",
                "retention.ms": "-1", "file.delete.delay.ms": "1000"}
REMOTE_DIR = "kafka-tiered-storage"           # LocalTieredStorage.ROOT_STORAGE_DIR_NAME, under rsm.config.dir
GET_OFFSETS = "org.apache.kafka.tools.GetOffsetShell"
EARLIEST, EARLIEST_LOCAL, LATEST = "-2", "-4", "-1"


def tiered_spec(spec: ClusterSpec, remote_root: Path) -> ClusterSpec:
    """`spec` with remote storage on every broker: LocalTieredStorage under `remote_root` (shared by the brokers,
    as a real object store is), the metadata manager on the brokers' listener, tasks every second."""
    config = {"remote.log.storage.system.enable": "true",
              "remote.log.storage.manager.class.name": LOCAL_TIERED_STORAGE,
              "remote.log.storage.manager.impl.prefix": "rsm.config.",
              "rsm.config.dir": str(remote_root), "rsm.config.delete.enable": "true",
              "remote.log.metadata.manager.impl.prefix": "rlmm.config.",
              "remote.log.metadata.manager.listener.name": "PLAINTEXT",
              "rlmm.config.remote.log.metadata.topic.num.partitions": "1",
              "rlmm.config.remote.log.metadata.topic.replication.factor": "3",
              "remote.log.manager.task.interval.ms": "1000",
              "log.retention.check.interval.ms": "1000",
              "log.flush.start.offset.checkpoint.interval.ms": "1000"}
    # The KRaft controller validates a topic's remote.storage.enable against its own setting
    # (`ControllerConfigurationValidator` -> `LogConfig.validate`): it needs the system switch too.
    return dataclasses.replace(spec, broker_config=spec.broker_config | config,
                               extra_jars=(*spec.extra_jars, str(tiered_jar(spec.version))),
                               controller_config=spec.controller_config | {"remote.log.storage.system.enable": "true"})


@dataclass
class TieredOutcome(Outcome):
    """The scenario's outcome plus what the brokers answered about the partition's starts."""
    offsets: dict[str, int] = field(default_factory=dict)        # earliest / earliest_local / latest, at the end
    remote_before: list[str] = field(default_factory=list)       # LocalTieredStorage's files at the copy
    remote_after: list[str] = field(default_factory=list)        # ... after the brokers ran on (repair: on it)
    group: str = "tiered-group"
    committed: int = 0                                           # the group's committed offset (remote data)
    group_first: int | None = None                               # the first offset the group read on resuming


def list_offsets(cluster: Cluster) -> dict[str, int]:
    """ListOffsets of partition 0 as Kafka's GetOffsetShell reports it: earliest, earliest-local, latest."""
    out = {}
    for name, time_arg in (("earliest", EARLIEST), ("earliest_local", EARLIEST_LOCAL), ("latest", LATEST)):
        text = cluster.tool(GET_OFFSETS, "--bootstrap-server", cluster.bootstrap, "--topic", TOPIC,
                            "--partitions", "0", "--time", time_arg)
        found = re.search(rf"^{re.escape(TOPIC)}:0:(-?\d+)\s*$", text, re.M)
        assert found, f"GetOffsetShell --time {time_arg} printed no offset for {TOPIC}:0:\n{text}"
        out[name] = int(found.group(1))
    return out


def remote_files(root: Path) -> list[str]:
    """Every file LocalTieredStorage holds (segments, indexes, epoch checkpoints, producer snapshots)."""
    base = root / REMOTE_DIR
    return sorted(str(p.relative_to(base)) for p in base.rglob("*") if p.is_file())


def remote_segments(files: list[str]) -> list[str]:
    return [f for f in files if f.endswith(".log")]


def produce_rounds(cluster: Cluster, rounds: int, per_round: int = 4, first: int = 0) -> None:
    """`rounds` rounds of `per_round` records, each round over a second after the last (a new segment each)."""
    for r in range(first, first + rounds):
        time.sleep(SEGMENT_MS / 1000 + 0.3)
        cluster.produce(TOPIC, [f"r{r}-{i}".encode() for i in range(per_round)], acks="all")


def first_local_offset(cluster: Cluster, broker: int) -> int:
    """The base offset of the broker's first local segment (its local log start), read from the file names."""
    logs = sorted((cluster.brokers[broker].log_dir / f"{TOPIC}-0").glob("*.log"))
    return int(logs[0].name.split(".")[0]) if logs else 0


def wait_tiered(cluster: Cluster, brokers: tuple[int, ...], above: int) -> None:
    """Until each broker's local log start passes `above` (its oldest segments copied, then deleted locally)."""
    for n in brokers:
        wait_until(lambda n=n: first_local_offset(cluster, n) > above, 180,
                   f"b{n} never moved {TOPIC}-0's local log start past {above} "
                   f"(at {first_local_offset(cluster, n)})")


def commit_group(cluster: Cluster, group: str, offset: int) -> None:
    """The group's committed offset on the partition, as a consumer commits it."""
    from kafka import KafkaConsumer
    from kafka.structs import OffsetAndMetadata, TopicPartition
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id=group, enable_auto_commit=False)
    try:
        tp = TopicPartition(TOPIC, 0)
        consumer.assign([tp])
        consumer.commit({tp: OffsetAndMetadata(offset, "")})
    finally:
        consumer.close()


def resume_group(cluster: Cluster, group: str, timeout: float = 60) -> int | None:
    """The first offset a member of `group` reads on resuming: its committed offset when the broker serves it
    (from remote storage here), another one if auto.offset.reset had to decide (`latest`: none arrives)."""
    from kafka import KafkaConsumer
    from kafka.structs import TopicPartition
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id=group, enable_auto_commit=False,
                             auto_offset_reset="latest", request_timeout_ms=15000)
    try:
        consumer.assign([TopicPartition(TOPIC, 0)])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=1000).values():
                if records:
                    return int(records[0].offset)
        return None
    finally:
        consumer.close()


def tiered_then_stopped(cluster: Cluster, work: Path, remote_root: Path) -> TieredOutcome:
    """Scenario T-a. Premise: the cluster keeps running after the copy (taken with every node frozen), then
    converges and stops cleanly (checkpoints flushed at the stop: the final copy is what a restart loads).

    Six rounds roll six segments; DeleteRecords raises the log start to 3; a group commits offset 5; every broker
    copies its old segments to remote storage and deletes them locally, so the local log start rises past 8
    while the log start stays 3 and offsets 3.. stay readable (from remote storage)."""
    cluster.create_topic(TOPIC, ASSIGNMENT, TOPIC_CONFIG)
    produce_rounds(cluster, 6)
    cluster.delete_records(TOPIC, DELETED_BEFORE)
    produce_rounds(cluster, 2, first=6)
    wait_tiered(cluster, tuple(BROKER_IDS), 8)
    outcome = TieredOutcome(Path(), Path(), 0, 0, committed=5)
    commit_group(cluster, outcome.group, outcome.committed)
    time.sleep(2)    # the log-start checkpoint is written every second (log.flush.start.offset.checkpoint...)
    copy, _ = copy_frozen(cluster, work)
    outcome.remote_before = remote_files(remote_root)
    outcome.offsets = list_offsets(cluster)
    outcome.group_first = resume_group(cluster, outcome.group)
    marks = output_marks(cluster)
    done = converge_and_stop(cluster, work, marks)
    outcome.copy, outcome.final, outcome.leader, outcome.leader_epoch = copy, done.final, done.leader, done.leader_epoch
    outcome.outputs, outcome.consumed = done.outputs, done.consumed
    outcome.remote_after = remote_files(remote_root)
    return outcome


def follower_behind_local_start(cluster: Cluster, work: Path, remote_root: Path) -> TieredOutcome:
    """Scenario T-b. Premise: follower b4 stops cleanly early; the others go on until the leader's local log
    start passes b4's log end; the copy is taken then (b4 stopped, the others frozen); b4 restarts from its own
    disk and rejoins: its fetch below the leader's local log start is answered OFFSET_MOVED_TO_TIERED_STORAGE
    and it builds its state from remote storage (TierStateMachine); the cluster then converges and stops."""
    cluster.create_topic(TOPIC, ASSIGNMENT, TOPIC_CONFIG)
    produce_rounds(cluster, 2)
    wait_isr(cluster, ASSIGNMENT)
    cluster.brokers[4].stop()
    cluster.reset_admin()
    wait_isr(cluster, [2, 3])
    produce_rounds(cluster, 5, first=2)
    cluster.delete_records(TOPIC, DELETED_BEFORE)
    produce_rounds(cluster, 1, first=7)
    wait_tiered(cluster, (2, 3), 8)
    time.sleep(2)
    copy, _ = copy_frozen(cluster, work)
    outcome = TieredOutcome(Path(), Path(), 0, 0)
    outcome.remote_before = remote_files(remote_root)
    marks = output_marks(cluster)
    cluster.restart(4)
    done = converge_and_stop(cluster, work, marks)
    outcome.copy, outcome.final, outcome.leader, outcome.leader_epoch = copy, done.final, done.leader, done.leader_epoch
    outcome.outputs, outcome.consumed = done.outputs, done.consumed
    outcome.remote_after = remote_files(remote_root)
    return outcome


def start_on_repaired(cluster: Cluster, repaired: Path, work: Path, remote_root: Path) -> TieredOutcome:
    """Scenario T-c. Premise: every node is killed and started again on `repaired` (the copy with the partition
    replaced by replog's repaired replicas), the remote storage left as it is; the brokers run their remote-log
    tasks for a while (any remote segment below the log start they load would be deleted then), then converge,
    a consumer reads from the log start, and they stop."""
    from tests.brokers.scenarios import restart_on
    marks = restart_on(cluster, repaired)
    wait_isr(cluster, ASSIGNMENT, timeout=120)
    time.sleep(15)   # many remote-log task runs (every second): time for a breached-log-start deletion
    outcome = TieredOutcome(Path(), Path(), 0, 0)
    outcome.offsets = list_offsets(cluster)
    done = converge_and_stop(cluster, work, marks)
    outcome.final, outcome.leader, outcome.leader_epoch = done.final, done.leader, done.leader_epoch
    outcome.outputs, outcome.consumed = done.outputs, done.consumed
    outcome.remote_after = remote_files(remote_root)
    return outcome
