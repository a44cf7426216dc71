"""Scenario U with real clients around it: consumer groups that read the old leader's tail and committed, with and
without a committed leader epoch, and an idempotent producer whose writes are lost; after the brokers converge the
consumers start again from their commits and the producer sends its next batch, and what the clients met (where
each consumer resumed, whether it detected a truncation or reset, where the producer's batch went) is recorded for
the tests to hold against `replog impact`.

Where `__consumer_offsets` lives: on b2, the leader that crashes. The consumers read A-10..14 while b2 is the only
broker answering (b3 and b4 are frozen: that is what lets b2's tail exist on b2 alone), so the group coordinator
must be b2 for their commits to reach it before the crash, as a real consumer's commits do. A SIGKILL keeps every
write the broker made (the page cache survives a process crash), so the copy of b2 holds the commits, and b2
loads them again as coordinator when it restarts. The topic is created with an explicit assignment [2]
(replication factor 1, the lab's default) before anything else, and the tests check where it landed.
"""
from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.brokers.kafka_lab import Cluster, wait_until
from tests.brokers.scenarios import (
    ASSIGNMENT,
    TOPIC,
    Outcome,
    converge_and_stop,
    copy_frozen,
    crash_and_elect,
    output_marks,
    values,
    wait_isr,
)

OFFSETS_TOPIC = "__consumer_offsets"
COORDINATOR = 2
# the group coordinator's own configuration of its topic (GroupCoordinatorConfig: compacted, 100 MiB segments)
OFFSETS_CONFIG = {"cleanup.policy": "compact", "compression.type": "producer", "segment.bytes": "104857600"}


@dataclass(frozen=True)
class GroupPlan:
    """A consumer group: it reads from offset 0 up to `commit` (exclusive) from b2 alone, then commits `commit`,
    with the leader epoch of the last record it read (what a consumer's own commit carries) or without one."""
    group: str
    commit: int
    with_epoch: bool


GROUPS = (
    GroupPlan("g-mid", 8, True), GroupPlan("g-mid-noepoch", 8, False),
    GroupPlan("g-edge", 12, True), GroupPlan("g-edge-noepoch", 12, False),
    GroupPlan("g-all", 15, True), GroupPlan("g-all-noepoch", 15, False),
)


@dataclass
class Committed:
    """A group's commit as its coordinator answers it back, and the records its consumer read before."""
    offset: int
    leader_epoch: int | None
    read: list[tuple[int, bytes]]


@dataclass
class Resumed:
    """What one consumer met when it started again from its group's commit (auto.offset.reset=earliest)."""
    group: str
    first_offset: int | None          # the first record it read (None: none within the wait)
    first_value: bytes | None
    events: list[str] = field(default_factory=list)   # the client's own log lines: truncation, out of range, reset


@dataclass
class ProducerNext:
    """A batch the idempotent producer sent to the new leader after its earlier writes were lost."""
    value: bytes
    offset: int | None                # where the leader put it (None: the send failed)
    error: str | None


@dataclass
class ClientsOutcome:
    outcome: Outcome
    offsets_replicas: list[int]       # where __consumer_offsets-0 lived (admin API)
    committed: dict[str, Committed]
    produced: list[tuple[int, bytes]]  # (offset, value) of the idempotent producer's writes to b2 alone
    resumed: dict[str, Resumed]       # kafka-python
    resumed_java: dict[str, Resumed]  # the Java consumer
    producer_next: list[ProducerNext]   # its next batch; after a failure, the one after it too


# ----- consumers

def read_and_commit(cluster: Cluster, plan: GroupPlan) -> Committed:
    """One consumer of the group reads records one poll at a time until its position is `plan.commit`, then
    commits: its own consumed position (offset and the epoch of the record it last read), or the bare offset.
    What it read, and the commit as the coordinator answers it back (OffsetFetch)."""
    from kafka import KafkaConsumer
    from kafka.structs import OffsetAndMetadata, TopicPartition
    tp = TopicPartition(TOPIC, 0)
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id=plan.group, enable_auto_commit=False,
                             auto_offset_reset="earliest", max_poll_records=1, request_timeout_ms=15000)
    read: list[tuple[int, bytes]] = []
    try:
        consumer.assign([tp])
        consumer.seek(tp, 0)
        deadline = time.monotonic() + 60
        while consumer.position(tp) < plan.commit:
            assert time.monotonic() < deadline, f"{plan.group} never read up to {plan.commit}"
            for records in consumer.poll(timeout_ms=1000).values():
                read.extend((int(r.offset), bytes(r.value)) for r in records)
        if plan.with_epoch:
            consumer.commit()
        else:
            consumer.commit({tp: OffsetAndMetadata(plan.commit, "", -1)})
        answer = consumer.committed(tp, metadata=True)
    finally:
        consumer.close(autocommit=False)
    assert answer is not None, f"{plan.group}: the coordinator holds no commit"
    epoch = answer.leader_epoch if answer.leader_epoch is not None and answer.leader_epoch >= 0 else None
    return Committed(int(answer.offset), epoch, read)


