"""`recover_partition`: the broker's unclean-shutdown recovery of one partition, on a copy.

Step for step (kafka.md §10.2-§10.4): temp-file cleanup (`.deleted` and
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

import json
import mmap
import os
import shutil
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
from crc32c import crc32c

from replog.formats.errors import FormatError, UnreadableInput
from replog.formats.fileio import RELEASE_STEP, atomic_write, file_size, fsync_dir, mapped, read_small, release_pages
from replog.formats.findings import FINDING, Finding, finding
from replog.formats.kafka import batch as v2
from replog.formats.kafka import checkpoint, names
from replog.formats.kafka.blocks import BatchBlock, walk_blocks
from replog.formats.kafka.partition_files import list_partition_files
from replog.formats.kafka.partition_metadata import parse_partition_metadata
from replog.formats.kafka.producer_snapshot import build_producer_snapshot, parse_producer_snapshot
from replog.formats.kafka.segment import MIN_ENTRY_SIZE, SegmentWalk
from replog.formats.shape import Field, Shape
from replog.recovery import outputs
from replog.recovery.kafka.epoch_cache import EpochCache
from replog.recovery.kafka.logdir import read_broker_checkpoints, use_fast_walk
from replog.recovery.kafka.producer_state import ProducerEntry, ProducerState
from replog.recovery.kafka.rebuild import EpochRises
from replog.recovery.kafka.segment_writer import ByteRun, write_segment
from replog.recovery.progress import Progress, Tally

COMPLETE_MARKER = outputs.COMPLETE_MARKER
_MAX_V2_BATCH = 1 << 30
_HEADER = struct.Struct(">qiibIhi")  # base offset .. last offset delta


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


# --- safety -----------------------------------------------------------------------


def check_output(out_dir: Path, inputs: list[Path], force: bool) -> None:
    """Refuse an output inside (or containing) an input tree, or a non-empty one without force."""
    outputs.check_output(out_dir, inputs, force)


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
    with mapped(path) as buf:
        walk, blocks = _walk(buf, path, base)
        for _ in blocks:
            pass
        return walk.next_offset if walk.next_offset is not None else base


def _walk(buf: memoryview, path: Path, base: int | None) -> tuple[SegmentWalk, Iterator[BatchBlock]]:
    """A segment's blocks and the walk holding its outcome (compiled when the segment pays for it)."""
    return walk_blocks(buf, str(path), base, use_fast_walk(len(buf)))


def _resync(buf: memoryview, start: int, above: int, segment_base: int) -> int | None:
    """Position of the next plausible v2 batch after `start` whose CRC checks.

    Candidates are found with a C-speed search for the magic byte; each is
    checked cheaply (offset above what was kept, offsets the segment named
    `segment_base` can hold, sane length) before its CRC.
    """
    data = cast("mmap.mmap | bytes", buf.obj if isinstance(buf, memoryview) and buf.obj is not None
                else buf)  # mmap or bytes: .find
    size = len(buf)
    pos = start + 1 + 16
    while pos < size:
        magic_at = data.find(b"\x02", pos, size)
        if magic_at < 0:
            return None
        p = magic_at - 16
        pos = magic_at + 1
        if p + v2.HEADER_SIZE > size:
            return None
        base, length, _, _, crc, _, delta = _HEADER.unpack_from(buf, p)
        if (base <= above or not 0 <= base + delta - segment_base <= v2.INT32_MAX
                or length < v2.HEADER_SIZE - 12 or p + 12 + length > size or length > _MAX_V2_BATCH):
            continue
        if crc32c(buf[p + v2.CRC_START:p + 12 + length]) == crc:
            return p
    return None


def _region_blocks(buf: memoryview, path: Path, base: int, start: int) -> tuple[SegmentWalk, Iterator[BatchBlock]]:
    """The walk of `buf[start:]` as a segment of its own, positions relative to `start`. Its batches are
    held to the segment's base offset as the whole walk's are: a batch whose offsets leave the 32-bit
    range of the segment named `base` is damage here too (`LogSegment.ensureOffsetInRange`), never kept
    in a segment whose index could not hold it.

    A walk releases the pages behind it only on a whole map; this one releases those of `buf` behind
    each block it has yielded, so resuming deep into a large segment keeps memory flat all the same."""
    if not start:
        return _walk(buf, path, base)
    walk, blocks = walk_blocks(buf[start:], str(path), base, use_fast_walk(len(buf) - start))

    def released() -> Iterator[BatchBlock]:
        done = start
        for block in blocks:
            yield block
            end = start + int(block.end[-1]) if len(block) else done
            release_pages(buf, done, end)
            done = end
    return walk, released()


