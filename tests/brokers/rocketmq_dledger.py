"""RocketMQ DLedger lab scenarios (4.9.7, dledger 0.3.1.2): a Raft group of three brokers n0..n2
(`enableDLegerCommitLog`), whose commit log is `<storePathRootDir>/dledger-<selfId>/data` and `index`.

Each scenario takes copies of the three stores at the moment replog's `replay` predicts from (the returning peer
down, the others paused for the copy), then lets the returning peer rejoin and reads what the brokers did with their
own means: the runtime stats and consume-queue units of their admin API (`RmqInspect`), the leader from their role
change log lines (`DLedgerRoleChangeHandler`), the follower's truncation from its `[HandleDoTruncate]` line
(`DLedgerEntryPusher`). The brokers are stopped cleanly at the end so the tests can read their stores in place.
"""
from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.brokers.kafka_lab import wait_until
from tests.brokers.rocketmq_lab import GROUP, Inspection, RmqCluster, RmqSpec, running_rocketmq

TOPIC = "LabTopic"
QUEUES = 2
BODY = 200
_TRUNCATE = re.compile(r"\[HandleDoTruncate\] truncateIndex=(\d+) pos=(\d+)")
_DIRTY = re.compile(r"dledger maxPhyOffsetOfConsumeQueue\(\d+\) >= processOffset\((\d+)\), truncate dirty")
_DATA_END = re.compile(r"Recover data to the end entryIndex=-?\d+ processOffset=(\d+)")


@dataclass(frozen=True)
class DLedgerOutcome:
    """What the brokers did around the returning peer's restart, and the copies taken before it."""
    copies: dict[str, Path]                 # store copies taken while `returning` was down
    stores: dict[str, Path]                 # the live stores, every broker stopped cleanly at the end
    returning: str                          # the peer restarted from its store
    old_leader: str
    leader: str                             # the leader when `returning` came back (role-change log lines)
    term: int
    ends: dict[str, int]                    # commitLogMaxOffset each broker served once caught up
    inspections: dict[str, Inspection]
    truncations: list[tuple[int, int]]      # (truncateIndex, pos) of the returning peer's [HandleDoTruncate]
    sent_ok: list[int]                      # sequence numbers the brokers acknowledged
    failed: list[int]                       # sequence numbers whose send failed (the leader lost its quorum)
    held: dict[int, tuple[int, int, str]]   # the returning broker's message at each offset its CQs serve:
    #                                         offset -> (queue id, queue offset, keys), by `viewMessage`
    process_offset: int | None = None       # 5.2+: the returning peer's abnormal recovery end, from its log line
    #                                         (DLedgerCommitLog#dledgerRecoverAbnormally `truncate dirty logic files`)
    dirty: dict[str, tuple[int, int]] = field(default_factory=dict)   # 5.2+: per broker whose last start truncated
    #                                         its queues: (that processOffset, its data end: DLedgerMmapFileStore)


def send(c: RmqCluster, first: int, count: int, attempts: int) -> tuple[list[int], list[int]]:
    """(acknowledged, failed) sequence numbers of `count` sends round-robin over the topic's queues (DLedgerSend)."""
    out = c.java_source("DLedgerSend.java", c.namesrv_addr, TOPIC, GROUP, ",".join(map(str, range(QUEUES))),
                        str(first), str(count), str(BODY), str(attempts))
    return _results(out, count)


def _results(out: str, count: int) -> tuple[list[int], list[int]]:
    ok = [int(m[1]) for m in re.finditer(r"^SENT (\d+) SEND_OK ", out, re.M)]
    failed = [int(m[1]) for m in re.finditer(r"^(?:FAIL|SENT) (\d+)\b(?! SEND_OK)", out, re.M)]
    assert len(ok) + len(failed) == count, f"{len(ok)} + {len(failed)} results for {count} sends:\n{out[-2000:]}"
    return ok, failed


def send_after(c: RmqCluster, first: int, count: int, scene: Callable[[], object]) -> tuple[list[int], list[int]]:
    """`send` of one attempt each, by a producer that already knows the route when `scene` runs (the leader steps
    down some seconds after it loses its quorum: `DLedgerLeaderElector`, maxHeartBeatLeak x heartBeatTimeIntervalMs).
    The producer runs as a child process, killed on every way out."""
    go = c.root / f"go-{first}"
    cmd = c.java_program("DLedgerSend.java", c.namesrv_addr, TOPIC, GROUP, ",".join(map(str, range(QUEUES))),
                         str(first), str(count), str(BODY), "1", str(go))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL,
                            env={**os.environ, "ROCKETMQ_HOME": str(c.home)}, start_new_session=True)
    try:
        assert proc.stdout is not None
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if line.strip() == "READY":
                break
        assert lines and lines[-1].strip() == "READY", f"DLedgerSend never got the route:\n{''.join(lines)[-2000:]}"
        scene()
        go.touch()
        out = proc.communicate(timeout=300)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    return _results(out, count)


def _caught_up(c: RmqCluster, names: list[str], timeout: float = 120) -> dict[str, Inspection]:
    """Each broker's inspection once all of `names` serve the same commit-log end (their committed position)."""
    last: dict[str, Inspection] = {}

    def same() -> bool:
        for name in names:
            seen = c.inspect_when_ready(name, {TOPIC: QUEUES})
            if seen is None:
                return False
            last[name] = seen
        return len({i.max_offset for i in last.values()}) == 1
    wait_until(same, timeout, f"{names} never served the same commit-log end", every=2.0)
    return dict(last)


