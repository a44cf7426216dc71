"""Walking a commit log's mapped files: every record or BLANK, and every defect, in file order.

Damage does not stop the walk: the walker resyncs on the next record that
decodes with a valid CRC and a matching physical offset (see `walk_commitlog`).
"""
from __future__ import annotations

import os
from collections.abc import Generator, Iterable, Iterator
from pathlib import Path
from typing import Any

from replog.formats.errors import FormatError, UnreadableInput
from replog.formats.fileio import mapped
from replog.formats.findings import Finding, Severity, finding, from_unreadable
from replog.formats.rocketmq.commitlog import (
    DEFAULT_FILE_SIZE,
    MAGIC_RE,
    NONZERO,
    Message,
    commitlog_files,
    deleted_at_load,
    infer_file_size,
    java_crc32,
    read_message,
)


def walk_commitlog(source: str | os.PathLike[str] | Iterable[str | os.PathLike[str]], *,
                   file_size: int | None = None, check_crc: bool = True
                   ) -> Iterator[Message | Finding]:
    """Walk every record of a commit log, yielding messages and findings in file order.

    Damage does not stop the walk: after an undecodable region the walker resyncs
    on the next record that decodes with a valid CRC and a matching physical
    offset. Bytes that cannot be resynced end the file (a dirty tail in the last one).
    Files are read through read-only maps; nothing is modified.
    """
    files = commitlog_files(source)
    sizes = {p: _size_of(p) for _, p in files}
    if file_size is None or file_size <= 0:   # an empty file says nothing of the size its broker mapped
        file_size = infer_file_size(sizes.values()) or DEFAULT_FILE_SIZE
    deleted = deleted_at_load(files, sizes)
    if deleted is not None:
        files.pop()
        yield finding("ROCKETMQ_FILE_NAME_MISMATCH", str(deleted), offset=int(deleted.name), severity=Severity.WARNING,
                      message="an empty last file: RocketMQ 5.1.3+ deletes it when it loads the store; 4.x and "
                              "5.0-5.1.2 refuse to start on it (length not matched)",
                      expected_size=file_size, actual_size=0)
    last = _last_written(files)
    prev_start: int | None = None
    for i, (start, path) in enumerate(files):
        yield from _check_file(path, start, sizes[path], file_size, prev_start)
        if start < 0:
            continue
        prev_start = start
        if i > last:
            yield _preallocated(path, start)
            continue
        yield from _walk_file(path, start, is_last=i == last, check_crc=check_crc)


def _last_written(files: list[tuple[int, Path]]) -> int:
    """Index of the last file holding a non-zero byte (the first file when none does).

    The files after it are all zeros: `AllocateMappedFileService` maps the next file
    ahead of use (`MappedFileQueue#doCreateMappedFile` asks for `nextNextFilePath`), so a
    killed 5.x broker leaves one behind. The broker's recovery (`CommitLog#recoverAbnormally`
    / `recoverNormally`, apache/rocketmq 5.3.3) reads magic 0 there as an illegal magic code
    (`checkMessageAndReturnSize` returns -1, not success), ends the log at the zeros of the file
    before, and `MappedFileQueue#truncateDirtyFiles` drops the all-zero files after that
    point: the written file's zero tail is the end of the data, as in the last file. Zeros
    without a BLANK stay an error only when a later file holds data the broker would drop.
    Reading the trailing files to prove them zero is what walking them costs anyway.
    """
    for i in range(len(files) - 1, 0, -1):
        start, path = files[i]
        if start < 0 or not _all_zero(path):
            return i
    return 0


def _all_zero(path: Path) -> bool:
    try:
        with mapped(path) as buf:
            return NONZERO.search(buf) is None
    except UnreadableInput:
        return False   # the walk reports it


def _preallocated(path: Path, start: int) -> Finding:
    return finding("ROCKETMQ_PREALLOCATED_FILE", str(path), offset=start,
                   message="all zeros after the last written file: mapped ahead of use by the broker's "
                           "AllocateMappedFileService; the broker's recovery ends the log before it and "
                           "deletes it (MappedFileQueue#truncateDirtyFiles) unless the log ends at its start")


