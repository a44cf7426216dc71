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

The output is built in a temporary sibling dir, fsynced, renamed into place,
re-verified with `diagnose`, and `.replog-complete` is written last.
"""
from __future__ import annotations

import json
import mmap
import os
import shutil
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from crc32c import crc32c

from replog.formats.errors import FormatError, UnreadableInput
from replog.formats.fileio import atomic_write, fsync_dir, mapped, read_small
from replog.formats.findings import FINDING, Finding, finding
from replog.formats.kafka import batch as v2
from replog.formats.kafka import checkpoint, names
from replog.formats.kafka.partition_files import list_partition_files
from replog.formats.kafka.partition_metadata import parse_partition_metadata
from replog.formats.kafka.producer_snapshot import build_producer_snapshot, parse_producer_snapshot
from replog.formats.kafka.segment import BatchInfo, SegmentWalk
from replog.formats.shape import Field, Shape
from replog.recovery import outputs
from replog.recovery.kafka.epoch_cache import EpochCache
from replog.recovery.kafka.logdir import read_broker_checkpoints
from replog.recovery.kafka.producer_state import ProducerEntry, ProducerState
from replog.recovery.kafka.rebuild import rebuild_indexes

COMPLETE_MARKER = outputs.COMPLETE_MARKER
_MAX_V2_BATCH = 1 << 30
_HEADER = struct.Struct(">qiibI")


@dataclass
class Segment:
    """One output segment: its base offset and the kept batches (positions in `source`)."""

    base_offset: int
    source: Path | None
    batches: list[BatchInfo] = field(default_factory=list)
    scanned: bool = False


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
        walk = SegmentWalk(buf, str(path), base).walk()
        return walk.next_offset if walk.next_offset is not None else base


def _resync(buf: memoryview, start: int, above: int) -> int | None:
    """Position of the next plausible v2 batch after `start` whose CRC checks.

    Candidates are found with a C-speed search for the magic byte; each is
    checked cheaply (offset above what was kept, sane length) before its CRC.
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
        base, length, _, _, crc = _HEADER.unpack_from(buf, p)
        if base <= above or length < v2.HEADER_SIZE - 12 or p + 12 + length > size or length > _MAX_V2_BATCH:
            continue
        if crc32c(buf[p + v2.CRC_START:p + 12 + length]) == crc:
            return p
    return None


def _walk_from(buf: memoryview, path: str, base: int, start: int) -> tuple[list[BatchInfo], int, list[Finding]]:
    """Valid batches from `start` up to the next damage; (batches, valid end, findings)."""
    walk = SegmentWalk(buf[start:], str(path), None)
    batches = []
    for b in walk.batches():
        if b.end > walk.valid_bytes:
            break
        batches.append(b._replace(position=b.position + start))
    findings = [finding(f.code, f.path, position=(f.position or 0) + start, offset=f.offset, message=f.message,
                        severity=f.severity) for f in walk.findings]
    return batches, start + walk.valid_bytes, findings


# --- the recovery -------------------------------------------------------------------


def recover_partition(partition_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str], *,
                      salvage: bool = False, force: bool = False) -> RecoverResult:
    """Recover one partition dir into `out_dir` (a new log dir); the input is only read."""
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
    segments = _recover_segments(logs, recovery_point, salvage, result)
    leo = _log_end(segments)
    if leo < lso_cp:  # §10.2 step 5: everything deleted, empty log at the checkpointed start
        result.dropped["segments"].extend(str(s.source) for s in segments if s.source)
        segments, leo = [Segment(lso_cp, None)], lso_cp
    result.log_end_offset = leo
    result.log_start_offset = max(lso_cp, segments[0].base_offset)
    result.high_watermark = min(max((cps.high_watermarks or {}).get(tp, 0), result.log_start_offset), leo)
    result.recovery_point = min(recovery_point, leo)
    epochs = _epochs(pdir, segments, leo, lso_cp, result)
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
                      result: RecoverResult) -> list[Segment]:
    bases = list(logs)
    if not bases:
        return [Segment(0, None)]
    start = 0 if salvage else max([i for i, b in enumerate(bases) if b <= recovery_point], default=0)
    segments: list[Segment] = []
    for i, base in enumerate(bases):
        path = logs[base]
        seg = Segment(base, path, scanned=i >= start)
        with mapped(path) as buf:
            if not seg.scanned:
                seg.batches = list(SegmentWalk(buf, str(path), base).batches())
            elif salvage:
                _salvage_segment(buf, seg, segments, result)
            else:
                walk = SegmentWalk(buf, str(path), base)
                all_batches = list(walk.batches())
                seg.batches = [b for b in all_batches if b.end <= walk.valid_bytes]
                result.findings += walk.findings
                if walk.valid_bytes < len(buf):
                    segments.append(seg)
                    _record_truncation(seg, walk.valid_bytes, len(buf), all_batches, bases[i + 1:], logs, result)
                    return segments
        segments.append(seg)
    return segments


def _record_truncation(seg: Segment, valid: int, size: int, framed: list[BatchInfo], later: list[int],
                       logs: dict[int, Path], result: RecoverResult) -> None:
    lost = [b for b in framed if b.end > valid]
    for base in later:
        with mapped(logs[base]) as buf:
            lost += list(SegmentWalk(buf, str(logs[base]), base).batches())
    result.truncated_to = seg.batches[-1].next_offset if seg.batches else seg.base_offset
    result.valid_bytes, result.truncated_segment = valid, str(seg.source)
    lost_bytes = (size - valid) + sum(logs[b].stat().st_size for b in later)
    result.dropped.update({
        "segments": [logs[b].name for b in later], "bytes": lost_bytes, "batches": len(lost),
        "first_offset": min((b.base_offset for b in lost), default=None),
        "last_offset": max((b.last_offset for b in lost), default=None)})


