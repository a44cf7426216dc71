"""The list forms of the `.index` / `.timeindex` checks, kept as the tests' independent oracle.

`index_check.check_offset_index` / `check_time_index` run the one streaming check (`index_stream`); these
are the same rules written the simple way (all batches at once, `bisect` over them), so the tests compare
two independent writings. On a log whose offsets go back their binary search has no defined answer
(see `test_index_stream`): there `linear=True` stands in, the same rules with "the first batch in file order"
found by a scan instead of `bisect`.
"""
from __future__ import annotations

import bisect
from collections.abc import Sequence
from functools import partial

from replog.formats.findings import Finding, FindingSink
from replog.formats.kafka.index_check import MAX_FINDINGS
from replog.formats.kafka.offset_index import OffsetIndexEntry
from replog.formats.kafka.segment import BatchInfo
from replog.formats.kafka.time_index import TimeIndexEntry


def _first_ending_at_or_after(lasts: Sequence[int], offset: int, lo: int, linear: bool) -> int:
    """The first batch from `lo` whose last offset reaches `offset` (len(lasts) when none)."""
    if linear:
        return next((j for j in range(lo, len(lasts)) if lasts[j] >= offset), len(lasts))
    return bisect.bisect_left(lasts, offset, lo=lo)


def _last_starting_at_or_before(firsts: Sequence[int], offset: int, linear: bool) -> int:
    """The batch that may hold `offset`: the one before the first whose base offset is past it (-1 when none)."""
    if linear:
        return next((k for k, first in enumerate(firsts) if first > offset), len(firsts)) - 1
    return bisect.bisect_right(firsts, offset) - 1


def check_offset_index(batches: Sequence[BatchInfo], entries: Sequence[OffsetIndexEntry], *,
                       base_offset: int, log_size: int, path: str = "", linear: bool = False) -> list[Finding]:
    """Every `.index` entry against the batches (in file order) of its `.log`."""
    sink = FindingSink(path, MAX_FINDINGS)
    starts = [b.position for b in batches]
    lasts = [b.last_offset for b in batches]
    framed_end = batches[-1].end if batches else 0
    for slot, (offset, position) in enumerate(entries):
        at = slot * 8
        if offset == base_offset and position == 0:
            continue  # the lookup default; a zero slot 0 of an empty preallocated index
        if position >= log_size:
            sink.add("KAFKA_INDEX_OUT_OF_RANGE", at, offset,
                     f"slot {slot}: position {position} is past the end of the log ({log_size} bytes)")
            continue
        i = bisect.bisect_left(starts, position)
        if i == len(starts) or starts[i] != position:
            where = "inside the damaged tail" if position >= framed_end else "not at a batch start"
            sink.add("KAFKA_INDEX_BAD_ENTRY", at, offset, f"slot {slot}: position {position} is {where}")
            continue
        if not batches[i].crc_valid:
            continue  # the batch there is damaged; its header cannot vouch either way
        if i > 0 and lasts[i - 1] >= offset:
            sink.add("KAFKA_INDEX_BAD_ENTRY", at, offset,
                     f"slot {slot}: offset {offset} is already reached by the batch before position "
                     f"{position} (last offset {lasts[i - 1]})", batch_position=starts[i - 1])
            continue
        j = _first_ending_at_or_after(lasts, offset, i, linear)
        if j == len(lasts) or lasts[j] != offset:
            sink.add("KAFKA_INDEX_BAD_ENTRY", at, offset,
                     f"slot {slot}: no batch at or after position {position} ends at offset {offset} "
                     f"(batch there: {batches[i].base_offset}..{lasts[i]})", batch_position=position)
    return sink.result()


def check_time_index(batches: Sequence[BatchInfo], entries: Sequence[TimeIndexEntry], *,
                     base_offset: int, path: str = "", linear: bool = False) -> list[Finding]:
    """Every `.timeindex` entry against the max timestamps of the batches."""
    sink = FindingSink(path, MAX_FINDINGS)
    data = list(batches)
    firsts = [b.base_offset for b in data]
    running: list[int] = []
    top = -1
    for b in data:
        top = max(top, b.max_timestamp) if b.crc_valid else top
        running.append(top)
    for slot, (timestamp, offset) in enumerate(entries):
        at = slot * 12
        if slot == 0 and timestamp == 0 and offset == base_offset and not _has_ts(data, 0):
            continue  # zero slot 0 of an empty preallocated index
        i = _last_starting_at_or_before(firsts, offset, linear)
        if i < 0 or offset > data[i].last_offset:
            code = ("KAFKA_INDEX_OUT_OF_RANGE" if not data or offset > data[-1].last_offset
                    else "KAFKA_TIMEINDEX_MISMATCH")
            sink.add(code, at, offset, f"slot {slot}: offset {offset} is in no batch of the log")
            continue
        b = data[i]
        if not b.crc_valid:
            continue  # damaged batch: its max timestamp cannot be trusted
        if b.max_timestamp != timestamp or running[i] != timestamp:
            sink.add("KAFKA_TIMEINDEX_MISMATCH", at, offset,
                     f"slot {slot}: timestamp {timestamp}, but the batch holding offset {offset} has max "
                     f"timestamp {b.max_timestamp} and the largest timestamp up to it is {running[i]}",
                     batch_position=b.position)
    return sink.result()


def _has_ts(batches: Sequence[BatchInfo], ts: int) -> bool:
    return any(b.max_timestamp == ts for b in batches)


linear_offset_check = partial(check_offset_index, linear=True)
linear_time_check = partial(check_time_index, linear=True)