def _start_group(c: RmqCluster) -> str:
    c.start()
    leader, _ = c.dledger_leader()
    c.create_topic(TOPIC, QUEUES, broker=leader)
    for name in c.brokers:     # each peer needs the topic: the next leader serves it from its own topic config, which
        _wait_topic(c.store(name) / "config" / "topics.json", name)   # a follower copies (SlaveSynchronize)
    return leader


def _wait_topic(topics: Path, name: str) -> None:
    wait_until(lambda: topics.is_file() and TOPIC in topics.read_text(), 120, f"{name} never got {TOPIC}", every=1)


def _copy_all(c: RmqCluster, root: Path, down: str) -> dict[str, Path]:
    """Copies of every store: `down` is not running; the others are paused for their copy and resumed."""
    copies = {}
    for name, node in c.brokers.items():
        if name != down:
            node.pause()
        try:
            copies[name] = c.copy_store(name, root / "copies" / name)
        finally:
            node.resume()
    return copies


def _rejoin(c: RmqCluster, root: Path, returning: str, old_leader: str, sent: list[int],
            failed: list[int]) -> DLedgerOutcome:
    copies = _copy_all(c, root, returning)
    c.start_broker(returning)
    leader, term = c.dledger_leader()
    names = list(c.brokers)
    inspections = _caught_up(c, names)
    held = held_messages(c, returning, inspections[returning])
    log = c.brokers[returning].output_since_start()
    truncations = [(int(i), int(p)) for i, p in _TRUNCATE.findall(log)]
    dirty = {}
    for name in names:
        out = c.brokers[name].output_since_start()
        cut, end = _DIRTY.findall(out), _DATA_END.findall(out)
        if cut and end:
            dirty[name] = (int(cut[-1]), int(end[-1]))
    for name in reversed(names):
        c.stop(name)
    return DLedgerOutcome(copies, {n: c.store(n) for n in names}, returning, old_leader, leader, term,
                          {n: i.max_offset for n, i in inspections.items()}, inspections, truncations, sent, failed,
                          held, dirty[returning][0] if returning in dirty else None, dirty)


def held_messages(c: RmqCluster, name: str, inspection: Inspection) -> dict[int, tuple[int, int, str]]:
    """Which message broker `name` holds at each offset its consume queues serve (DLedgerKeys: `viewMessage`
    addressed to that broker), so a message at a reused offset is told apart from the one it replaced."""
    offsets = sorted({off for units in inspection.units.values() for _, off, _, _ in units})
    out = c.java_source("DLedgerKeys.java", c.namesrv_addr, c.broker_addr(name), TOPIC, ",".join(map(str, offsets)))
    held = {int(o): (int(q), int(qo), keys) for o, q, qo, keys in
            re.findall(r"^MSG (\d+) (\d+) (\d+) (\S*)$", out, re.M)}
    assert len(held) == len(offsets), f"{name} answered for {len(held)} of {len(offsets)} offsets:\n{out[-2000:]}"
    return held


def leader_crash(root: Path, version: str = "4.9.7") -> DLedgerOutcome:
    """The leader is killed (kill -9) after 250 acknowledged sends; the two others elect a new leader, which takes
    150 more (the log spans two 128 KiB data files); the old leader then restarts from its own store and follows.
    Premise: the cluster keeps running; the old leader restarts from its store as the kill left it (its page cache
    intact: no flush is lost); the copies are taken before it restarts."""
    with running_rocketmq(RmqSpec(version, brokers=3, dledger=True), root / "cluster", start=False) as c:
        old = _start_group(c)
        ok, failed = send(c, 0, 250, attempts=30)
        _caught_up(c, list(c.brokers))
        c.brokers[old].kill()
        more_ok, more_failed = send(c, 250, 150, attempts=30)
        return _rejoin(c, root, old, old, ok + more_ok, failed + more_failed)


def uncommitted_tail(root: Path, version: str = "4.9.7") -> DLedgerOutcome:
    """Both followers are killed after 280 acknowledged sends; the lone leader appends what it is sent next but
    never reaches its quorum (each send fails after maxWaitAckTimeMs) and is killed too. The followers restart,
    elect a leader among themselves, which takes 100 more; the old leader then restarts and must lose its tail.
    Premise: every kill leaves the page cache (no flush lost); the followers restart from their stores; the copies
    are taken while the old leader is down."""
    with running_rocketmq(RmqSpec(version, brokers=3, dledger=True), root / "cluster", start=False) as c:
        old = _start_group(c)
        ok, failed = send(c, 0, 280, attempts=30)
        _caught_up(c, list(c.brokers))
        followers = [n for n in c.brokers if n != old]
        tail_ok, tail_failed = send_after(c, 280, 3, lambda: [c.brokers[name].kill() for name in followers])
        c.brokers[old].kill()
        for name in followers:
            c.start_broker(name)
        more_ok, more_failed = send(c, 283, 100, attempts=30)
        return _rejoin(c, root, old, old, ok + tail_ok + more_ok, failed + tail_failed + more_failed)
