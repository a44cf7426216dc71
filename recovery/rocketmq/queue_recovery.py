"""The consume queues the broker's abnormal recovery leaves behind (docs/reference/rocketmq.md §3.3, §7.3-§7.5).

The broker does not rebuild its consume queues: it keeps what their own
recovery keeps and dispatches only what the commit-log scan reads, from the
scan's start file on. In order, as `DefaultMessageStore#recover` runs them:

1. `ConsumeQueue#recover` per queue: from the third file from the last (or the
   first), walk the 20-byte units while `offset >= 0 && size > 0`; the logical
   end is after the last valid one (`truncateDirtyFiles` drops later files), and
   `maxPhysicOffset` is offset + size of the last valid unit walked (-1 if none).
   Files before the walk's first are kept as they are.
2. `CommitLog#recoverAbnormally` dispatches every record it validates, from the
   start file on (`recovery_rule`), through `ConsumeQueue#putMessagePositionInfo`:
   a message with offset + size at or below the queue's `maxPhysicOffset` is taken
   as already built; with a queue offset > 0 below the queue's end it is a repeat;
   otherwise its unit is appended at the queue's end, even when its queue offset
   says elsewhere (the broker only logs "[BUG] logic queue order maybe wrong"). A multi-dispatched message then
   puts one unit in each LMQ queue it names, the same way at the offset its property names
   (`ConsumeQueue#multiDispatchLmqQueue`; replog assumes enableMultiDispatch when the store has LMQ queues). A
   queue's first file, created for a queue offset > 0, is filled with
   `fillPreBlank` units up to it. The unit's offset is the record's PHYSICALOFFSET
   field, as `checkMessageAndReturnSize` reads it.
3. `ConsumeQueueStore#truncateDirty(processOffset)`, only when some queue's
   `maxPhysicOffset` reaches `processOffset`: per queue, from the last file back,
   a file whose first unit points at or past it is deleted; in the first file kept,
   units are kept while valid and below it (the file's bytes are read as they are,
   past the logical end too).
4. 4.x only (`DefaultMessageStore#start`, tag rocketmq-all-4.9.8): the reput
   service starts at the largest `maxPhysicOffset` (at least the commit log's
   minimum) and dispatches from there; 5.x starts it at the confirm offset, the
   log's end (commit 5c350af174), so nothing more is dispatched.

Sources: apache/rocketmq `store/src/main/java/org/apache/rocketmq/store/ConsumeQueue.java`
(`recover`, `putMessagePositionInfo`, `fillPreBlank`, `truncateDirtyLogicFiles`),
`store/.../queue/ConsumeQueueStore.java#truncateDirty`, `store/.../CommitLog.java#recoverAbnormally`.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from replog.formats.errors import UnreadableInput
from replog.formats.fileio import atomic_write, mapped
from replog.formats.rocketmq.consumequeue import CQ_STORE_UNIT_SIZE, ENTRY, PRE_BLANK
from replog.formats.rocketmq.offset_names import file_name
from replog.recovery.rocketmq.lmq import LMQ_QUEUE_ID, is_lmq
from replog.recovery.rocketmq.store_model import MessageRef, StoreModel

UNIT = CQ_STORE_UNIT_SIZE
_PRE_BLANK = ENTRY.pack(*PRE_BLANK)
_ZERO = bytes(UNIT)


@dataclass
class QueueFile:
    """One CQ file as the broker maps it: the bytes on disk (if any) under the units written since."""

    start: int
    source: Path | None
    wrote: int = 0
    first_create: bool = False
    written: dict[int, bytes] = field(default_factory=dict)   # position -> unit written by dispatch

    def units(self, size: int) -> Iterator[tuple[int, int, int]]:
        """(position, offset, size) of every unit of the file as the mapped buffer holds it (the file
        mapped once per walk; zeros where nothing is)."""
        with contextlib.ExitStack() as stack:
            buf: bytes | memoryview = b""
            if self.source is not None:
                try:
                    buf = stack.enter_context(mapped(self.source))
                except UnreadableInput:
                    buf = b""
            for pos in range(0, size, UNIT):
                raw: bytes | memoryview | None = self.written.get(pos)
                if raw is None:
                    raw = buf[pos:pos + UNIT] if pos + UNIT <= len(buf) else _ZERO
                offset, length, _ = ENTRY.unpack(raw)
                yield pos, offset, length

    def content(self, size: int) -> bytes:
        """The file a recovered store holds: its units up to the logical end, zeros after."""
        out = bytearray(size)
        if self.source is not None and self.wrote:
            with mapped(self.source) as buf:
                out[:min(self.wrote, len(buf))] = buf[:min(self.wrote, len(buf))]
        for pos, raw in self.written.items():
            if pos < self.wrote:
                out[pos:pos + UNIT] = raw
        return bytes(out)


@dataclass
class Queue:
    """One queue's files and `maxPhysicOffset`, changed step by step as the broker changes them."""

    topic: str
    queue_id: int
    file_size: int
    files: list[QueueFile] = field(default_factory=list)
    max_physic_offset: int = -1
    kept: int = 0          # units kept from the files on disk (after step 1)
    dispatched: int = 0    # units appended by dispatch

    def recover(self) -> None:
        """Step 1, `ConsumeQueue#recover`."""
        if not self.files:
            return
        index = max(0, len(self.files) - 3)
        end = self.files[index].start
        for f in self.files[index:]:
            valid = 0
            for pos, offset, size in f.units(self.file_size):
                if not (offset >= 0 and size > 0):
                    break
                self.max_physic_offset, valid = offset + size, pos + UNIT
            end = f.start + valid
            if valid < self.file_size:
                break
        for f in self.files:
            f.wrote = min(self.file_size, max(0, end - f.start))
        self.files = [f for f in self.files if f.start <= end]
        self.kept = sum(f.wrote for f in self.files) // UNIT

    def put(self, m: MessageRef, queue_offset: int | None = None) -> None:
        """Step 2, `putMessagePositionInfo` of one dispatched message (at `queue_offset` for an LMQ unit)."""
        offset, cq_offset = m.offset_field, m.queue_offset if queue_offset is None else queue_offset
        if offset + m.size <= self.max_physic_offset:
            return
        expect = cq_offset * UNIT
        if not self.files:
            self.files.append(QueueFile(expect - expect % self.file_size, None, first_create=True))
        elif self.files[-1].wrote >= self.file_size:
            self.files.append(QueueFile(self.files[-1].start + self.file_size, None))
        last = self.files[-1]
        if last.first_create and cq_offset != 0 and last.wrote == 0:
            for pos in range(0, expect % self.file_size, UNIT):
                last.written[pos] = _PRE_BLANK
            last.wrote = expect % self.file_size
        if cq_offset != 0 and expect < last.start + last.wrote:
            return
        last.written[last.wrote] = ENTRY.pack(offset, m.size, m.cq_tags_code)
        last.wrote += UNIT
        self.max_physic_offset = offset + m.size
        self.dispatched += 1

    def truncate_dirty(self, process_offset: int) -> None:
        """Step 3 for this queue, `truncateDirtyLogicFiles`: the first unit of the last file is only
        compared with `process_offset`; later ones must also be valid."""
        self.max_physic_offset = process_offset
        while self.files:
            last = self.files[-1]
            last.wrote = 0
            for pos, offset, size in last.units(self.file_size):
                if pos == 0 and offset >= process_offset:
                    break
                if pos and (not (offset >= 0 and size > 0) or offset >= process_offset):
                    return
                last.wrote, self.max_physic_offset = pos + UNIT, offset + size
            else:
                return
            self.files.pop()

    def write(self, root: Path) -> list[Path]:
        d = root / "consumequeue" / self.topic / str(self.queue_id)
        d.mkdir(parents=True, exist_ok=True)
        out = []
        for f in self.files:
            atomic_write(d / file_name(f.start), f.content(self.file_size))
            out.append(d / file_name(f.start))
        return out


