"""Timer messages (RocketMQ 5.x `timerWheelEnable`, on by default): the timer files against the commit log, the
scheduled deliveries a truncation loses, and the timer files a recovered store needs.

A timer message is stored in `rmq_sys_wheel_timer` queue 0 (its topic and queue in the REAL_TOPIC / REAL_QID
properties, its delivery time in TIMER_OUT_MS). `TimerMessageStore` (tag rocketmq-all-5.3.3) moves the queue into
the timer log (`enqueue` -> `doEnqueue`: one 52-byte unit pointing at the message, chained per wheel slot), and
when a slot's time comes puts each message back into its real topic (`dequeue`). `config/timercheck` says how far
it got: queue offsets below `lastTimerQueueOffset` are in the timer log, slots before `lastReadTimeMs` delivered.
A store without these files makes the broker start the timer queue from offset 0 (`recover`: `currQueueOffset =
timerCheckpoint.getLastTimerQueueOffset()`, 0 for a new checkpoint): every timer message still in the commit log is
enqueued again and those already delivered are delivered twice.

At start the broker checks the timer log from one file before `lastTimerLogFlushPos` and truncates it at the first
unit that is not a unit (`recoverAndRevise(checkTimerLog=true)`, `truncateDirtyFiles`); it revises the queue
offset and clamps it to `rmq_sys_wheel_timer`'s consume queue (`recover`: `currQueueOffset =
cq.getMaxOffsetInQueue()` when past it). It does not look at the commit log's end: a unit whose message a
truncation removed is skipped when its slot comes (`dequeue_get_msg_miss`), so that delivery is lost.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from replog.formats.errors import FormatError, UnreadableInput
from replog.formats.fileio import atomic_file, atomic_write, mapped, read_small
from replog.formats.findings import Finding, Severity, finding, from_unreadable
from replog.formats.rocketmq.commitlog import java_string_hash, read_message
from replog.formats.rocketmq.timer_check import (
    CHECK_NAME,
    METRICS_NAME,
    TimerCheckpoint,
    build_timer_checkpoint,
    check_timer_checkpoint,
    parse_timer_checkpoint,
    parse_timer_metrics,
)
from replog.formats.rocketmq.timer_log import DIR_NAME, UNIT_SIZE, TimerUnit, read_unit, timerlog_files, walk_timerlog
from replog.formats.rocketmq.timer_wheel import (
    DEFAULT_PRECISION_MS,
    PRECISIONS_MS,
    SLOT_SIZE,
    WHEEL_SIZE,
    Slot,
    all_num,
    written_slots,
)
from replog.formats.rocketmq.timer_wheel import (
    FILE_NAME as WHEEL_NAME,
)
from replog.recovery.rocketmq.store_model import TIMER_TOPIC, MessageRef, StoreModel

_LOST = "ROCKETMQ_TIMER_MESSAGE_LOST"
_UNIT = "ROCKETMQ_TIMER_LOG_INVALID"
_WHEEL = "ROCKETMQ_TIMER_WHEEL_INVALID"
_CHECK = "ROCKETMQ_TIMER_CHECKPOINT_INVALID"


@dataclass
class TimerFiles:
    """The timer files of a store root (None / empty when absent)."""

    root: Path
    wheel: Path | None
    log_files: list[tuple[int, Path]]
    check: Path | None
    metrics: Path | None
    metrics_bak: Path | None = None     # TimerMetrics#persist keeps the previous version (ConfigManager's fallback)

    @property
    def present(self) -> bool:
        return any((self.wheel, self.log_files, self.check, self.metrics))

    @property
    def paths(self) -> list[Path]:
        return [p for p in (self.wheel, *(p for _, p in self.log_files), self.check, self.metrics, self.metrics_bak)
                if p is not None]

    def checkpoint(self) -> TimerCheckpoint | None:
        if self.check is None:
            return None
        try:
            return parse_timer_checkpoint(read_small(self.check, limit=1 << 20))
        except (FormatError, UnreadableInput):
            return None


def timer_files(root: str | os.PathLike[str]) -> TimerFiles:
    r = Path(root)

    def opt(p: Path) -> Path | None:
        return p if p.is_file() else None
    return TimerFiles(r, opt(r / WHEEL_NAME), timerlog_files(r / DIR_NAME), opt(r / "config" / CHECK_NAME),
                      opt(r / "config" / METRICS_NAME), opt(r / "config" / (METRICS_NAME + ".bak")))


# --- the timer message a unit or a lost record is --------------------------------------------------------------

@dataclass(frozen=True)
class ScheduledDelivery:
    """A timer message not yet delivered: where it is, where and when it goes."""

    physical_offset: int
    size: int
    queue_offset: int
    real_topic: str | None
    real_queue_id: int | None
    deliver_ms: int | None
    unique_key: str | None
    keys: list[str]
    enqueued: bool            # already moved into the timer log (queue offset below lastTimerQueueOffset)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class _Props:
    """Properties of commit-log records, read through maps kept open for one pass."""

    def __init__(self, stack: ExitStack) -> None:
        self.stack = stack
        self.maps: dict[str, memoryview] = {}

    def of(self, m: MessageRef) -> dict[str, str]:
        """The record's properties; {} when its file cannot be read or the record not decoded."""
        try:
            buf = self.maps.get(m.file)
            if buf is None:
                buf = self.maps[m.file] = self.stack.enter_context(mapped(m.file))
            return read_message(buf, m.position, check_crc=False).properties
        except (FormatError, UnreadableInput):
            return {}


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def pending(m: MessageRef, props: dict[str, str], cp: TimerCheckpoint | None) -> bool:
    """Not delivered yet by the checkpoint's account: not in the timer log yet, or due at or after the read time
    (`lastReadTimeMs`: the dequeue has delivered every slot before it). Without a checkpoint every one counts."""
    if cp is None or m.queue_offset >= cp.last_timer_queue_offset:
        return True
    due = _int(props.get("TIMER_OUT_MS"))
    return due is None or due >= cp.last_read_time_ms


