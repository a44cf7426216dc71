"""A RocketMQ 5.3.3 broker with `storeType=defaultRocksDB`: its consume queues, queue offsets and config (consumer
offsets, topics, subscription groups) live in RocksDB (`RocksDBConsumeQueueStore`, `RocksDBConsumerOffsetManager`,
tag rocketmq-all-5.3.3), not in `consumequeue/<topic>/<queue>` files and `config/*.json`.

Premise (stated): the broker runs, messages are sent and a consumer group commits offsets; then the broker is asked
what it serves (every CQ unit through `queryConsumeQueue`, the group's offsets through `examineConsumeStats`, the
calls behind `mqadmin queryCq` and `mqadmin consumerProgress`), and is stopped cleanly (SIGTERM: the shutdown hook
persists offsets and closes the RocksDB stores). The stopped store is what replog reads, in place.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

from tests.brokers.rocketmq_lab import GROUP, Inspection, RmqCluster, RmqSpec, running_rocketmq

VERSION = "5.3.3"
TOPIC = "RocksTopic"
QUEUES = 2
MESSAGES = 40
CONSUMER = "rocks-group"
CONSUMED = 7          # messages the group consumes and commits per queue
# storeType is the one key: MessageStoreConfig#isEnableRocksDBStore compares it with StoreType.DEFAULT_ROCKSDB
# (the lab's STORE_5X "enableRocksDBStore" has no setter in 5.3.3; it is ignored).
ROCKSDB = {"storeType": "defaultRocksDB"}


@dataclass
class RocksRun:
    store: Path
    inspection: Inspection
    progress: dict[tuple[str, int], tuple[int, int]]   # (topic, queue) -> (broker offset, consumer offset)
    committed: dict[tuple[str, int], int]
    log: str


def progress(out: str) -> dict[tuple[str, int], tuple[int, int]]:
    return {(t, int(q)): (int(b), int(c))
            for t, q, b, c in re.findall(r"^PROGRESS (\S+) (\d+) (-?\d+) (-?\d+)$", out, re.M)}


def send_and_commit(c: RmqCluster) -> dict[tuple[str, int], int]:
    """MESSAGES messages sent over the queues of TOPIC and dispatched; the group consumes and commits CONSUMED
    per queue. The offsets it committed, by (topic, queue)."""
    c.create_topic(TOPIC, QUEUES)
    c.send(TOPIC, tuple(range(QUEUES)), 0, MESSAGES, 200)
    c.wait_dispatched("n0")
    out = c.java_source("RmqCommit.java", "consume", c.namesrv_addr, CONSUMER, TOPIC, GROUP,
                        ",".join(map(str, range(QUEUES))), str(CONSUMED))
    return {(t, int(q)): int(o) for t, q, o in re.findall(r"^COMMIT (\S+) (\d+) (\d+)$", out, re.M)}


def rocksdb_broker(root: Path) -> RocksRun:
    """Send, consume and commit on a defaultRocksDB broker, read what it serves, stop it cleanly."""
    with running_rocketmq(RmqSpec(VERSION, broker_config=ROCKSDB), root) as c:
        committed = send_and_commit(c)
        inspection = c.inspect("n0", {TOPIC: QUEUES})
        prog = progress(c.java_source("RmqCommit.java", "progress", c.namesrv_addr, CONSUMER))
        c.stop("n0")
        log = c.brokers["n0"].out.read_text(errors="replace")
        return RocksRun(c.store("n0"), inspection, prog, committed, log)


@dataclass
class RocksCrash:
    crashed: Path                                       # the store as the kill left it (replog reads it in place)
    restarted: Inspection                               # what a broker started on a copy of it serves
    progress: dict[tuple[str, int], tuple[int, int]]    # the group's offsets that broker reports
    committed: dict[tuple[str, int], int]
    log: str


def rocksdb_crash(root: Path) -> RocksCrash:
    """Premise: a defaultRocksDB broker takes MESSAGES messages, a group commits offsets, the broker persists them
    (`flushConsumerOffsetInterval`, 5 s by default; we wait 12 s), takes MESSAGES more and is killed (SIGKILL:
    the consume-queue writes skip the WAL, `AbstractRocksDBStorage#initWriteOptions`, so units still in the
    memtable are gone). The killed store is copied; a broker of the same version starts on another copy with a new
    name server, dispatches, and reports its units and the group's offsets; nothing is sent to it."""
    with running_rocketmq(RmqSpec(VERSION, broker_config=ROCKSDB), root / "first") as c:
        committed = send_and_commit(c)
        time.sleep(12)
        c.send(TOPIC, tuple(range(QUEUES)), MESSAGES, MESSAGES, 200)
        c.brokers["n0"].kill()
        crashed = c.copy_store("n0", root / "crashed")
        restart_from = c.copy_store("n0", root / "restart-from")
    restarted, prog, log = start_rocks_broker(restart_from, root / "second")
    return RocksCrash(crashed, restarted, prog, committed, log)


def start_rocks_broker(store: Path, root: Path) -> tuple[Inspection, dict[tuple[str, int], tuple[int, int]], str]:
    """A `storeType=defaultRocksDB` broker (and a new name server) started on `store`, once dispatched: its units of
    the topic, the group's progress (`RmqCommit progress`) and its log; nothing is sent to it."""
    with running_rocketmq(RmqSpec(VERSION, broker_config=ROCKSDB), root, start=False) as c:
        c.start_namesrv()
        c.use_store("n0", store)
        c.start_broker("n0")
        c.wait_dispatched("n0")
        inspection = c.inspect("n0", {TOPIC: QUEUES})
        prog = progress(c.java_source("RmqCommit.java", "progress", c.namesrv_addr, CONSUMER))
        log = c.brokers["n0"].out.read_text(errors="replace")
    return inspection, prog, log