def broker_queues(model: StoreModel, file_size: int) -> dict[tuple[str, int], Queue]:
    """Every queue of the input after step 1, its files as they are on disk."""
    out = {}
    for key, state in model.queues.items():
        size = state.file_size if state.file_size > 0 and state.file_size % UNIT == 0 else file_size
        q = Queue(key[0], key[1], size, [QueueFile(int(p.name), p) for p in sorted(state.files, key=lambda p: p.name)])
        q.recover()
        out[key] = q
    return out


def _dispatch(queues: dict[tuple[str, int], Queue], messages: Iterable[MessageRef], file_size: int,
              multi_dispatch: bool = False) -> None:
    """`putMessagePositionInfoWrapper` per message: its own unit, then (`multi_dispatch`) one unit per LMQ queue its
    properties name, at the offset they name (`ConsumeQueue#multiDispatchLmqQueue`, `lmq`)."""
    for m in messages:
        if m.dispatched:
            for (topic, qid), queue_offset in ([((m.topic, m.queue_id), None)]
                                               + ([((n, LMQ_QUEUE_ID), o) for n, o in m.lmq] if multi_dispatch
                                                  else [])):
                if (topic, qid) not in queues:
                    queues[(topic, qid)] = Queue(topic, qid, file_size)
                queues[(topic, qid)].put(m, queue_offset)


def recover_queues(model: StoreModel, process_offset: int, file_size: int,
                   legacy_reput: bool) -> dict[tuple[str, int], Queue]:
    """Steps 1-4 on `model`: the queues the broker would hold after the recovery `model.abnormal` names.

    Step 2 is the abnormal recovery's. The normal recovery (no `abort`: the broker stopped cleanly) dispatches
    less: 4.x nothing (`CommitLog#recoverNormally`, tag rocketmq-all-4.9.7, only validates); 5.x the records
    whose PHYSICALOFFSET is strictly above the queues' maximum physical offset taken before the scan
    (`doDispatch = dispatchRequest.getCommitLogOffset() > maxPhyOffsetOfConsumeQueue`, `CommitLog#recoverNormally`,
    tag rocketmq-all-5.3.3), so the record that starts exactly there gets no unit. Real 4.9.7 and 5.3.3 brokers
    started on cleanly stopped stores confirmed both (tests/brokers/test_rocketmq_recover.py).
    """
    queues = broker_queues(model, file_size)
    queue_max = max((q.max_physic_offset for q in queues.values()), default=-1)
    kept = [m for m in model.messages if m.end <= process_offset and m.physical_offset >= model.scan_start]
    multi = any(is_lmq(topic) for topic, _ in queues)   # LMQ queues on disk: the broker ran with enableMultiDispatch
    if model.abnormal:
        _dispatch(queues, kept, file_size, multi)
    elif not legacy_reput:
        _dispatch(queues, (m for m in kept if m.physical_offset > queue_max), file_size, multi)
    kept = [m for m in model.messages if m.end <= process_offset]
    if max((q.max_physic_offset for q in queues.values()), default=-1) >= process_offset:
        for q in queues.values():
            q.truncate_dirty(process_offset)
    if legacy_reput:
        start = max(max((q.max_physic_offset for q in queues.values()), default=0), model.min_offset)
        _dispatch(queues, (m for m in kept if m.physical_offset >= start), file_size, multi)
    return queues
