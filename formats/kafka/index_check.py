"""Index files checked against the batches of their `.log` (reference §8.1-§8.3, §16.1.6).

Pure functions: the caller walks the segment and reads the index; these
compare and return findings. They take all batches of the segment at once, as
a list of `BatchInfo`: the reference, kept simple. `index_stream` holds the
streaming forms doctor and `dump --verify-index-only` use, checked against
these in tests.

What counts as correct follows how the broker writes and uses each index:
- `.index` entry (O, P): the append starting at batch position P ends at
  offset O. One append can hold several batches (followers append whole fetch
  responses), so O may be the last offset of a later batch than the one at P;
  what must hold is that P starts a batch, no batch before P reaches O, and
  some batch at or after P ends exactly at O. `(base_offset, 0)` is the
  lookup default and harmless (a zero slot 0).
- `.timeindex` entry (T, O): T is the largest timestamp up to the batch
  holding O, and that batch's max timestamp is T.
- `.txnindex`: one entry per ABORT marker of the segment, as recovery rebuilds it.
"""
from __future__ import annotations

import bisect
from collections.abc import Sequence

from replog.formats.findings import Finding, FindingSink, Severity
from replog.formats.kafka.offset_index import (
    OffsetIndexEntry,
)
from replog.formats.kafka.segment import BatchInfo
from replog.formats.kafka.time_index import TimeIndexEntry
from replog.formats.kafka.txn_index import AbortedTxn

MAX_FINDINGS = 100  # per index file; one corrupt 10 MiB index would give a million


def check_offset_index(batches: Sequence[BatchInfo], entries: Sequence[OffsetIndexEntry], *,
                       base_offset: int, log_size: int, path: str = "") -> list[Finding]:
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
        j = bisect.bisect_left(lasts, offset, lo=i)
        if j == len(lasts) or lasts[j] != offset:
            sink.add("KAFKA_INDEX_BAD_ENTRY", at, offset,
                     f"slot {slot}: no batch at or after position {position} ends at offset {offset} "
                     f"(batch there: {batches[i].base_offset}..{lasts[i]})", batch_position=position)
    return sink.result()


def check_time_index(batches: Sequence[BatchInfo], entries: Sequence[TimeIndexEntry], *,
                     base_offset: int, path: str = "") -> list[Finding]:
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
        i = bisect.bisect_right(firsts, offset) - 1
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


def check_txn_index(expected: Sequence[AbortedTxn], actual: Sequence[AbortedTxn], *,
                    path: str = "") -> list[Finding]:
    """`.txnindex` entries against the aborted transactions the ABORT markers imply.

    Missing or extra entries are errors; a different first offset or LSO is a
    warning (they depend on transactions that may start before the log start).
    """
    sink = FindingSink(path, MAX_FINDINGS)
    want = {e.last_offset: e for e in expected}
    have = {e.last_offset: (slot, e) for slot, e in enumerate(actual)}
    for last, (slot, e) in have.items():
        w = want.get(last)
        if w is None:
            sink.add("KAFKA_TXNINDEX_MISMATCH", slot * 34, last,
                     f"entry {slot}: no ABORT marker of producer {e.producer_id} at offset {last}")
        elif w.producer_id != e.producer_id:
            sink.add("KAFKA_TXNINDEX_MISMATCH", slot * 34, last,
                     f"entry {slot}: producer {e.producer_id}, the ABORT marker at {last} is producer {w.producer_id}")
        elif (w.first_offset, w.last_stable_offset) != (e.first_offset, e.last_stable_offset):
            sink.add("KAFKA_TXNINDEX_MISMATCH", slot * 34, last,
                     f"entry {slot}: first offset / LSO ({e.first_offset}, {e.last_stable_offset}), "
                     f"the batches imply ({w.first_offset}, {w.last_stable_offset})",
                     severity=Severity.WARNING)
    end = len(actual) * 34
    for last, w in want.items():
        if last not in have:
            sink.add("KAFKA_TXNINDEX_MISMATCH", end, last,
                     f"ABORT marker of producer {w.producer_id} at offset {last} has no entry")
    return sink.result()
