"""Broker-lab scenario of a share group (KIP-932) whose acknowledged records an unclean election truncates.

What the group does afterwards is read with Kafka's own means: the records its share consumer (Kafka's Java
`KafkaShareConsumer`, `java/ShareConsume.java`) is delivered, `kafka-share-groups --describe --offsets`
(`ShareGroupCommand`), and the share partition leader's log lines.
"""
from __future__ import annotations

import functools
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from tests.brokers.jars import streams_jar
from tests.brokers.java_build import KAFKA_HELPERS, lab_program
from tests.brokers.kafka_lab import TOOL_JVM, Cluster, ClusterSpec, wait_until
from tests.brokers.scenarios import ASSIGNMENT, TOPIC, copy_frozen, crash_and_elect, values, wait_isr

GROUP = "lab-share"
REGEX_GROUP = "lab-regex"   # a KIP-848 consumer group subscribed by a regular expression
STREAMS_APP = "lab-streams"  # a Kafka Streams application's group (KIP-1071)
STATE_TOPIC = "__share_group_state"
# the share coordinator's state topic and the group coordinator's topic (share group membership) on every broker
# (one partition each), so that both move to b2 while b3 and b4 are frozen and survive b2's crash
SHARE_SPEC_CONFIG = {"offsets.topic.replication.factor": "3",
                     "share.coordinator.state.topic.replication.factor": "3",
                     "share.coordinator.state.topic.num.partitions": "1",
                     "share.coordinator.state.topic.min.isr": "1"}


def share_spec(version: str = "4.4.0") -> ClusterSpec:
    return ClusterSpec(version, "kraft", broker_config=dict(SHARE_SPEC_CONFIG))


@dataclass
class ShareOutcome:
    copy: Path
    first_delivered: list[int]                   # offsets delivered before the crash (all acknowledged)
    delivered_after: list[int]                   # offsets delivered once b2 rejoined and new records came
    describe: str                                # kafka-share-groups --describe --offsets at the end
    leader_output: str                           # what the new leader (b3) logged after the election
    produced_after: list[int] = field(default_factory=list)   # offsets of the records written after the election


def lab_consumer(cluster: Cluster, source: str, group: str, subject: str, want: int, seconds: int, *extra: str,
                 cp: str | None = None) -> list[int]:
    """Offsets a lab consumer program (`source`, compiled with `java/KafkaLab.java`, on `cp` or the cluster's class
    path) prints as given to it within `seconds`, up to `want` records."""
    classpath = cluster.cp if cp is None else cp
    done = subprocess.run(["java", *TOOL_JVM, *cluster.log4j, *lab_program(source, classpath, KAFKA_HELPERS),
                           cluster.bootstrap, group, subject, str(want), str(seconds), *extra],
                          capture_output=True, text=True, timeout=seconds + 180)
    assert done.returncode == 0, f"{source} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
    return [int(m) for m in re.findall(r"^record (\d+) ", done.stdout, re.M)]


def share_consume(cluster: Cluster, want: int, seconds: int) -> list[int]:
    """Offsets the share consumer (`ShareConsume.java`) is delivered and acknowledges."""
    return lab_consumer(cluster, "ShareConsume.java", GROUP, TOPIC, want, seconds)


def regex_consume(cluster: Cluster, want: int, seconds: int) -> list[int]:
    """Offsets a KIP-848 consumer subscribed by a regular expression (`RegexConsume.java`, group `REGEX_GROUP`)
    reads and commits."""
    return lab_consumer(cluster, "RegexConsume.java", REGEX_GROUP, f"{TOPIC}|none-.*", want, seconds)


def streams_consume(cluster: Cluster, work: Path, want: int, seconds: int) -> list[int]:
    """Offsets the lab's Kafka Streams application (`StreamsCount.java`, application `STREAMS_APP`, the KIP-1071
    streams protocol) processes; it runs on the cluster's class path plus the kafka-streams jar."""
    return lab_consumer(cluster, "StreamsCount.java", STREAMS_APP, TOPIC, want, seconds, str(work / "streams-state"),
                        cp=f"{cluster.cp}:{streams_jar(cluster.spec.version)}")