def _size_of(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1


def _check_file(path: Path, start: int, size: int, file_size: int,
                prev_start: int | None) -> Iterator[Finding]:
    if start < 0:
        yield finding("ROCKETMQ_FILE_NAME_MISMATCH", str(path),
                      message=f"{path.name}: not a 20-digit commitlog offset; file skipped")
        return
    if size != file_size and size >= 0:
        yield finding("ROCKETMQ_FILE_NAME_MISMATCH", str(path), offset=start,
                      message=f"file is {size} bytes, expected {file_size}; the broker refuses to load it",
                      expected_size=file_size, actual_size=size)
    if start % file_size:
        yield finding("ROCKETMQ_FILE_NAME_MISMATCH", str(path), offset=start,
                      message=f"start offset {start} is not a multiple of the file size {file_size}")
    if prev_start is not None and start != prev_start + file_size:
        yield finding("ROCKETMQ_FILE_GAP", str(path), offset=prev_start + file_size,
                      message=f"expected the next file at {prev_start + file_size}, found {start}",
                      expected_start=prev_start + file_size, actual_start=start)


def _walk_file(path: Path, start: int, *, is_last: bool, check_crc: bool) -> Iterator[Message | Finding]:
    try:
        with mapped(path) as buf:
            yield from _walk_buffer(buf, str(path), start, is_last, check_crc)
    except UnreadableInput as e:
        yield from_unreadable(e, str(path), offset=start)


def _walk_buffer(buf: memoryview | bytes, path: str, start: int, is_last: bool,
                 check_crc: bool) -> Iterator[Message | Finding]:
    n = len(buf)
    pos = 0
    while pos < n:
        try:
            msg = read_message(buf, pos, file_start=start, check_crc=check_crc)
        except FormatError as e:
            nxt = yield from _damage(buf, path, start, pos, e, is_last, check_crc)
            if nxt is None:
                return
            pos = nxt
            continue
        if msg.kind == "blank":
            if msg.size != n - pos:
                yield finding("ROCKETMQ_BLANK_INVALID", path, position=pos, offset=start + pos,
                              message=f"BLANK at {pos} declares {msg.size} bytes, {n - pos} are left")
            return
        yield from _message_findings(msg, path)
        yield msg
        pos += msg.size
    if not is_last:
        yield finding("ROCKETMQ_BLANK_INVALID", path, position=n, offset=start + n,
                      message="file ends without a BLANK filler; the broker's recovery stops here")


def _message_findings(msg: Message, path: str) -> Iterator[Finding]:
    where: dict[str, Any] = dict(position=msg.position, offset=msg.commitlog_offset)
    if not msg.crc_valid:
        yield finding("ROCKETMQ_BODY_CRC_MISMATCH", path, **where,
                      message=f"stored body CRC {msg.body_crc} != {java_crc32(msg.body)}")
    if msg.prop_crc_valid is False:
        yield finding("ROCKETMQ_PROPERTY_CRC_MISMATCH", path, **where)
    if msg.physical_offset != msg.commitlog_offset:
        yield finding("ROCKETMQ_PHYSICAL_OFFSET_MISMATCH", path, **where,
                      message=f"physical offset field {msg.physical_offset} != {msg.commitlog_offset}",
                      physical_offset=msg.physical_offset)


def _damage(buf: memoryview | bytes, path: str, start: int, pos: int, err: FormatError,
            is_last: bool, check_crc: bool) -> Generator[Finding, None, int | None]:
    """Report undecodable bytes at `pos`; return where to go on, or None to end the file."""
    nonzero = NONZERO.search(buf, pos)
    if nonzero is None:  # zeros to the end: the unwritten part of the file
        if not is_last:
            yield finding("ROCKETMQ_BLANK_INVALID", path, position=pos, offset=start + pos,
                          message=f"zeros from {pos} to the end and no BLANK filler; "
                                  "the broker's recovery stops here")
        return None
    nxt = _resync(buf, pos, start)
    if nxt is None and is_last:
        yield finding("ROCKETMQ_DIRTY_TAIL", path, position=pos, offset=start + pos,
                      message=f"undecodable bytes after the last valid message ({err.message})",
                      cause=err.code, first_nonzero=nonzero.start())
        return None
    yield finding(err.code, path, position=pos, offset=start + pos, message=err.message,
                  skipped_bytes=(nxt if nxt is not None else len(buf)) - pos)
    return nxt


def _resync(buf: memoryview | bytes, pos: int, start: int) -> int | None:
    """Next position after `pos` where a trustworthy record (or the file's BLANK) starts."""
    n = len(buf)
    for m in MAGIC_RE.finditer(buf, pos + 5):
        cand = m.start() - 4
        try:
            msg = read_message(buf, cand, file_start=start)
        except FormatError:
            continue
        if msg.kind == "blank" and cand + msg.size == n:
            return cand
        if msg.kind == "message" and msg.crc_valid and msg.physical_offset == start + cand:
            return cand
    return None
