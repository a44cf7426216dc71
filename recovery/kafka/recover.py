"""`recover_partition`: the broker's unclean-shutdown recovery of one partition, on a copy.

Step for step (docs/reference/kafka.md §10.2-§10.4): temp-file cleanup (`.deleted` and
`.cleaned` dropped, `.swap` files completed or dropped by the `minCleanedOffset`
rule), then from the segment holding the recovery point (all segments without
a checkpoint) every batch is validated; the first invalid one truncates its
segment (`SegmentWalk.valid_bytes`) and every later segment is dropped.
Indexes, the leader-epoch cache (`truncate_from_end(LEO)`,
`truncate_from_start(log start checkpoint)`) and producer snapshots are
rebuilt; the result is written as a log dir holding `<topic>-<partition>/`
and root checkpoints clamped as the broker clamps them.

`salvage=True` goes beyond the broker: every segment is scanned and, after
damage, the scan resynchronises on the next plausible v2 header whose CRC
checks, keeping every valid batch whose offsets are above what was kept.

Memory does not grow with the log: a segment is scanned block by block
(`walk_blocks`), and what recovery keeps of it is a few byte ranges of whole
batches and a few numbers (`Segment`), never its batches. The output segments
are written from those ranges by the streaming writer
(`segment_writer.SegmentWriter`: kernel-side copies, indexes from columns).
The output is built in a temporary sibling dir, fsynced, renamed into place,
re-verified with `diagnose`, and `.replog-complete` is written last.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from replog.formats.errors import FormatError, InputChanged, UnreadableInput, VanishedInput
from replog.formats.fileio import atomic_write, file_size, fsync_dir, mapped, read_small, writing
from replog.formats.findings import FINDING, Finding, finding, from_unreadable
from replog.formats.kafka import checkpoint, names
from replog.formats.kafka.blocks import BatchBlock, walk_blocks
from replog.formats.kafka.partition_files import is_live_segment, list_partition_files
from replog.formats.kafka.partition_metadata import parse_partition_metadata
from replog.formats.kafka.producer_snapshot import build_producer_snapshot, parse_producer_snapshot
from replog.formats.kafka.segment import SegmentWalk
from replog.formats.shape import Field, Shape
from replog.recovery import outputs
from replog.recovery.evidence import StatKey, stat_key
from replog.recovery.kafka.epoch_cache import EpochCache
from replog.recovery.kafka.logdir import read_broker_checkpoints, use_fast_walk
from replog.recovery.kafka.producer_state import ProducerEntry, ProducerState
from replog.recovery.kafka.recover_epochs import KeptEpochs, recovered_epochs
from replog.recovery.kafka.salvage import salvage_segment, salvage_summary
from replog.recovery.kafka.segment_writer import ByteRun, write_segment
from replog.recovery.progress import Progress, Tally

COMPLETE_MARKER = outputs.COMPLETE_MARKER


@dataclass
class Segment:
    """One output segment: its base offset and what it keeps of `source`, as byte ranges of whole batches."""

    base_offset: int
    source: Path | None
    ranges: list[tuple[int, int]] = field(default_factory=list)  # kept bytes [start, end) of `source`
    scanned: bool = False
    batches: int = 0                      # kept
    next_offset: int | None = None        # after the last batch kept
    max_last_offset: int | None = None    # the highest last offset kept
    seen: StatKey | None = None           # `source`'s size, times and inode when it was walked

    def keep(self, block: BatchBlock, rows: np.ndarray | None = None, shift: int = 0) -> BatchBlock:
        """Keep the block's `rows` (a boolean mask; None: all of them), whose positions are `shift`
        bytes into `source`; returns the rows kept (positions unshifted).

        Rows of a walk lie back to back, so consecutive kept rows make one range, across blocks too."""
        kept = block if rows is None or rows.all() else block[rows]
        if not len(kept):
            return kept
        starts, ends = kept.position + shift, kept.end + shift
        breaks = np.flatnonzero(starts[1:] != ends[:-1]) + 1
        for first, last in zip([0, *breaks.tolist()], [*(breaks - 1).tolist(), len(kept) - 1], strict=True):
            start, end = int(starts[first]), int(ends[last])
            if self.ranges and self.ranges[-1][1] == start:
                self.ranges[-1] = (self.ranges[-1][0], end)
            else:
                self.ranges.append((start, end))
        self.batches += len(kept)
        self.next_offset = int(kept.last_offset[-1]) + 1
        top = int(kept.last_offset.max())
        self.max_last_offset = top if self.max_last_offset is None else max(self.max_last_offset, top)
        return kept


@dataclass
class RecoverResult:
    output: str
    partition: str
    truncated_to: int | None = None
    valid_bytes: int | None = None
    truncated_segment: str | None = None
    log_start_offset: int = 0
    log_end_offset: int = 0
    high_watermark: int = 0
    recovery_point: int = 0
    epochs: list[tuple[int, int]] = field(default_factory=list)
    salvaged: list[dict[str, Any]] = field(default_factory=list)
    dropped: dict[str, Any] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    verification: dict[str, Any] = field(default_factory=dict)

    @property
    def verified(self) -> bool:
        return self.verification.get("errors", 1) == 0

    @property
    def has_errors(self) -> bool:
        """Error-severity findings met on the input, or an output that does not verify: exit 1."""
        return not self.verified or any(f.severity.value == "error" for f in self.findings)

    def to_dict(self) -> dict[str, Any]:
        return RECOVER_RESULT.dump(self)


RECOVER_RESULT = Shape("output", "partition", "truncated_to", "valid_bytes", "truncated_segment", "salvaged", "dropped",
                       "log_start_offset", "log_end_offset", "high_watermark", "recovery_point",
                       Field("epochs", lambda r: [list(e) for e in r.epochs]),
                       Field("findings", shape=FINDING), "verification")


# --- reading the input --------------------------------------------------------------


def _cleanup_plan(pdir: Path, result: RecoverResult) -> dict[int, Path]:
    """Segment logs the broker would keep after temp-file cleanup and swap completion (§10.2 1-2)."""
    files = list_partition_files(pdir)
    logs = dict(files.logs)
    swaps: dict[int, Path] = {}
    cleaned: list[int] = []
    dropped = result.dropped["files"]
    for path, seg in files.transient:
        if seg.transient == "deleted" or seg.transient == "cleaned":
            dropped.append({"file": path.name, "reason": f".{seg.transient} file deleted at load"})
            if seg.transient == "cleaned":
                cleaned.append(seg.base_offset)
        elif seg.kind == "log":
            swaps[seg.base_offset] = path
    min_cleaned = min(cleaned, default=None)
    for base in sorted(swaps):
        if min_cleaned is not None and base >= min_cleaned:
            dropped.append({"file": swaps.pop(base).name, "reason": "swap of an interrupted split"})
    if swaps:
        lo = min(swaps)
        hi = max(_next_offset(p, b) for b, p in swaps.items())
        for base in [b for b in logs if lo <= b < hi]:
            dropped.append({"file": logs.pop(base).name, "reason": "replaced by a completed .swap"})
        logs.update(swaps)
    return dict(sorted(logs.items()))


def _next_offset(path: Path, base: int) -> int:
    with mapped(path, live=is_live_segment(path), windows=True) as buf:
        walk, blocks = _walk(buf, path, base)
        for _ in blocks:
            pass
        return walk.next_offset if walk.next_offset is not None else base


def _walk(buf: memoryview, path: Path, base: int | None) -> tuple[SegmentWalk, Iterator[BatchBlock]]:
    """A segment's blocks and the walk holding its outcome (compiled when the segment pays for it)."""
    return walk_blocks(buf, str(path), base, use_fast_walk(len(buf), buf=buf))


