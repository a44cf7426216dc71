"""Segment checks: the partition dir's file inventory and every batch, deep-decoded.

The inventory mirrors what `LogLoader` does with each name (docs/reference/kafka.md §10.2):
transient `.swap`/`.cleaned`/`.deleted` files, indexes without their `.log`,
segments without an `.index`. The record check (`RecordCheck`) is what the
broker never does: decompressing and decoding every record of every CRC-valid
batch, fed the segment's blocks by `segment_pass`.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from replog.formats.errors import FormatError, UnreadableInput
from replog.formats.fileio import EntryType, file_size
from replog.formats.findings import Finding, Severity, finding
from replog.formats.kafka import batch as v2
from replog.formats.kafka import names
from replog.formats.kafka.partition_files import KNOWN_PARTITION_FILES, PartitionFiles, list_partition_files
from replog.formats.kafka.segment import BatchInfo, batch_records

if TYPE_CHECKING:
    import numpy as np

    from replog.formats.kafka.blocks import BatchBlock

MAX_RECORD_FINDINGS = 100  # per segment
_TRANSIENT_MEANING = {
    "deleted": "scheduled for deletion; the broker erases it at startup (evidence: a complete former segment)",
    "cleaned": "incomplete cleaner/split output; the broker deletes it at startup",
    "swap": "a cleaned or split segment not yet swapped in; the broker completes the swap at startup",
}
# A `.deleted` file is a segment the cleaner or retention replaced, erased `file.delete.delay.ms` (60 s) later by a
# scheduled task that a clean stop does not wait for: a healthy broker leaves them (seen in the broker lab after a
# clean stop, tests/brokers/test_lab_corpus.py), and `LogLoader.removeTempFilesAndCollectSwapFiles` deletes them at
# the next start; so a note, not a warning. Only a `.swap` changes what the broker will hold.
_TRANSIENT_SEVERITY = {"deleted": Severity.INFO, "cleaned": Severity.INFO, "swap": Severity.WARNING}


def transient_finding(path: Path, seg: names.SegmentFileName) -> Finding:
    """The finding for a `.deleted`, `.cleaned` or `.swap` file left in a partition dir."""
    kind = seg.transient or ""
    return finding("KAFKA_ORPHAN_TEMP_FILE", str(path), message=f".{kind} file: {_TRANSIENT_MEANING[kind]}",
                   severity=_TRANSIENT_SEVERITY[kind], base_offset=seg.base_offset, transient=seg.transient)


@dataclass
class Inventory:
    """The files of a partition dir (`PartitionFiles`) and what is wrong with them."""

    files: PartitionFiles
    findings: list[Finding] = field(default_factory=list)


def entry_findings(files: PartitionFiles) -> list[Finding]:
    """What is wrong with the entries of a partition dir that are not regular files, naming what each is.

    A subdirectory with a name the broker does not use is only noted; anything else that is not a
    regular file (a FIFO, a device or a symlink loop named like a segment, say) is never read, and
    the partition's data under that name is not there: an error. `ls` and `doctor` both report these.
    """
    out = []
    for path, kind in files.not_files:
        where = str(path)
        if kind is EntryType.DIRECTORY and not _named_like_partition_file(path.name):
            out.append(finding("UNKNOWN_FILE", where, message="unexpected directory in a partition dir"))
        elif kind is EntryType.INACCESSIBLE:
            out.append(finding("UNREADABLE_FILE", where, message=f"{path.name}: cannot be examined "
                                                                 "(permission denied on the partition dir?)"))
        else:
            article = "an" if kind.value[:1] in "aeiou" else "a"
            out.append(finding("WRONG_FILE_TYPE", where, message=f"{path.name} is {article} {kind.value}, not a "
                               "regular file: replog does not read it, and the broker skips it", entry=kind.value))
    return out


def _named_like_partition_file(name: str) -> bool:
    return (names.parse_segment_file_name(name) is not None or names.is_segment_like(name)
            or names.parse_kraft_snapshot_name(name) is not None or name in KNOWN_PARTITION_FILES)


def inventory(pdir: Path) -> Inventory:
    """The partition dir's entries and their findings (raises `UnreadableInput` when it cannot be listed)."""
    files = list_partition_files(pdir)
    by_entry = entry_findings(files)
    by_entry += [transient_finding(p, seg) for p, seg in files.transient]
    by_entry += [finding("KAFKA_SEGMENT_BAD_NAME", str(p)) for p in files.bad_segment_names]
    by_entry += [finding("KAFKA_CHECKPOINT_TMP_LEFTOVER", str(p), message=f"{p.name}: interrupted atomic write; "
                         "the file without .tmp is authoritative") for p in files.tmp_files]
    by_entry += [finding("UNKNOWN_FILE", str(p)) for p in files.unknown_files]
    inv = Inventory(files, sorted(by_entry, key=lambda f: f.path))
    for (base, kind), path in sorted(files.indexes.items()):
        if base not in files.logs:
            inv.findings.append(finding("KAFKA_INDEX_WITHOUT_LOG", str(path), offset=base,
                                        message=f".{kind} without {names.segment_file_name(base, 'log')}: "
                                                "the broker deletes it at startup"))
    for base, path in files.logs.items():
        if (base, "index") not in files.indexes and _size(path) > 0:
            inv.findings.append(finding("KAFKA_INDEX_MISSING", str(path.with_suffix(".index")), offset=base,
                                        message="no .index for this segment; the broker rebuilds it at startup "
                                                "(normal for an active segment whose preallocated index "
                                                "was not copied)"))
    return inv


