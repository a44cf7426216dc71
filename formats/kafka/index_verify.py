"""Index files checked against their segment, for `dump --verify-index-only` (kafka-dump-log parity).

The rules live in `formats.kafka.index_check` (shared with doctor); this
module finds the sibling `.log`, walks it block by block and feeds the
streaming checks, so memory holds the index entries, never the log's batches.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from replog.formats.fileio import mapped
from replog.formats.findings import Finding, finding
from replog.formats.kafka import index_stream, names
from replog.formats.kafka.blocks import walk_blocks
from replog.formats.kafka.offset_index import OffsetIndexColumns, OffsetIndexEntry
from replog.formats.kafka.partition_files import is_live_segment
from replog.formats.kafka.time_index import TimeIndexColumns, TimeIndexEntry

FAST_WALK_BYTES = 1 << 20  # below this the numba import costs more than the fast walk saves
_BLOCK_ROWS = 4096


def verify_index(path: Path, base: int, entries: OffsetIndexColumns | TimeIndexColumns
                 | Sequence[OffsetIndexEntry] | Sequence[TimeIndexEntry]) -> list[Finding]:
    """Findings for every entry of a `.index` or `.timeindex` that its whole `.log` contradicts
    (`--max-bytes` limits how much of a log is dumped, not what an index is checked against)."""
    seg = names.parse_segment_file_name(path.name)
    log = path.with_name(names.sibling_file_name(seg, "log") if seg else names.segment_file_name(base, "log"))
    if not log.is_file():
        return [finding("KAFKA_INDEX_WITHOUT_LOG", str(path), message="no .log beside this index to verify against")]
    with mapped(log, live=is_live_segment(log), windows=True) as buf:
        if (seg.kind if seg else path.suffix.lstrip(".")) == "index":
            check: index_stream.OffsetIndexCheck | index_stream.TimeIndexCheck = index_stream.OffsetIndexCheck(
                entries, base_offset=base, log_size=len(buf), path=str(path))  # type: ignore[arg-type]
        else:
            check = index_stream.TimeIndexCheck(entries, base_offset=base, path=str(path))  # type: ignore[arg-type]
        _, blocks = walk_blocks(buf, str(log), base, compiled=len(buf) >= FAST_WALK_BYTES, chunk=_BLOCK_ROWS)
        for block in blocks:
            check.feed(block)
    return check.finish()