def lost_deliveries(model: StoreModel, lost: list[MessageRef]) -> list[ScheduledDelivery]:
    """The timer messages among `lost` (records a truncation or recovery removes) not delivered yet."""
    timers = [m for m in lost if m.topic == TIMER_TOPIC]
    if not timers:
        return []
    cp = timer_files(model.layout.root).checkpoint()
    out = []
    with ExitStack() as stack:
        props = _Props(stack)
        for m in timers:
            p = props.of(m)
            if pending(m, p, cp):
                out.append(ScheduledDelivery(m.physical_offset, m.size, m.queue_offset, p.get("REAL_TOPIC"),
                                             _int(p.get("REAL_QID")), _int(p.get("TIMER_OUT_MS")),
                                             p.get("UNIQ_KEY"), [k for k in m.user_keys() if k != p.get("UNIQ_KEY")],
                                             cp is not None and m.queue_offset < cp.last_timer_queue_offset))
    return out


def pending_deliveries(model: StoreModel) -> list[ScheduledDelivery]:
    """Every timer message of the recovered log not delivered yet."""
    return lost_deliveries(model, model.messages)


def lost_summary(deliveries: list[ScheduledDelivery]) -> dict[str, Any]:
    """The additive JSON member `lost_scheduled_deliveries`."""
    return {"count": len(deliveries),
            "topics": sorted({d.real_topic for d in deliveries if d.real_topic is not None}),
            "deliveries": [d.to_dict() for d in deliveries[:1000]]}


# --- doctor ------------------------------------------------------------------------------------------------------

@dataclass
class _LogView:
    """Random access to timer-log units by position (slot chains), over maps kept open."""

    files: dict[int, Path]
    file_size: int
    stack: ExitStack
    maps: dict[int, memoryview] = field(default_factory=dict)

    def unit(self, pos: int) -> TimerUnit | None:
        start = pos - pos % self.file_size if self.file_size else 0
        path = self.files.get(start)
        if path is None or pos < 0 or (pos - start) % UNIT_SIZE:
            return None
        buf = self.maps.get(start)
        if buf is None:
            try:
                buf = self.maps[start] = self.stack.enter_context(mapped(path))
            except UnreadableInput:
                return None
        at = pos - start
        if at + UNIT_SIZE > len(buf):
            return None
        return read_unit(buf, at, file_start=start, file=str(path))


def timer_findings(model: StoreModel) -> tuple[list[Finding], list[Path]]:
    """Findings about the timer files and every timer file read (for the evidence manifest)."""
    tf = timer_files(model.layout.root)
    if not tf.present:
        return [], []
    out: list[Finding] = []
    walk = walk_timerlog(tf.log_files)
    log_end = 0
    with ExitStack() as stack:
        props = _Props(stack)
        by_off = model.by_offset()
        cp = tf.checkpoint()
        while True:
            try:
                item = next(walk)
            except StopIteration as stop:
                log_end = stop.value
                break
            if isinstance(item, Finding):
                out.append(item)
                continue
            out += _unit_findings(model, item, by_off, props, cp)
        out += _wheel_findings(tf, log_end, stack)
    out += _checkpoint_findings(model, tf, log_end)
    out += _metrics_findings(tf)
    return out, tf.paths


