"""What a reader of a large input holds: a read-only map of a sealed file, or a live one read with pread.

A mapped page that a concurrent truncation cuts away raises SIGBUS and kills the process, and a
broker does truncate the segment it is writing (follower truncation, `LogSegment.truncateTo`;
storage/.../log/LogSegment.java) and trims its active indexes at roll. So a file the broker may
still write is never mapped: `PreadRegion` reads it with `pread`, a window at a time, into private
anonymous memory laid out like the file. Every reader addresses it as it addresses a map (same
positions, same buffer protocol, no copy handed out), and a truncation only makes a read come back
short: what is gone reads as zeros, which the walk reports as a zero tail. Walks say which bytes
they are about to read (`readable`) and release what lies behind them (`release`), so memory holds
a window or two, never the file. A sealed file is mapped (`FileMap`): no copy at all.

Both know their descriptor, so the holes of a sparse file are found with SEEK_DATA/SEEK_HOLE
(`data_extents`) and skipped: a hole reads as zeros, and nothing has to be read to know it.
"""
from __future__ import annotations

import contextlib
import ctypes
import errno
import mmap
import os
from collections.abc import Iterator

from replog.formats.errors import UnreadableInput

MAP_NORESERVE = getattr(mmap, "MAP_NORESERVE", 0x4000)  # Linux's value; address space, no memory reserved
CHUNK = 1 << 21   # what a region reads (and tracks, and gives back) at a time: one huge page


class FileMap(mmap.mmap):
    """A read-only map of an input that no one is writing, with the descriptor it maps."""

    fd: int


class PreadRegion(mmap.mmap):
    """A live file's bytes as a private anonymous region the size of the file, read (`pread`) on demand.

    `fill(lo, hi)` reads the chunks of [lo, hi) not read yet; `release(lo, hi)` gives back the chunks
    wholly inside [lo, hi) (they read as zeros until filled again). What the file lost since it was
    opened stays zero; what it gained past its size at open is not read.
    """

    fd: int
    path: str
    _filled: bytearray  # one byte per CHUNK: 1 when read
    _address: int       # where the region starts in memory (to place a slice of it)

    @classmethod
    def create(cls, fd: int, path: str, size: int) -> PreadRegion:
        try:
            region = cls(-1, size, flags=mmap.MAP_PRIVATE | MAP_NORESERVE)
        except (OSError, ValueError, OverflowError) as e:
            raise UnreadableInput(f"cannot read {path}: no address space for its {size} bytes ({e})") from None
        region.fd, region.path = fd, path
        region._filled = bytearray(-(-size // CHUNK))
        with memoryview(region) as whole:
            start = ctypes.c_char.from_buffer(whole)
            region._address = ctypes.addressof(start)
            del start
        with contextlib.suppress(AttributeError, OSError, ValueError):
            # fresh pages cost a fault and a zeroing each: in huge pages, a quarter of the time
            region.madvise(mmap.MADV_HUGEPAGE)
        return region

    def fill(self, lo: int, hi: int) -> None:
        filled, stop = self._filled, min(len(self._filled), -(-hi // CHUNK))
        i = filled.find(0, max(lo, 0) // CHUNK, stop)
        while i >= 0:
            j = filled.find(1, i, stop)
            j = stop if j < 0 else j
            self._read(i * CHUNK, min(j * CHUNK, len(self)))
            filled[i:j] = b"\x01" * (j - i)
            i = filled.find(0, j, stop)

    def _read(self, lo: int, hi: int) -> None:
        """Read [lo, hi) of the file into place; its holes are left as they are (zeros, no memory)."""
        with memoryview(self) as whole:
            for a, b in _extents(self.fd, lo, hi):
                target = whole[a:b]
                try:
                    done = 0
                    while done < b - a:
                        n = os.preadv(self.fd, [target[done:]], a + done)
                        if n == 0:
                            break  # the file is shorter now: the rest stays zero
                        done += n
                except OSError as e:
                    raise UnreadableInput(f"cannot read {self.path}: {e.strerror}") from None
                finally:
                    target.release()

    def release(self, lo: int, hi: int) -> None:
        first = -(-max(lo, 0) // CHUNK)
        size = len(self)
        last = len(self._filled) if hi >= size else hi // CHUNK
        if last <= first:
            return
        with contextlib.suppress(OSError, ValueError):
            self.madvise(mmap.MADV_DONTNEED, first * CHUNK, min(last * CHUNK, size) - first * CHUNK)
            self._filled[first:last] = bytes(last - first)

    def offset_of(self, view: memoryview) -> int:
        """Where `view` (this region or a slice of it) starts in the region."""
        if len(view) == len(self):
            return 0
        import numpy as np  # a slice's address; a walk of a whole view never asks
        return int(np.frombuffer(view, dtype=np.uint8).ctypes.data) - self._address


def region_of(buf: object) -> PreadRegion | None:
    """The `PreadRegion` behind `buf` (a view of one, or a slice of that), else None."""
    obj = getattr(buf, "obj", None)
    return obj if type(obj) is PreadRegion else None


def readable(buf: bytes | memoryview, lo: int, hi: int) -> None:
    """Make `buf[lo:hi]` hold the file's bytes. A no-op but on a live file's windowed view, whose
    bytes are read when first asked for: a walk calls this for every range it reads that it was
    not handed by an earlier call (and the consumers of its blocks read only the blocks' bytes)."""
    region = region_of(buf)
    if region is not None and hi > lo:
        at = region.offset_of(buf)  # type: ignore[arg-type]
        region.fill(at + max(lo, 0), at + min(hi, len(buf)))


def data_end(buf: bytes | memoryview, limit: int) -> int:
    """Where the last stretch of `buf[:limit]` that may hold data ends: past it, holes (zeros) only."""
    end = 0
    for _, hi in data_extents(buf, 0, limit):
        end = hi
    return end


def data_extents(buf: bytes | memoryview, lo: int, hi: int) -> Iterator[tuple[int, int]]:
    """The stretches of `buf[lo:hi]` that may hold data, in order; the rest are holes (zeros on disk
    and in memory, nothing to read). Without a descriptor to ask, or where the file system cannot
    tell, the whole range."""
    obj = getattr(buf, "obj", None)
    fd = getattr(obj, "fd", None) if isinstance(obj, (FileMap, PreadRegion)) else None
    if fd is None:
        yield lo, hi
        return
    at = obj.offset_of(buf) if isinstance(obj, PreadRegion) else (0 if len(buf) == len(obj) else None)  # type: ignore[arg-type]
    if at is None:
        yield lo, hi
        return
    for a, b in _extents(fd, at + lo, at + hi):
        yield a - at, b - at


def _extents(fd: int, lo: int, hi: int) -> Iterator[tuple[int, int]]:
    """The stretches of [lo, hi) of the file `fd` that may hold data (SEEK_DATA/SEEK_HOLE); all of it
    where the file system cannot tell, none past the file's end."""
    if not hasattr(os, "SEEK_DATA"):
        yield lo, hi
        return
    pos = lo
    while pos < hi:
        try:
            start = os.lseek(fd, pos, os.SEEK_DATA)
            end = os.lseek(fd, start, os.SEEK_HOLE)
        except OSError as e:
            if e.errno != errno.ENXIO:  # ENXIO: no data from here to the end of the file
                yield pos, hi           # the file system cannot tell: all of it
            return
        if start >= hi:
            return
        yield max(start, pos), min(end, hi)
        pos = end