def _size(path: Path) -> int:
    """A listed file's size; 0 when it is gone (its reader reports `INPUT_VANISHED` when it gets there)."""
    try:
        return file_size(path)
    except UnreadableInput:
        return 0


# kept; others are UNDECODABLE
_DECODE_CODES = ("KAFKA_DECOMPRESSION_BOMB", "KAFKA_BATCH_BAD_RECORD_COUNT", "KAFKA_BATCH_TOO_MANY_RECORDS")


def decode_error_finding(e: FormatError, b: BatchInfo, path: str) -> Finding:
    """The finding for a batch whose records do not decode, at the batch whatever the error knows."""
    code = e.code if e.code in _DECODE_CODES else "KAFKA_RECORDS_UNDECODABLE"
    return finding(code, path, position=b.position, offset=b.base_offset, message=e.message)


def deep_check(buf: memoryview | bytes, b: BatchInfo, path: str) -> Finding | None:
    """Decode every record of a CRC-valid batch; the first problem as a finding."""
    try:
        records = batch_records(buf, b)
    except FormatError as e:
        return decode_error_finding(e, b, path)
    prev = b.base_offset - 1
    for r in records:
        if r.offset <= prev or r.offset > b.last_offset:
            return finding("KAFKA_BATCH_LAST_OFFSET_MISMATCH", path, position=b.position, offset=r.offset,
                           message=f"record offset {r.offset} outside {b.base_offset}..{b.last_offset} "
                                   f"or not increasing (previous {prev})")
        prev = r.offset
        if b.magic == 2 and b.timestamp_type == v2.CREATE_TIME and (
                r.timestamp > b.max_timestamp or (r.timestamp < 0 and r.timestamp != -1)):
            return finding("KAFKA_TIMESTAMP_INVALID", path, position=b.position, offset=r.offset,
                           message=f"record timestamp {r.timestamp}, batch max timestamp {b.max_timestamp}")
    return None


# When the record kernel pays for itself. Loading it (numba's import and its cached kernels) costs ~0.45 s
# on this project's machine; the reference check spends ~4.5 us per record and ~10 us more per batch
# (measured on 1-16 MiB partitions of 100-record and of 1-record batches). So the kernel runs past the
# work of ~100k records, a batch weighing as two more: a 1 MiB partition of 100-record batches (8,700
# records, 0.04 s of reference work) is never worth the 0.45 s; 8 MiB of 1-record batches (~93k batches) is.
FAST_DEEP_BYTES = 8 << 20  # a segment this large is checked by the kernel from its first block
FAST_DEEP_WORK = 100_000   # ... and a block of smaller segment once records + 2 x batches reaches this
BATCH_WORK = 2


