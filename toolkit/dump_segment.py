"""`dump` of a segment (`.log`, KRaft `.checkpoint`), streamed from the walk's column blocks.

A 2 GiB segment of one-record batches is 24 M batch entries and as many record
entries, so nothing is collected: the walk's `BatchBlock`s are cut into groups
of at most `GROUP_ROWS` batches and about `GROUP_BYTES` of record payload; a
group's records are decoded into columns by the record kernel
(`fastrecords.record_columns`) and turned into entries one group at a time, as
the consumer asks for them. Memory holds one block's columns and one group's
Python objects, whatever the size of the log.

The walk's findings come in its order, each before the entry of the first batch
at or after its position, which is where the batch-by-batch walk yields them.
A group whose records the kernel cannot all decode (damage, unknown magic) is
dumped batch by batch through the reference decoder, whose findings are the
answer. `reference_segment_entries` is the whole dump batch by batch through
`SegmentWalk`: the oracle the tests hold the columnar dump to.

`segment_items` hands a writer that formats columns itself (`toolkit.dump_blocks`,
`dump`'s JSON lines and kafka-dump-log text) each clean run of up to `RUN_ROWS`
batches between the walk's findings as one `EntryRun` instead of its entries:
no Python object per batch or record, and the same entries when expanded.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from replog.formats.errors import FormatError
from replog.formats.fileio import mapped
from replog.formats.findings import Finding, finding
from replog.formats.kafka import batch as v2
from replog.formats.kafka import names
from replog.formats.kafka.blocks import ROW, BatchBlock, reference_blocks
from replog.formats.kafka.columns import CHUNK
from replog.formats.kafka.index_verify import FAST_WALK_BYTES
from replog.formats.kafka.partition_files import is_live_segment
from replog.formats.kafka.segment import BatchInfo, SegmentWalk, batch_records, legacy_batch_records
from replog.toolkit.dump_entries import (
    DumpOptions,
    Entry,
    Progress,
    batch_entry,
    batch_row_entry,
    finding_entry,
    record_entry,
)

if TYPE_CHECKING:
    from replog.formats.kafka.fastrecords import RecordColumns

BLOCK_ROWS = CHUNK         # batches a walk hands over at a time
GROUP_ROWS = 1024          # batches turned into entries at a time
GROUP_BYTES = 4 << 20      # record payload decoded at a time (compressed batches weigh 8x their size)
FAST_RECORDS = 1 << 14     # records in a group past which the record kernel pays for itself
RUN_ROWS = BLOCK_ROWS     # batches in one `EntryRun`: columns, no Python object per entry
RUN_BYTES = 8 << 20       # record payload (weighed as for groups) in one `EntryRun`
PY_ROWS = 1024             # records turned into Python values at a time
RECORD_WEIGHT = 64         # a record's decoded columns, in payload bytes: groups are bounded by records too
_POSITION = ROW["position"]
RecordEntries = Callable[[int], Iterator[Entry]]  # a group's row -> the record entries of that batch


def segment_base(path: Path) -> int | None:
    """The base offset in a `.log` file's name (None for other names: nothing to check against)."""
    seg = names.parse_segment_file_name(path.name)
    return seg.base_offset if seg and seg.kind == "log" else None


@dataclass(frozen=True)
class EntryRun:
    """A run of consecutive batch entries of one segment (each followed by its record entries with
    `opts.records`) as the columns they are made of, for writers that turn columns into text a block at a
    time; `entries()` gives the very entries, for every other consumer.

    A run is clean: every batch is v2 and wanted, no finding falls within it, and with `opts.records` no
    offset range cuts records out of a batch and the record kernel decoded every record (`records` holds
    their positions). Which runs a writer can format itself (no control batches, text it can copy) is its call."""

    path: str
    batches: BatchBlock
    records: RecordColumns | None
    opts: DumpOptions

    def entries(self) -> Iterator[Entry]:
        table = self.records.to_table() if self.records is not None else None
        records = _ColumnRecords(self.path, self.batches, table, self.opts).entries if table is not None else None
        for i, row in enumerate(self.batches.cols.T.tolist()):
            yield batch_row_entry(self.path, row)
            if records is not None:
                yield from records(i)


Item = Entry | EntryRun


def segment_entries(path: Path, opts: DumpOptions, progress: Progress | None = None) -> Iterator[Entry]:
    """Every `batch` (and with `opts.records`, `record`) and `finding` entry of one segment, in file order."""
    for item in segment_items(path, opts, progress, runs=False):
        yield from item.entries() if isinstance(item, EntryRun) else (item,)


