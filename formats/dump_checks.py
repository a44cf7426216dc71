"""Index files checked against their segment, for `dump --verify-index-only` (kafka-dump-log parity).

The rules live in `formats.kafka.index_check` (shared with doctor); this
module finds the sibling `.log`, walks it block by block and feeds the
streaming checks, so memory holds the index entries, never the log's batches.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from replog.formats.fileio import mapped
from replog.formats.findings import Finding, finding
from replog.formats.kafka import index_check, names
from replog.formats.kafka.blocks import BatchBlock
from replog.formats.kafka.offset_index import OffsetIndexColumns, OffsetIndexEntry
from replog.formats.kafka.segment import BatchInfo, SegmentWalk
from replog.formats.kafka.time_index import TimeIndexColumns, TimeIndexEntry

FAST_WALK_BYTES = 1 << 20  # below this the numba import costs more than the fast walk saves
_BLOCK_ROWS = 4096


def verify_index(path: Path, base: int, entries: OffsetIndexColumns | TimeIndexColumns
                 | Sequence[OffsetIndexEntry] | Sequence[TimeIndexEntry]) -> list[Finding]:
    """Findings for every entry of a `.index` or `.timeindex` that its whole `.log` contradicts
    (`--max-bytes` limits how much of a log is dumped, not what an index is checked against)."""
    log = path.with_name(names.segment_file_name(base, "log"))
    if not log.is_file():
        return [finding("KAFKA_INDEX_WITHOUT_LOG", str(path), message="no .log beside this index to verify against")]
    with mapped(log) as buf:
        if path.suffix == ".index":
            check: index_check.OffsetIndexCheck | index_check.TimeIndexCheck = index_check.OffsetIndexCheck(
                entries, base_offset=base, log_size=len(buf), path=str(path))  # type: ignore[arg-type]
        else:
            check = index_check.TimeIndexCheck(entries, base_offset=base, path=str(path))  # type: ignore[arg-type]
        for block in _blocks(buf, str(log), base):
            check.feed(block)
    return check.finish()


def _blocks(buf: memoryview, path: str, base: int) -> Iterator[BatchBlock]:
    """The log's batches as blocks: the fast walk on a large log, the reference walk's on a small one."""
    if len(buf) >= FAST_WALK_BYTES:
        from replog.formats.kafka.fastwalk import FastWalk
        yield from FastWalk(buf, path, base).blocks()
        return
    pending: list[BatchInfo] = []
    for info in SegmentWalk(buf, path, base).batches():
        pending.append(info)
        if len(pending) == _BLOCK_ROWS:
            yield BatchBlock.from_infos(pending)
            pending = []
    if pending:
        yield BatchBlock.from_infos(pending)
