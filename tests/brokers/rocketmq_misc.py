"""RocketMQ lab scenarios for the smaller store features: LMQ (multi-dispatch) and transactional messages.

What the broker did is read through its own admin API (`RmqLmqTxn.java view`: queryConsumeQueue for every unit a
queue serves, then viewMessage for the message each unit points at, read back by the broker), never with replog's
parsers.
"""
from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.brokers.rocketmq_lab import GROUP, RmqCluster, RmqSpec, running_rocketmq

LMQ_TOPIC, TXN_TOPIC = "LmqTopic", "TxnTopic"
HALF_TOPIC, OP_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC"
LMQ_QUEUES = ("%LMQ%a", "%LMQ%b")
LMQ_GROUP = "%LMQ%a"            # an LMQ group: its offset goes to lmqOffsetTable (LmqConsumerOffsetManager)
LMQ_COMMITTED = 3
LMQ_DROPPED = 2                 # LMQ units the damaged copy loses: the restarted broker's recovery re-dispatches them
LMQ_MESSAGES, TRANSACTIONS, LATE_TRANSACTIONS = 8, 9, 3
# enableLmq/enableMultiDispatch: CommitLog#multiDispatch and ConsumeQueue#multiDispatchLmqQueue run;
# transactionCheckInterval 10 min: the check service does not re-put half messages while the scenario reads them.
LMQ_TXN_CONFIG = {"enableLmq": "true", "enableMultiDispatch": "true", "transactionCheckInterval": "600000"}


@dataclass
class Served:
    """One message a queue serves: its unit and what the broker read back at the unit's offset."""
    index: int
    physical_offset: int
    size: int
    sys_flag: int
    prepared_offset: int
    tags: str
    body: str
    props: dict[str, str] = field(default_factory=dict)


QueueView = dict[tuple[str, int], list[Served]]


@dataclass(frozen=True)
class LmqTxnOutcome:
    """Copies taken after a clean stop, the damaged copy, and what the broker served before and after."""
    clean: Path                      # the store after a clean stop (checkpoint flushed, abort absent)
    damaged: Path                    # the clean copy: commit log cut at the last op message, %LMQ%a units dropped
    cut_at: int                      # commit-log offset of that cut
    before: QueueView                # served by the broker before the stop
    after: QueueView                 # served by a broker started on the damaged copy
    half_offsets: list[int]          # the half messages' queue offsets (RMQ_SYS_TRANS_HALF_TOPIC/0)


def view(c: RmqCluster, queues: list[tuple[str, int]]) -> QueueView:
    """What the broker serves in each queue (one JVM for all of them)."""
    out = c.java_source("RmqLmqTxn.java", "view", c.namesrv_addr, c.broker_addr("n0"),
                        ",".join(f"{t}:{q}" for t, q in queues))
    served: dict[tuple[str, int], dict[int, Served]] = {q: {} for q in queues}
    for m in re.finditer(r"^MSG (\S+) (\d+) (\d+) (-?\d+) (\d+) (-?\d+) (-?\d+) (\S+) (\S+)$", out, re.M):
        served[(m[1], int(m[2]))][int(m[3])] = Served(int(m[3]), int(m[4]), int(m[5]), int(m[6]), int(m[7]), m[8],
                                                     m[9])
    for m in re.finditer(r"^PROP (\S+) (\d+) (\d+) (\S+) (\S*)$", out, re.M):
        served[(m[1], int(m[2]))][int(m[3])].props[m[4]] = m[5]
    return {q: [units[i] for i in sorted(units)] for q, units in served.items()}


def view_all(c: RmqCluster) -> QueueView:
    return view(c, [(LMQ_TOPIC, 0), (TXN_TOPIC, 0), (TXN_TOPIC, 1), (HALF_TOPIC, 0), (OP_TOPIC, 0),
                    *((q, 0) for q in LMQ_QUEUES)])


def removed_halves(served: list[Served]) -> set[int]:
    """Half queue offsets the op messages served mark removed (tag "d", body "o1,o2,...",
    `TransactionalMessageServiceImpl#fillOpRemoveMap`)."""
    return {int(o) for s in served if s.tags == "d" for o in s.body.split(",") if o.isdigit()}


