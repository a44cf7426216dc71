"""BatchConsumeQueue and POP revive records written by a real RocketMQ 5.3.3 broker, for replog to read in place.

`batch_queue_store`: a lone 5.3.3 master; topic BATCH_TOPIC created with the attribute `+queue.type=BatchCQ`
(`TopicAttributes.QUEUE_TYPE_ATTRIBUTE`, `mqadmin updateTopic -a`); batches of BATCHES sizes sent to each queue
(tests/brokers/java/RmqBatchSend.java: `DefaultMQProducer#send(Collection)`; on a BatchCQ topic
`SendMessageProcessor#sendBatchMessage` stores the batch as one inner-batch message with INNER_NUM and the reput
service writes one 46-byte unit per batch). Small batch consume-queue files (BCQ_FILE_UNITS units) so a queue spans
several files. What the broker serves is read through its admin API (RmqCqProbe.java: the unit it finds for
every message offset) while it runs; then it is stopped cleanly (SIGTERM: flushed, checkpoint written) and its store
is returned as it is on disk (replog reads it in place, read-only).
Premise: the broker keeps running until everything is dispatched and read, then stops cleanly; no restart.

`pop_store`: a lone 5.3.3 master with the timer wheel on (POP checkpoints and acks are revive messages with a
deliver time: `PopMessageProcessor#buildCkMsg`, `AckMessageProcessor#appendAck` `setDeliverTimeMs`). POP_COUNT
messages are sent to one queue of POP_TOPIC, popped by POP_GROUP in two POP requests (POP_SIZES: two checkpoints)
with an invisible time of INVISIBLE_MS (tests/brokers/java/RmqPop.java, the remoting calls of a POP push
consumer), and only ACKED are acked (one ACK_MESSAGE per message, or one BATCH_ACK_MESSAGE). The broker is
stopped cleanly (SIGTERM) right after, within the invisible time,
and its store copied: that copy is what replog reads. The broker is then restarted on its own store and drained
(every queue, retry included, for DRAIN_S seconds, acking all): the messages it delivers again are the ones its
revive service found un-acked.
Premise: stopped cleanly before any revive time; restarted on the same store; nothing sent after the pops.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

from tests.brokers.rocketmq_lab import GROUP, RmqCluster, RmqSpec, running_rocketmq

VERSION = "5.3.3"
BATCH_TOPIC = "BatchLab"
BATCHES: dict[int, tuple[int, ...]] = {0: (3, 1, 5, 2, 4, 6), 1: (2, 7, 1, 3)}
BCQ_FILE_UNITS = 4
POP_SPEC = RmqSpec(VERSION, broker_config={"timerWheelEnable": "true"})
POP_TOPIC, POP_GROUP, POP_COUNT = "PopLab", "PopLabGroup", 10
POP_SIZES, ACKED = (6, 4), frozenset({0, 2, 3, 7})
# The clean stop itself takes seconds (shutdown hooks, flushes): with 8 s the timer delivered the checkpoints and
# the revive service revived before the stop finished (seen in a first run). 30 s leaves the stop well inside.
INVISIBLE_MS, DRAIN_S = 30_000, 60
BCQ_SPEC = RmqSpec(VERSION, broker_config={"mapperFileSizeBatchConsumeQueue": str(46 * BCQ_FILE_UNITS)})


@dataclass(frozen=True)
class BrokerUnit:
    """One batch unit as the broker serves it: base offset and batch size from the offsets it maps to the unit."""
    queue: int
    base_offset: int
    batch_size: int
    physical_offset: int
    size: int
    tags_code: int


@dataclass
class BatchOutcome:
    store: Path
    sent: list[tuple[int, int, str, int]]          # (queue, batch size, status, queue offset the send returned)
    ranges: dict[int, tuple[int, int]]             # queue -> (min, max) message offset
    units: list[BrokerUnit]
    raw: str


def create_batch_topic(c: RmqCluster) -> None:
    out = c.mqadmin("updateTopic", "-b", c.broker_addr("n0"), "-t", BATCH_TOPIC, "-r", str(len(BATCHES)),
                    "-w", str(len(BATCHES)), "-a", "+queue.type=BatchCQ")
    assert "success" in out, f"updateTopic {BATCH_TOPIC} (BatchCQ) failed:\n{out[-2000:]}"


def send_batches(c: RmqCluster) -> list[tuple[int, int, str, int]]:
    sent, seq = [], 0
    for q, sizes in BATCHES.items():
        out = c.java_source("RmqBatchSend.java", c.namesrv_addr, BATCH_TOPIC, GROUP, str(q),
                            ",".join(map(str, sizes)), str(seq), "120")
        got = [(int(m[1]), int(m[2]), m[3], int(m[4])) for m in
               re.finditer(r"^BATCH (\d+) (\d+) (\S+) (-?\d+) \d+$", out, re.M)]
        assert len(got) == len(sizes), f"sent {len(got)} of {len(sizes)} batches to queue {q}:\n{out[-2000:]}"
        sent += got
        seq += sum(sizes)
    return sent


def broker_units(out: str) -> tuple[dict[int, tuple[int, int]], list[BrokerUnit]]:
    """Group the broker's per-offset answers into units (offsets answered with one commit-log position)."""
    ranges = {int(q): (int(lo), int(hi)) for q, lo, hi in re.findall(r"^QUEUE \S+ (\d+) (-?\d+) (-?\d+)$", out, re.M)}
    by_unit: dict[tuple[int, int, int, int], list[int]] = {}
    for q, k, off, size, tags in re.findall(r"^UNIT \S+ (\d+) (\d+) (-?\d+) (-?\d+) (-?\d+)$", out, re.M):
        by_unit.setdefault((int(q), int(off), int(size), int(tags)), []).append(int(k))
    units = [BrokerUnit(q, min(ks), len(ks), off, size, tags) for (q, off, size, tags), ks in by_unit.items()]
    return ranges, sorted(units, key=lambda u: (u.queue, u.base_offset))


