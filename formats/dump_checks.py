"""Index files checked against their segment, for `dump --verify-index-only` (kafka-dump-log parity).

The rules live in `formats.kafka.index_check` (shared with doctor); this
module finds the sibling `.log`, walks it and hands both over.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from replog.formats.fileio import mapped
from replog.formats.findings import Finding, finding
from replog.formats.kafka import index_check, names
from replog.formats.kafka.offset_index import OffsetIndexEntry
from replog.formats.kafka.segment import SegmentWalk
from replog.formats.kafka.time_index import TimeIndexEntry


def verify_index(path: Path, base: int, entries: Sequence[OffsetIndexEntry] | Sequence[TimeIndexEntry]
                 ) -> list[Finding]:
    """Findings for every entry of a `.index` or `.timeindex` that its whole `.log` contradicts
    (`--max-bytes` limits how much of a log is dumped, not what an index is checked against)."""
    log = path.with_name(names.segment_file_name(base, "log"))
    if not log.is_file():
        return [finding("KAFKA_INDEX_WITHOUT_LOG", str(path), message="no .log beside this index to verify against")]
    with mapped(log) as buf:
        batches = list(SegmentWalk(buf, str(log), base).batches())
        size = len(buf)
    if path.suffix == ".index":
        return index_check.check_offset_index(batches, entries, base_offset=base, log_size=size,  # type: ignore[arg-type]
                                              path=str(path))
    return index_check.check_time_index(batches, entries, base_offset=base, path=str(path))  # type: ignore[arg-type]
