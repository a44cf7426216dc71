"""Reading evidence read-only and writing outputs atomically.

Inputs are mapped read-only (`ACCESS_READ`), so no code path can modify them;
outputs go to a temporary name, are fsynced, renamed over the target, and the
directory is fsynced, the same procedure the brokers use for checkpoints.
"""
from __future__ import annotations

import contextlib
import mmap
import os
from collections.abc import Iterator
from pathlib import Path

from formats.errors import UnreadableInput

EMPTY = memoryview(b"")


@contextlib.contextmanager
def mapped(path: str | os.PathLike[str]) -> Iterator[memoryview]:
    """Map a file read-only; yields a memoryview (empty for empty files).

    Memory stays flat whatever the size: pages are read on demand.
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        raise UnreadableInput(f"cannot open {path}: {e.strerror}") from None
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            yield EMPTY
            return
        try:
            mm = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as e:
            raise UnreadableInput(f"cannot map {path}: {e}") from None
        view = memoryview(mm)
        try:
            yield view
        finally:
            view.release()
            try:
                mm.close()
            except BufferError:
                pass  # a caller kept a slice alive; the map is freed with it
    finally:
        os.close(fd)


def read_small(path: str | os.PathLike[str], limit: int = 64 << 20) -> bytes:
    """Read a small file (checkpoint, metadata) whole, refusing absurd sizes."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > limit:
                raise UnreadableInput(f"{path}: {size} bytes is too large for this kind of file")
            return f.read(limit + 1)
    except OSError as e:
        raise UnreadableInput(f"cannot read {path}: {e.strerror}") from None


def fsync_dir(path: str | os.PathLike[str]) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: str | os.PathLike[str], data: bytes) -> None:
    """Write `data` to `path` atomically (tmp, fsync, rename, dir fsync), then verify."""
    target = Path(path)
    tmp = target.with_name(target.name + ".replog-tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, target)
    fsync_dir(target.parent)
    with open(target, "rb") as f:
        if f.read() != data:
            raise OSError(f"verification after writing {target} failed")
