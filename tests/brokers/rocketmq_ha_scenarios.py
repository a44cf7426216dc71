"""RocketMQ HA lab scenarios for issues 29 and 32: stores two real brokers of one group wrote apart, and what the
brokers then do with them.

Issue 29 (classic HA, 4.9.7): a manual failover makes the slave's log longer than the master's (`classic_failover`
with no writes on the old master), or gives both different bytes at the same offsets (`master_own` writes on the old
master while the other one led). The group then restarts in its original roles and the brokers' own log lines,
admin API and commit-log bytes say what the master streamed and where HA stopped.

Issue 32 (controller mode, 5.3.3): `controller_decision` leaves two divergent replicas (an unclean election) with
both brokers down and the controller's own store copied at that moment; `lead_from_copy` restarts the group from
those copies with one chosen broker started first (the controller elects it: the other is not alive), starts the
other, and reads what the group then keeps through the brokers' consumer and admin APIs.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.brokers.kafka_lab import wait_until
from tests.brokers.rocketmq_lab import GROUP, Inspection, RmqCluster, RmqSpec, running_rocketmq
from tests.brokers.rocketmq_scenarios import (
    BODY,
    QUEUES,
    TOPIC,
    start_controller_pair,
    sync_state,
    wait_caught_up,
    wait_sync_state,
)

WATCH = 40.0        # seconds a stalled pair is watched: several HA heartbeats (5 s) and a housekeeping period (20 s)


def set_role(c: RmqCluster, name: str, broker_id: int, role: str) -> None:
    """Rewrite the (stopped) broker's config with another brokerId and brokerRole: a manual classic failover."""
    conf = c.brokers[name].home / f"{name}.conf"
    lines = [ln for ln in conf.read_text().splitlines() if not ln.startswith(("brokerId=", "brokerRole="))]
    conf.write_text("\n".join([*lines, f"brokerId={broker_id}", f"brokerRole={role}"]) + "\n")


def sent_seqs(sent: list[tuple[int, str, int, int]]) -> list[int]:
    bad = [s for s in sent if s[1] != "SEND_OK"]
    assert not bad, f"sends not SEND_OK: {bad[:5]}"
    return [s[0] for s in sent]


# ----- issue 29: classic HA after a manual failover


@dataclass(frozen=True)
class ClassicFailover:
    """The copies at the restart (both brokers stopped) and what the restarted group did in `WATCH` seconds or until
    the slave caught up."""
    copies: dict[str, Path]          # n0 (master again), n1 (slave again) -> store copy
    common_end: int                  # commit-log end both held before the failover (admin API)
    master_end: int                  # n0's end at the restart (admin API, its last run)
    slave_end: int                   # n1's end at the restart (admin API, its last run as master)
    master_end_after: int            # n0's end after the watch (admin API)
    slave_end_after: int             # n1's end after the watch (admin API)
    master_log: str                  # n0's output since the restart
    slave_log: str                   # n1's output since the restart
    slave_store_after: Path          # n1's store copied after it stopped at the end
    seqs: dict[str, list[int]]       # sequence numbers each copy holds (sends and replication)


def classic_failover(root: Path, version: str = "4.9.7", master_own: int = 0) -> ClassicFailover:
    """Classic master/slave. n0 master, n1 slave, 200 messages both hold; both stop cleanly. Manual failover: n1
    restarted alone as brokerId 0 (ASYNC_MASTER) takes 100 messages (seq 200..299) and stops. With `master_own`,
    n0 then runs alone as master and takes that many messages of its own (seq 500..): the same offsets, other
    bytes. The roles go back (n1 brokerId 1, SLAVE), both stores are copied, n0 starts, then n1.
    Premise: the group restarts from those stores (clean stops: checkpoints flushed, no abort); nothing is sent
    after the restart."""
    with running_rocketmq(RmqSpec(version, brokers=2), root / "cluster") as c:
        c.create_topic(TOPIC, QUEUES)
        common = sent_seqs(c.send(TOPIC, (0, 1), 0, 200, BODY))
        common_end = wait_caught_up(c, "n1", "n0")
        c.stop("n1")
        c.stop("n0")
        set_role(c, "n1", 0, "ASYNC_MASTER")
        c.start_broker("n1")
        c.create_topic(TOPIC, QUEUES, "n1")
        own1 = sent_seqs(c.send(TOPIC, (0, 1), 200, 100, BODY))
        slave_end = c.wait_dispatched("n1").max_offset
        c.stop("n1")
        master_end, own0 = common_end, []
        if master_own:
            c.start_broker("n0")
            own0 = sent_seqs(c.send(TOPIC, (0, 1), 500, master_own, BODY))
            master_end = c.wait_dispatched("n0").max_offset
            c.stop("n0")
        set_role(c, "n1", 1, "SLAVE")
        copies = {name: c.copy_store(name, root / "copy" / name) for name in ("n0", "n1")}
        c.start_broker("n0")
        c.start_broker("n1")
        if master_end > slave_end:
            wait_caught_up(c, "n1", "n0")
        else:
            time.sleep(WATCH)
        master_after, slave_after = c.inspect("n0", {}).max_offset, c.inspect("n1", {}).max_offset
        logs = c.brokers["n0"].output_since_start(), c.brokers["n1"].output_since_start()
        c.stop("n1")
        after = c.copy_store("n1", root / "after" / "n1")
    return ClassicFailover(copies, common_end, master_end, slave_end, master_after, slave_after, *logs, after,
                           {"n0": common + own0, "n1": common + own1})