class RecordCheck:
    """`record_findings` as a stream: feed a segment's `BatchBlock`s in file order, then `finish()`.

    Same findings as the reference (`deep_check` on every CRC-valid batch of magic
    0..2), in the same order, capped at `MAX_RECORD_FINDINGS`. With `fast` (default:
    as `record_findings` decides for this buffer's size) a compiled kernel clears
    each block's batches in place, reading offsets and timestamps only (compressed
    payloads are decompressed, bounded, a chunk at a time); `deep_check` runs only
    on the batches it flags. Nothing of a block is kept: blocks may be reused views.
    Once the cap is reached, `feed` returns at once.
    """

    def __init__(self, buf: memoryview | bytes, path: str, fast: bool | None = None) -> None:
        from replog.recovery.kafka.logdir import use_fast_walk
        self.buf, self.path = buf, path
        self.fast = use_fast_walk(len(buf), FAST_DEEP_BYTES) if fast is None else fast
        self.findings: list[Finding] = []

    @property
    def full(self) -> bool:
        """The cap is reached: later batches cannot add a finding."""
        return len(self.findings) >= MAX_RECORD_FINDINGS

    def feed(self, block: BatchBlock) -> None:
        """Check the next consecutive batches of the segment."""
        if self.full or not len(block):
            return
        import numpy as np  # imported on use: the CLI starts without it
        magic = block.magic
        rows = np.flatnonzero((block.crc_valid != 0) & (magic >= 0) & (magic <= 2))  # as `record_findings` selects
        errors: dict[int, FormatError] = {}
        if len(rows) and (self.fast or self._record_heavy(block, rows)):
            from replog.formats.kafka.fastrecords import check_record_bounds
            flagged = check_record_bounds(self.buf, block, rows, budget=MAX_RECORD_FINDINGS - len(self.findings))
            rows, errors = flagged.rows, flagged.errors
        for i in rows.tolist():
            b = block.row(i)
            err = errors.get(i)
            f = deep_check(self.buf, b, self.path) if err is None else decode_error_finding(err, b, self.path)
            if f is not None:
                self.findings.append(f)
                if self.full:
                    return

    @staticmethod
    def _record_heavy(block: BatchBlock, rows: np.ndarray) -> bool:
        """The work of a block is its records and batches more than its bytes (tiny records compress 10:1
        and more): past `FAST_DEEP_WORK` the kernel checks it, whatever the size of the segment (when
        numba is there)."""
        from replog.recovery.kafka.logdir import use_fast_walk
        return use_fast_walk(int(block.count[rows].clip(0).sum()) + BATCH_WORK * len(rows), FAST_DEEP_WORK)

    def feed_infos(self, batches: Sequence[BatchInfo]) -> None:
        """Check the next consecutive batches given as `BatchInfo`s, through the reference alone
        (for values no block holds: a corrupt header's last offset beyond int64)."""
        for b in batches:
            if self.full:
                return
            if b.crc_valid and 0 <= b.magic <= 2:
                f = deep_check(self.buf, b, self.path)
                if f is not None:
                    self.findings.append(f)

    def finish(self) -> list[Finding]:
        """The findings, in batch order."""
        return list(self.findings)


def record_findings(buf: memoryview | bytes, batches: Sequence[BatchInfo], path: str,
                    fast_threshold: int | None = None) -> list[Finding]:
    """Batches whose records do not decode or break the batch's bounds, up to `MAX_RECORD_FINDINGS`
    (the first problem of each). Large segments use the compiled record kernel (`RecordCheck`);
    same answers."""
    from replog.recovery.kafka.logdir import use_fast_walk
    if use_fast_walk(len(buf), FAST_DEEP_BYTES if fast_threshold is None else fast_threshold):
        from replog.formats.kafka.blocks import BatchBlock
        from replog.formats.kafka.columns import CHUNK
        checked = [b for b in batches if b.crc_valid and 0 <= b.magic <= 2]
        check = RecordCheck(buf, path, fast=True)
        for start in range(0, len(checked), CHUNK):
            if check.full:
                break
            part = checked[start:start + CHUNK]
            try:
                block = BatchBlock.from_infos(part)
            except OverflowError:  # a value beyond int64 (a corrupt header's last offset)
                check.feed_infos(part)
                continue
            check.feed(block)
        return check.finish()
    out: list[Finding] = []
    for b in batches:
        if b.crc_valid and 0 <= b.magic <= 2 and len(out) < MAX_RECORD_FINDINGS:
            f = deep_check(buf, b, path)
            if f is not None:
                out.append(f)
    return out
