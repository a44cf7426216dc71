"""Output files built from byte ranges of input files: copied kernel-side, written atomically, verified.

A writer that assembles a new file from ranges of existing ones (a segment
from the batches of several inputs) never needs the bytes in Python: the
kernel copies them (`os.copy_file_range`, which may also share extents on
filesystems that can; else `os.sendfile`; else a bounded read/write loop, on
the errors that say a method is unavailable for these two files). The output
goes to a unique temporary name next to its target, is verified, fsynced and
only then renamed over the target; a failure removes it. Verification: the
CRC-32C of the bytes read back from the output must equal the CRC-32C of what
was meant to be there (the source ranges, checksummed from their read-only
maps while their pages are in memory anyway, and the bytes written). CRC-32C
(the `crc32c` package, hardware instructions, ~7 GB/s here) was the fastest
checksum measured; a bytewise comparison would have to read the sources again.
"""
from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from crc32c import crc32c

from replog.formats.fileio import (
    RELEASE_STEP,
    crash_point_for_tests,
    create_unique,
    fsync_dir,
    mapped,
    open_regular,
    release_pages,
    writing,
)
from replog.formats.fileview import readable

COPY_CHUNK = 1 << 20       # the read/write fallback's piece
MAX_PENDING = 2            # copies waiting for the copy thread
# The errors by which a copy method says it cannot serve these two files (filesystems, kernels,
# sandboxes): the next method is tried. Any other error is a real I/O failure and is raised.
_UNSUPPORTED = frozenset({errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EPERM})
METHODS = ("copy_file_range", "sendfile", "read_write")
_SYNC_FILE_RANGE_WRITE = 2  # <linux/fs.h>


@functools.cache
def _writeback() -> Callable[[int, int, int], object]:
    """`sync_file_range(fd, offset, count, SYNC_FILE_RANGE_WRITE)`: start writing a range back to disk
    without waiting, so the disk works while the copy goes on and the final fsync has little left to do.
    Linux only (not in `os`); elsewhere a no-op: the fsync alone gives the same result, later."""
    try:
        call = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        return lambda fd, offset, count: None
    call.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    call.restype = ctypes.c_int
    return lambda fd, offset, count: call(fd, offset, count, _SYNC_FILE_RANGE_WRITE)


class VerificationError(OSError):
    """An output read back differs from what was copied and written into it."""


@dataclass
class SourceFile:
    """An input file open read-only: a descriptor to copy from and a map (`fileio.mapped`) to read."""

    path: str
    fd: int
    buf: memoryview


@contextlib.contextmanager
def open_source(path: str | os.PathLike[str], *, live: bool = False) -> Iterator[SourceFile]:
    """An input to copy ranges of; a `live` one (a broker may be writing it) is read, never mapped."""
    with mapped(path, live=live, windows=True) as buf:
        fd = open_regular(path)
        try:
            yield SourceFile(os.fspath(path), fd, buf)
        finally:
            os.close(fd)


