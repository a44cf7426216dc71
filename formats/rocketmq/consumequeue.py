"""Consume queues (`consumequeue/<topic>/<queueId>/`) and ConsumeQueueExt units.

`CQ_ENTRY` (construct) is the source of truth for the 20-byte unit
(docs/reference/rocketmq.md §3.2, `ConsumeQueue.CQ_STORE_UNIT_SIZE`); `ENTRY` (struct) is the
fast path. Files are named by the CQ byte offset of their first entry, so the
queue offset of an entry is `(file start + position) / 20`. An all-zero entry
marks the unwritten tail. `CQ_EXT_UNIT` is the optional extension unit (§3.4).
"""
from __future__ import annotations

import os
import re
import struct
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import construct as cs

from replog.formats.errors import FormatError, UnreadableInput
from replog.formats.fileio import atomic_write, mapped
from replog.formats.findings import Finding, finding, from_unreadable
from replog.formats.layout import struct_of
from replog.formats.rocketmq.commitlog import infer_file_size
from replog.formats.rocketmq.offset_names import file_name, is_offset_name, offset_files

CQ_ENTRY = cs.Struct(
    "commitlog_offset" / cs.Int64sb,
    "size" / cs.Int32sb,
    "tags_code" / cs.Int64sb,   # or a ConsumeQueueExt address (<= MAX_EXT_ADDR)
)
ENTRY = struct_of(CQ_ENTRY)
CQ_STORE_UNIT_SIZE = ENTRY.size  # 20
DEFAULT_FILE_SIZE = 300_000 * CQ_STORE_UNIT_SIZE   # mappedFileSizeConsumeQueue
PRE_BLANK = (0, 0x7FFFFFFF, 0)                    # ConsumeQueue#fillPreBlank
_ZERO_ENTRY = bytes(CQ_STORE_UNIT_SIZE)
_NONZERO = re.compile(b"[^\x00]")

# ConsumeQueueExt (off by default): unit = size, tags code, store time, bitmap.
CQ_EXT_UNIT = cs.Struct(
    "size" / cs.Int16sb,            # 20 + bitmap size
    "tags_code" / cs.Int64sb,
    "msg_store_time" / cs.Int64sb,
    "filter_bitmap" / cs.Prefixed(cs.Int16sb, cs.GreedyBytes),
)
EXT_UNIT_HEAD = struct.Struct(">hqqh")
MIN_EXT_UNIT_SIZE = EXT_UNIT_HEAD.size   # 20
EXT_DEFAULT_FILE_SIZE = 48 * 1024 * 1024
MAX_EXT_ADDR = -(2**31) - 1              # ConsumeQueueExt.MAX_ADDR
_LONG_MIN = -(2**63)


@dataclass(frozen=True, slots=True)
class CQEntry:
    """One consume-queue unit; `position` is its byte position in its file."""

    queue_offset: int
    commitlog_offset: int
    size: int
    tags_code: int
    position: int

    @property
    def is_pre_blank(self) -> bool:
        """`fillPreBlank` filler written before the first real entry of a queue."""
        return (self.commitlog_offset, self.size, self.tags_code) == PRE_BLANK

    @property
    def is_valid(self) -> bool:
        """The store's own test: offset >= 0 and size > 0."""
        return self.commitlog_offset >= 0 and self.size > 0

    @property
    def ext_address(self) -> int | None:
        """Offset in the ConsumeQueueExt files when the tag slot holds an ext address."""
        return ext_address_to_offset(self.tags_code)


def is_ext_address(tags_code: int) -> bool:
    return tags_code <= MAX_EXT_ADDR


def ext_address_to_offset(tags_code: int) -> int | None:
    """`ConsumeQueueExt#unDecorate`: real ext offset, or None for an ordinary tag code."""
    return tags_code - _LONG_MIN if is_ext_address(tags_code) else None


def offset_to_ext_address(offset: int) -> int:
    """`ConsumeQueueExt#decorate`."""
    return offset + _LONG_MIN


