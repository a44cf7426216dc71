"""One pass over a segment feeds every check: walk, records, epochs and producers, indexes.

The segment is walked once, block by block (`FastWalk.blocks`: columns, never a
Python object per batch), and each block goes to every check that reads
batches: the record decode (`deep`), the state checker (sound batches only, in
log order, with the markers of the few control batches decoded here), and the
index checks. What the pass keeps of the batches is a handful of numbers
(`SegmentSummary`), so memory does not grow with the segment. `segment_blocks`
is the same pass handing each block out too (`Walked`), for a caller that
builds more from the batches (a fleet scan's summary and batch table) without
walking the segment again. `reuse_blocks` is that pass fed from a walk an
earlier pass recorded (`RecordedWalk`: its blocks, transaction markers and
outcome) instead of from the segment's bytes: every check downstream sees the
same blocks in the same order, so it reports the same findings, while the
segment itself is not read (a fleet rescan of a sealed, unchanged segment).
"""
from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np

from replog.formats.errors import FormatError
from replog.formats.findings import Finding, finding
from replog.formats.kafka.blocks import BatchBlock, walk_blocks
from replog.formats.kafka.segment import batch_records
from replog.formats.kafka.txn_index import AbortedTxn
from replog.recovery.kafka.logdir import SegmentSummary
from replog.recovery.kafka.producer_state import marker_of


class BlockCheck(Protocol):
    """A check fed every block of a segment in file order."""

    def feed(self, block: BatchBlock) -> None: ...


class StateFeed(Protocol):
    def feed_block(self, block: BatchBlock, path: str,
                   markers: dict[int, tuple[int, int] | None]) -> list[AbortedTxn]: ...


@dataclass
class Walked:
    """One block of a segment's pass, handed out once every check has read it (a view: use it before
    asking for the next one).

    `valid_bytes` is the walk's when the block is handed out: it already covers the block's rows and,
    once a batch recovery would stop at is met, never grows again, so `kept` is final.
    """

    segment: SegmentSummary   # still being filled: its path, base offset and size are known
    block: BatchBlock
    valid_bytes: int
    markers: dict[int, tuple[int, int] | None] = field(default_factory=dict)  # of its marker rows, by position

    @property
    def kept(self) -> np.ndarray:
        """Per row: the broker's recovery keeps this batch (it ends within `valid_bytes`)."""
        return self.block.end <= self.valid_bytes


Markers = dict[int, tuple[int, int] | None]


class RecordedWalk(Protocol):
    """What an earlier pass over an unchanged segment recorded: its blocks in file order, the
    (control type, coordinator epoch) of its transaction markers by batch position, and the walk's
    outcome; `record_findings` is what the record decode found (`RecordCheck`)."""

    @property
    def size(self) -> int: ...
    @property
    def valid_bytes(self) -> int: ...
    @property
    def end_position(self) -> int: ...
    @property
    def findings(self) -> list[Finding]: ...
    @property
    def record_findings(self) -> list[Finding]: ...
    @property
    def markers(self) -> Markers: ...

    def blocks(self) -> Iterator[BatchBlock]: ...


def segment_blocks(buf: memoryview | bytes, path: Path, base_offset: int, *, compiled: bool,
                   checks: Iterable[BlockCheck] = (),
                   state: StateFeed | None = None) -> Generator[Walked, None, SegmentSummary]:
    """`scan_segment`, handing out every block after `checks` and `state` have read it; returns the result."""
    walk, blocks = walk_blocks(buf, str(path), base_offset, compiled)
    seg = SegmentSummary(str(path), base_offset, len(buf))
    yield from _feed(seg, blocks, lambda: walk.valid_bytes, lambda sound: markers(buf, sound), checks, state)
    seg.valid_bytes, seg.end_position, seg.findings = walk.valid_bytes, walk.end_position, list(walk.findings)
    return seg


