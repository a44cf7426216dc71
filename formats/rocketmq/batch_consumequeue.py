"""BatchConsumeQueue units (`batchconsumequeue/<topic>/<queueId>/`, topics whose `queue.type` is BatchCQ).

`BCQ_ENTRY` (construct) is the source of truth for the 46-byte unit (apache/rocketmq 5.3.3
`store/.../queue/BatchConsumeQueue.java`: `CQ_STORE_UNIT_SIZE = 46`, written by `#putBatchMessagePositionInfo`:
commit-log offset i64, size i32, tag code i64, store time i64, message base offset i64 (`MSG_BASE_OFFSET_INDEX` 28),
batch size i16 (`MSG_BATCH_SIZE_INDEX` 36), compacted offset i32 (`MSG_COMPACT_OFFSET_INDEX` 38, written
`INVALID_POS` -1), 4 reserved bytes (0)). Files are named by the byte offset of their first unit (20 digits) and are
`mapperFileSizeBatchConsumeQueue` (300000 x 46) bytes; a unit is written while its offset >= 0 and size > 0 (the
loops of `#recover`), the unwritten tail is zeros. A unit's queue offsets are `msgBaseOffset ..
msgBaseOffset + batchSize - 1`: the next unit's base is this one's base + batch size (`maxOffsetInQueue =
msgBaseOffset + batchSize`).
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import construct as cs

from replog.formats.errors import UnreadableInput
from replog.formats.fileio import mapped
from replog.formats.findings import Finding, finding, from_unreadable
from replog.formats.layout import struct_of
from replog.formats.rocketmq.commitlog import infer_file_size
from replog.formats.rocketmq.offset_names import is_offset_name, offset_files

BCQ_ENTRY = cs.Struct(
    "commitlog_offset" / cs.Int64sb,
    "size" / cs.Int32sb,
    "tags_code" / cs.Int64sb,
    "store_time" / cs.Int64sb,
    "msg_base_offset" / cs.Int64sb,
    "batch_size" / cs.Int16sb,
    "compacted_offset" / cs.Int32sb,
    "reserved" / cs.Int32sb,
)
ENTRY = struct_of(BCQ_ENTRY)
UNIT_SIZE = ENTRY.size          # 46
DEFAULT_FILE_SIZE = 300_000 * UNIT_SIZE
INVALID_POS = -1


@dataclass(frozen=True, slots=True)
class BatchCQEntry:
    """One unit; `position` is its byte position in its file, `index` its unit number in the queue."""

    index: int
    commitlog_offset: int
    size: int
    tags_code: int
    store_time: int
    msg_base_offset: int
    batch_size: int
    compacted_offset: int
    position: int

    @property
    def is_valid(self) -> bool:
        """The recover loop's test: offset >= 0 and size > 0."""
        return self.commitlog_offset >= 0 and self.size > 0

    @property
    def next_base(self) -> int:
        return self.msg_base_offset + self.batch_size


def build_entry(commitlog_offset: int, size: int, tags_code: int, store_time: int, msg_base_offset: int,
                batch_size: int, compacted_offset: int = INVALID_POS) -> bytes:
    """The 46 bytes `putBatchMessagePositionInfo` writes."""
    return ENTRY.pack(commitlog_offset, size, tags_code, store_time, msg_base_offset, batch_size, compacted_offset, 0)


def read_units(buf: bytes | memoryview, *, file_start: int = 0) -> Iterator[BatchCQEntry]:
    """The written units of one file: up to the first unit that is not valid (the zero tail), as `#recover` reads."""
    for pos in range(0, len(buf) - UNIT_SIZE + 1, UNIT_SIZE):
        off, size, tags, store_time, base, batch, compacted, _ = ENTRY.unpack_from(buf, pos)
        entry = BatchCQEntry((file_start + pos) // UNIT_SIZE, off, size, tags, store_time, base, batch, compacted, pos)
        if not entry.is_valid:
            return
        yield entry


def queue_files(directory: str | os.PathLike[str]) -> list[tuple[int, Path]]:
    return offset_files(directory)


def walk_batch_queue(files: Iterable[Path]) -> Iterator[BatchCQEntry | Finding]:
    """Every unit of one queue with findings: file sizes and names, gaps between files, trailing bytes, and base
    offsets that do not follow from the previous unit (base + batch size), or a batch size < 1."""
    listed = sorted((int(p.name), p) for p in files if is_offset_name(p.name))
    sizes = {p: p.stat().st_size for _, p in listed}
    file_size = infer_file_size(sizes.values()) or DEFAULT_FILE_SIZE
    prev_start: int | None = None
    expected: int | None = None
    for start, path in listed:
        if sizes[path] != file_size or start % UNIT_SIZE or start % file_size:
            yield finding("ROCKETMQ_FILE_NAME_MISMATCH", str(path),
                          message=f"batch consume-queue file of {sizes[path]} bytes at {start}: expected "
                                  f"{file_size}-byte files at multiples of it")
        if prev_start is not None and start != prev_start + file_size:
            yield finding("ROCKETMQ_FILE_GAP", str(path), message=f"expected the next file at "
                          f"{prev_start + file_size}, found {start}")
        prev_start = start
        try:
            with mapped(path) as buf:
                for e in read_units(buf, file_start=start):
                    if e.batch_size < 1 or (expected is not None and e.msg_base_offset != expected):
                        yield finding("ROCKETMQ_QUEUE_OFFSET_GAP", str(path), position=e.position,
                                      offset=e.msg_base_offset,
                                      message=f"unit {e.index}: base offset {e.msg_base_offset}, batch size "
                                              f"{e.batch_size}" + (f"; the previous unit ends at {expected}"
                                                                   if expected is not None else ""))
                    expected = e.next_base
                    yield e
                if len(buf) % UNIT_SIZE:
                    yield finding("ROCKETMQ_CQ_INVALID", str(path), position=len(buf) - len(buf) % UNIT_SIZE,
                                  message=f"{len(buf) % UNIT_SIZE} trailing bytes do not form a 46-byte unit")
        except UnreadableInput as err:
            yield from_unreadable(err, str(path))


def build_file(units: Iterable[tuple[int, int, int, int, int, int]], *, file_size: int = DEFAULT_FILE_SIZE) -> bytes:
    """One full-size file of (commit-log offset, size, tag code, store time, base offset, batch size) units,
    zero-filled after them as a mapped file is."""
    if file_size <= 0 or file_size % UNIT_SIZE:
        raise ValueError(f"batch consume-queue file size {file_size} is not a positive multiple of {UNIT_SIZE}")
    data = b"".join(build_entry(*u) for u in units)
    if len(data) > file_size:
        raise ValueError(f"{len(data) // UNIT_SIZE} units do not fit a {file_size}-byte file")
    return data + bytes(file_size - len(data))
