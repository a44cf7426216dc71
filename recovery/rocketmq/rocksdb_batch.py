"""A BatchCQ topic (`queue.type=BatchCQ`) in a `storeType=defaultRocksDB` store: what the 5.3.3 broker does with it.

The broker accepts such a topic and stores each batch as ONE inner-batch commit-log message (INNER_NUM messages,
`SendMessageProcessor#sendBatchMessage`), but it keeps every queue, BatchCQ ones too, in the RocksDB consume queue
(`RocksDBConsumeQueueStore#findOrCreateConsumeQueue` creates only `RocksDBConsumeQueue`), tag rocketmq-all-5.3.3:

- One unit per batch, keyed at the batch's base offset (`RocksDBConsumeQueueTable#buildAndPutCQByteBuffer`, the
  dispatch's queue offset), while the queue's offsets advance by the batch size (`RocksDBConsumeQueue#
  increaseQueueOffset` with INNER_NUM): a batch of n leaves the n-1 keys after its base empty.
- Reads stop at the first missing key (`RocksDBConsumeQueueTable#rangeQuery` breaks on a null value): a consumer
  pulling from the queue's served min offset reads units while keys follow each other and then gets NO_NEW_MSG at
  the first gap, for ever; `queryConsumeQueue` (`mqadmin queryCq`) fails with a NullPointerException
  (`AdminBrokerProcessor#queryConsumeQueue` on the null unit of `LargeRocksDBConsumeQueueIterator#next`).
- The offset table's "max" entry is the last unit's key, so after a restart the next offset is that base + 1
  (`RocksDBConsumeQueue#assignQueueOffset` -> `getMaxOffsetInQueue`): new messages get offsets the last batch's
  inner messages already have.
- The served min offset is the offset table's "min" entry (`RocksDBConsumeQueueOffsetTable#getMinCqOffset`), found
  by a binary search over keys that are not contiguous; it can land inside the queue (9 in the lab, not 0).

Seen in the lab (tests/brokers/test_rocketmq_rocks_more.py): batches of 3,1,5,2,4,6 on queue 0, min 9, max 16, a
pull consumer got offsets 9 and 10 and then NO_NEW_MSG; after a restart one more batch of 2 was given offset 16.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from replog.formats.findings import Finding, Severity, finding
from replog.formats.rocketmq.rocksdb_store import RocksCQUnit
from replog.recovery.rocketmq.store_model import MessageRef

CODE = "ROCKETMQ_ROCKSDB_BATCH_CQ"


@dataclass
class BatchQueue:
    """A queue's units as they stream by in key order, summed: what a consumer pulling from the served min offset
    reaches (units while the keys follow each other), and the last batch (counters only: memory stays flat)."""

    topic: str
    queue_id: int
    served_min: int | None                 # the offset table's "min" entry; None: the first unit's key
    units: int = 0
    messages: int = 0
    batched: bool = False
    next_key: int | None = None            # the key a consumer reads next; None once it stopped at a gap
    reached_units: int = 0
    reached: int = 0
    last: tuple[int, int] = (0, 0)         # (key, messages) of the last unit

    def add(self, key: int, n: int) -> None:
        """One unit at `key` holding a batch of `n` messages, keys ascending."""
        if self.units == 0:
            self.served_min = key if self.served_min is None else self.served_min
            self.next_key = self.served_min
        self.units, self.messages, self.batched, self.last = self.units + 1, self.messages + n, \
            self.batched or n > 1, (key, n)
        if self.next_key is not None and key > self.next_key:
            self.next_key = None           # the key the consumer wants is missing: it stops here
        elif key == self.next_key:
            self.reached_units, self.reached, self.next_key = self.reached_units + 1, self.reached + n, key + 1


def batch_gap(prev: RocksCQUnit, prev_msg: MessageRef | None, unit: RocksCQUnit) -> bool:
    """Whether `unit` follows `prev` across exactly the keys the broker leaves empty after a batch."""
    return prev_msg is not None and prev_msg.batch_size > 1 and unit.queue_offset == prev.queue_offset + \
        prev_msg.batch_size


def batch_queue_findings(q: BatchQueue, path: str) -> Iterator[Finding]:
    """One finding per queue laid out in batches: which messages a consumer cannot reach, and the offsets a
    restarted broker gives again (module docstring)."""
    if not q.batched:
        return
    start = q.served_min if q.served_min is not None else 0   # set by the first unit
    last_key, last_n = q.last
    lost = q.messages - q.reached
    reuse = (f"; after a restart the broker's next offset is {last_key + 1} (the offset table's max + 1), inside "
             f"the last batch {last_key}..{last_key + last_n - 1}: new messages would take offsets "
             f"{last_key + 1}..{last_key + last_n - 1} again") if last_n > 1 else ""
    yield finding(CODE, path, offset=start, severity=Severity.ERROR if lost else Severity.WARNING,
                  message=f"{q.topic}/{q.queue_id}: a BatchCQ topic in a RocksDB store: the broker keys one unit "
                          f"per batch at its base offset and leaves the other keys empty ({q.units} units, "
                          f"{q.messages} messages); its reads stop at the first missing key, so a consumer from the "
                          f"served min offset {start} gets {q.reached} messages ({q.reached_units} units) and "
                          f"{lost} are unreachable{reuse}",
                  topic=q.topic, queue_id=q.queue_id, messages=q.messages, reachable=q.reached, unreachable=lost,
                  served_min_offset=start, next_offset_after_restart=last_key + 1)
