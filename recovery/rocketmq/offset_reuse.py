"""A queue offset carried by two messages of one queue: the consume queue indexes one of them, no queue the other.

The broker's rule, apache/rocketmq tag rocketmq-all-5.3.3 (the same at rocketmq-all-4.9.7),
`store/src/main/java/org/apache/rocketmq/store/ConsumeQueue.java`, `ConsumeQueue#putMessagePositionInfo`: a unit
whose slot (`cqOffset * CQ_STORE_UNIT_SIZE`) lies below the queue file's written end is not written; the broker
logs `Build consume queue repeatedly, expectLogicOffset: ... currentLogicOffset: ...` and returns true (the
dispatch counts as done). So the queue keeps the unit already in that slot, and the other message stays in the
commit log, served by no queue: a consumer never gets it and `ls` must not count it as served.

How a log comes to hold it (5.3.3 DLedger, seen in the lab: tests/brokers/test_rocketmq_lab5.py, uncommitted
tail): a follower's abnormal restart drops its consume-queue units from `processOffset` (dledger_restart); once
elected it rebuilds its queue offsets from those queues and gives the dropped queue offsets to its next messages.
Every peer then replicates both messages. Which one a peer's queue keeps depends on what that peer dispatched
first: a peer that had indexed the old message keeps it and skips the new one; the restarted peers dropped the old
unit and index the new one. replog reads the unit in the slot; when the queue has none there (a queue the broker
rebuilds from the log), the dispatch order decides: the first in the log is written, the later ones skipped.
RocksDB consume queues (5.x `storeType=defaultRocksDB`) put units by key instead: not modelled, no finding.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from replog.formats.errors import FormatError, UnreadableInput
from replog.formats.fileio import mapped
from replog.formats.findings import Finding, finding
from replog.formats.rocketmq.consumequeue import CQ_STORE_UNIT_SIZE, read_entry
from replog.recovery.rocketmq.store_model import MessageRef, QueueState, StoreModel

Slot = tuple[str, int, int]      # (topic, queue id, queue offset)


@dataclass(frozen=True)
class OffsetReuse:
    """One queue offset several messages of one queue carry: `kept` is the one the queue indexes."""

    topic: str
    queue_id: int
    queue_offset: int
    kept: MessageRef
    unreached: tuple[MessageRef, ...]     # in the log, in no queue
    by_unit: bool                         # `kept` read from the queue's unit (else: the first in the log)


def reused_offsets(model: StoreModel) -> list[OffsetReuse]:
    """Every queue offset two or more dispatched messages of one queue carry, in log order of the second."""
    if model.layout.rocksdb:
        return []
    first: dict[Slot, MessageRef] = {}
    repeated: dict[Slot, list[MessageRef]] = {}
    for m in model.messages:
        if not m.dispatched or m.batch_size != 1:
            continue
        slot = (m.topic, m.queue_id, m.queue_offset)
        held = first.setdefault(slot, m)
        if held is not m:
            repeated.setdefault(slot, [held]).append(m)
    return [_resolve(model, slot, msgs) for slot, msgs in repeated.items()]


def unreached_count(model: StoreModel) -> int:
    """Messages of the log no queue reaches because another message holds their queue offset."""
    return sum(len(r.unreached) for r in reused_offsets(model))


def _resolve(model: StoreModel, slot: Slot, msgs: list[MessageRef]) -> OffsetReuse:
    unit = unit_offset(model.queues.get(slot[:2]), slot[2])
    kept = next((m for m in msgs if m.physical_offset == unit), None)
    chosen = kept or msgs[0]
    return OffsetReuse(*slot, chosen, tuple(m for m in msgs if m is not chosen), kept is not None)


def unit_offset(queue: QueueState | None, queue_offset: int) -> int | None:
    """The commit-log offset the unit in slot `queue_offset` names; None when the queue has no unit there."""
    if queue is None:
        return None
    pos = queue_offset * CQ_STORE_UNIT_SIZE
    for path in queue.files:
        start = int(path.name) if path.name.isdigit() else -1
        try:
            with mapped(path) as buf:
                if not start <= pos < start + len(buf):
                    continue
                e = read_entry(buf, pos - start, file_start=start)
        except (UnreadableInput, FormatError):
            return None
        return e.commitlog_offset if e.is_valid and not e.is_pre_blank else None
    return None


def reuse_findings(model: StoreModel) -> Iterator[Finding]:
    """ROCKETMQ_QUEUE_OFFSET_REUSED per reused queue offset: where, every commit-log offset, which one is served."""
    for r in reused_offsets(model):
        how = ("its consume-queue unit names it" if r.by_unit else
               "the queue has no unit there: the broker's dispatch writes the first and skips the rest")
        others = ", ".join(str(m.physical_offset) for m in r.unreached)
        yield finding("ROCKETMQ_QUEUE_OFFSET_REUSED", r.unreached[0].file, position=r.unreached[0].position,
                      offset=r.unreached[0].physical_offset,
                      message=f"{r.topic}/{r.queue_id}: queue offset {r.queue_offset} is carried by the messages at "
                              f"commit-log offsets {r.kept.physical_offset} and {others}; the queue serves "
                              f"{r.kept.physical_offset} ({how}), no queue reaches {others} "
                              f"(ConsumeQueue#putMessagePositionInfo: `Build consume queue repeatedly`)",
                      topic=r.topic, queue_id=r.queue_id, queue_offset=r.queue_offset,
                      commitlog_offsets=sorted([r.kept.physical_offset, *(m.physical_offset for m in r.unreached)]),
                      kept_offset=r.kept.physical_offset,
                      unreached_offsets=[m.physical_offset for m in r.unreached], kept_by_unit=r.by_unit)