def _region_findings(walk: SegmentWalk, start: int, cut: int | None) -> list[Finding]:
    """The region walk's findings as the segment's (positions from the segment's start), up to the
    region's first damaged batch (`cut`: its end, relative): the region is read no further."""
    return [finding(f.code, f.path, position=(f.position or 0) + start, offset=f.offset, message=f.message,
                    severity=f.severity)
            for f in walk.findings if cut is None or f.position is None or f.position < cut]


# --- the recovery -------------------------------------------------------------------


def recover_partition(partition_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str], *,
                      salvage: bool = False, force: bool = False, progress: Progress | None = None) -> RecoverResult:
    """Recover one partition dir into `out_dir` (a new log dir); the input is only read.

    `progress` hears of each input segment as recovery is done with it."""
    from replog.recovery.doctor import diagnose

    pdir, out = Path(partition_dir), Path(out_dir)
    parsed = names.parse_partition_dir(pdir.name)
    if not pdir.is_dir() or parsed is None:
        raise UnreadableInput(f"{pdir}: not a Kafka partition dir (<topic>-<partition>)")
    log_dir = pdir.parent
    cps = read_broker_checkpoints(log_dir)
    uses_parent = any((log_dir / n).is_file() for n in names.OFFSET_CHECKPOINT_NAMES)
    check_output(out, [log_dir if uses_parent else pdir], force)
    tp = (parsed.topic, parsed.partition)
    result = RecoverResult(str(out), names.partition_dir_name(parsed.topic, parsed.partition))
    result.dropped = {"segments": [], "bytes": 0, "batches": 0, "first_offset": None, "last_offset": None,
                      "files": [], "holes": []}
    result.findings += cps.findings
    logs = _cleanup_plan(pdir, result)
    recovery_point = (cps.recovery_points or {}).get(tp, 0)
    lso_cp = (cps.log_start_offsets or {}).get(tp, 0)
    kept = KeptEpochs(lso_cp)
    segments = _recover_segments(logs, recovery_point, salvage, result, kept, Tally.of(progress, [pdir], ".log"))
    if salvage:
        _salvage_summary(result, segments)
    leo = _log_end(segments)
    if leo < lso_cp:  # §10.2 step 5: everything deleted, empty log at the checkpointed start
        result.dropped["segments"].extend(str(s.source) for s in segments if s.source)
        segments, leo, kept = [Segment(lso_cp, None)], lso_cp, KeptEpochs(lso_cp)
    result.log_end_offset = leo
    result.log_start_offset = max(lso_cp, segments[0].base_offset)
    result.high_watermark = min(max((cps.high_watermarks or {}).get(tp, 0), result.log_start_offset), leo)
    result.recovery_point = min(recovery_point, leo)
    epochs = _epochs(pdir, kept, leo, lso_cp, result)
    result.epochs = [(e.epoch, e.start_offset) for e in epochs.entries]
    tmp = out.parent / f".{out.name}.replog-partial-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    try:
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
        seg = Segment(base, path, scanned=i >= start)
        with mapped(path) as buf:
            if not seg.scanned:  # below the recovery point: kept as it is, every framed batch
                _, blocks = _walk(buf, path, base)
                for block in blocks:
                    kept.feed(seg.keep(block), scanned=False)
            elif salvage:
                _salvage_segment(buf, seg, segments, result, kept)
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
    return segments


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
        with mapped(logs[base]) as buf:
            _, blocks = _walk(buf, logs[base], base)
            for block in blocks:
                lost.add(block)
    result.truncated_to = seg.next_offset if seg.batches else seg.base_offset
    result.valid_bytes, result.truncated_segment = valid, str(seg.source)
    lost_bytes = (size - valid) + sum(file_size(logs[b]) for b in later)
    result.dropped.update({
        "segments": [logs[b].name for b in later], "bytes": lost_bytes, "batches": lost.batches,
        "first_offset": lost.first_offset, "last_offset": lost.last_offset})


