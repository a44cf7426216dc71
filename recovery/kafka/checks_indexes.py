"""Index checks of one segment: `.index`, `.timeindex`, `.txnindex` against its batches.

Format findings come from the readers (size multiple, monotonicity, padding);
content findings from `formats.kafka.index_check`. A zero tail is benign on
the active (last) segment and only notable on a closed one.
"""
from __future__ import annotations

from pathlib import Path

from replog.formats.errors import UnreadableInput
from replog.formats.findings import Finding, Severity, finding
from replog.formats.kafka import index_check, offset_index, time_index, txn_index
from replog.formats.kafka.txn_index import AbortedTxn
from replog.recovery.evidence import Evidence
from replog.recovery.kafka.checks_segments import SegmentResult


def check_indexes(ev: Evidence, seg: SegmentResult, paths: dict[str, Path], *, active: bool,
                  expected_aborts: list[AbortedTxn]) -> list[Finding]:
    """All index findings for one segment; `paths` maps kind -> file (missing kinds absent)."""
    out: list[Finding] = []
    for kind, check in (("index", _offset_index), ("timeindex", _time_index)):
        path = paths.get(kind)
        if path is None:
            continue
        try:
            with ev.mapped(path) as buf:
                found = check(buf, seg, str(path))
        except UnreadableInput as e:
            found = [finding("UNREADABLE_FILE", str(path), message=str(e))]
        out += [_tail_severity(f, active) for f in found]
    path = paths.get("txnindex")
    if path is not None or expected_aborts:
        out += _txn_index(ev, path, seg, expected_aborts)
    return out


def _tail_severity(f: Finding, active: bool) -> Finding:
    if f.code != "KAFKA_INDEX_ZERO_TAIL" or active:
        return f
    return finding(f.code, f.path, position=f.position, offset=f.offset, severity=Severity.INFO,
                   message=f"{f.message}; a closed segment's index is normally trimmed (crash during a roll?)")


def _offset_index(buf: memoryview, seg: SegmentResult, path: str) -> list[Finding]:
    read = offset_index.read_offset_index(buf, seg.base_offset, path=path)
    return read.findings + index_check.check_offset_index(
        seg.batches, read.entries, base_offset=seg.base_offset, log_size=seg.size, path=path)


def _time_index(buf: memoryview, seg: SegmentResult, path: str) -> list[Finding]:
    read = time_index.read_time_index(buf, seg.base_offset, path=path)
    return read.findings + index_check.check_time_index(
        seg.batches, read.entries, base_offset=seg.base_offset, path=path)


def _txn_index(ev: Evidence, path: Path | None, seg: SegmentResult,
               expected: list[AbortedTxn]) -> list[Finding]:
    shown = str(path) if path is not None else str(seg.path.with_suffix(".txnindex"))
    if path is None:
        return index_check.check_txn_index(expected, [], path=shown)
    try:
        read = txn_index.read_txn_index(ev.read_small(path), seg.base_offset, path=shown)
    except UnreadableInput as e:
        return [finding("UNREADABLE_FILE", shown, message=str(e))]
    return read.findings + index_check.check_txn_index(expected, read.entries, path=shown)