def reuse_blocks(recorded: RecordedWalk, path: Path, base_offset: int, *, checks: Iterable[BlockCheck] = (),
                  state: StateFeed | None = None) -> Generator[Walked, None, SegmentSummary]:
    """`segment_blocks` fed from `recorded` instead of the segment's bytes: the same blocks to the same
    checks, the same result (and the record decode's findings as recorded)."""
    seg = SegmentSummary(str(path), base_offset, recorded.size, reused=True)

    def recorded_markers(sound: BatchBlock) -> Markers:
        rows = marker_rows(sound)
        return {i: recorded.markers.get(p) for i, p in zip(rows.tolist(), sound.position[rows].tolist(), strict=True)}

    yield from _feed(seg, recorded.blocks(), lambda: recorded.valid_bytes, recorded_markers, checks, state)
    seg.valid_bytes, seg.end_position = recorded.valid_bytes, recorded.end_position
    seg.findings, seg.record_findings = list(recorded.findings), list(recorded.record_findings)
    return seg


def _feed(seg: SegmentSummary, blocks: Iterable[BatchBlock], valid_bytes: Callable[[], int],
          markers_of: Callable[[BatchBlock], Markers], checks: Iterable[BlockCheck],
          state: StateFeed | None) -> Generator[Walked, None, None]:
    """Every block to `checks`, its sound batches (with their markers) to `state`, then out as `Walked`."""
    checks = list(checks)
    for block in blocks:
        walked = Walked(seg, block, valid_bytes())
        _account(seg, walked)
        for check in checks:
            check.feed(block)
        if state is not None:
            ok = (block.crc_valid == 1) & (block.magic >= 0) & (block.magic <= 2)
            sound = block if ok.all() else block[ok]  # the common case: no copy
            found = markers_of(sound)
            if found:
                walked.markers = {int(sound.position[i]): m for i, m in found.items()}
            seg.aborted += state.feed_block(sound, seg.path, found)
        yield walked


def scan_segment(buf: memoryview | bytes, path: Path, base_offset: int, *, compiled: bool,
                 checks: Iterable[BlockCheck] = (), state: StateFeed | None = None) -> SegmentSummary:
    """Walk `buf` once; every block goes to `checks`, its sound batches to `state`."""
    return drain(segment_blocks(buf, path, base_offset, compiled=compiled, checks=checks, state=state))


R = TypeVar("R")


def drain(steps: Generator[Any, None, R]) -> R:
    """Run a pass to its end, dropping what it hands out; what it returns."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


def _account(seg: SegmentSummary, walked: Walked) -> None:
    """Fold one block into the result (its kept rows are final, see `Walked`)."""
    block = walked.block
    if not len(block):
        return
    if seg.first_offset is None:
        seg.first_offset = int(block.base_offset[0])
    top = int(block.last_offset.max())
    seg.max_last_offset = top if seg.max_last_offset is None else max(seg.max_last_offset, top)
    seg.batch_count += len(block)
    kept = np.flatnonzero(walked.kept)
    if len(kept):
        seg.valid_next_offset = int(block.last_offset[kept[-1]]) + 1


def markers(buf: memoryview | bytes, sound: BatchBlock) -> dict[int, tuple[int, int] | None]:
    """(control type, coordinator epoch) of each transaction marker row of a block of sound batches."""
    out: dict[int, tuple[int, int] | None] = {}
    if not sound.is_control.any():
        return out
    for i in marker_rows(sound).tolist():
        try:
            out[i] = marker_of(batch_records(buf, sound.row(i)))
        except FormatError:
            out[i] = None
    return out


def marker_rows(sound: BatchBlock) -> np.ndarray:
    """The rows of a block of sound batches that are transaction markers (control, v2, with a producer)."""
    return np.flatnonzero((sound.is_control == 1) & (sound.magic == 2) & (sound.producer_id >= 0))


def check_continuity(prev: SegmentSummary, seg: SegmentSummary) -> list[Finding]:
    """Overlap or hole between a segment and the last earlier one that held batches."""
    if not prev.batch_count or prev.max_last_offset is None:
        return []
    prev_last, first = prev.max_last_offset, seg.first_offset
    if seg.base_offset <= prev_last or (first is not None and first <= prev_last):
        return [finding("KAFKA_SEGMENT_OVERLAP", seg.path, position=0,
                        offset=first if first is not None else seg.base_offset,
                        message=f"segment starts at {seg.base_offset} (first batch {first}); the "
                                f"previous segment reaches offset {prev_last}")]
    if first is not None and first > prev_last + 1:
        return [finding("KAFKA_OFFSET_GAP", seg.path, position=0, offset=prev_last + 1,
                        message=f"offsets {prev_last + 1}..{first - 1} are in no segment (normal after compaction)")]
    return []
