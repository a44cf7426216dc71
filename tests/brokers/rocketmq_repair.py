"""Issue 29, `replog repair` end to end: a classic 4.9.7 group whose stores diverged after a manual failover, with a
consumer group's offsets committed before the copy, repaired by replog and restarted on replog's outputs; what the
restarted group serves is read with the brokers' own tools (consumer pull, admin API CQ units, examineConsumeStats).
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

from tests.brokers.rocketmq_ha_scenarios import WATCH, sent_seqs, set_role
from tests.brokers.rocketmq_lab import GROUP, Inspection, RmqCluster, RmqSpec, running_rocketmq
from tests.brokers.rocketmq_scenarios import BODY, QUEUES, TOPIC, wait_caught_up

VERSION = "4.9.7"
CONSUMER = "replog-lab-repair"
CONSUMED = 40                      # messages the group consumes and commits per queue before the failover
COMMON, SLAVE_OWN, MASTER_OWN = 200, 100, 50
Offsets = dict[tuple[str, int], tuple[int, int]]      # (topic, queue) -> (broker offset, consumer offset)


def progress(c: RmqCluster) -> Offsets:
    """The group's offsets as the master reports them (`RmqCommit progress`: examineConsumeStats)."""
    out = c.java_source("RmqCommit.java", "progress", c.namesrv_addr, CONSUMER)
    return {(t, int(q)): (int(b), int(o))
            for t, q, b, o in re.findall(r"^PROGRESS (\S+) (\d+) (-?\d+) (-?\d+)$", out, re.M)}


@dataclass(frozen=True)
class Diverged:
    """The copies (both brokers stopped cleanly, roles back to n0 master / n1 slave) and what was sent and
    committed before."""
    copies: dict[str, Path]
    seqs: dict[str, list[int]]       # sequence numbers each store holds (sends and replication)
    committed: dict[tuple[str, int], int]   # RmqCommit's synchronous commits
    offsets_before: Offsets          # the group's offsets the master reported before the stop


def diverged_with_offsets(root: Path) -> Diverged:
    """`rocketmq_ha_scenarios.classic_failover(master_own=50)` with a committing consumer: n0 master, n1 slave,
    COMMON messages both hold; the group pulls CONSUMED per queue from n0 and commits synchronously; both stop
    cleanly (the master persists consumerOffset.json on shutdown). n1 restarted alone as brokerId 0 takes
    SLAVE_OWN (seq 200..); n0 alone takes MASTER_OWN (seq 500..) at the same offsets; roles go back and both stores
    are copied. Premise: nothing runs at the copy; the group restarts from (repaired) copies, checkpoints flushed."""
    with running_rocketmq(RmqSpec(VERSION, brokers=2), root / "cluster") as c:
        c.create_topic(TOPIC, QUEUES)
        c.create_topic(f"%RETRY%{CONSUMER}", 1)     # 4.9.7's examineConsumeStats routes through the retry topic
        common = sent_seqs(c.send(TOPIC, (0, 1), 0, COMMON, BODY))
        wait_caught_up(c, "n1", "n0")
        out = c.java_source("RmqCommit.java", "consume", c.namesrv_addr, CONSUMER, TOPIC, GROUP,
                            ",".join(map(str, range(QUEUES))), str(CONSUMED))
        committed = {(t, int(q)): int(o) for t, q, o in re.findall(r"^COMMIT (\S+) (\d+) (\d+)$", out, re.M)}
        before = progress(c)
        c.stop("n1")
        c.stop("n0")
        set_role(c, "n1", 0, "ASYNC_MASTER")
        c.start_broker("n1")
        c.create_topic(TOPIC, QUEUES, "n1")
        own1 = sent_seqs(c.send(TOPIC, (0, 1), 200, SLAVE_OWN, BODY))
        c.wait_dispatched("n1")
        c.stop("n1")
        c.start_broker("n0")
        own0 = sent_seqs(c.send(TOPIC, (0, 1), 500, MASTER_OWN, BODY))
        c.wait_dispatched("n0")
        c.stop("n0")
        set_role(c, "n1", 1, "SLAVE")
        copies = {name: c.copy_store(name, root / "copy" / name) for name in ("n0", "n1")}
    return Diverged(copies, {"n0": common + own0, "n1": common + own1}, committed, before)


