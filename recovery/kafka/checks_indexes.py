"""Index checks of one segment: `.index`, `.timeindex`, `.txnindex` against its batches.

Format findings come from the readers (size multiple, monotonicity, padding);
content findings from `formats.kafka.index_check`. A zero tail is benign on
the active (last) segment and only notable on a closed one.

`SegmentIndexChecks` is made before the segment's walk, fed its `BatchBlock`s
as they come and finished after it (memory: the index entries, never the
batches); then `txn_index_findings` checks the `.txnindex` against the ABORT
markers the walk met.
"""
from __future__ import annotations

from pathlib import Path

from replog.formats.errors import UnreadableInput
from replog.formats.findings import Finding, Severity, finding, from_unreadable
from replog.formats.kafka import index_check, index_stream, offset_index, time_index, txn_index
from replog.formats.kafka.blocks import BatchBlock
from replog.formats.kafka.txn_index import AbortedTxn
from replog.recovery.evidence import Evidence

BLOCK_ROWS = 1 << 16  # batches per block when a held walk is fed as blocks


class SegmentIndexChecks:
    """The `.index` and `.timeindex` checks of one segment, fed its batches block by block.

    `paths` maps kind ("index", "timeindex"; other kinds are ignored) to the
    file; a missing kind is absent. Construction reads both files as columns
    (`read_offset_index_columns`, `read_time_index_columns`) and keeps their
    format findings; an unreadable file gives `UNREADABLE_FILE` and no check.
    Then `feed` every `BatchBlock` of the segment's `.log` (`log_size` bytes),
    in file order, e.g. straight from `FastWalk.blocks()`; `finish()` returns
    the findings: per file (`.index` first), the reader's then the check's,
    a zero tail reported as notable on a closed (not `active`) segment.
    The `.txnindex` is `txn_index_findings`, once the walk has met the ABORT markers.
    """

    def __init__(self, ev: Evidence, paths: dict[str, Path], *, base_offset: int, log_size: int,
                 active: bool) -> None:
        self.active = active
        self._parts: list[tuple[list[Finding], index_stream.OffsetIndexCheck | index_stream.TimeIndexCheck | None]]
        self._parts = []
        for kind in ("index", "timeindex"):
            path = paths.get(kind)
            if path is None:
                continue
            shown = str(path)
            try:
                with ev.mapped(path, live=active) as buf:  # the broker trims an active index at roll
                    self._parts.append(self._open(kind, buf, base_offset, log_size, shown))
            except UnreadableInput as e:
                self._parts.append(([from_unreadable(e, shown)], None))

    @staticmethod
    def _open(kind: str, buf: memoryview, base_offset: int, log_size: int, shown: str) -> tuple[
            list[Finding], index_stream.OffsetIndexCheck | index_stream.TimeIndexCheck]:
        if kind == "index":
            entries = offset_index.read_offset_index_columns(buf, base_offset, path=shown)
            return entries.findings, index_stream.OffsetIndexCheck(entries, base_offset=base_offset,
                                                                   log_size=log_size, path=shown)
        times = time_index.read_time_index_columns(buf, base_offset, path=shown)
        return times.findings, index_stream.TimeIndexCheck(times, base_offset=base_offset, path=shown)

    def feed(self, block: BatchBlock) -> None:
        """The next batches of the segment, in file order (the block is not kept)."""
        for _, check in self._parts:
            if check is not None:
                check.feed(block)

    def finish(self) -> list[Finding]:
        """All findings of the index files, once every block has been fed."""
        out: list[Finding] = []
        for found, check in self._parts:
            out += [_tail_severity(f, self.active) for f in found + (check.finish() if check else [])]
        return out


def txn_index_findings(ev: Evidence, path: Path | None, *, log_path: Path, base_offset: int,
                       expected_aborts: list[AbortedTxn]) -> list[Finding]:
    """The `.txnindex` at `path` (None: absent) against the aborted transactions the segment's ABORT
    markers imply; a missing file with expected entries is reported at the name it would have."""
    shown = str(path) if path is not None else str(log_path.with_suffix(".txnindex"))
    if path is None:
        return index_check.check_txn_index(expected_aborts, [], path=shown)
    try:
        read = txn_index.read_txn_index(ev.read_small(path), base_offset, path=shown)
    except UnreadableInput as e:
        return [from_unreadable(e, shown)]
    return read.findings + index_check.check_txn_index(expected_aborts, read.entries, path=shown)


def _tail_severity(f: Finding, active: bool) -> Finding:
    if f.code != "KAFKA_INDEX_ZERO_TAIL" or active:
        return f
    return finding(f.code, f.path, position=f.position, offset=f.offset, severity=Severity.INFO,
                   message=f"{f.message}; a closed segment's index is normally trimmed (crash during a roll?)")
