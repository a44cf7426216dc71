"""RocketMQ lab scenarios: stores a real broker wrote, damaged the ways disks and crashes damage them, and what a
real broker then makes of them.

A base store is written by a lone master (one topic, two queues, messages with sequence numbers round-robin over
both) and ends either in a crash (`kill -9`: `abort` stays, consume queues and checkpoint as far as the broker's
flush threads got) or in a clean stop (SIGTERM: the shutdown hook flushes everything and deletes `abort`). Each
damage below is applied to a copy of it; a broker of the same version and settings is then started on that copy
and reports, through its admin API, its commit-log end and every consume-queue unit it serves.

The damages locate messages with a walk of their own (size and magic fields only), not with replog's parsers.
"""
from __future__ import annotations

import os
import re
import shutil
import struct
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.brokers.kafka_lab import wait_until
from tests.brokers.rocketmq_lab import GROUP, Inspection, RmqCluster, RmqSpec, running_rocketmq

TOPIC = "LabTopic"
QUEUES = 2
MESSAGES = 800          # ~393 bytes each: three 128 KiB commit-log files, four 100-unit CQ files per queue
BODY = 200
MAGICS = {-626843481, -626843477}   # MESSAGE_MAGIC_CODE V1, V2 (MessageDecoder)
BLANK_MAGIC = -875286124
STORE_TS_V4 = 56                    # total, magic, bodyCRC, queueId, flag, queueOffset, physicalOffset, sysFlag,
#                                     bornTimestamp, bornHost (IPv4 + port): the store timestamp follows


@dataclass(frozen=True)
class Base:
    """A store a broker wrote, copied after it stopped: `crashed` (abort present) or cleanly stopped."""
    version: str
    crashed: bool
    store: Path
    sent: list[tuple[int, str, int, int]]


@dataclass(frozen=True)
class Recovered:
    """A broker started on a copy of a (damaged) store: what it serves, and what it logged."""
    inspection: Inspection
    log: str


def write_base(version: str, root: Path, crashed: bool) -> Base:
    """Premise: one broker, no slave; the copy is taken after the broker exited (kill -9 or SIGTERM)."""
    with running_rocketmq(RmqSpec(version), root / "cluster") as c:
        c.create_topic(TOPIC, QUEUES)
        sent = c.send(TOPIC, tuple(range(QUEUES)), 0, MESSAGES, BODY)
        assert all(s[1] == "SEND_OK" for s in sent), f"not every send was SEND_OK: {sent[:5]}"
        c.wait_dispatched("n0")
        if crashed:
            c.brokers["n0"].kill()
        else:
            c.stop("n0")
        store = c.copy_store("n0", root / "store")
    assert (store / "abort").exists() == crashed, f"abort file present={not crashed} after the stop"
    return Base(version, crashed, store, sent)


def start_on(version: str, store: Path, root: Path) -> Recovered:
    """A broker of `version` started on a copy of `store` (the lab's settings, a new name server): what it keeps.
    Premise: the broker restarts from the copy and nothing is sent to it."""
    with running_rocketmq(RmqSpec(version), root / "cluster", start=False) as c:
        c.start_namesrv()
        c.use_store("n0", store)
        c.start_broker("n0")
        c.wait_dispatched("n0")
        inspection = c.inspect("n0", {TOPIC: QUEUES})
        log = c.brokers["n0"].output_since_start()
    return Recovered(inspection, log)


# ----- the store's own layout, read with the format's size and magic fields only

def commitlog_files(store: Path) -> list[Path]:
    return sorted((p for p in (store / "commitlog").iterdir() if p.name.isdigit()), key=lambda p: int(p.name))


def messages_in(path: Path) -> list[tuple[int, int]]:
    """(position, size) of each message of one commit-log file, up to a BLANK, a zero size or a bad magic."""
    data = path.read_bytes()
    out, pos = [], 0
    while pos + 8 <= len(data):
        size, magic = struct.unpack_from(">ii", data, pos)
        if size <= 0 or magic not in MAGICS or pos + size > len(data):
            break
        out.append((pos, size))
        pos += size
    return out


def last_file_with_messages(store: Path) -> Path:
    for path in reversed(commitlog_files(store)):
        if messages_in(path):
            return path
    raise AssertionError(f"{store}: no commit-log file holds a message")


def store_timestamp(path: Path, position: int) -> int:
    with path.open("rb") as f:
        f.seek(position + STORE_TS_V4)
        return int(struct.unpack(">q", f.read(8))[0])


def patch(path: Path, position: int, data: bytes) -> None:
    with path.open("r+b") as f:
        f.seek(position)
        f.write(data)


def write_checkpoint_times(store: Path, physic: int, logics: int) -> None:
    """StoreCheckpoint: physicMsgTimestamp, logicsMsgTimestamp, indexMsgTimestamp at 0, 8, 16 (rest kept)."""
    patch(store / "checkpoint", 0, struct.pack(">qqq", physic, logics, physic))