class OutputFile:
    """A file being assembled under a unique temporary name; `commit` verifies and renames it into place.

    Bytes go in by `write` or by `copy` (a range of a `SourceFile`), in order, appended. Copies run on a
    thread of their own, in order, while the caller goes on (reading the next input, say): the kernel
    copies on one core while the caller computes on the other. At most `MAX_PENDING` wait; an error of
    one is raised by the next call. `method` is the copy method in use: it steps down `METHODS` when
    one is unavailable and stays there.
    """

    def __init__(self, path: str | os.PathLike[str], method: str = METHODS[0]) -> None:
        self.path = Path(path)
        with writing(self.path):
            self.fd, self.tmp = create_unique(self.path)
        self.size = self.crc = 0
        self.committed = False
        self.method = method
        self._copier: ThreadPoolExecutor | None = None
        self._pending: deque[Future[None]] = deque()

    def write(self, data: bytes | memoryview) -> None:
        self._wait(0)
        view = memoryview(data)
        with writing(self.path):
            while view:
                view = view[os.write(self.fd, view):]
        self.crc = crc32c(data, self.crc)
        self.size += len(data)

    def copy(self, source: SourceFile, start: int, end: int) -> None:
        """Append `source` bytes [start, end), copied by the kernel; checksummed now, from the source's
        map (whose pages a caller that just read them has in memory)."""
        if not 0 <= start <= end <= len(source.buf):
            raise ValueError(f"{source.path}: range {start}..{end} is outside the file's {len(source.buf)} bytes")
        readable(source.buf, start, end)
        self.crc = crc32c(source.buf[start:end], self.crc)
        at, self.size = self.size, self.size + end - start
        if self._copier is None:
            self._copier = ThreadPoolExecutor(max_workers=1, thread_name_prefix="replog-copy")
        src = os.dup(source.fd)  # the copy's own descriptor: the caller may close the source before it runs
        self._pending.append(self._copier.submit(self._copy_range, src, source.path, start, end, at))
        self._wait(MAX_PENDING)

    def _wait(self, pending: int) -> None:
        """Let the copies run until at most `pending` are left; raise the error of one that failed."""
        with writing(self.path):
            while len(self._pending) > pending:
                self._pending.popleft().result()

    def _copy_range(self, src: int, path: str, start: int, end: int, at: int) -> None:
        """On the copy thread: `src` bytes [start, end) to the output's end (`at`), then start their writeback."""
        try:
            done = start
            while done < end:
                n = self._copy_some(src, done, end - done)
                if n == 0:
                    raise OSError(f"{path}: ended at {done} while copying {start}..{end} (did it shrink?)")
                done += n
            _writeback()(self.fd, at, end - start)
        finally:
            os.close(src)

    def _copy_some(self, src: int, offset: int, count: int) -> int:
        """Copy up to `count` bytes at `offset` of `src` to the output's end; how many were copied."""
        while True:
            try:
                if self.method == "copy_file_range":
                    return os.copy_file_range(src, self.fd, count, offset)
                if self.method == "sendfile":
                    return os.sendfile(self.fd, src, offset, count)
                data = os.pread(src, min(count, COPY_CHUNK), offset)
                view = memoryview(data)
                while view:
                    view = view[os.write(self.fd, view):]
                return len(data)
            except OSError as e:
                if e.errno not in _UNSUPPORTED or self.method == METHODS[-1]:
                    raise
                self.method = METHODS[METHODS.index(self.method) + 1]

    def commit(self) -> None:
        """Check the bytes read back, fsync, rename over the target, fsync the directory.

        The check reads what the kernel holds for the file, before or after the fsync alike; before
        it, the disk goes on writing back meanwhile, and the fsync has less left to wait for."""
        self._wait(0)
        self._stop_copier()
        with writing(self.path):
            self._commit()

    def _commit(self) -> None:
        crc, size = self._read_back()
        if (crc, size) != (self.crc, self.size):
            raise VerificationError(f"{self.path}: {size} bytes read back with CRC-32C {crc:#010x}, "
                                    f"{self.size} bytes with {self.crc:#010x} were copied and written")
        os.fsync(self.fd)
        os.close(self.fd)
        self.fd = -1
        crash_point_for_tests()
        os.replace(self.tmp, self.path)
        self.committed = True
        fsync_dir(self.path.parent)

    def _read_back(self) -> tuple[int, int]:
        """(CRC-32C, size) of the temporary file as it reads back: through a read-only map, page by page
        released behind (a map reads the page cache 4x faster here than `preadv` into a buffer)."""
        crc = 0
        with mapped(self.tmp) as buf:
            for start in range(0, len(buf), RELEASE_STEP):
                crc = crc32c(buf[start:start + RELEASE_STEP], crc)
                release_pages(buf, start, start + RELEASE_STEP)
            return crc, len(buf)

    def _stop_copier(self) -> None:
        """Let the copy thread finish the (at most `MAX_PENDING`) copies it has and end it; their errors
        are dropped (`commit` has raised them already, `discard` does not care)."""
        if self._copier is not None:
            self._copier.shutdown(wait=True)
            self._copier = None
        self._pending.clear()

    def discard(self) -> None:
        """Drop the temporary file (after a failure); a no-op once committed."""
        self._stop_copier()
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if not self.committed:
            self.tmp.unlink(missing_ok=True)

    def __enter__(self) -> OutputFile:
        return self

    def __exit__(self, exc_type: object, *_: object) -> None:
        try:
            if exc_type is None and not self.committed:
                self.commit()
        finally:
            self.discard()