def served_batches(c: RmqCluster) -> tuple[dict[int, tuple[int, int]], list[BrokerUnit], str]:
    """What n0 serves on BATCH_TOPIC, asked offset by offset through its admin API (RmqCqProbe.java:
    queryConsumeQueue at every message offset), grouped into units; an error answer fails the scenario."""
    out = c.java_source("RmqCqProbe.java", c.namesrv_addr, c.broker_addr("n0"), BATCH_TOPIC, str(len(BATCHES)))
    errors = re.findall(r"^ERR .*$", out, re.M)
    assert not errors, f"the broker failed queryConsumeQueue on a file BatchCQ: {errors[:5]}"
    ranges, units = broker_units(out)
    return ranges, units, out


def batch_queue_store(root: Path) -> BatchOutcome:
    with running_rocketmq(BCQ_SPEC, root / "cluster") as c:
        create_batch_topic(c)
        sent = send_batches(c)
        c.wait_dispatched("n0")
        ranges, units, out = served_batches(c)
        c.stop("n0")
        store = c.store("n0")
    return BatchOutcome(store, sent, ranges, units, out)


@dataclass
class PopOutcome:
    copy: Path                                     # the store as the clean stop left it, before any revive
    popped: dict[int, tuple[int, int, int]]        # seq -> (queue offset, pop time, invisible time)
    acked: dict[int, str]                          # seq -> ack status
    redelivered: list[tuple[int, str, int]]        # (seq, topic, queue offset) the restarted broker delivered
    stopped_ms: int                                # wall clock once the clean stop had finished
    log: str


def pop_store(root: Path, ack_mode: str = "single") -> PopOutcome:
    """`ack_mode` "batch" acks through one BATCH_ACK_MESSAGE request: with the 5.3.3 defaults
    (`enablePopBufferMerge` and `popConsumerKVServiceEnable` off) `AckMessageProcessor#appendAck` writes one
    `BatchAckMsg` ("bAck", `aol`: the acked offsets) per checkpoint instead of one "ack" per message."""
    with running_rocketmq(POP_SPEC, root / "cluster") as c:
        c.create_topic(POP_TOPIC, 1)
        c.send(POP_TOPIC, (0,), 0, POP_COUNT)
        c.wait_dispatched("n0")
        base = (c.namesrv_addr, c.broker_addr("n0"), GROUP, POP_TOPIC, POP_GROUP)
        out = c.java_source("RmqPop.java", "pop", *base, "0", ",".join(map(str, POP_SIZES)), str(INVISIBLE_MS),
                            ",".join(map(str, sorted(ACKED))), ack_mode)
        popped = {int(s): (int(o), int(t), int(i)) for s, o, t, i in
                  re.findall(r"^POP (\d+) (\d+) (\d+) (\d+)$", out, re.M)}
        acked = {int(s): st for s, st in re.findall(r"^ACK (\d+) (\S+)$", out, re.M)}
        c.stop("n0")
        stopped_ms = int(time.time() * 1000)
        copy = c.copy_store("n0", root / "stopped")
        c.start_broker("n0")
        drained = c.java_source("RmqPop.java", "drain", *base, str(DRAIN_S), "60000", timeout=DRAIN_S + 240)
        log = c.brokers["n0"].output_since_start()
    again = [(int(s), t, int(o)) for s, t, o in re.findall(r"^GOT (\d+) (\S+) (\d+) \S+$", drained, re.M)]
    return PopOutcome(copy, popped, acked, again, stopped_ms, out + drained + log)