def segment_items(path: Path, opts: DumpOptions, progress: Progress | None = None,
                  runs: bool = True) -> Iterator[Item]:
    """`segment_entries`, its clean runs of batches as `EntryRun`s where the walk is compiled (`runs`): the
    same entries in the same order once each run is expanded."""
    with mapped(path, live=is_live_segment(path), windows=True) as buf:
        compiled = len(buf) >= FAST_WALK_BYTES and _have_numba()
        walk, blocks = _walk(buf, str(path), segment_base(path), opts.max_bytes, compiled)
        pending = _Pending(walk.findings)
        for block in blocks:
            yield from _block_entries(buf, str(path), block, opts, compiled, pending, runs and compiled)
            pending.drop_written()
            if progress and len(block):
                progress(int(block.end[-1]), len(buf))
        yield from pending.upto(None)


def _have_numba() -> bool:
    from replog.formats.kafka.fastwalk import HAVE_NUMBA
    return HAVE_NUMBA


def _walk(buf: memoryview, path: str, base: int | None, limit: int | None,
          compiled: bool) -> tuple[SegmentWalk, Iterator[BatchBlock]]:
    """The blocks of a walk (compiled, or the reference's batches grouped) and the walk holding its findings."""
    if compiled:
        from replog.formats.kafka.fastwalk import FastWalk
        fast = FastWalk(buf, path, base, limit)
        return fast.reference, fast.blocks(BLOCK_ROWS)
    walk = SegmentWalk(buf, path, base, limit)
    return walk, reference_blocks(walk, BLOCK_ROWS)


class _Pending:
    """The walk's findings not yet written out: the walk appends, this reads behind it and drops what
    it handed out, so a log of millions of damaged batches holds one block's findings at a time."""

    def __init__(self, found: list[Finding]) -> None:
        self.found, self.next = found, 0

    def drop_written(self) -> None:
        del self.found[:self.next]
        self.next = 0

    def due(self, position: int) -> bool:
        """Whether a finding not yet written goes at or before `position` (or has no position)."""
        if self.next >= len(self.found):
            return False
        at = self.found[self.next].position
        return at is None or at <= position

    def upto(self, position: int | None) -> Iterator[Entry]:
        """Findings at or before `position` (all of them for None)."""
        found = self.found
        while self.next < len(found):
            at = found[self.next].position
            if position is not None and at is not None and at > position:
                return
            yield finding_entry(found[self.next])
            self.next += 1


def _block_entries(buf: memoryview, path: str, block: BatchBlock, opts: DumpOptions, compiled: bool,
                   pending: _Pending, runs: bool = False) -> Iterator[Item]:
    """A block's entries, group by group; with `runs`, each clean group of up to `RUN_ROWS` batches as one
    `EntryRun` (an unclean one entry by entry, in the usual groups)."""
    keep = _in_range(block, opts)
    weight = (np.where(keep, np.maximum(block.size * np.where(block.codec == 0, 1, 8), block.count * RECORD_WEIGHT), 0)
              if opts.records else None)
    if not runs:
        for lo, hi in _groups(len(block), weight):
            yield from _group_entries(buf, path, block[lo:hi], keep[lo:hi], opts, compiled, pending)
        return
    for lo, hi in _groups(len(block), weight, RUN_ROWS, RUN_BYTES):
        for a, b in _between_findings(block.position[lo:hi], pending) if keep[lo:hi].all() else [(0, hi - lo)]:
            group = block[lo + a:lo + b]
            yield from pending.upto(int(group.position[0]))
            run = _run(buf, path, group, opts, pending) if keep[lo + a:lo + b].all() else None
            if run is not None:
                yield run
                continue
            for c, d in _groups(b - a, None if weight is None else weight[lo + a:lo + b]):
                yield from _group_entries(buf, path, group[c:d], keep[lo + a + c:lo + a + d], opts, compiled,
                                          pending)


def _between_findings(position: np.ndarray, pending: _Pending) -> Iterator[tuple[int, int]]:
    """[a, b) row ranges of a group that no finding not yet written falls inside: a finding goes before the
    first batch at or after its position (as `_group_entries` writes it), so a range ends there."""
    found, k, a = pending.found, pending.next, 0
    while a < len(position):
        while k < len(found) and (found[k].position is None or found[k].position <= position[a]):
            k += 1  # written by the range's `upto`, before its first batch
        at = found[k].position if k < len(found) else None
        b = len(position) if at is None else int(np.searchsorted(position, at, side="left"))
        yield a, max(b, a + 1)
        a = max(b, a + 1)