def _unit_findings(model: StoreModel, u: TimerUnit, by_off: dict[int, MessageRef], props: _Props,
                   cp: TimerCheckpoint | None) -> Iterator[Finding]:
    """The unit's offsetPy/sizePy must name a timer message of the log; one past the recovered end is lost."""
    at = u.pos - int(Path(u.file).name)
    if u.offset_py < model.min_offset:
        return   # the commit log's expired files: the broker deletes such timer-log files too
    undelivered = cp is None or u.delivery_ms >= cp.last_read_time_ms
    if u.offset_py >= model.max_offset:
        yield finding(_LOST, u.file, position=at, offset=u.pos,
                      severity=Severity.WARNING if undelivered else Severity.INFO,
                      message=f"unit points at commit-log offset {u.offset_py}, at or past the recovered log end "
                              f"{model.max_offset}: " + ("its delivery is lost (dequeue finds no message)"
                                                           if undelivered else "already delivered"),
                      commitlog_offset=u.offset_py, deliver_ms=u.delivery_ms)
        return
    m = by_off.get(u.offset_py)
    problem = None
    if m is None:
        problem = f"no message starts at commit-log offset {u.offset_py}"
    elif m.size != u.size_py:
        problem = f"sizePy {u.size_py} but the message at {u.offset_py} is {m.size} bytes"
    elif m.topic != TIMER_TOPIC:
        problem = f"points at a message of {m.topic}, not {TIMER_TOPIC}"
    elif u.topic_hash and java_string_hash(props.of(m).get("REAL_TOPIC", "")) != u.topic_hash:
        problem = f"topic hash {u.topic_hash} is not the hash of the message's REAL_TOPIC"
    if problem:
        yield finding(_UNIT, u.file, position=at, offset=u.pos, message=problem, commitlog_offset=u.offset_py)


def infer_precision(slot: Slot, unit: TimerUnit | None) -> int | None:
    """The `timerPrecisionMs` a slot was written with: the one putting its last unit's delivery time in it."""
    if unit is None:
        return None
    for p in reversed(PRECISIONS_MS):
        if unit.delivery_ms // p == slot.time_slot:
            return p
    return None


def _wheel_findings(tf: TimerFiles, log_end: int, stack: ExitStack) -> Iterator[Finding]:
    if tf.wheel is None:
        if tf.log_files:
            yield finding(_WHEEL, str(tf.root / WHEEL_NAME), message="timer log without a timer wheel: the broker "
                          "creates an empty one and delivers no enqueued message")
        return
    path = str(tf.wheel)
    try:
        with mapped(tf.wheel) as buf:
            if len(buf) != WHEEL_SIZE:
                yield finding(_WHEEL, path, position=0, message=f"wheel is {len(buf)} bytes; TimerWheel refuses to "
                              f"start on any length but {WHEEL_SIZE} (slotsTotal 7 days x 2 x 32)")
                return
            log_start = tf.log_files[0][0] if tf.log_files else 0
            file_size = tf.log_files[0][1].stat().st_size if tf.log_files else 0
            view = _LogView(dict(tf.log_files), file_size, stack)
            nslots = len(buf) // SLOT_SIZE
            for slot in written_slots(buf):
                yield from _slot_findings(slot, nslots, log_start, log_end, view, path)
    except UnreadableInput as e:
        yield from_unreadable(e, path)


