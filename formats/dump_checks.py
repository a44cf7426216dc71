"""Index entries checked against their segment, for `dump --verify-index-only` (kafka-dump-log parity).

An offset-index entry (O, P) is right when P is the start of a batch and O
is the last offset of that batch or of a later one (a follower's multi-batch
append indexes the last batch's offset at the first batch's position). A
time-index entry (T, O) is right when O lies in a batch and T is that batch's
max timestamp: brokers write O as the batch's last offset or, in some 3.x
releases, as the offset of the record holding the max timestamp (seen in
real logs), so any offset of the batch is accepted.
"""
from __future__ import annotations

import bisect
from collections.abc import Iterable
from pathlib import Path

from formats.fileio import mapped
from formats.findings import Finding, finding
from formats.kafka import names
from formats.kafka.offset_index import OffsetIndexEntry
from formats.kafka.segment import BatchInfo, SegmentWalk
from formats.kafka.time_index import TimeIndexEntry


def _log_batches(index_path: Path, base: int, max_bytes: int | None) -> list[BatchInfo] | None:
    log = index_path.with_name(names.segment_file_name(base, "log"))
    if not log.is_file():
        return None
    with mapped(log) as buf:
        return list(SegmentWalk(buf, str(log), base, max_bytes).batches())


def verify_offset_index(path: Path, base: int, entries: Iterable[OffsetIndexEntry],
                        max_bytes: int | None = None) -> list[Finding]:
    batches = _log_batches(path, base, max_bytes)
    if batches is None:
        return [finding("KAFKA_INDEX_WITHOUT_LOG", str(path), message="no .log beside this index to verify against")]
    return offset_index_mismatches(str(path), batches, entries)


def offset_index_mismatches(path: str, batches: list[BatchInfo], entries: Iterable[OffsetIndexEntry]) -> list[Finding]:
    at = {b.position: i for i, b in enumerate(batches)}
    last_offsets = {b.last_offset for b in batches}
    out = []
    for slot, e in enumerate(entries):
        i = at.get(e.position)
        if i is None:
            out.append(finding("KAFKA_INDEX_BAD_ENTRY", path, position=slot * 8, offset=e.offset,
                               message=f"entry ({e.offset}, {e.position}): no batch starts at position {e.position}"))
        elif e.offset < batches[i].last_offset or e.offset not in last_offsets:
            out.append(finding("KAFKA_INDEX_BAD_ENTRY", path, position=slot * 8, offset=e.offset,
                               message=f"entry ({e.offset}, {e.position}): the batch there ends at "
                                       f"{batches[i].last_offset} and no later batch ends at {e.offset}"))
    return out


def verify_time_index(path: Path, base: int, entries: Iterable[TimeIndexEntry],
                      max_bytes: int | None = None) -> list[Finding]:
    batches = _log_batches(path, base, max_bytes)
    if batches is None:
        return [finding("KAFKA_INDEX_WITHOUT_LOG", str(path), message="no .log beside this index to verify against")]
    return time_index_mismatches(str(path), batches, entries)


def time_index_mismatches(path: str, batches: list[BatchInfo], entries: Iterable[TimeIndexEntry]) -> list[Finding]:
    lasts = [b.last_offset for b in batches]
    out = []
    for slot, e in enumerate(entries):
        i = bisect.bisect_left(lasts, e.offset)
        b = batches[i] if i < len(batches) and batches[i].base_offset <= e.offset else None
        if b is None:
            out.append(finding("KAFKA_TIMEINDEX_MISMATCH", path, position=slot * 12, offset=e.offset,
                               message=f"entry ({e.timestamp}, {e.offset}): no batch holds offset {e.offset}"))
        elif b.max_timestamp != e.timestamp:
            out.append(finding("KAFKA_TIMEINDEX_MISMATCH", path, position=slot * 12, offset=e.offset,
                               message=f"entry timestamp {e.timestamp} but the batch holding offset {e.offset} "
                                       f"has max timestamp {b.max_timestamp}"))
    return out