def _salvage_segment(buf: memoryview, seg: Segment, done: list[Segment], result: RecoverResult,
                     kept: KeptEpochs) -> None:
    """Keep every valid batch of the segment, resynchronising after each damaged region."""
    above = max((s.max_last_offset for s in done if s.max_last_offset is not None), default=-1)
    pos, size, first_run = 0, len(buf), True
    holes = result.dropped["holes"]
    while pos < size:
        region, end = _salvage_region(buf, seg, pos, above, result if first_run else None, kept)
        if region.batches:
            above = cast(int, region.last_offset)
            if not first_run:
                result.salvaged.append({"first_offset": region.first_offset, "last_offset": region.last_offset,
                                        "position": region.position, "segment": str(seg.source),
                                        "batches": region.batches})
        if end >= size:
            break
        nxt = _resync(buf, end, above, seg.base_offset)
        hole_end = size if nxt is None else nxt
        if _all_zero(buf, end, hole_end) and nxt is None:
            break  # a zero-filled tail is not a hole
        holes.append(_hole(buf, seg, end, hole_end, above, nxt))
        if nxt is None:
            break
        result.findings.append(finding(
            "KAFKA_SALVAGE_RESYNC", str(seg.source), position=nxt, offset=_base_at(buf, nxt),
            message=f"{hole_end - end} damaged bytes at {end}..{hole_end}; valid batches again from position {nxt} "
                    f"(offsets {above + 1}..{_base_at(buf, nxt) - 1} lost)"))
        pos, first_run = nxt, False
    if result.truncated_to is None and holes:
        result.valid_bytes = holes[0]["position"]


def _hole(buf: memoryview, seg: Segment, start: int, end: int, above: int, nxt: int | None) -> dict[str, Any]:
    """A damaged stretch salvage skips, with what it costs: its bytes, the whole batches framed in it,
    and the offsets lost: above the last kept and below the next valid batch. A tail (no valid batch
    after it) loses open-ended offsets only when whole batches are framed in it; a torn partial batch
    counts as bytes alone, as the broker's truncation reports it."""
    next_offset = _base_at(buf, nxt) if nxt is not None else None
    batches = _framed_batches(buf, start, end)
    last = None if next_offset is None else next_offset - 1
    lost = batches > 0 if last is None else last > above
    return {"segment": str(seg.source), "position": start, "end_position": end, "bytes": end - start,
            "after_offset": above, "next_offset": next_offset, "batches": batches,
            "first_offset": above + 1 if lost else None, "last_offset": last if lost else None}


def _framed_batches(buf: memoryview, start: int, end: int) -> int:
    """Whole batches whose length fields chain from `start` within `end` (damaged ones count)."""
    pos, count = start, 0
    while pos + v2.LOG_OVERHEAD <= end:
        length = int.from_bytes(buf[pos + 8:pos + 12], "big", signed=True)
        nxt = pos + v2.LOG_OVERHEAD + length
        if length < MIN_ENTRY_SIZE or nxt > end:
            break
        count, pos = count + 1, nxt
    return count


def _salvage_summary(result: RecoverResult, segments: list[Segment]) -> None:
    """What salvage dropped, from its holes alone, so the summary cannot contradict them: a hole at the
    end of the last segment is the truncation; all holes add to `dropped` (bytes, batches, offsets)."""
    holes = result.dropped["holes"]
    last_source = str(segments[-1].source) if segments and segments[-1].source else None
    if holes and holes[-1]["next_offset"] is None and holes[-1]["segment"] == last_source:
        tail = holes[-1]
        result.truncated_to, result.truncated_segment = tail["after_offset"] + 1, tail["segment"]
        result.valid_bytes = tail["position"]
    firsts = [h["first_offset"] for h in holes if h["first_offset"] is not None]
    lasts = [h["last_offset"] for h in holes if h["last_offset"] is not None]
    open_ended = any(h["first_offset"] is not None and h["last_offset"] is None for h in holes)
    result.dropped.update({
        "bytes": result.dropped["bytes"] + sum(h["bytes"] for h in holes),
        "batches": result.dropped["batches"] + sum(h["batches"] for h in holes),
        "first_offset": min(firsts, default=None),
        "last_offset": None if open_ended or not lasts else max(lasts)})


@dataclass
class Region:
    """The batches a salvage keeps from one stretch of valid batches (first, last, where, how many)."""

    batches: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    position: int | None = None


def _salvage_region(buf: memoryview, seg: Segment, start: int, above: int, report: RecoverResult | None,
                    kept: KeptEpochs) -> tuple[Region, int]:
    """Keep the valid batches from `start` up to the next damage whose offsets are above `above`; the
    region kept and where the damage starts. The region's findings go to `report` when given."""
    walk, blocks = _region_blocks(buf, cast(Path, seg.source), seg.base_offset, start)
    region, cut = Region(), None
    for block in blocks:
        valid = block.end <= walk.valid_bytes
        rows = seg.keep(block, valid & (block.base_offset > above), shift=start)
        kept.feed(rows, scanned=True)
        if len(rows):
            if region.first_offset is None:
                region.first_offset, region.position = int(rows.base_offset[0]), int(rows.position[0]) + start
            region.batches += len(rows)
            region.last_offset = int(rows.last_offset[-1])
        if not valid.all():  # the damage: the region ends (and is read no further) at its first batch
            cut = int(block.end[np.argmin(valid)])
            break
    if report is not None:
        report.findings += _region_findings(walk, start, cut)
    return region, start + walk.valid_bytes