class _Lines(logging.Handler):
    """The kafka-python consumer's log lines about its position (validation, out of range, reset)."""
    WANTED = re.compile(r"Truncation detected|out of range|Resetting offset")

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if self.WANTED.search(text):
            self.lines.append(text)


def resume(cluster: Cluster, group: str, wait: float = 15) -> Resumed:
    """A consumer of `group` started again on the partition: the first record it reads, and what it logged."""
    from kafka import KafkaConsumer
    from kafka.structs import TopicPartition
    tp = TopicPartition(TOPIC, 0)
    lines = _Lines()
    logger = logging.getLogger("kafka")
    logger.addHandler(lines)
    level = logger.level
    logger.setLevel(logging.INFO)
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id=group, enable_auto_commit=False,
                             auto_offset_reset="earliest", max_poll_records=1, request_timeout_ms=15000)
    try:
        consumer.assign([tp])
        first = _first_record(consumer, wait)
    finally:
        consumer.close(autocommit=False)
        logger.removeHandler(lines)
        logger.setLevel(level)
    return Resumed(group, first[0] if first else None, first[1] if first else None, lines.lines)


def _first_record(consumer: Any, wait: float) -> tuple[int, bytes] | None:
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=1000).values():
            if records:
                return int(records[0].offset), bytes(records[0].value)
    return None


CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"   # every lab version (3.9.1 to 4.4.0)
JAVA_EVENTS = re.compile(r"^.*(?:Truncation detected|is out of range for partition|Resetting offset for partition)"
                         r".*$", re.MULTILINE)


def resume_java(cluster: Cluster, group: str, wait_ms: int = 20000) -> Resumed:
    """The same with the Java consumer, the reference client (kafka-console-consumer of the lab's version,
    subscribing with the group, auto.offset.reset=earliest, committing nothing): the first record it prints
    and its own INFO lines about the position (`SubscriptionState`, the fetcher)."""
    out = cluster.tool(CONSOLE_CONSUMER, "--bootstrap-server", cluster.bootstrap, "--topic", TOPIC, "--group", group,
                       "--max-messages", "1", "--timeout-ms", str(wait_ms), "--property", "print.offset=true",
                       "--consumer-property", "auto.offset.reset=earliest",
                       "--consumer-property", "enable.auto.commit=false")
    record = re.search(r"^Offset:(\d+)\s+(\S+)\s*$", out, re.MULTILINE)
    events = [line.strip() for line in JAVA_EVENTS.findall(out)]
    if record is None:
        return Resumed(group, None, None, events)
    return Resumed(group, int(record.group(1)), record.group(2).encode(), events)


# ----- the idempotent producer

def idempotent_producer(cluster: Cluster) -> Any:
    """kafka-python's idempotent producer, made while every broker answers: its producer id is allocated at once
    (the sender asks on start) and its metadata names all three brokers, so it finds the new leader after the
    crash (made while b2 alone answers, it would know no other broker and wait for b2 for ever). acks=all: with
    b2 alone in the ISR the leader acknowledges alone."""
    from kafka import KafkaProducer
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all", enable_idempotence=True, linger_ms=0,
                             max_in_flight_requests_per_connection=1, request_timeout_ms=15000,
                             metadata_max_age_ms=1000)
    assert producer.partitions_for(TOPIC) == {0}, f"the producer does not see {TOPIC}-0"
    return producer


def send_each(producer: Any, records: list[bytes]) -> list[int]:
    return [int(producer.send(TOPIC, value=v, key=v[:8], partition=0).get(timeout=30).offset) for v in records]


def send_one(producer: Any, value: bytes) -> ProducerNext:
    """One batch: where it went, or the error the client raised."""
    try:
        return ProducerNext(value, send_each(producer, [value])[0], None)
    except Exception as e:  # noqa: BLE001 - the client's error is the observation
        return ProducerNext(value, None, f"{type(e).__name__}: {e}")


