"""`recover --salvage`: every valid batch of a segment kept, past damage too (beyond the broker).

After damage the scan resynchronises on the next plausible v2 header whose CRC checks and whose
offsets the segment can hold, keeping every valid batch whose offsets are above what was kept; each
skipped stretch is a hole in the report, with what it cost. The byte searches go a window at a time
over the stretches of the file that hold data (a sparse file's holes are zeros: nothing to find),
each window read first when the segment is live (`fileview.readable`) and released behind.
"""
from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from crc32c import crc32c

from replog.formats.fileio import RELEASE_STEP, all_zero, release_pages
from replog.formats.fileview import data_extents, readable
from replog.formats.findings import Finding, finding
from replog.formats.kafka import batch as v2
from replog.formats.kafka.blocks import BatchBlock, walk_blocks
from replog.formats.kafka.segment import MIN_ENTRY_SIZE, SegmentWalk
from replog.recovery.kafka.logdir import use_fast_walk

if TYPE_CHECKING:
    from replog.recovery.kafka.recover import RecoverResult, Segment
    from replog.recovery.kafka.recover_epochs import KeptEpochs

_MAX_V2_BATCH = 1 << 30
_HEADER = struct.Struct(">qiibIhi")  # base offset .. last offset delta
_MAGIC_AT = v2.AT["magic"]


def resync(buf: memoryview, start: int, above: int, segment_base: int) -> int | None:
    """Position of the next plausible v2 batch after `start` whose CRC checks.

    Candidates are found with a C-speed search for the magic byte; each is checked cheaply (offset
    above what was kept, offsets the segment named `segment_base` can hold: `LogSegment.ensureOffsetInRange`,
    sane length) before its CRC.
    """
    data = cast("bytes", buf.obj if isinstance(buf, memoryview) and buf.obj is not None else buf)  # .find
    size = len(buf)
    for lo, hi in data_extents(buf, start + 1 + _MAGIC_AT, size):
        for a in range(lo, hi, RELEASE_STEP):
            b = min(hi, a + RELEASE_STEP)
            readable(buf, a, b)
            found = _candidate(buf, data, a, b, above, segment_base)
            if found is not None:
                return found if found >= 0 else None
            release_pages(buf, a, b)
    return None


def _candidate(buf: memoryview, data: bytes, lo: int, hi: int, above: int, segment_base: int) -> int | None:
    """The first batch whose magic byte lies in [lo, hi) and that checks; -1 when the file ends first."""
    size, pos = len(buf), lo
    while (magic_at := data.find(b"\x02", pos, hi)) >= 0:
        p, pos = magic_at - _MAGIC_AT, magic_at + 1
        if p + v2.HEADER_SIZE > size:
            return -1
        readable(buf, p, p + v2.HEADER_SIZE)
        base, length, _, _, crc, _, delta = _HEADER.unpack_from(buf, p)
        if (base <= above or not 0 <= base + delta - segment_base <= v2.INT32_MAX
                or length < v2.HEADER_SIZE - 12 or p + 12 + length > size or length > _MAX_V2_BATCH):
            continue
        readable(buf, p, p + 12 + length)
        if crc32c(buf[p + v2.CRC_START:p + 12 + length]) == crc:
            return p
    return None


def _walk(buf: memoryview, path: Path, base: int | None) -> tuple[SegmentWalk, Iterator[BatchBlock]]:
    return walk_blocks(buf, str(path), base, use_fast_walk(len(buf), buf=buf))


def region_blocks(buf: memoryview, path: Path, base: int, start: int) -> tuple[SegmentWalk, Iterator[BatchBlock]]:
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


def salvage_segment(buf: memoryview, seg: Segment, done: list[Segment], result: RecoverResult,
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
        nxt = resync(buf, end, above, seg.base_offset)
        hole_end = size if nxt is None else nxt
        if all_zero(buf, end, hole_end) and nxt is None:
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
        readable(buf, pos, pos + v2.LOG_OVERHEAD)
        length = int.from_bytes(buf[pos + 8:pos + 12], "big", signed=True)
        nxt = pos + v2.LOG_OVERHEAD + length
        if length < MIN_ENTRY_SIZE or nxt > end:
            break
        count, pos = count + 1, nxt
    return count


def salvage_summary(result: RecoverResult, segments: list[Segment]) -> None:
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
    walk, blocks = region_blocks(buf, cast(Path, seg.source), seg.base_offset, start)
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
    readable(buf, pos, pos + 8)
    return int.from_bytes(buf[pos:pos + 8], "big", signed=True)