def _wait_ops(c: RmqCluster, halves: int, timeout: float = 90) -> None:
    """Op messages are written in batches (`TransactionalOpBatchService`, every transactionOpBatchInterval):
    wait until they mark every half message."""
    deadline = time.monotonic() + timeout
    while len(removed_halves(view(c, [(OP_TOPIC, 0)])[(OP_TOPIC, 0)])) < halves:
        assert time.monotonic() < deadline, "the broker wrote no op message for some half messages"
        time.sleep(2)


def cut_commitlog(store: Path, offset: int) -> None:
    """Zero the commit log from `offset` (a write lost by a crash) and leave `abort` behind (the crash)."""
    files = sorted((store / "commitlog").iterdir(), key=lambda p: int(p.name))
    for path in files:
        start, size = int(path.name), path.stat().st_size
        if start + size <= offset:
            continue
        if start >= offset:
            path.unlink()
            continue
        with path.open("r+b") as f:
            f.seek(offset - start)
            f.write(bytes(size - (offset - start)))
    (store / "abort").write_bytes(b"")
    os.sync()


def drop_lmq_units(store: Path, queue: str, count: int) -> None:
    """Zero the last `count` units of an LMQ consume queue (its flush lagged the commit log's)."""
    path = store / "consumequeue" / queue / "0" / f"{0:020d}"
    data = bytearray(path.read_bytes())
    written = next(i for i in range(0, len(data), 20) if not any(data[i:i + 20]))
    data[written - 20 * count:written] = bytes(20 * count)
    path.write_bytes(bytes(data))


def lmq_and_transactions(root: Path, version: str = "5.3.3") -> LmqTxnOutcome:
    """Premise: one 5.3.3 master with enableLmq and enableMultiDispatch. LMQ messages (INNER_MULTI_DISPATCH to
    %LMQ%a, and %LMQ%b for every other one) are sent, an LMQ group's offset is committed, then transactions (every
    third rolled back) in two rounds, each waited for until its op batch is written; the broker is stopped cleanly
    (checkpoint and config files flushed, abort removed) and its store copied. The damaged copy cuts the commit
    log at the last op message (a crash that lost the second op batch: abort present) and drops the last units of
    %LMQ%a (its consume queue's flush lagged); a broker of the same
    version is started on it and read back, nothing sent to it (transactionCheckInterval 10 min: no check runs)."""
    spec = RmqSpec(version, broker_config=LMQ_TXN_CONFIG)
    with running_rocketmq(spec, root / "lab") as c:
        c.create_topic(LMQ_TOPIC, 1)
        c.create_topic(TXN_TOPIC, 2)
        out = c.java_source("RmqLmqTxn.java", "lmq", c.namesrv_addr, LMQ_TOPIC, GROUP, str(LMQ_MESSAGES))
        assert out.count(" SEND_OK ") == LMQ_MESSAGES, f"LMQ sends failed:\n{out[-2000:]}"
        c.java_source("RmqLmqTxn.java", "offset", c.namesrv_addr, c.broker_addr("n0"), LMQ_GROUP, LMQ_QUEUES[0],
                      "0", str(LMQ_COMMITTED))
        first = 0
        for count in (TRANSACTIONS, LATE_TRANSACTIONS):   # two op batches: the cut loses the second one only
            out = c.java_source("RmqLmqTxn.java", "txn", c.namesrv_addr, TXN_TOPIC, str(first), str(count))
            assert out.count(" SEND_OK ") == count, f"transactional sends failed:\n{out[-2000:]}"
            first += count
            _wait_ops(c, first)
        c.wait_dispatched("n0")
        before = view_all(c)
        c.stop("n0")
        clean = c.copy_store("n0", root / "clean")
        damaged = c.copy_store("n0", root / "damaged")
        cut_at = max(s.physical_offset for s in before[(OP_TOPIC, 0)])
        cut_commitlog(damaged, cut_at)
        drop_lmq_units(damaged, LMQ_QUEUES[0], LMQ_DROPPED)
        c.use_store("n0", damaged)
        c.start_broker("n0")
        c.wait_dispatched("n0")
        after = view_all(c)   # the cluster's exit kills it: nothing on its store is read after this
    return LmqTxnOutcome(clean, damaged, cut_at, before, after, [s.index for s in before[(HALF_TOPIC, 0)]])