def _salvage_segment(buf: memoryview, seg: Segment, done: list[Segment], result: RecoverResult) -> None:
    """Keep every valid batch of the segment, resynchronising after each damaged region."""
    above = max((b.last_offset for s in done for b in s.batches), default=-1)
    pos, size, first_run = 0, len(buf), True
    holes = result.dropped["holes"]
    while pos < size:
        batches, end, found = _walk_from(buf, str(seg.source), seg.base_offset, pos)
        batches = [b for b in batches if b.base_offset > above]
        if first_run:
            result.findings += found
        if batches:
            above = batches[-1].last_offset
            seg.batches += batches
            if not first_run:
                result.salvaged.append({"first_offset": batches[0].base_offset, "last_offset": batches[-1].last_offset,
                                        "position": batches[0].position, "segment": str(seg.source),
                                        "batches": len(batches)})
        if end >= size:
            break
        nxt = _resync(buf, end, above)
        hole_end = size if nxt is None else nxt
        if _all_zero(buf, end, hole_end) and nxt is None:
            break  # a zero-filled tail is not a hole
        holes.append({"segment": str(seg.source), "position": end, "end_position": hole_end,
                      "bytes": hole_end - end, "after_offset": above,
                      "next_offset": _base_at(buf, nxt) if nxt is not None else None})
        if nxt is None:
            break
        result.findings.append(finding(
            "KAFKA_SALVAGE_RESYNC", str(seg.source), position=nxt, offset=_base_at(buf, nxt),
            message=f"{hole_end - end} damaged bytes at {end}..{hole_end}; valid batches again from position {nxt} "
                    f"(offsets {above + 1}..{_base_at(buf, nxt) - 1} lost)"))
        pos, first_run = nxt, False
    if result.truncated_to is None and holes:
        result.valid_bytes = holes[0]["position"]


def _base_at(buf: memoryview, pos: int) -> int:
    return int.from_bytes(buf[pos:pos + 8], "big", signed=True)


def _all_zero(buf: memoryview, start: int, end: int) -> bool:
    return bytes(buf[start:end]).count(0) == end - start


def _log_end(segments: list[Segment]) -> int:
    last = segments[-1]
    return last.batches[-1].next_offset if last.batches else last.base_offset


# --- epochs and producer state ---------------------------------------------------------


def _epochs(pdir: Path, segments: list[Segment], leo: int, lso_cp: int, result: RecoverResult) -> EpochCache:
    """The broker's cache (checkpoint + recovery rule + truncations); rebuilt from the batches
    when the checkpoint contradicts them."""
    cache = EpochCache()
    path = pdir / names.LEADER_EPOCH_CHECKPOINT
    if path.is_file():
        try:
            cache = EpochCache(checkpoint.parse_leader_epoch_checkpoint(read_small(path)))
        except (FormatError, UnreadableInput, ValueError) as e:
            result.findings.append(finding("KAFKA_CHECKPOINT_INVALID", str(path), message=f"{e}; rebuilt from batches"))
    for seg in segments:
        if seg.scanned:
            _assign_by_recovery_rule(cache, seg.batches)
    cache.truncate_from_end(leo)
    cache.truncate_from_start(lso_cp)
    if not _consistent(cache, segments, lso_cp):
        derived = EpochCache()
        for seg in segments:
            _assign_by_recovery_rule(derived, seg.batches)
        derived.truncate_from_end(leo)
        derived.truncate_from_start(lso_cp)
        result.findings.append(finding("KAFKA_EPOCH_CHECKPOINT_MISMATCH", str(path),
                                       message=f"checkpoint {[tuple(e) for e in cache.entries]} contradicts the "
                                               f"batches; written as rebuilt from them: "
                                               f"{[tuple(e) for e in derived.entries]}"))
        return derived
    return cache


def _assign_by_recovery_rule(cache: EpochCache, batches: list[BatchInfo]) -> None:
    for b in batches:
        if b.magic == 2 and b.partition_leader_epoch >= 0 and (
                cache.latest_epoch is None or b.partition_leader_epoch > cache.latest_epoch):
            cache.assign(b.partition_leader_epoch, b.base_offset)


def _consistent(cache: EpochCache, segments: list[Segment], log_start: int) -> bool:
    for seg in segments:
        for b in seg.batches:
            if b.magic == 2 and b.partition_leader_epoch >= 0 and b.base_offset >= log_start:
                if cache.epoch_for_offset(b.base_offset) != b.partition_leader_epoch:
                    return False
    return True


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
        data = _segment_bytes(seg)
        if seg.base_offset in snapshot_at and seg.base_offset != result.log_end_offset:
            _put(part, names.segment_file_name(seg.base_offset, "snapshot"),
                 build_producer_snapshot(producers.snapshot_entries()))
        infos = list(SegmentWalk(data, "<out>", seg.base_offset).batches())
        idx = rebuild_indexes(data, seg.base_offset, infos, None, producers)
        _put(part, names.segment_file_name(seg.base_offset, "log"), data)
        _put(part, names.segment_file_name(seg.base_offset, "index"), idx.offset_index)
        _put(part, names.segment_file_name(seg.base_offset, "timeindex"), idx.time_index)
        if idx.txn_index:
            _put(part, names.segment_file_name(seg.base_offset, "txnindex"), idx.txn_index)
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


def _segment_bytes(seg: Segment) -> bytes:
    if seg.source is None or not seg.batches:
        return b""
    with mapped(seg.source) as buf:
        return b"".join(bytes(buf[b.position:b.end]) for b in seg.batches)


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
