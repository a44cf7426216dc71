"""Two RocketMQ 5.3.3 `storeType=defaultRocksDB` cases (issue 29): a BatchCQ topic inside a RocksDB store, and a
controller-mode slave's own consumer offsets read from the slave itself after a restart.

`rocks_batch_store` premise (stated): a lone defaultRocksDB master; topic BATCH_TOPIC created with the attribute
`+queue.type=BatchCQ` (`mqadmin updateTopic -a`); the batches of `rocketmq_pop_bcq.BATCHES` sent to its queues
(RmqBatchSend: `DefaultMQProducer#send(Collection)`, on a BatchCQ topic `SendMessageProcessor#sendBatchMessage`
stores each batch as one inner-batch commit-log message with INNER_NUM, tag rocketmq-all-5.3.3). Once dispatched
the broker is asked what it serves for every message offset (RmqCqProbe: `queryConsumeQueue` at each offset)
and every unit from each queue's start (RmqInspect), and its runtime stats; then it is stopped cleanly (SIGTERM:
the RocksDB stores closed). The stopped store is what replog reads, in place, read-only. The broker then lives
twice more (premises in `rocks_batch_store`): restarted on its own store with one more batch per queue, and started
on the store a callback returns (replog's recover output); each life is read the same way and stopped cleanly.
What it does (tag rocketmq-all-5.3.3, recovery/rocketmq/rocksdb_batch.py): one RocksDB unit per batch at the base
offset, the other keys empty, reads stopping at the first empty key, `queryConsumeQueue` failing there.

`rocks_slave_offsets` premise (in its docstring): controller mode, both brokers defaultRocksDB, the slave stopped
cleanly after syncing the group's offsets, the master moving on alone; the slave restarted alone on its copy (and
on replog's repair of the copies) and asked for the group's offsets at its own address.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.brokers.kafka_lab import wait_until
from tests.brokers.rocketmq_lab import GROUP, RmqCluster, RmqSpec, running_rocketmq
from tests.brokers.rocketmq_pop_bcq import BATCH_TOPIC, BATCHES, create_batch_topic, send_batches
from tests.brokers.rocketmq_repair import SYNCED
from tests.brokers.rocketmq_rocksdb import CONSUMED, CONSUMER, QUEUES, ROCKSDB, TOPIC, VERSION
from tests.brokers.rocketmq_scenarios import start_controller_pair, wait_caught_up, wait_sync_state


@dataclass
class Served:
    """What the broker answered: runtime stats, queryConsumeQueue offset by offset (RmqCqProbe) and the consumer's
    pull of every queue (RmqDump)."""
    stats: dict[str, str]
    probe: str
    dump: str


@dataclass
class RocksBatch:
    store: Path                                 # the store as the clean stop left it (replog reads it in place)
    sent: list[tuple[int, int, str, int]]       # (queue, batch size, status, queue offset the send returned)
    first: Served                               # before the stop
    again: Served                               # the same broker restarted on its store, one batch more per queue
    sent_again: list[tuple[int, int, str, int]]
    later: Path                                 # the store as the second clean stop left it
    on_output: Served                           # the broker started on the store `on_stopped` returned
    output_stopped: Path                        # that store as the third clean stop left it
    log: str


def served(c: RmqCluster) -> Served:
    stats = c.wait_dispatched("n0").stats
    probe = c.java_source("RmqCqProbe.java", c.namesrv_addr, c.broker_addr("n0"), BATCH_TOPIC, str(len(BATCHES)))
    dump = c.java_source("RmqDump.java", c.namesrv_addr, GROUP, f"{BATCH_TOPIC}:{len(BATCHES)}")
    return Served(stats, probe, dump)


def rocks_batch_store(root: Path, on_stopped: Callable[[Path], Path]) -> RocksBatch:
    """See the module docstring; then, second life: the broker restarts on its own store (nothing else changed),
    takes one batch of 2 more per queue (the queue offsets its sends return are read) and is read and stopped
    cleanly again; third life: it starts on the store `on_stopped` returns for the first stopped copy (e.g.
    replog's recover output), is read and stopped cleanly."""
    with running_rocketmq(RmqSpec(VERSION, broker_config=ROCKSDB), root / "cluster") as c:
        create_batch_topic(c)
        sent = send_batches(c)
        first = served(c)
        c.stop("n0")
        store = c.copy_store("n0", root / "stopped")
        c.start_broker("n0")
        again_sent = []
        for q in BATCHES:
            out = c.java_source("RmqBatchSend.java", c.namesrv_addr, BATCH_TOPIC, GROUP, str(q), "2", "1000", "120")
            again_sent += [(int(m[1]), int(m[2]), m[3], int(m[4])) for m in
                           re.finditer(r"^BATCH (\d+) (\d+) (\S+) (-?\d+) \d+$", out, re.M)]
        again = served(c)
        c.stop("n0")
        later = c.copy_store("n0", root / "later")
        c.use_store("n0", on_stopped(store))
        c.start_broker("n0")
        on_output = served(c)
        c.stop("n0")
        output_stopped = c.copy_store("n0", root / "output-stopped")
        log = c.brokers["n0"].out.read_text(errors="replace")
        return RocksBatch(store, sent, first, again, again_sent, later, on_output, output_stopped, log)


# ----- a controller-mode slave's own RocksDB offsets

SlaveStart = Callable[[dict[str, Path]], Path]   # the stopped copies -> the store the slave restarts on


@dataclass
class SlaveOffsets:
    copies: dict[str, Path]                      # both stores as the clean stops left them
    committed: dict[tuple[str, int], int]        # the group's first commit (on n0), synced to n1
    master_after: dict[tuple[str, int], int]     # n0's own offsets after the second commit (n1 already down)
    own: dict[str, dict[tuple[str, int], int]]   # store label -> the offsets n1 reported at its own address


def own_offsets(c: RmqCluster, broker: str, topic: str) -> dict[tuple[str, int], int]:
    """The group's offsets `broker` holds itself (RmqBrokerOffsets at its own address), once it answers."""
    found: dict[tuple[str, int], int] = {}

    def answered() -> bool:
        try:
            out = c.java_source("RmqBrokerOffsets.java", c.namesrv_addr, c.broker_addr(broker), CONSUMER, topic)
        except AssertionError:
            return False
        found.update({(t, int(q)): int(o) for t, q, _, o in
                      re.findall(r"^OWN (\S+) (\d+) (-?\d+) (-?\d+)$", out, re.M)})
        return bool(found)
    wait_until(answered, 180, f"{broker} did not report the group's offsets at its own address", every=3.0)
    return found


def consume(c: RmqCluster, count: int) -> dict[tuple[str, int], int]:
    out = c.java_source("RmqCommit.java", "consume", c.namesrv_addr, CONSUMER, TOPIC, GROUP,
                        ",".join(map(str, range(QUEUES))), str(count))
    return {(t, int(q)): int(o) for t, q, o in re.findall(r"^COMMIT (\S+) (\d+) (\d+)$", out, re.M)}


def rocks_slave_offsets(root: Path, starts: dict[str, SlaveStart]) -> SlaveOffsets:
    """Premise (stated): 5.3.3 controller mode, both brokers `storeType=defaultRocksDB`. n0 master, n1 in sync; the
    group consumes and commits CONSUMED per queue on n0; n1 syncs the offsets from n0 (`Update slave consumer offset
    from master` in its log, `ReplicasManager#handleSlaveSynchronize` every 3 s) and is stopped cleanly (SIGTERM: its
    `RocksDBConsumerOffsetManager` persists the table to its own `config/consumerOffsets` database); the group then
    commits CONSUMED more on n0 alone, and n0 is stopped cleanly. Both stores are copied. So n1's own offsets differ
    from its master's last ones. Then, for each label of `starts`, n1 alone (n0 stays down, the controller still
    runs) restarts on the store that function returns (e.g. its copy, or replog's repair of the copies), reports
    at its own address the group's offsets it holds (`AdminBrokerProcessor#getConsumeStats` reads its own
    `ConsumerOffsetManager`; no master runs, so nothing syncs them), and is stopped cleanly."""
    spec = RmqSpec(VERSION, mode="controller", brokers=2, broker_config=dict(ROCKSDB))
    with running_rocketmq(spec, root / "cluster", start=False) as c:
        start_controller_pair(c, "n0", "n1")
        wait_sync_state(c, "n0", 2)
        c.create_topic(TOPIC, QUEUES, "n0")
        c.create_topic(f"%RETRY%{CONSUMER}", 1, "n0")
        c.send(TOPIC, tuple(range(QUEUES)), 0, 60, 200)
        wait_caught_up(c, "n1", "n0")
        mark = len(c.brokers["n1"].output())
        committed = consume(c, CONSUMED)
        wait_until(lambda: SYNCED in c.brokers["n1"].output()[mark:], 120, "n1 did not sync the offsets", every=1.0)
        c.stop("n1")
        consume(c, CONSUMED)
        master_after = own_offsets(c, "n0", TOPIC)
        c.stop("n0")
        copies = {n: c.copy_store(n, root / "copy" / n) for n in ("n0", "n1")}
        own: dict[str, dict[tuple[str, int], int]] = {}
        for label, start in starts.items():
            c.use_store("n1", start(copies))
            c.start_broker("n1")
            own[label] = own_offsets(c, "n1", TOPIC)
            c.stop("n1")
    return SlaveOffsets(copies, committed, master_after, own)
