"""A message below its queue's end that no consume-queue unit names: another message holds its queue offset's slot.

The broker serves a queue by its units: a consumer pulling queue offset N gets the message the unit in slot N
names. A unit goes into a slot only once, apache/rocketmq tag rocketmq-all-5.3.3 (the same at rocketmq-all-4.9.7),
`store/src/main/java/org/apache/rocketmq/store/ConsumeQueue.java`, `ConsumeQueue#putMessagePositionInfo`: a unit
whose slot (`cqOffset * CQ_STORE_UNIT_SIZE`) lies below the queue file's written end is not written (the broker
logs `Build consume queue repeatedly, expectLogicOffset: ... currentLogicOffset: ...` and returns true, the dispatch
counts as done), and one at or below the queue's greatest physical offset neither (`Maybe try to build consume
queue repeatedly`). A message whose slot another message's unit already holds stays in the commit log, served by
no queue: `ls` does not count it as served and `doctor` names it, the slot's holder and both offsets.

How a log comes to hold one (5.3.3 DLedger, seen in the lab: tests/brokers/test_rocketmq_lab5.py, uncommitted
tail): the followers' abnormal restart drops their units from `processOffset` (dledger_restart), and the one elected
gives the dropped queue offset to its next message: two messages carry it; the restarted peers hold the new one in
the slot, the old one in none. The old leader, back, keeps the old one in the slot; its truncated uncommitted tail
left its units behind (a DLedger truncation does not truncate consume queues), so the next slot names the new
message (at the truncated entry's position, with its size) and the message carrying that next queue offset finds
the slot taken. Either way the units decide: replog reads them, per queue, between the queue's first and end.
Messages at or past the queue's end are not judged (the broker dispatches them at start); BatchCQ, LMQ and RocksDB
queues (5.x `storeType=defaultRocksDB`: units put by key) are not modelled here.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from replog.formats.errors import FormatError, UnreadableInput
from replog.formats.fileio import mapped
from replog.formats.findings import Finding, finding
from replog.formats.rocketmq.consumequeue import read_entries
from replog.recovery.rocketmq.store_model import MessageRef, QueueState, StoreModel


@dataclass(frozen=True)
class Unreached:
    """A message of `topic`/`queue_id` below the queue's end whose slot names another message (`holder`)."""

    message: MessageRef
    holder: MessageRef | None        # the message the unit in its slot names (None: not a message of the log)
    holder_offset: int | None        # the commit-log offset that unit names (None: the slot has no unit)


def unreached_messages(model: StoreModel) -> list[Unreached]:
    """Every dispatched message no unit of its queue names, though the queue has gone past its queue offset."""
    if model.layout.rocksdb:
        return []
    by_offset = model.by_offset()
    out: list[Unreached] = []
    for key, msgs in model.queue_heads().items():
        queue = model.queues.get(key)
        if queue is None or not queue.files or key in model.layout.batch_consume_queues:
            continue
        slots = queue_units(queue)
        named = set(slots.values())
        first = queue.min_offset or 0
        for m in msgs:
            if m.batch_size == 1 and first <= m.queue_offset < queue.max_offset and m.physical_offset not in named:
                held = slots.get(m.queue_offset)
                out.append(Unreached(m, None if held is None else by_offset.get(held), held))
    out.sort(key=lambda u: u.message.physical_offset)
    return out


def queue_units(queue: QueueState) -> dict[int, int]:
    """queue offset -> commit-log offset of each unit the queue's files hold up to its end (the first invalid unit
    ends a queue file, as the broker's `ConsumeQueue#recover` reads it); pre-blank filler is no unit."""
    out: dict[int, int] = {}
    for path in queue.files:
        try:
            with mapped(path) as buf:
                entries = read_entries(buf, file_start=int(path.name))
        except (UnreadableInput, FormatError, ValueError):
            continue
        for e in entries:
            if not e.is_valid:
                break
            if not e.is_pre_blank:
                out[e.queue_offset] = e.commitlog_offset
    return out


def unreached_per_queue(model: StoreModel) -> dict[tuple[str, int], int]:
    """How many messages of each (topic, queue id) no queue reaches."""
    out: dict[tuple[str, int], int] = {}
    for u in unreached_messages(model):
        key = (u.message.topic, u.message.queue_id)
        out[key] = out.get(key, 0) + 1
    return out


def reuse_findings(model: StoreModel) -> Iterator[Finding]:
    """ROCKETMQ_QUEUE_OFFSET_REUSED per message no queue reaches: its queue offset, its commit-log offset, the
    message the slot serves instead and which queue offset that one carries."""
    for u in unreached_messages(model):
        m, h = u.message, u.holder
        if h is None:
            instead = "no message of the log" if u.holder_offset is not None else "no unit"
        else:
            instead = (f"the message at {h.physical_offset}, which carries "
                       + ("the same queue offset" if h.queue_offset == m.queue_offset else
                          f"queue offset {h.queue_offset}"))
        yield finding("ROCKETMQ_QUEUE_OFFSET_REUSED", m.file, position=m.position, offset=m.physical_offset,
                      message=f"{m.topic}/{m.queue_id}: queue offset {m.queue_offset} of the message at "
                              f"{m.physical_offset} is served by {instead}: no queue reaches {m.physical_offset} "
                              f"(ConsumeQueue#putMessagePositionInfo writes a slot once: `Build consume queue "
                              f"repeatedly`)",
                      topic=m.topic, queue_id=m.queue_id, queue_offset=m.queue_offset,
                      commitlog_offsets=[x for x in (u.holder_offset, m.physical_offset) if x is not None],
                      kept_offset=u.holder_offset, kept_queue_offset=None if h is None else h.queue_offset,
                      unreached_offset=m.physical_offset)