def send_next(producer: Any) -> list[ProducerNext]:
    """The producer's next batch after the election; if the leader refused it, the batch after that (what the
    client does next, e.g. a new producer epoch, KIP-360), so that the partition goes on past offset 12."""
    sent = [send_one(producer, b"P-next")]
    if sent[0].offset is None:
        sent.append(send_one(producer, b"P-next-2"))
    return sent


def close_producer(producer: Any) -> None:
    """Close without waiting on a batch the leader never answered (kafka-python's flush would raise)."""
    from kafka.errors import KafkaTimeoutError
    try:
        producer.close(timeout=5)
    except KafkaTimeoutError:
        producer._sender.force_close()   # noqa: SLF001 - the only way kafka-python drops an unanswered batch


# ----- the scenario

def place_offsets_topic(cluster: Cluster) -> list[int]:
    """`__consumer_offsets` created on the coordinator-to-be, before any group exists; its replicas as the admin
    API reports them."""
    from kafka.admin import NewTopic
    new = NewTopic(OFFSETS_TOPIC, replica_assignments={0: [COORDINATOR]}, topic_configs=OFFSETS_CONFIG)
    cluster.admin.create_topics([new], timeout_ms=30000)
    seen: dict[str, Any] = {}

    def led() -> bool:   # one answer holds both (a later describe can fail under load and answer {})
        seen.clear()
        seen.update(cluster.partition(OFFSETS_TOPIC))
        return seen.get("leader") == COORDINATOR
    wait_until(led, 60, f"{OFFSETS_TOPIC}-0 never led by b{COORDINATOR}")
    return list(seen["replicas"])


def tail_on_b2_alone(cluster: Cluster, producer: Any, groups: tuple[GroupPlan, ...], producer_from_start: bool
                     ) -> tuple[list[tuple[int, bytes]], dict[str, Committed]]:
    """A-0..9 replicated everywhere; b3 and b4 frozen out of the ISR; the idempotent producer writes A-10..14 to b2
    alone (acks=all, acknowledged by b2 alone) and every group reads from b2 and commits to it."""
    if producer_from_start:
        send_each(producer, values("A", 0, 10))
    else:
        cluster.produce(TOPIC, values("A", 0, 10), acks="all")
    cluster.pause(3, 4)
    wait_isr(cluster, [2])
    written = values("A", 10, 5)
    produced = list(zip(send_each(producer, written), written, strict=True))
    return produced, {plan.group: read_and_commit(cluster, plan) for plan in groups}


def elect_b3_uncleanly(cluster: Cluster) -> None:
    """b2 crashes; b3 and b4 come back, the partition is leaderless, the operator elects b3, which takes B-10..11."""
    crash_and_elect(cluster, 2, (3, 4))
    cluster.produce(TOPIC, values("B", 10, 2), acks="all")


def clients_around_unclean_election(cluster: Cluster, work: Path, groups: tuple[GroupPlan, ...] = GROUPS,
                                    producer_from_start: bool = False) -> ClientsOutcome:
    """Scenario U with clients: the tail on b2 alone, read and committed by every group; b3 elected uncleanly;
    the copy is taken; the producer sends its next batch; b2 returns and truncates; the consumers start again.
    `producer_from_start`: the idempotent producer writes A-0..9 too, so the new leader knows its sequences up
    to 9 when its next batch (sequence 15) arrives."""
    placed = place_offsets_topic(cluster)
    cluster.create_topic(TOPIC, ASSIGNMENT)
    producer = idempotent_producer(cluster)
    try:
        produced, committed = tail_on_b2_alone(cluster, producer, groups, producer_from_start)
        elect_b3_uncleanly(cluster)
        copy, state = copy_frozen(cluster, work)
        marks = output_marks(cluster)
        sent = send_next(producer)
    finally:
        close_producer(producer)
    cluster.restart(2)
    wait_isr(cluster, ASSIGNMENT, timeout=120)
    resumed = {plan.group: resume(cluster, plan.group, wait=3) for plan in groups}
    resumed_java = {plan.group: resume_java(cluster, plan.group) for plan in groups}
    outcome = converge_and_stop(cluster, work, marks)
    outcome.copy, outcome.partition_state, outcome.running = copy, state, ["b3", "b4"]
    return ClientsOutcome(outcome, placed, committed, produced, resumed, resumed_java, sent)