def _group_entries(buf: memoryview, path: str, group: BatchBlock, kept: np.ndarray, opts: DumpOptions,
                   compiled: bool, pending: _Pending) -> Iterator[Entry]:
    """A group's entries one by one, each batch after the findings that go before it."""
    records = _group_records(buf, path, group, kept, opts, compiled) if opts.records else None
    for i, (row, wanted) in enumerate(zip(group.cols.T.tolist(), kept.tolist(), strict=True)):
        if pending.next < len(pending.found):
            yield from pending.upto(row[_POSITION])
        if wanted:
            yield batch_row_entry(path, row)
            if records is not None:
                yield from records(i)


def _run(buf: memoryview, path: str, group: BatchBlock, opts: DumpOptions, pending: _Pending) -> EntryRun | None:
    """The group as one `EntryRun`, or None when it is not clean (see `EntryRun`): the entry-by-entry way."""
    if pending.due(int(group.position[-1])) or (group.magic != 2).any():
        return None
    if not opts.records:
        return EntryRun(path, group.copy(), None, opts)
    if opts.from_offset is not None or opts.to_offset is not None or (group.count > v2.BLOCK_RECORDS).any():
        return None
    from replog.formats.kafka.fastrecords import record_positions
    records = record_positions(buf, group)
    return None if records is None else EntryRun(path, group.copy(), records, opts)


def _in_range(block: BatchBlock, opts: DumpOptions) -> np.ndarray:
    """Batches `--from-offset`/`--to-offset` keep: ending at or after the first, starting at or before the last."""
    keep = np.ones(len(block), dtype=bool)
    if opts.from_offset is not None:
        keep &= block.last_offset >= opts.from_offset
    if opts.to_offset is not None:
        keep &= block.base_offset <= opts.to_offset
    return keep


def _groups(rows: int, weight: np.ndarray | None, max_rows: int = GROUP_ROWS,
            max_weight: int = GROUP_BYTES) -> Iterator[tuple[int, int]]:
    """[lo, hi) row ranges of at most `max_rows` rows and about `max_weight` of weight (never empty)."""
    if weight is None:
        for lo in range(0, rows, max_rows):
            yield lo, min(lo + max_rows, rows)
        return
    total = np.cumsum(weight)
    lo = 0
    while lo < rows:
        before = int(total[lo - 1]) if lo else 0
        hi = int(np.searchsorted(total, before + max_weight, side="right"))
        hi = min(max(hi, lo + 1), lo + max_rows)
        yield lo, hi
        lo = hi


# --- records ------------------------------------------------------------------------


def _group_records(buf: memoryview, path: str, group: BatchBlock, kept: np.ndarray, opts: DumpOptions,
                   compiled: bool) -> RecordEntries:
    """The record entries of each batch of a group: from the kernel's columns when it decodes every
    kept batch cleanly, else batch by batch through the reference decoder. A batch of more records than
    one block holds (alone in its group: `_groups` weighs records) is decoded a block at a time."""
    rows = np.flatnonzero(kept)
    if len(rows) and (group.magic[rows] < 2).any():  # legacy messages keep their own CRCs: the reference has them
        return lambda i: reference_record_entries(buf, path, group.row(i), opts)
    if len(rows) == 1 and group.count[rows[0]] > v2.BLOCK_RECORDS:
        info = group.row(int(rows[0]))
        return lambda i: _streamed_entries(buf, path, info, opts)
    compiled = compiled or (len(rows) > 0 and int(group.count[rows].sum()) > FAST_RECORDS and _have_numba())
    if compiled and len(rows):
        chosen = group[rows]
        if ((chosen.magic >= 0) & (chosen.magic <= 2)).all():
            from replog.formats.kafka.fastrecords import record_columns
            table, found = record_columns(buf, path, chosen)
            if not found:
                return _ColumnRecords(path, group, table, opts).entries
    return lambda i: reference_record_entries(buf, path, group.row(i), opts)


class _ColumnRecords:
    """A group's records as columns, handed out batch by batch in file order."""

    def __init__(self, path: str, group: BatchBlock, table: pa.Table, opts: DumpOptions) -> None:
        at = table.column("position").to_numpy()
        self.start = np.searchsorted(at, group.position, side="left").tolist()
        self.stop = np.searchsorted(at, group.position, side="right").tolist()
        self.group, self.path, self.opts, self.rows = group, path, opts, _python_rows(table)

    def entries(self, i: int) -> Iterator[Entry]:
        """Batch `i`'s record entries; every record of it is read, so the next batch starts at its own."""
        rows = islice(self.rows, self.stop[i] - self.start[i])
        return _entries_in_range(self.path, self.group.row(i), rows, self.opts)