@dataclass(frozen=True)
class ClassicLed:
    """A classic group restarted from copies with one store as brokerId 0, after the slave caught up or `WATCH`."""
    master: str
    master_end: int                  # the master's commit-log end (admin API)
    slave_end: int                   # the slave's commit-log end (admin API)
    seqs: set[int]                   # sequence numbers a consumer reads from the group (its master)


def lead_classic(copies: dict[str, Path], master: str, root: Path, version: str = "4.9.7") -> ClassicLed:
    """The group on `copies` with `master` reconfigured as brokerId 0 (ASYNC_MASTER) and the other as brokerId 1
    (SLAVE), the master started first: classic HA has no election. Premise: restart from the copies; nothing sent."""
    other = next(n for n in copies if n != master)
    with running_rocketmq(RmqSpec(version, brokers=2), root, start=False) as c:
        set_role(c, master, 0, "ASYNC_MASTER")
        set_role(c, other, 1, "SLAVE")
        for name, store in copies.items():
            c.use_store(name, store)
        c.start_namesrv()
        c.start_broker(master)
        c.start_broker(other)
        if c.inspect(master, {}).max_offset > c.inspect(other, {}).max_offset:
            wait_caught_up(c, other, master)
        else:
            time.sleep(WATCH)
        ends = c.inspect(master, {}).max_offset, c.inspect(other, {}).max_offset
        out = c.java_source("RmqDump.java", c.namesrv_addr, GROUP, f"{TOPIC}:{QUEUES}")
    seqs = {int(seq) for seq in re.findall(r"^MSG \S+ \d+ \d+ \d+ (-?\d+)$", out, re.M)}
    return ClassicLed(master, *ends, seqs)


def master_transfers(log: str) -> list[int]:
    """`HAConnection.WriteSocketService`: "master transfer data from N to slave[...]" (one per connection)."""
    return [int(m) for m in re.findall(r"master transfer data from (\d+) to slave", log)]


def request_beyond(log: str) -> list[tuple[int, int]]:
    """4.9.7 `HAConnection.ReadSocketService#processReadEvent`: "slave[...] request offset=S greater than local
    commitLog offset=M" (the master then closes the connection)."""
    return [(int(s), int(m)) for s, m in re.findall(
        r"request offset=(\d+) greater than local commitLog offset=(\d+)", log)]


def offset_not_equal(log: str) -> list[tuple[int, int]]:
    """`HAClient#dispatchReadRequest`: "master pushed offset not equal the max phy offset in slave, SLAVE: S MASTER:
    M" (the slave then closes the connection)."""
    return [(int(s), int(m)) for s, m in re.findall(r"offset not equal the max phy offset in slave, SLAVE: (\d+) "
                                                    r"MASTER: (\d+)", log)]


def commitlog_bytes(store: Path, start: int, end: int, file_size: int = 131072) -> bytes:
    """Bytes [start, end) of a store's commit log, read from its files by name (no parser)."""
    out = bytearray()
    pos = start
    while pos < end:
        base = pos - pos % file_size
        take = min(end, base + file_size) - pos
        with (store / "commitlog" / f"{base:020d}").open("rb") as f:
            f.seek(pos - base)
            out += f.read(take)
        pos += take
    return bytes(out)


# ----- issue 32: controller mode, every candidate master from the same copy


@dataclass(frozen=True)
class Decision:
    """Both brokers down after an unclean election; their stores and the controller's store copied then."""
    copies: dict[str, Path]              # n0, n1 -> store copy
    controller: Path                     # the controller's store (DLedger) copy
    seqs: dict[str, list[int]]           # sequence numbers each broker held (sends and replication)
    acked: list[int]                     # every sequence number the producer had SEND_OK for
    in_sync: set[str]                    # the brokers in the SyncStateSet then (mqadmin getSyncStateSet)