def describe_offsets(cluster: Cluster) -> str:
    return str(cluster.retrying(lambda: cluster.tool("org.apache.kafka.tools.consumer.group.ShareGroupCommand",
                                                     "--bootstrap-server", cluster.bootstrap, "--describe",
                                                     "--group", GROUP, "--offsets"), timeout=90))


def start_offset(describe: str) -> int | None:
    """The START-OFFSET of partition 0 of the topic in `kafka-share-groups --describe --offsets`."""
    rows = [line.split() for line in describe.splitlines() if line.strip()]
    head = next((r for r in rows if "START-OFFSET" in r), None)
    if head is None:
        return None
    at, topic, part = head.index("START-OFFSET"), head.index("TOPIC"), head.index("PARTITION")
    for r in rows:
        if len(r) == len(head) and r[topic] == TOPIC and r[part] == "0" and r[at].isdigit():
            return int(r[at])
    return None


def acknowledged_then_truncated(cluster: Cluster, work: Path) -> ShareOutcome:
    """Premise: brokers 2, 3, 4 keep running but for b2's crash; the share group's state topic has a replica on each. A
    KIP-848 consumer group subscribed by a regular expression reads 0..9 first (its records, types 3-8 and 16, are
    only for the dump check). The share group consumes and acknowledges 0..9 (acks=all); b3 and b4 freeze, the ISR
    shrinks to b2 (which then leads the state topic too), b2 takes 10..19 alone (acks=1, committed by its one-member
    ISR) and the group consumes and acknowledges them: its start offset is 20. b2 crashes, b3 is elected uncleanly
    (its log ends at 10) and the copy is taken (b2 down, b3 and b4 frozen while copied). b2 restarts from its disk
    (it truncates `t-0` and leads the state topic again), 5 records are written (10..14), the group polls, 10 more
    are written (15..24), the group polls again."""
    cluster.create_topic(TOPIC, ASSIGNMENT)
    cluster.produce(TOPIC, values("A", 0, 10), acks="all")
    read = regex_consume(cluster, 10, 90)   # a KIP-848 group with a regex: records 3-8 and 16 for dump's check
    assert read == list(range(10)), f"premise: the regex consumer reads 0..9: {read}"
    read = streams_consume(cluster, work, 10, 120)   # a Streams group: records 17, 19-23 for dump's check
    assert sorted(read) == list(range(10)), f"premise: the Streams application processes 0..9: {read}"
    first = share_consume(cluster, 10, 90)
    cluster.pause(3, 4)
    wait_isr(cluster, [2])
    for internal in (STATE_TOPIC, "__consumer_offsets"):
        led_by_b2 = functools.partial(lambda t: cluster.partition(t).get("leader") == 2, internal)
        wait_until(led_by_b2, 90, f"b2 never led {internal}")
    cluster.produce(TOPIC, values("B", 10, 10), acks=1)
    first += share_consume(cluster, 10, 90)
    crash_and_elect(cluster, 2, (3, 4))
    copy, _ = copy_frozen(cluster, work)
    mark = len(cluster.brokers[3].output())
    cluster.restart(2)
    wait_until(lambda: cluster.partition(STATE_TOPIC).get("leader", -1) >= 0, 120,
               "the share state topic has no leader")
    produced = cluster.produce(TOPIC, values("C", 10, 5), acks="all")
    after = share_consume(cluster, 5, 30)
    produced += cluster.produce(TOPIC, values("D", 15, 10), acks="all")
    after += share_consume(cluster, 5, 90)
    describe = describe_offsets(cluster)
    return ShareOutcome(copy, first, after, describe, cluster.brokers[3].output()[mark:], produced)
