"""Index checks of one segment: `.index`, `.timeindex`, `.txnindex` against its batches, streaming.

Format findings come from the readers (size multiple, monotonicity, padding);
content findings from `formats.kafka.index_check`. A zero tail is benign on
the active (last) segment and only notable on a closed one.
"""
from __future__ import annotations

from pathlib import Path

from replog.formats.errors import UnreadableInput
from replog.formats.findings import Finding, Severity, finding
from replog.formats.kafka import index_check, offset_index, time_index, txn_index
from replog.formats.kafka.blocks import BatchBlock
from replog.formats.kafka.txn_index import AbortedTxn
from replog.recovery.evidence import Evidence


class IndexChecks:
    """The `.index` and `.timeindex` of one segment, checked while its batches stream by.

    The index files are read as columns before the walk; every block of the
    segment is fed to their streaming checks; `finish` adds the `.txnindex`
    against the ABORT markers the walk met. Findings and their order are those
    of the list-based checks (`index_check.check_offset_index` and friends).
    """

    def __init__(self, ev: Evidence, paths: dict[str, Path], *, base_offset: int, log_size: int,
                 active: bool) -> None:
        self.ev, self.paths, self.base_offset, self.active = ev, paths, base_offset, active
        self._kinds: list[tuple[list[Finding], index_check.OffsetIndexCheck | index_check.TimeIndexCheck | None]] = []
        for kind in ("index", "timeindex"):
            path = paths.get(kind)
            if path is not None:
                self._kinds.append(self._open(kind, path, log_size))

    def _open(self, kind: str, path: Path, log_size: int) -> tuple[
            list[Finding], index_check.OffsetIndexCheck | index_check.TimeIndexCheck | None]:
        try:
            with self.ev.mapped(path) as buf:
                if kind == "index":
                    entries = offset_index.read_offset_index_columns(buf, self.base_offset, path=str(path))
                    return entries.findings, index_check.OffsetIndexCheck(
                        entries, base_offset=self.base_offset, log_size=log_size, path=str(path))
                times = time_index.read_time_index_columns(buf, self.base_offset, path=str(path))
                return times.findings, index_check.TimeIndexCheck(times, base_offset=self.base_offset,
                                                                   path=str(path))
        except UnreadableInput as e:
            return [finding("UNREADABLE_FILE", str(path), message=str(e))], None

    def feed(self, block: BatchBlock) -> None:
        for _, check in self._kinds:
            if check is not None:
                check.feed(block)

    def finish(self, log_path: Path, expected_aborts: list[AbortedTxn]) -> list[Finding]:
        out: list[Finding] = []
        for read_findings, check in self._kinds:
            found = read_findings + (check.finish() if check is not None else [])
            out += [_tail_severity(f, self.active) for f in found]
        path = self.paths.get("txnindex")
        if path is not None or expected_aborts:
            out += _txn_index(self.ev, path, log_path, self.base_offset, expected_aborts)
        return out


def _tail_severity(f: Finding, active: bool) -> Finding:
    if f.code != "KAFKA_INDEX_ZERO_TAIL" or active:
        return f
    return finding(f.code, f.path, position=f.position, offset=f.offset, severity=Severity.INFO,
                   message=f"{f.message}; a closed segment's index is normally trimmed (crash during a roll?)")


def _txn_index(ev: Evidence, path: Path | None, log_path: Path, base_offset: int,
               expected: list[AbortedTxn]) -> list[Finding]:
    shown = str(path) if path is not None else str(log_path.with_suffix(".txnindex"))
    if path is None:
        return index_check.check_txn_index(expected, [], path=shown)
    try:
        read = txn_index.read_txn_index(ev.read_small(path), base_offset, path=shown)
    except UnreadableInput as e:
        return [finding("UNREADABLE_FILE", shown, message=str(e))]
    return read.findings + index_check.check_txn_index(expected, read.entries, path=shown)
