"""`replog recover` on a damaged RocketMQ 5.3.3 `storeType=defaultRocksDB` store, and a broker started on its output.

`damaged_rocks_store` premise (stated): a lone defaultRocksDB master takes MESSAGES messages over QUEUES queues, a
group commits CONSUMED per queue, the broker persists the offsets (`flushConsumerOffsetInterval`, 5 s; we wait 12 s),
takes MESSAGES more and is stopped cleanly (SIGTERM: consume-queue and config databases closed, offsets persisted).
The stopped store is copied and the copy damaged: one byte of the body of the message FLIPPED_FROM_END from the end
flipped (bit rot), so its body CRC fails and the broker's recovery ends the log before it. That copy is replog's
input, read-only.

`serve` premise: a broker of the same version, same store type, with a new name server, starts on a copy of a
given store (replog's output), dispatches, and reports through its admin API every unit of TOPIC's queues
(`RmqInspect`: `queryConsumeQueue`) and the group's offsets (`RmqCommit progress`: `examineConsumeStats`); nothing
is sent to it. Then it is stopped.

`damaged_batch_store` and `serve_batches` do the same for a file-queue store holding a BatchCQ topic (premises in
their docstrings).
"""
from __future__ import annotations

import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from tests.brokers.rocketmq_lab import GROUP, Inspection, RmqSpec, running_rocketmq
from tests.brokers.rocketmq_pop_bcq import (
    BCQ_SPEC,
    BrokerUnit,
    create_batch_topic,
    send_batches,
    served_batches,
)
from tests.brokers.rocketmq_rocksdb import CONSUMED, CONSUMER, QUEUES, ROCKSDB, TOPIC, VERSION, start_rocks_broker
from tests.brokers.rocketmq_scenarios import last_file_with_messages, messages_in

MESSAGES = 40
FLIPPED_FROM_END = 6     # the 6th message from the end rots: it and the 5 after it are past the recovered end


@dataclass
class Damaged:
    store: Path                                  # the damaged copy (replog's input)
    committed: dict[tuple[str, int], int]        # what the consumer committed, per queue
    flipped_at: int                              # commit-log offset of the rotten message


@dataclass
class Served:
    inspection: Inspection
    progress: dict[tuple[str, int], tuple[int, int]]   # (topic, queue) -> (broker offset, consumer offset)
    log: str


BODY_AT = 92   # TOTALSIZE..PREPAREDTRANSACTIONOFFSET (IPv4 hosts) and BODYLENGTH: 88 + 4 bytes before the body


def flip_body(store: Path, from_end: int) -> int:
    """One byte of the body of the `from_end`-th message from the end flipped (the body CRC covers the body only,
    so the byte must be in it: 10 bytes into the 200-byte body); returns the message's commit-log offset."""
    path = last_file_with_messages(store)
    pos, _ = messages_in(path)[-from_end]
    with path.open("r+b") as f:
        f.seek(pos + BODY_AT + 10)
        byte = f.read(1)[0]
        f.seek(pos + BODY_AT + 10)
        f.write(bytes([byte ^ 0x5A]))
    return int(path.name) + pos


def damaged_rocks_store(root: Path) -> Damaged:
    """See the module docstring: sent, consumed, committed, stopped cleanly, copied, one body byte flipped."""
    with running_rocketmq(RmqSpec(VERSION, broker_config=ROCKSDB), root / "first") as c:
        c.create_topic(TOPIC, QUEUES)
        c.send(TOPIC, tuple(range(QUEUES)), 0, MESSAGES, 200)
        c.wait_dispatched("n0")
        out = c.java_source("RmqCommit.java", "consume", c.namesrv_addr, CONSUMER, TOPIC, GROUP,
                            ",".join(map(str, range(QUEUES))), str(CONSUMED))
        committed = {(t, int(q)): int(o) for t, q, o in re.findall(r"^COMMIT (\S+) (\d+) (\d+)$", out, re.M)}
        time.sleep(12)
        c.send(TOPIC, tuple(range(QUEUES)), MESSAGES, MESSAGES, 200)
        c.wait_dispatched("n0")
        c.stop("n0")
        store = c.copy_store("n0", root / "damaged")
    return Damaged(store, committed, flip_body(store, FLIPPED_FROM_END))


def serve(store: Path, root: Path) -> Served:
    """See the module docstring: a broker started on a copy of `store` reports its units and the group's offsets."""
    if root.exists():
        shutil.rmtree(root)
    return Served(*start_rocks_broker(store, root))


# ----- a file-queue store with a BatchCQ topic

@dataclass
class DamagedBatch:
    store: Path                 # the damaged copy (replog's input)
    flipped_at: int             # commit-log offset of the rotten batch record
    units: list[BrokerUnit]     # what the broker served before the damage


def damaged_batch_store(root: Path) -> DamagedBatch:
    """Premise: a lone 5.3.3 master (file consume queues, small batch consume-queue files) takes the batches of
    `rocketmq_pop_bcq.BATCHES` on the BatchCQ topic BATCH_TOPIC, serves them (RmqCqProbe), is stopped cleanly
    (SIGTERM); the store is copied and one body byte of the second-to-last batch record flipped (bit rot): the
    recovery ends the log before it, the last two batches of queue 1 are past the end."""
    with running_rocketmq(BCQ_SPEC, root / "first") as c:
        create_batch_topic(c)
        send_batches(c)
        c.wait_dispatched("n0")
        _, units, _ = served_batches(c)
        c.stop("n0")
        store = c.copy_store("n0", root / "damaged")
    return DamagedBatch(store, flip_body(store, 2), units)


def serve_batches(store: Path, root: Path) -> tuple[dict[int, tuple[int, int]], list[BrokerUnit], str]:
    """Premise: a broker of the same version and settings starts on a copy of `store` with a new name server and
    reports every batch unit it serves (RmqCqProbe); nothing is sent to it. Returns (ranges, units, its log)."""
    with running_rocketmq(BCQ_SPEC, root, start=False) as c:
        c.start_namesrv()
        c.use_store("n0", store)
        c.start_broker("n0")
        c.wait_dispatched("n0")
        ranges, units, _ = served_batches(c)
        log = c.brokers["n0"].out.read_text(errors="replace")
    return ranges, units, log