def _base_at(buf: memoryview, pos: int) -> int:
    return int.from_bytes(buf[pos:pos + 8], "big", signed=True)


def _all_zero(buf: memoryview, start: int, end: int) -> bool:
    """Whether buf[start:end] is all zeros, read piece by piece (a zero-filled tail can be GiBs)."""
    for lo in range(start, end, RELEASE_STEP):
        hi = min(end, lo + RELEASE_STEP)
        if np.frombuffer(buf[lo:hi], dtype=np.uint8).any():
            return False
        release_pages(buf, lo, hi)
    return True


def _log_end(segments: list[Segment]) -> int:
    last = segments[-1]
    return last.next_offset if last.next_offset is not None else last.base_offset


# --- epochs and producer state ---------------------------------------------------------


class EpochSpans:
    """Per epoch, the lowest and highest base offset of the kept v2 batches at or above the log start
    that carry it: all `_consistent` needs. A cache maps offsets to epochs by a non-decreasing step
    function, so it gives every batch of an epoch that epoch iff it gives it to the lowest and the
    highest. One pair per epoch, whatever the length of the log."""

    def __init__(self, log_start: int) -> None:
        self.log_start = log_start
        self.spans: dict[int, tuple[int, int]] = {}

    def feed(self, block: BatchBlock) -> None:
        rows = (block.magic == 2) & (block.partition_leader_epoch >= 0) & (block.base_offset >= self.log_start)
        if not rows.any():
            return
        epochs, starts = block.partition_leader_epoch[rows], block.base_offset[rows]
        if epochs.min() == epochs.max():  # the usual block: one epoch
            self._widen(int(epochs[0]), starts)
            return
        for epoch in np.unique(epochs).tolist():
            self._widen(epoch, starts[epochs == epoch])

    def _widen(self, epoch: int, starts: np.ndarray) -> None:
        low, high = int(starts.min()), int(starts.max())
        seen = self.spans.get(epoch)
        self.spans[epoch] = (low, high) if seen is None else (min(seen[0], low), max(seen[1], high))

    def consistent_with(self, cache: EpochCache) -> bool:
        return all(cache.epoch_for_offset(low) == epoch and cache.epoch_for_offset(high) == epoch
                   for epoch, (low, high) in self.spans.items())


class KeptEpochs:
    """What the epoch rebuild needs of the batches recovery keeps, fed as they are kept: the epoch rises
    of the scanned segments (replayed onto the checkpoint) and of all of them (the cache rebuilt when
    the checkpoint contradicts the batches), and the epochs' offset spans (the consistency check)."""

    def __init__(self, log_start: int) -> None:
        self.scanned, self.every, self.spans = EpochRises(), EpochRises(), EpochSpans(log_start)

    def feed(self, block: BatchBlock, *, scanned: bool) -> None:
        if scanned:
            self.scanned.feed(block)
        self.every.feed(block)
        self.spans.feed(block)


def _epochs(pdir: Path, kept: KeptEpochs, leo: int, lso_cp: int, result: RecoverResult) -> EpochCache:
    """The broker's cache (checkpoint + recovery rule + truncations); rebuilt from the batches
    when the checkpoint contradicts them."""
    cache = EpochCache()
    path = pdir / names.LEADER_EPOCH_CHECKPOINT
    if path.is_file():
        try:
            cache = EpochCache(checkpoint.parse_leader_epoch_checkpoint(read_small(path)))
        except (FormatError, UnreadableInput, ValueError) as e:
            result.findings.append(finding("KAFKA_CHECKPOINT_INVALID", str(path), message=f"{e}; rebuilt from batches"))
    kept.scanned.assign_to(cache)
    cache.truncate_from_end(leo)
    cache.truncate_from_start(lso_cp)
    if not kept.spans.consistent_with(cache):
        derived = EpochCache()
        kept.every.assign_to(derived)
        derived.truncate_from_end(leo)
        derived.truncate_from_start(lso_cp)
        result.findings.append(finding("KAFKA_EPOCH_CHECKPOINT_MISMATCH", str(path),
                                       message=f"checkpoint {[tuple(e) for e in cache.entries]} contradicts the "
                                               f"batches; written as rebuilt from them: "
                                               f"{[tuple(e) for e in derived.entries]}"))
        return derived
    return cache


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
        runs = [ByteRun(str(seg.source), start, end, seg.base_offset) for start, end in seg.ranges]
        write_segment(part, seg.base_offset, runs, producers)
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