def _entries_in_range(path: str, batch: BatchInfo, rows: Iterator[tuple[Any, ...]],
                      opts: DumpOptions) -> Iterator[Entry]:
    """Entries of one batch's record rows within `--from-offset`/`--to-offset`; every row is read."""
    low, high, stopped = opts.from_offset, opts.to_offset, False
    for offset, timestamp, sequence, key, value, headers in rows:
        if stopped or (low is not None and offset < low):
            continue
        if high is not None and offset > high:
            stopped = True  # as the reference's `break`: the rest of this batch is past the range
            continue
        yield record_entry(path, batch, offset, timestamp, sequence, key, value,
                           [(h["key"], h["value"]) for h in headers], opts)


def _streamed_entries(buf: memoryview, path: str, info: BatchInfo, opts: DumpOptions) -> Iterator[Entry]:
    """A large batch's record entries, its records decoded a block at a time; the reference's when the
    kernels have a doubt about any of them."""
    from replog.formats.kafka.record_blocks import batch_record_tables
    tables = batch_record_tables(buf, info)
    if tables is None:
        yield from reference_record_entries(buf, path, info, opts)
        return
    for table in tables:
        yield from _entries_in_range(path, info, _python_rows(table), opts)


def _python_rows(table: pa.Table) -> Iterator[tuple[Any, ...]]:
    """(offset, timestamp, sequence, key, value, headers) of every record, `PY_ROWS` converted at a time."""
    for lo in range(0, table.num_rows, PY_ROWS):
        part = table.slice(lo, PY_ROWS)
        yield from zip(*(part.column(name).to_pylist()
                         for name in ("offset", "timestamp", "sequence", "key", "value", "headers")), strict=True)


# --- the reference: batch by batch ---------------------------------------------------------


def reference_segment_entries(path: Path, opts: DumpOptions, progress: Progress | None = None) -> Iterator[Entry]:
    """`segment_entries` through `SegmentWalk`, a `BatchInfo` and `Record`s per batch (the tests' oracle)."""
    with mapped(path, live=is_live_segment(path), windows=True) as buf:
        walk = SegmentWalk(buf, str(path), segment_base(path), opts.max_bytes)
        reported = 0
        for info in walk.batches():
            while reported < len(walk.findings):
                yield finding_entry(walk.findings[reported])
                reported += 1
            if progress:
                progress(info.end, len(buf))
            if not _info_in_range(info, opts):
                continue
            yield batch_entry(str(path), info)
            if opts.records:
                yield from reference_record_entries(buf, str(path), info, opts)
        for f in walk.findings[reported:]:
            yield finding_entry(f)


def _legacy_record_entries(buf: memoryview, path: str, info: BatchInfo, opts: DumpOptions) -> Iterator[Entry]:
    """A v0/v1 entry's messages, each with its own CRC, or the finding saying why they cannot be read."""
    yield from _decoded_entries(lambda: legacy_batch_records(buf, info), path, info, opts,
                                 lambda batch, rec: record_entry(path, batch, rec.offset, rec.timestamp, -1,
                                                                 _bytes(rec.key), _bytes(rec.value), (), opts,
                                                                 (rec.crc, rec.crc_valid)))


def _decoded_entries(decode: Callable[[], Iterable[Any]], path: str, info: BatchInfo, opts: DumpOptions,
                      entry: Callable[[BatchInfo, Any], Entry]) -> Iterator[Entry]:
    """The entries of one batch's records within --offsets' range, or the finding saying why the records
    cannot be decoded."""
    try:
        records = decode()
    except FormatError as e:
        yield finding_entry(finding(e.code, path, position=info.position, offset=info.base_offset,
                                    message=e.message))
        return
    for rec in records:
        if opts.from_offset is not None and rec.offset < opts.from_offset:
            continue
        if opts.to_offset is not None and rec.offset > opts.to_offset:
            break
        yield entry(info, rec)


def _bytes(b: bytes | memoryview | None) -> bytes | None:
    return None if b is None else bytes(b)


def _info_in_range(info: BatchInfo, opts: DumpOptions) -> bool:
    if opts.from_offset is not None and info.last_offset < opts.from_offset:
        return False
    return opts.to_offset is None or info.base_offset <= opts.to_offset


def reference_record_entries(buf: memoryview, path: str, info: BatchInfo, opts: DumpOptions) -> Iterator[Entry]:
    """One batch's record entries through the reference decoder, or the finding saying why it cannot be read."""
    if info.magic == 2 and info.size < v2.HEADER_SIZE:
        return
    if info.magic in (0, 1):
        yield from _legacy_record_entries(buf, path, info, opts)
        return
    yield from _decoded_entries(lambda: batch_records(buf, info), path, info, opts,
                                 lambda batch, rec: record_entry(path, batch, rec.offset, rec.timestamp, rec.sequence,
                                                                 rec.key, rec.value, rec.headers, opts))