@dataclass(frozen=True)
class Served:
    """What the group restarted on repaired stores serves (brokers' tools only)."""
    master: Inspection                                  # n0's stats and every CQ unit (admin API)
    slave_end: int                                      # n1's commit-log end (admin API)
    messages: list[tuple[int, int, int, int]]           # (queue, queue offset, commit-log offset, seq): RmqDump
    offsets: Offsets                                    # the group's offsets (examineConsumeStats)
    master_log: str
    slave_offsets: dict[tuple[str, int], int]           # n1's config/consumerOffset.json after a clean stop


def serve(stores: dict[str, Path], root: Path) -> Served:
    """n0 (brokerId 0, ASYNC_MASTER) then n1 (SLAVE) on `stores`, a new name server; the slave is given the time
    to catch up (or `WATCH` seconds when it is not behind). Premise: restart from the repaired copies; nothing
    sent."""
    with running_rocketmq(RmqSpec(VERSION, brokers=2), root, start=False) as c:
        set_role(c, "n0", 0, "ASYNC_MASTER")
        set_role(c, "n1", 1, "SLAVE")
        for name, store in stores.items():
            c.use_store(name, store)
        c.start_namesrv()
        c.start_broker("n0")
        c.start_broker("n1")
        if c.inspect("n0", {}).max_offset > c.inspect("n1", {}).max_offset:
            wait_caught_up(c, "n1", "n0")
        else:
            time.sleep(WATCH)
        c.wait_dispatched("n0")
        inspection = c.inspect("n0", {TOPIC: QUEUES})
        slave_end = c.inspect("n1", {}).max_offset
        out = c.java_source("RmqDump.java", c.namesrv_addr, GROUP, f"{TOPIC}:{QUEUES}")
        offsets = progress(c)
        log = c.brokers["n0"].output_since_start()
        slave_offsets = synced_offsets(c, "n1")
    messages = [(int(q), int(qo), int(off), int(seq)) for q, qo, off, seq in
                re.findall(r"^MSG \S+ (\d+) (\d+) (\d+) (-?\d+)$", out, re.M)]
    return Served(inspection, slave_end, messages, offsets, log, slave_offsets)


SYNCED = r"Update slave consumer offset from master"


def synced_offsets(c: RmqCluster, slave: str, timeout: float = 120) -> dict[tuple[str, int], int]:
    """The slave's consumer offsets as it wrote them: once it logged a sync from its master since it started
    (`SlaveSynchronize#syncConsumerOffset` puts the master's table and persists it; 4.9.7 every 10 s from
    `BrokerController#handleSlaveSynchronize`, 5.3.3 controller mode every 3 s from
    `ReplicasManager#handleSlaveSynchronize`), the slave is stopped cleanly (the shutdown persists the table again)
    and its `config/consumerOffset.json` is read as text."""
    c.brokers[slave].wait_for_line(SYNCED, timeout)
    c.stop(slave)
    return file_offsets(c.store(slave) / "config" / "consumerOffset.json", CONSUMER)


def file_offsets(path: Path, group: str) -> dict[tuple[str, int], int]:
    """`offsetTable` of a broker's consumerOffset.json for `group`: {"topic@group": {queue: offset}}. fastjson writes
    the queue ids as bare numbers, so the file is read with a brace count and patterns, not a JSON parser."""
    text = path.read_text()
    start = text.find('"offsetTable"')
    assert start >= 0, f"{path}: no offsetTable"
    first = text.index("{", start)
    depth, end = 0, first
    for end in range(first, len(text)):
        depth += {"{": 1, "}": -1}.get(text[end], 0)
        if depth == 0:
            break
    table = text[first:end + 1]
    out = {}
    for topic, body in re.findall(r'"([^"@]+)@' + re.escape(group) + r'"\s*:\s*\{([^}]*)\}', table):
        for queue, offset in re.findall(r'"?(\d+)"?\s*:\s*(-?\d+)', body):
            out[(topic, int(queue))] = int(offset)
    return out