def read_entry(buf: bytes | memoryview, position: int, *, file_start: int = 0) -> CQEntry:
    """Decode the unit at `position` (strict: raises on a short read)."""
    if position < 0 or position + CQ_STORE_UNIT_SIZE > len(buf):
        raise FormatError("ROCKETMQ_CQ_INVALID", f"no complete 20-byte entry at {position}", position)
    off, size, tags = ENTRY.unpack_from(buf, position)
    return CQEntry((file_start + position) // CQ_STORE_UNIT_SIZE, off, size, tags, position)


def read_entries(buf: bytes | memoryview, *, file_start: int = 0) -> list[CQEntry]:
    """Written entries of one file: everything before the first all-zero unit."""
    out = []
    for pos in range(0, len(buf) - CQ_STORE_UNIT_SIZE + 1, CQ_STORE_UNIT_SIZE):
        if buf[pos:pos + CQ_STORE_UNIT_SIZE] == _ZERO_ENTRY:
            break
        out.append(read_entry(buf, pos, file_start=file_start))
    return out


def queue_files(directory: str | os.PathLike[str]) -> list[tuple[int, Path]]:
    """(start, path) of the 20-digit files of one `consumequeue/<topic>/<queueId>` dir."""
    return offset_files(directory)


def walk_consumequeue(source: str | os.PathLike[str] | Iterable[str | os.PathLike[str]], *,
                      file_size: int | None = None) -> Iterator[CQEntry | Finding]:
    """Walk the entries of one queue, yielding entries and findings.

    Reports: file size/name mismatches, gaps between files, invalid entries
    (negative offset or size <= 0), a zero hole before written entries, a
    trailing partial unit, and queue offsets not contiguous across files.
    """
    if isinstance(source, (str, os.PathLike)):
        files = queue_files(source)
    else:
        files = sorted((int(Path(p).name), Path(p)) for p in source if is_offset_name(Path(p).name))
    sizes = {p: (p.stat().st_size if p.exists() else -1) for _, p in files}
    if file_size is None:
        file_size = infer_file_size(sizes.values()) or DEFAULT_FILE_SIZE
    prev: int | None = None
    ended_at: int | None = None   # queue offset where a previous file stopped early
    for start, path in files:
        yield from _check_file(path, start, sizes[path], file_size, prev)
        prev = start
        if ended_at is not None and sizes[path] > 0:
            yield finding("ROCKETMQ_QUEUE_OFFSET_GAP", str(path), offset=ended_at,
                          message=f"an earlier file ends at queue offset {ended_at} before it is full, "
                                  f"yet {path.name} follows")
            ended_at = None
        try:
            with mapped(path) as buf:
                end = yield from _walk_buffer(buf, str(path), start)
        except UnreadableInput as e:
            yield from_unreadable(e, str(path))
            continue
        if end is not None and end < sizes[path] - CQ_STORE_UNIT_SIZE + 1:
            ended_at = (start + end) // CQ_STORE_UNIT_SIZE


def _check_file(path: Path, start: int, size: int, file_size: int, prev: int | None) -> Iterator[Finding]:
    if size != file_size:
        yield finding("ROCKETMQ_FILE_NAME_MISMATCH", str(path), offset=start // CQ_STORE_UNIT_SIZE,
                      message=f"file is {size} bytes, expected {file_size}",
                      expected_size=file_size, actual_size=size)
    if start % CQ_STORE_UNIT_SIZE or start % file_size:
        yield finding("ROCKETMQ_FILE_NAME_MISMATCH", str(path),
                      message=f"start {start} is not a multiple of the entry and file sizes")
    if prev is not None and start != prev + file_size:
        yield finding("ROCKETMQ_FILE_GAP", str(path), offset=(prev + file_size) // CQ_STORE_UNIT_SIZE,
                      message=f"expected the next file at {prev + file_size}, found {start}",
                      expected_start=prev + file_size, actual_start=start)


def _walk_buffer(buf: memoryview | bytes, path: str, start: int
                 ) -> Generator[CQEntry | Finding, None, int | None]:
    """Generator of entries/findings; returns the position of the unwritten tail (or None)."""
    n = len(buf)
    whole = n - n % CQ_STORE_UNIT_SIZE
    pos = 0
    while pos < whole:
        if buf[pos:pos + CQ_STORE_UNIT_SIZE] == _ZERO_ENTRY:
            nz = _NONZERO.search(buf, pos)
            if nz is None:
                return pos
            hole_end = nz.start() - nz.start() % CQ_STORE_UNIT_SIZE
            yield finding("ROCKETMQ_CQ_INVALID", path, position=pos, offset=(start + pos) // CQ_STORE_UNIT_SIZE,
                          message=f"zero entries from {pos} to {hole_end} followed by written entries")
            pos = hole_end
            continue
        entry = read_entry(buf, pos, file_start=start)
        if not entry.is_valid:
            yield finding("ROCKETMQ_CQ_INVALID", path, position=pos, offset=entry.queue_offset,
                          message=f"entry with commitlog offset {entry.commitlog_offset} and size "
                                  f"{entry.size} is not valid")
        yield entry
        pos += CQ_STORE_UNIT_SIZE
    if whole != n and _NONZERO.search(buf, whole):
        yield finding("ROCKETMQ_CQ_INVALID", path, position=whole,
                      message=f"{n - whole} trailing bytes do not form a 20-byte entry")
    return None


def build_entry(commitlog_offset: int, size: int, tags_code: int) -> bytes:
    return ENTRY.pack(commitlog_offset, size, tags_code)


def build_files(entries: Iterable[tuple[int, int, int]], *, file_size: int = DEFAULT_FILE_SIZE,
                start_queue_offset: int = 0) -> dict[int, bytes]:
    """Lay (commitlog offset, size, tags code) entries into full-size CQ files.

    When the first entry's queue offset is not at a file start, the earlier slots
    of that file get pre-blank entries, as `fillPreBlank` does.
    """
    if file_size <= 0 or file_size % CQ_STORE_UNIT_SIZE:
        raise ValueError(f"CQ file size {file_size} is not a positive multiple of 20")
    files: dict[int, bytearray] = {}
    first = start_queue_offset * CQ_STORE_UNIT_SIZE
    for i, (off, size, tags) in enumerate(entries):
        byte_pos = first + i * CQ_STORE_UNIT_SIZE
        file_start = byte_pos - byte_pos % file_size
        if file_start not in files:
            files[file_start] = bytearray(file_size)
            if not i:
                filler = build_entry(*PRE_BLANK)
                files[file_start][:byte_pos - file_start] = filler * ((byte_pos - file_start) // 20)
        pos = byte_pos - file_start
        files[file_start][pos:pos + CQ_STORE_UNIT_SIZE] = build_entry(off, size, tags)
    return {k: bytes(v) for k, v in sorted(files.items())}


def write_queue(store_root: str | os.PathLike[str], topic: str, queue_id: int,
                entries: Iterable[tuple[int, int, int]], *, file_size: int = DEFAULT_FILE_SIZE,
                start_queue_offset: int = 0) -> list[Path]:
    """Write `consumequeue/<topic>/<queueId>/` files under a store root (atomic writes)."""
    d = Path(store_root) / "consumequeue" / topic / str(queue_id)
    d.mkdir(parents=True, exist_ok=True)
    out = []
    for start, data in build_files(entries, file_size=file_size,
                                   start_queue_offset=start_queue_offset).items():
        atomic_write(d / file_name(start), data)
        out.append(d / file_name(start))
    return out


# --- ConsumeQueueExt ------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class CQExtUnit:
    tags_code: int
    msg_store_time: int
    filter_bitmap: bytes
    position: int = 0

    @property
    def size(self) -> int:
        return MIN_EXT_UNIT_SIZE + len(self.filter_bitmap)


def read_ext_units(buf: bytes | memoryview, *, file_start: int = 0) -> Iterator[CQExtUnit]:
    """Units of one ext file, up to the first size <= 0 (end marker -1 or zeros).

    Raises `FormatError` for a unit whose size disagrees with its bitmap or the file.
    """
    pos, n = 0, len(buf)
    while pos + 2 <= n:
        (size,) = struct.unpack_from(">h", buf, pos)
        if size <= 0:
            return
        if size < MIN_EXT_UNIT_SIZE or pos + size > n:
            raise FormatError("ROCKETMQ_CQ_INVALID", f"ext unit size {size} impossible at {pos}", pos,
                              file_start + pos)
        _, tags, store_time, bitmap_size = EXT_UNIT_HEAD.unpack_from(buf, pos)
        if bitmap_size != size - MIN_EXT_UNIT_SIZE:
            raise FormatError("ROCKETMQ_CQ_INVALID", f"ext unit at {pos}: bitmap size {bitmap_size} "
                              f"disagrees with unit size {size}", pos)
        yield CQExtUnit(tags, store_time, bytes(buf[pos + MIN_EXT_UNIT_SIZE:pos + size]), pos)
        pos += size


def build_ext_unit(tags_code: int, msg_store_time: int, filter_bitmap: bytes = b"") -> bytes:
    size = MIN_EXT_UNIT_SIZE + len(filter_bitmap)
    if size > 32767:
        raise ValueError("ext unit larger than Short.MAX_VALUE")
    return EXT_UNIT_HEAD.pack(size, tags_code, msg_store_time, len(filter_bitmap)) + filter_bitmap