# ----- damages, each on a copy of a base store

def no_damage(store: Path) -> None:
    """The store exactly as the broker left it."""


def torn_tail(store: Path) -> None:
    """The last message half written: its second half zeros (a write cut by a power loss)."""
    path = last_file_with_messages(store)
    pos, size = messages_in(path)[-1]
    patch(path, pos + size // 2, bytes(size - size // 2))


def crc_flip(store: Path) -> None:
    """One byte of the last message's body flipped: its body CRC no longer matches (bit rot)."""
    path = last_file_with_messages(store)
    pos, size = messages_in(path)[-1]
    with path.open("r+b") as f:
        f.seek(pos + size - 30)
        byte = f.read(1)[0]
        f.seek(pos + size - 30)
        f.write(bytes([byte ^ 0x5A]))


def zero_last_file(store: Path) -> None:
    """The last commit-log file holding messages all zeros (its pages never reached the disk)."""
    path = last_file_with_messages(store)
    size = path.stat().st_size
    with path.open("r+b") as f:
        f.truncate(0)
        f.truncate(size)


def preallocated_next(store: Path) -> None:
    """An empty full-size file after the last one (the allocate service's next file, created before a crash)."""
    files = commitlog_files(store)
    last = files[-1]
    size = last.stat().st_size
    nxt = last.with_name(f"{int(last.name) + size:020d}")
    with nxt.open("wb") as f:
        f.truncate(size)


def checkpoint_behind(store: Path) -> None:
    """The checkpoint's timestamps at the first message of the second commit-log file (its flushes lagged)."""
    files = commitlog_files(store)
    assert len(files) >= 3, f"{store}: want three commit-log files, found {len(files)}"
    ts = store_timestamp(files[1], 0)
    write_checkpoint_times(store, ts, ts)


def checkpoint_ahead(store: Path) -> None:
    """The checkpoint's timestamps a day past every message (a clock that jumped, or a copied checkpoint)."""
    ts = store_timestamp(*_last_message(store)) + 86_400_000
    write_checkpoint_times(store, ts, ts)


def queue_behind(store: Path) -> None:
    """Queue 0's consume queue without its last 30 units (its flush lagged the commit log's); queue 1 complete, so
    the queues' maximum physical offset is still the log's end."""
    _drop_units(store, 0, 30)


def queues_behind(store: Path) -> None:
    """Every consume queue without its last 30 units: the queues' maximum physical offset falls behind the log."""
    for queue in range(QUEUES):
        _drop_units(store, queue, 30)


def _drop_units(store: Path, queue: int, count: int) -> None:
    cq = sorted((store / "consumequeue" / TOPIC / str(queue)).iterdir(), key=lambda p: int(p.name))
    units = []
    for path in cq:
        data = path.read_bytes()
        for pos in range(0, len(data) - 19, 20):
            offset, size = struct.unpack_from(">qi", data, pos)
            if offset >= 0 and size > 0:
                units.append((path, pos))
            else:
                break
    for path, pos in units[-count:]:
        patch(path, pos, bytes(20))


def _last_message(store: Path) -> tuple[Path, int]:
    path = last_file_with_messages(store)
    return path, messages_in(path)[-1][0]


DAMAGES: dict[str, Callable[[Path], None]] = {
    "none": no_damage, "torn-tail": torn_tail, "crc-flip": crc_flip, "zeroed-last-file": zero_last_file,
    "preallocated-next": preallocated_next, "checkpoint-behind": checkpoint_behind,
    "checkpoint-ahead": checkpoint_ahead, "queue-behind": queue_behind, "queues-behind": queues_behind,
}


def damaged_copy(base: Base, damage: str, dest: Path) -> Path:
    """A copy of the base store with `damage` applied (the base itself is left as it is)."""
    shutil.copytree(base.store, dest, symlinks=True)
    DAMAGES[damage](dest)
    os.sync()
    return dest


# ----- HA: a master and a slave of one broker group

@dataclass(frozen=True)
class HAOutcome:
    """Copies of both stores taken mid-scenario, and what the brokers did after the copy."""
    copies: dict[str, Path]          # n0, n1 -> store copy
    master: str                      # the master when the copy was taken
    master_end: int                  # its commit-log end then (admin API)
    slave_end_after: int             # the returning slave's commit-log end once it caught up (admin API)
    transfer_from: int | None        # classic: "master transfer data from N" in the master's log
    truncate_offset: int | None      # auto-switch: "truncateOffset is N" in the returning broker's log
    lost_sent: list[int]             # sequence numbers only the returning broker held


def wait_caught_up(c: RmqCluster, slave: str, master: str, timeout: float = 180) -> int:
    """The slave's commit-log end once it equals the master's (both read through their admin API)."""
    ends: list[int] = []

    def same() -> bool:
        ends[:] = [c.inspect(master, {}).max_offset, c.inspect(slave, {}).max_offset]
        return ends[0] == ends[1]
    wait_until(same, timeout, f"{slave} did not catch up with {master}", every=2.0)
    return ends[1]


def classic_slave_restarts(root: Path, version: str = "4.9.7") -> HAOutcome:
    """Classic master/slave (4.9, or 5.x without controller mode). The slave crashes (kill -9), the master takes
    300 more messages, the copy is taken (master frozen, slave down), then the slave restarts from its own disk:
    it reports its max offset and the master streams from there (classic HA never truncates). Premise: the
    master keeps running."""
    with running_rocketmq(RmqSpec(version, brokers=2), root / "cluster") as c:
        c.create_topic(TOPIC, QUEUES)
        c.send(TOPIC, (0, 1), 0, 200, BODY)
        wait_caught_up(c, "n1", "n0")
        c.brokers["n1"].kill()
        c.send(TOPIC, (0, 1), 200, 300, BODY)
        master_end = c.wait_dispatched("n0").max_offset
        with frozen(c, "n0"):
            copies = {name: c.copy_store(name, root / "copy" / name) for name in ("n0", "n1")}
        mark = len(c.brokers["n0"].output())
        c.start_broker("n1")
        after = wait_caught_up(c, "n1", "n0")
        found = re.findall(r"master transfer data from (\d+) to slave", c.brokers["n0"].output()[mark:])
        assert found, "the master logged no transfer to the restarted slave"
    return HAOutcome(copies, "n0", master_end, after, int(found[0]), None, [])


@contextmanager
def frozen(c: RmqCluster, *names: str) -> Iterator[None]:
    """The named running brokers SIGSTOPped for the duration (a consistent copy of a live store)."""
    nodes = [c.brokers[n] for n in names if c.brokers[n].running]
    for node in nodes:
        node.pause()
    try:
        yield
    finally:
        for node in nodes:
            node.resume()


def sync_state(c: RmqCluster) -> tuple[str, int]:
    """(master address, SyncStateSet size) as the controller reports them (`mqadmin getSyncStateSet`)."""
    out = c.mqadmin("getSyncStateSet", "-a", f"127.0.0.1:{c.controller_port}", "-b", GROUP)
    addr = re.search(r"#MasterAddr\t(\S*)", out)
    nums = re.search(r"#SyncStateSetNums\t(\d+)", out)
    return (addr.group(1) if addr else "", int(nums.group(1)) if nums else 0)


def wait_sync_state(c: RmqCluster, master: str, members: int, timeout: float = 180) -> None:
    want = (c.broker_addr(master), members)
    wait_until(lambda: sync_state(c) == want, timeout,
               f"controller: want master {want[0]} with {members} in sync, have {sync_state(c)}", every=2.0)


def start_controller_pair(c: RmqCluster, master: str, other: str) -> None:
    """Controller mode: the name server (the controller embedded), `master`'s broker first until the controller
    has elected it alone (a SyncStateSet of one), then `other`'s broker, which registers as its slave."""
    c.start_namesrv()
    c.start_broker(master)
    wait_sync_state(c, master, 1)
    c.start_broker(other)


def unclean_election(root: Path, version: str = "5.3.3") -> HAOutcome:
    """Controller mode (5.x, controller embedded in the name server, `enableElectUncleanMaster`). n0 master,
    n1 in sync; n1 freezes and leaves the SyncStateSet; n0 takes 60 messages alone and crashes (kill -9); n1
    resumes and is elected uncleanly, takes 40 messages; the copy is taken (n0 down, n1 frozen); then n0 restarts
    from its own disk, becomes a slave and truncates at the consistent point of the two epoch files.
    Premise: n1 keeps running as master; n0 restarts from its copy."""
    with running_rocketmq(RmqSpec(version, mode="controller", brokers=2), root / "cluster", start=False) as c:
        start_controller_pair(c, "n0", "n1")
        wait_sync_state(c, "n0", 2)
        c.create_topic(TOPIC, QUEUES, "n0")
        c.send(TOPIC, (0, 1), 0, 100, BODY)
        wait_caught_up(c, "n1", "n0")
        c.brokers["n1"].pause()
        wait_sync_state(c, "n0", 1)
        c.send(TOPIC, (0, 1), 100, 60, BODY)
        c.wait_dispatched("n0")
        c.brokers["n0"].kill()
        c.brokers["n1"].resume()
        wait_sync_state(c, "n1", 1)
        c.create_topic(TOPIC, QUEUES, "n1")
        c.send(TOPIC, (0, 1), 160, 40, BODY)
        master_end = c.wait_dispatched("n1").max_offset
        with frozen(c, "n1"):
            copies = {name: c.copy_store(name, root / "copy" / name) for name in ("n0", "n1")}
        c.start_broker("n0")
        found = c.brokers["n0"].wait_for_line(r"truncateOffset is (-?\d+)", 180)
        after = wait_caught_up(c, "n0", "n1")
    return HAOutcome(copies, "n1", master_end, after, None, int(found.group(1)), list(range(100, 160)))