# --- the recovery -------------------------------------------------------------------


def recover_partition(partition_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str], *,
                      salvage: bool = False, force: bool = False, progress: Progress | None = None) -> RecoverResult:
    """Recover one partition dir into `out_dir` (a new log dir); the input is only read.

    `progress` hears of each input segment as recovery is done with it."""
    pdir, out = Path(partition_dir), Path(out_dir)
    parsed = names.parse_partition_dir(pdir.name)
    if not pdir.is_dir() or parsed is None:
        raise UnreadableInput(f"{pdir}: not a Kafka partition dir (<topic>-<partition>)")
    # held for the whole run, checked once held: a second run into the same DIR is refused, not interleaved
    with outputs.claimed_output(out, outputs.evidence_roots([pdir]), force, built_aside=True):
        return _recover(pdir, (parsed.topic, parsed.partition), out, salvage, progress)


def _recover(pdir: Path, tp: tuple[str, int], out: Path, salvage: bool, progress: Progress | None) -> RecoverResult:
    """`recover_partition`'s work, with the output held: built in a sibling dir, renamed into place, verified."""
    from replog.recovery.doctor import diagnose

    log_dir = pdir.parent
    cps = read_broker_checkpoints(log_dir)
    result = RecoverResult(str(out), names.partition_dir_name(*tp))
    result.dropped = {"segments": [], "bytes": 0, "batches": 0, "first_offset": None, "last_offset": None,
                      "files": [], "holes": []}
    result.findings += cps.findings
    logs = _cleanup_plan(pdir, result)
    recovery_point = (cps.recovery_points or {}).get(tp, 0)
    lso_cp = (cps.log_start_offsets or {}).get(tp, 0)
    kept = KeptEpochs(lso_cp)
    segments = _recover_segments(logs, recovery_point, salvage, result, kept, Tally.of(progress, [pdir], ".log"))
    if salvage:
        salvage_summary(result, segments)
    leo = _log_end(segments)
    if leo < lso_cp:  # §10.2 step 5: everything deleted, empty log at the checkpointed start
        result.dropped["segments"].extend(str(s.source) for s in segments if s.source)
        segments, leo, kept = [Segment(lso_cp, None)], lso_cp, KeptEpochs(lso_cp)
    result.log_end_offset = leo
    result.log_start_offset = max(lso_cp, segments[0].base_offset)
    result.high_watermark = min(max((cps.high_watermarks or {}).get(tp, 0), result.log_start_offset), leo)
    result.recovery_point = min(recovery_point, leo)
    epochs = recovered_epochs(pdir, kept, leo, lso_cp, result.findings)
    result.epochs = [(e.epoch, e.start_offset) for e in epochs.entries]
    tmp = out.parent / f".{out.name}.replog-partial-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    try:
        with writing(out):
            _write_output(tmp, pdir, log_dir, segments, epochs, result, lso_cp)
            _swap_into_place(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    report = diagnose([out])
    result.verification = dict(report.summary, findings=[f.to_dict() for f in report.findings
                                                          if f.severity.value != "info"])
    atomic_write(out / COMPLETE_MARKER, json.dumps({
        "partition": result.partition, "source": str(pdir.resolve()), "salvage": salvage,
        "log_end_offset": leo, "verified": result.verified}, indent=2).encode())
    return result


def _recover_segments(logs: dict[int, Path], recovery_point: int, salvage: bool,
                      result: RecoverResult, kept: KeptEpochs, tally: Tally) -> list[Segment]:
    bases = list(logs)
    if not bases:
        return [Segment(0, None)]
    start = 0 if salvage else max([i for i, b in enumerate(bases) if b <= recovery_point], default=0)
    segments: list[Segment] = []
    for i, base in enumerate(bases):
        path = logs[base]
        seg = Segment(base, path, scanned=i >= start, seen=stat_key(path))
        with contextlib.ExitStack() as stack:
            try:
                buf = stack.enter_context(mapped(path, live=is_live_segment(path), windows=True))
            except UnreadableInput as e:
                if _unreadable(seg, e, salvage, bases[i + 1:], logs, result):
                    segments.append(seg)
                    tally.done(path)
                    return segments
                continue
            if not seg.scanned:  # below the recovery point: kept as it is, every framed batch
                _, blocks = _walk(buf, path, base)
                for block in blocks:
                    kept.feed(seg.keep(block), scanned=False)
            elif salvage:
                salvage_segment(buf, seg, segments, result, kept)
            else:
                walk, blocks = _walk(buf, path, base)
                lost = Lost()
                for block in blocks:  # a row's fate is final when its block comes: valid_bytes only stops
                    valid = block.end <= walk.valid_bytes
                    kept.feed(seg.keep(block, valid), scanned=True)
                    lost.add(block[~valid])
                result.findings += walk.findings
                if walk.valid_bytes < len(buf):
                    segments.append(seg)
                    _record_truncation(seg, walk.valid_bytes, len(buf), lost, bases[i + 1:], logs, result)
                    tally.done(path)   # the last one read: recovery truncates here, the rest goes unread
                    return segments
        segments.append(seg)
        tally.done(path)
    return segments or [Segment(bases[0], None)]


def _unreadable(seg: Segment, err: UnreadableInput, salvage: bool, later: list[int], logs: dict[int, Path],
                result: RecoverResult) -> bool:
    """A segment replog cannot read (gone, unreadable, not mappable under an address-space limit) is a
    finding, as in doctor and ls, and recovery goes on as if it were damaged from its first byte: the
    log is truncated at its base offset (True: recovery ends here, `seg` kept empty), or with `salvage`
    it is left out whole and the next segments are read (False). One that vanished means the partition
    is changing under recovery (a live broker): that stops it (`InputChanged`)."""
    if isinstance(err, VanishedInput):
        raise InputChanged(f"{err}. Stop the broker, or recover a copy of the partition") from None
    result.findings.append(from_unreadable(err, str(seg.source)))
    if salvage:
        result.dropped["files"].append({"file": Path(str(seg.source)).name, "reason": f"unreadable: {err}"})
        return False
    seg.source = None
    _record_truncation(seg, 0, _size_or_zero(logs[seg.base_offset]), Lost(), later, logs, result)
    result.truncated_segment = str(logs[seg.base_offset])
    return True


@dataclass
class Lost:
    """The batches a truncation drops, as the report counts them: how many, lowest and highest offsets."""

    batches: int = 0
    first_offset: int | None = None
    last_offset: int | None = None

    def add(self, block: BatchBlock) -> None:
        if not len(block):
            return
        self.batches += len(block)
        low, high = int(block.base_offset.min()), int(block.last_offset.max())
        self.first_offset = low if self.first_offset is None else min(self.first_offset, low)
        self.last_offset = high if self.last_offset is None else max(self.last_offset, high)


def _record_truncation(seg: Segment, valid: int, size: int, lost: Lost, later: list[int],
                       logs: dict[int, Path], result: RecoverResult) -> None:
    for base in later:
        try:
            with mapped(logs[base], live=is_live_segment(logs[base]), windows=True) as buf:
                _, blocks = _walk(buf, logs[base], base)
                for block in blocks:
                    lost.add(block)
        except UnreadableInput as e:  # dropped all the same; what it held cannot be counted
            result.findings.append(from_unreadable(e, str(logs[base])))
    result.truncated_to = seg.next_offset if seg.batches else seg.base_offset
    result.valid_bytes, result.truncated_segment = valid, str(seg.source)
    lost_bytes = (size - valid) + sum(_size_or_zero(logs[b]) for b in later)
    result.dropped.update({
        "segments": [logs[b].name for b in later], "bytes": lost_bytes, "batches": lost.batches,
        "first_offset": lost.first_offset, "last_offset": lost.last_offset})


def _size_or_zero(path: Path) -> int:
    try:
        return file_size(path)
    except UnreadableInput:
        return 0


def _log_end(segments: list[Segment]) -> int:
    last = segments[-1]
    return last.next_offset if last.next_offset is not None else last.base_offset


# --- epochs and producer state ---------------------------------------------------------


def _seed_producers(pdir: Path, start: int) -> ProducerState:
    """Producer state from the input snapshot at the log start, when one is valid."""
    state = ProducerState()
    path = pdir / names.segment_file_name(start, "snapshot")
    if path.is_file():
        try:
            snap = parse_producer_snapshot(read_small(path))
        except (FormatError, UnreadableInput):
            return state
        for e in snap.entries:
            state.producers[e.producer_id] = ProducerEntry(*e)
            if e.current_txn_first_offset >= 0:
                state.ongoing[e.producer_id] = e.current_txn_first_offset
    return state


# --- writing ---------------------------------------------------------------------------


def _write_output(tmp: Path, pdir: Path, log_dir: Path, segments: list[Segment], epochs: EpochCache,
                  result: RecoverResult, lso_cp: int) -> None:
    part = tmp / result.partition
    part.mkdir(parents=True)
    producers = _seed_producers(pdir, segments[0].base_offset)
    bases = [s.base_offset for s in segments]
    snapshot_at = set(bases[-2:])
    for seg in segments:
        if seg.base_offset in snapshot_at and seg.base_offset != result.log_end_offset:
            _put(part, names.segment_file_name(seg.base_offset, "snapshot"),
                 build_producer_snapshot(producers.snapshot_entries()))
        _copy_segment(part, seg, producers, result)
    _put(part, names.segment_file_name(result.log_end_offset, "snapshot"),
         build_producer_snapshot(producers.snapshot_entries()))
    _put(part, names.LEADER_EPOCH_CHECKPOINT, checkpoint.build_leader_epoch_checkpoint(epochs.entries))
    _copy_if_valid(pdir / names.PARTITION_METADATA, part, parse_partition_metadata)
    parsed = names.parse_partition_dir(result.partition)
    if parsed is None:  # cannot be: recover_partition named it after a parsed name
        raise ValueError(f"not a partition dir name: {result.partition}")
    key = (parsed.topic, parsed.partition)
    _put(tmp, names.REPLICATION_OFFSET_CHECKPOINT, checkpoint.build_offset_checkpoint({key: result.high_watermark}))
    _put(tmp, names.RECOVERY_POINT_OFFSET_CHECKPOINT, checkpoint.build_offset_checkpoint({key: result.recovery_point}))
    lso_entries = {key: result.log_start_offset} if result.log_start_offset > segments[0].base_offset else {}
    _put(tmp, names.LOG_START_OFFSET_CHECKPOINT, checkpoint.build_offset_checkpoint(lso_entries))
    from replog.formats.kafka.meta_properties import parse_meta_properties
    _copy_if_valid(log_dir / names.META_PROPERTIES, tmp, parse_meta_properties)
    fsync_dir(part)
    fsync_dir(tmp)


def _copy_segment(part: Path, seg: Segment, producers: ProducerState, result: RecoverResult) -> None:
    """Write `seg`'s kept ranges of its source. A source that changed since it was walked (a live broker)
    cannot be copied as it was read: a copy that fails then stops the recovery with `InputChanged`, and
    one that succeeds is reported (`INPUT_CHANGED`), the verification saying whether the output holds."""
    runs = [ByteRun(str(seg.source), start, end, seg.base_offset) for start, end in seg.ranges]
    try:
        write_segment(part, seg.base_offset, runs, producers)
    except (ValueError, OSError) as e:
        if seg.source is not None and stat_key(seg.source) != seg.seen:
            raise InputChanged(f"{seg.source} changed while recover read it (a live broker?): {e}. Stop the "
                               "broker, or recover a copy of the partition") from None
        raise
    if seg.source is not None and stat_key(seg.source) != seg.seen:
        result.findings.append(finding("INPUT_CHANGED", str(seg.source),
                                       message="changed while recover read it (a live broker?): the output "
                                               "holds what was read, check its verification"))


def _copy_if_valid(src: Path, dest_dir: Path, parse: Any) -> None:
    if not src.is_file():
        return
    try:
        data = read_small(src)
        parse(data)
    except (FormatError, UnreadableInput):
        return
    _put(dest_dir, src.name, data)


def _put(directory: Path, name: str, data: bytes) -> None:
    atomic_write(directory / name, data)


def _swap_into_place(tmp: Path, out: Path) -> None:
    old = None
    if out.exists():
        old = out.parent / f".{out.name}.replog-old-{os.getpid()}"
        os.replace(out, old)
    os.replace(tmp, out)
    fsync_dir(out.parent)
    if old is not None:
        shutil.rmtree(old)