def controller_decision(root: Path, version: str = "5.3.3",
                        on_common: Callable[[RmqCluster], None] | None = None,
                        broker_config: dict[str, str] | None = None,
                        on_alone: Callable[[RmqCluster, str], None] | None = None) -> Decision:
    """Controller mode (controller in the name server, `enableElectUncleanMaster`). n0 master, n1 in sync, 100
    messages both hold; n1 freezes and leaves the SyncStateSet; n0 takes 60 alone (seq 100..159) and crashes (kill
    -9); n1 resumes, is elected uncleanly, takes 40 (seq 160..199) and crashes too. The controller, still running,
    finds n1 dead and clears the master (`ElectMasterEvent{newMasterElected=false}`: nobody alive to elect); the
    name server then stops cleanly and its controller store is copied with the brokers' stores. Premise: nothing
    runs at the decision point; each candidate restarts from these copies, so every election after it starts a
    new epoch. (A controller copied while it still names n1 master races the restart: if n1 heartbeats before the
    controller's election, "The old master 2 is still alive" keeps epoch 5, n1's `changeToMaster(5)` moves epoch
    5's start to its end, `truncateSuffixByEpoch` then `appendEntry`, and n0 truncates at 63170, not 45090,
    keeping 40 of its own messages at offsets where the master holds others; seen once in this lab.)
    `on_common`, when given, runs once both hold the common messages and n1 is caught up (e.g. a consumer group
    commits offsets on n0). `broker_config` is added to both brokers' config (e.g. `storeType=defaultRocksDB`).
    `on_alone`, when given, runs with each lone master's name right after its own sends (n0, then n1), before it
    crashes (e.g. timer messages only that broker holds)."""
    spec = RmqSpec(version, mode="controller", brokers=2, broker_config=dict(broker_config or {}))
    with running_rocketmq(spec, root / "cluster", start=False) as c:
        start_controller_pair(c, "n0", "n1")
        wait_sync_state(c, "n0", 2)
        c.create_topic(TOPIC, QUEUES, "n0")
        common = sent_seqs(c.send(TOPIC, (0, 1), 0, 100, BODY))
        wait_caught_up(c, "n1", "n0")
        if on_common is not None:
            on_common(c)
        c.brokers["n1"].pause()
        wait_sync_state(c, "n0", 1)
        own0 = sent_seqs(c.send(TOPIC, (0, 1), 100, 60, BODY))
        if on_alone is not None:
            on_alone(c, "n0")
        c.wait_dispatched("n0")
        c.brokers["n0"].kill()
        c.brokers["n1"].resume()
        wait_sync_state(c, "n1", 1)
        c.create_topic(TOPIC, QUEUES, "n1")
        own1 = sent_seqs(c.send(TOPIC, (0, 1), 160, 40, BODY))
        if on_alone is not None:
            on_alone(c, "n1")
        c.wait_dispatched("n1")
        master, members = sync_state(c)
        assert (master, members) == (c.broker_addr("n1"), 1), f"premise: n1 alone in sync, have {master} {members}"
        mark = len(c.namesrv.output())
        c.brokers["n1"].kill()
        wait_until(lambda: "ElectMasterEvent{newMasterElected=false" in c.namesrv.output()[mark:], 120,
                   "the controller did not clear the dead master", every=1.0)
        c.namesrv.stop(timeout=60)
        copies = {name: c.copy_store(name, root / "copy" / name) for name in ("n0", "n1")}
        controller = root / "copy" / "controller"
        subprocess.run(["cp", "-a", str(c.root / "namesrv" / "controller"), str(controller)], check=True)
    return Decision(copies, controller, {"n0": common + own0, "n1": common + own1}, common + own0 + own1, {"n1"})


@dataclass(frozen=True)
class Led:
    """The group restarted from a decision's copies with `master` started first, once the other caught up."""
    master: str
    inspection: Inspection                 # the master's commit-log end and every CQ unit (admin API)
    slave_end: int                         # the other broker's commit-log end once caught up (admin API)
    messages: list[tuple[int, int, int, int]]   # (queue, queue offset, commit-log offset, seq) the consumer reads
    truncate_offset: int | None            # "truncateOffset is N" in the slave's log


def restart_on_copies(c: RmqCluster, controller: Path, stores: dict[str, Path], master: str,
                      other: str) -> re.Match[str]:
    """The copied controller store under a new name server and each broker on its copied store, `master` first
    (`start_controller_pair`); the slave's `truncateOffset is N` line, once it has compared epoch files."""
    shutil.copytree(controller, c.root / "namesrv" / "controller", symlinks=True)
    for name, store in stores.items():
        c.use_store(name, store)
    start_controller_pair(c, master, other)
    return c.brokers[other].wait_for_line(r"truncateOffset is (-?\d+)", 180)


def lead_from_copy(decision: Decision, master: str, root: Path, version: str = "5.3.3") -> Led:
    """A new name server on the copied controller store, `master`'s broker on its copy first: the controller finds
    the recorded master dead and elects it (`ReplicasInfoManager#registerBroker` answers no master; the broker's
    `brokerElect`, unclean allowed), then the other on its copy: it becomes the slave and truncates."""
    other = next(n for n in decision.copies if n != master)
    with running_rocketmq(RmqSpec(version, mode="controller", brokers=2), root, start=False) as c:
        found = restart_on_copies(c, decision.controller, decision.copies, master, other)
        slave_end = wait_caught_up(c, other, master)
        wait_until(lambda: c.inspect(master, {}).stats.get("dispatchBehindBytes") == "0", 60, "master dispatch")
        inspection = c.inspect(master, {TOPIC: QUEUES})
        out = c.java_source("RmqDump.java", c.namesrv_addr, GROUP, f"{TOPIC}:{QUEUES}")
    messages = [(int(q), int(qo), int(off), int(seq)) for q, qo, off, seq in
                re.findall(r"^MSG \S+ (\d+) (\d+) (\d+) (-?\d+)$", out, re.M)]
    return Led(master, inspection, slave_end, messages, int(found.group(1)))