def _slot_findings(slot: Slot, nslots: int, log_start: int, log_end: int, view: _LogView,
                   path: str) -> Iterator[Finding]:
    """Place, positions inside the timer log, and the prevPos chain from lastPos back to firstPos."""
    if slot.time_slot % nslots != slot.index:
        yield finding(_WHEEL, path, position=slot.position,
                      message=f"slot {slot.index} holds time {slot.time_slot}, whose place is "
                              f"{slot.time_slot % nslots}")
        return
    if slot.first_pos < log_start or slot.last_pos < log_start:
        return   # timer-log files already deleted below these positions (expired with the commit log)
    for name, pos in (("firstPos", slot.first_pos), ("lastPos", slot.last_pos)):
        if pos >= log_end or view.unit(pos) is None:
            yield finding(_WHEEL, path, position=slot.position, offset=pos,
                          message=f"slot {slot.index}: {name} {pos} is not inside the timer log (ends at {log_end})")
            return
    if slot.first_pos > slot.last_pos:
        yield finding(_WHEEL, path, position=slot.position,
                      message=f"slot {slot.index}: firstPos {slot.first_pos} after lastPos {slot.last_pos}")
        return
    last = view.unit(slot.last_pos)
    precision = infer_precision(slot, last)
    pos, steps = slot.last_pos, 0
    while pos != slot.first_pos:
        u = view.unit(pos)
        if u is None or (precision and u.delivery_ms // precision != slot.time_slot) or not 0 <= u.prev_pos < pos \
                or steps > (log_end - log_start) // UNIT_SIZE:
            yield finding(_WHEEL, path, position=slot.position, offset=pos,
                          message=f"slot {slot.index}: the chain from lastPos {slot.last_pos} breaks at {pos} before "
                                  f"reaching firstPos {slot.first_pos}; the dequeue of this slot misses units")
            return
        pos, steps = u.prev_pos, steps + 1


def _checkpoint_findings(model: StoreModel, tf: TimerFiles, log_end: int) -> Iterator[Finding]:
    if tf.check is None:
        if tf.log_files:
            yield finding(_CHECK, str(tf.root / "config" / CHECK_NAME), severity=Severity.WARNING,
                          message="timer log without config/timercheck: the broker starts the timer queue at offset "
                                  "0 and delivers again every timer message still in the commit log")
        return
    path = str(tf.check)
    try:
        data = read_small(tf.check, limit=1 << 20)
    except UnreadableInput as e:
        yield from_unreadable(e, path)
        return
    yield from check_timer_checkpoint(data, path)
    cp = tf.checkpoint()
    if cp is None:
        return
    if cp.last_timer_log_flush_pos > log_end:
        yield finding("ROCKETMQ_CHECKPOINT_AHEAD", path, position=8, offset=cp.last_timer_log_flush_pos,
                      message=f"lastTimerLogFlushPos {cp.last_timer_log_flush_pos} is past the timer log's end "
                              f"{log_end}: timer-log bytes the broker had flushed are missing")
    queue = model.queues.get((TIMER_TOPIC, 0))
    heads = [m.queue_offset for m in model.messages if m.topic == TIMER_TOPIC and m.queue_id == 0]
    cq_max = max([queue.max_offset if queue else 0, *(o + 1 for o in heads)])
    if cp.last_timer_queue_offset > cq_max:
        yield finding("ROCKETMQ_CHECKPOINT_AHEAD", path, position=16, offset=cp.last_timer_queue_offset,
                      severity=Severity.WARNING,
                      message=f"lastTimerQueueOffset {cp.last_timer_queue_offset} is past {TIMER_TOPIC}'s queue end "
                              f"{cq_max}: the broker moves it back to the queue's max (TimerMessageStore#recover)")


def _metrics_findings(tf: TimerFiles) -> Iterator[Finding]:
    """`timermetrics` and its `.bak` (written by `TimerMetrics#persist`, 5.3.3; a real broker with timers on leaves
    both: tests/brokers/rocketmq_pop_bcq.py) parse, with no negative count."""
    for path in (tf.metrics, tf.metrics_bak):
        if path is not None:
            yield from _metrics_file_findings(path)


def _metrics_file_findings(path: Path) -> Iterator[Finding]:
    try:
        metrics = parse_timer_metrics(read_small(path))
    except (FormatError, UnreadableInput) as e:
        yield finding("ROCKETMQ_CONFIG_INVALID", str(path), position=getattr(e, "position", None), message=str(e))
        return
    for topic, (count, _) in sorted(metrics.timing_count.items()):
        if count < 0:
            yield finding("ROCKETMQ_CONFIG_INVALID", str(path), severity=Severity.WARNING,
                          message=f"timingCount of {topic} is negative ({count})")


# --- recover / repair ------------------------------------------------------------------------------------------

def carry_timer_files(source: StoreModel, root: Path, end: int, kept: list[MessageRef]) -> dict[str, Any] | None:
    """The timer files of `source` written under `root` for a log recovered to `end` (None when it has none).

    The wheel and metrics are copied byte for byte; the timer log up to where the broker's own check ends it
    (`recoverAndRevise`, later bytes zero, later files dropped: `truncateDirtyFiles`); the checkpoint with
    `lastTimerLogFlushPos` at most that end and `lastTimerQueueOffset` at most the kept timer queue's end
    (`TimerMessageStore#recover` clamps it to `cq.getMaxOffsetInQueue()`). Units whose messages the recovery
    drops stay, as the broker keeps them: their deliveries are listed as lost.
    """
    tf = timer_files(source.layout.root)
    if not tf.present:
        return None
    copied: list[str] = []
    log_end = _copy_timer_log(tf, root, copied)
    if tf.wheel is not None:
        _copy_file(tf.wheel, root / WHEEL_NAME)
        copied.append(WHEEL_NAME)
    cfg = root / "config"
    cfg.mkdir(parents=True, exist_ok=True)
    for name in (METRICS_NAME, METRICS_NAME + ".bak"):
        p = source.layout.root / "config" / name
        if p.is_file():
            atomic_write(cfg / name, read_small(p))
            copied.append(f"config/{name}")
    revised = _write_checkpoint(tf, cfg, log_end, kept)
    if revised is not None:
        copied.append(f"config/{CHECK_NAME}")
    lost = lost_deliveries(source, [m for m in source.messages + source.beyond if m.end > end])
    return {"copied": copied, "timer_log_end": log_end, "checkpoint": revised,
            "lost_scheduled_deliveries": lost_summary(lost)}


def _copy_file(src: Path, dest: Path, length: int | None = None) -> None:
    """`length` bytes of `src` (all when None), zero-padded to its size, through a read-only map."""
    with mapped(src) as buf, atomic_file(dest) as out:
        n = len(buf) if length is None else min(length, len(buf))
        for i in range(0, n, 8 << 20):
            out.write(buf[i:min(i + (8 << 20), n)])
        out.truncate(len(buf))


def _copy_timer_log(tf: TimerFiles, root: Path, copied: list[str]) -> int:
    walk = walk_timerlog(tf.log_files)
    while True:
        try:
            next(walk)
        except StopIteration as stop:
            log_end = int(stop.value)
            break
    (root / DIR_NAME).mkdir(parents=True, exist_ok=True)
    for start, path in tf.log_files:
        if start > log_end:   # truncateDirtyFiles keeps a file starting at the end (empty), deletes later ones
            break
        _copy_file(path, root / DIR_NAME / path.name, log_end - start)
        copied.append(f"{DIR_NAME}/{path.name}")
    return log_end


def _write_checkpoint(tf: TimerFiles, cfg: Path, log_end: int, kept: list[MessageRef]) -> dict[str, int] | None:
    cp = tf.checkpoint()
    if cp is None or tf.check is None:
        return None
    queue_end = max((m.queue_offset + 1 for m in kept if m.topic == TIMER_TOPIC and m.queue_id == 0), default=0)
    new = TimerCheckpoint(cp.last_read_time_ms, min(cp.last_timer_log_flush_pos, log_end),
                          min(cp.last_timer_queue_offset, queue_end), min(cp.master_timer_queue_offset, queue_end),
                          cp.state_version, cp.data_version_timestamp, cp.data_version_counter)
    data = bytearray(read_small(tf.check, limit=1 << 20))
    head = build_timer_checkpoint(new)[:56]
    data[:56] = head if len(data) >= 56 else head[:len(data)]
    atomic_write(cfg / CHECK_NAME, bytes(data))
    return {"last_read_time_ms": new.last_read_time_ms, "last_timer_log_flush_pos": new.last_timer_log_flush_pos,
            "last_timer_queue_offset": new.last_timer_queue_offset,
            "master_timer_queue_offset": new.master_timer_queue_offset}


# --- ls ------------------------------------------------------------------------------------------------------------

def timer_summary(model: StoreModel) -> dict[str, Any] | None:
    """What `ls` shows of the timer files (None without any): units, the timer log's end, the checkpoint, the
    wheel's pending count from the checkpoint's read time (the broker's `timerCongestNum` at that time, assuming
    the default precision of 1000 ms) and the metrics' pending total."""
    tf = timer_files(model.layout.root)
    if not tf.present:
        return None
    walk = walk_timerlog(tf.log_files)
    units, log_end = 0, 0
    while True:
        try:
            units += isinstance(next(walk), TimerUnit)
        except StopIteration as stop:
            log_end = int(stop.value)
            break
    cp = tf.checkpoint()
    wheel_pending = None
    if tf.wheel is not None and cp is not None:
        with mapped(tf.wheel) as buf:
            wheel_pending = all_num(buf, cp.last_read_time_ms, DEFAULT_PRECISION_MS)
    metrics = None
    if tf.metrics is not None:
        try:
            metrics = parse_timer_metrics(read_small(tf.metrics)).pending
        except (FormatError, UnreadableInput):
            metrics = None
    return {"timer_log_files": len(tf.log_files), "timer_log_end": log_end, "units": units,
            "wheel": tf.wheel is not None, "wheel_pending": wheel_pending, "metrics_pending": metrics,
            "checkpoint": None if cp is None else {
                "last_read_time_ms": cp.last_read_time_ms, "last_timer_log_flush_pos": cp.last_timer_log_flush_pos,
                "last_timer_queue_offset": cp.last_timer_queue_offset,
                "master_timer_queue_offset": cp.master_timer_queue_offset}}
