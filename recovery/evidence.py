"""Evidence handling for checks: every input read is opened read-only and hashed once.

`Evidence` is the one door through which the checks read files, so the report
can list exactly what was read, with size and SHA-256, and say which inputs
changed while replog read them.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from replog.formats.errors import FormatError, UnreadableInput
from replog.formats.fileio import mapped, open_regular, read_small, reading_pool
from replog.formats.findings import Finding, from_error, from_unreadable
from replog.recovery.progress import Tally

_CHUNK = 1 << 20
# One hash thread per core (at most 4): hashing is the longest part of a check of large segments,
# and files hash independently, so the hashes of a partition's segments share the cores the walk leaves.
HASH_THREADS = max(1, min(4, os.cpu_count() or 1))
# No broker file is larger (Kafka's `FileRecords` and indexes, RocketMQ's `MappedFile` address files with
# ints). A larger input, typically a sparse file of a huge apparent size, is read only where it holds
# data; hashing it would read every byte of its holes (100 GiB of zeros is minutes): it is not hashed.
HASH_LIMIT = 2**31 - 1


def sha256_file(path: str | os.PathLike[str]) -> tuple[int, str]:
    """(size, sha256) of a file, streamed through one reused 1 MiB buffer."""
    return _stream(path, hashlib.sha256(), _CHUNK)


def blake3_file(path: str | os.PathLike[str]) -> tuple[int, str]:
    """(size, BLAKE3) of a file, through the `blake3` package's own threads: it splits the larger reads
    (16 MiB) across the cores, where SHA-256 is one sequential chain at ~1.5 GB/s a core."""
    from blake3 import blake3
    return _stream(path, blake3(max_threads=blake3.AUTO), 16 * _CHUNK)


class _Hash(Protocol):
    def update(self, data: memoryview, /) -> object: ...
    def hexdigest(self) -> str: ...


def _stream(path: str | os.PathLike[str], h: _Hash, chunk: int) -> tuple[int, str]:
    """(size, hex digest) of a regular file opened read-only, read through one reused buffer."""
    size = 0
    buf = bytearray(chunk)
    view = memoryview(buf)
    with os.fdopen(open_regular(path), "rb", buffering=0) as f:
        while n := f.readinto(buf):
            h.update(view[:n])
            size += n
    return size, h.hexdigest()


# The evidence hashes a user may choose (`doctor --hash`): SHA-256, the default, is what courts and
# `sha256sum` know; BLAKE3 is offered beside it where the hash bounds a check of large inputs.
HASHES: dict[str, Callable[[str | os.PathLike[str]], tuple[int, str]]] = {"sha256": sha256_file,
                                                                           "blake3": blake3_file}


StatKey = tuple[int, int, int, int, int]


def stat_key(path: str | os.PathLike[str]) -> StatKey | None:
    """What changes whenever a file's bytes do: size, mtime, ctime, inode, device (None: gone)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev


@dataclass
class _Read:
    stat: StatKey | None
    digest: Future[tuple[int, str]] | None


class Evidence:
    """Read-only reads that record (path, size, sha256) of every file read.

    Each file is hashed once, by a pool of background threads (`HASH_THREADS`)
    reading it with their own reads: hashlib and file reads release the GIL, so
    the hashes run on the cores beside the walk and touch none of the walk's
    mappings (memory stays flat). A file whose size, times or inode differ at
    the end from when it was first read changed meanwhile (a live broker,
    another writer).
    `hash_files=False` keeps the listing and the change check without digests
    (a fleet scan keeps no manifest).
    """

    def __init__(self, hash_files: bool = True, tally: Tally | None = None, algorithm: str = "sha256") -> None:
        self.algorithm, self._hash = algorithm, HASHES[algorithm]
        self._reads: dict[str, _Read] = {}
        self._pool = (reading_pool(HASH_THREADS, "replog-hash")
                      if hash_files else None)
        self._tally = tally
        self._unfinished: dict[str, int] = {}   # path -> parts (its read, its hash) still running
        self._lock = threading.Lock()

    def _note(self, path: Path, read_done: bool = True) -> None:
        key = str(path)
        if key not in self._reads:
            seen = stat_key(key)
            hashed = self._pool is not None and (seen is None or seen[0] <= HASH_LIMIT)
            self._unfinished[key] = 2 if hashed else 1
            digest = self._pool.submit(self._hash, key) if hashed and self._pool is not None else None
            self._reads[key] = _Read(seen, digest)
            if digest is not None:
                digest.add_done_callback(lambda _: self._finished(key))
        if read_done:
            self._finished(key)

    def _finished(self, key: str) -> None:
        """One part of a file's work ended; the tally counts the file when its read and its hash both have."""
        with self._lock:
            left = self._unfinished.get(key, 0) - 1
            if left < 0:
                return
            self._unfinished[key] = left
        if left == 0 and self._tally is not None:
            self._tally.done(key)

    @contextlib.contextmanager
    def mapped(self, path: Path, *, live: bool = False, windows: bool = False) -> Iterator[memoryview]:
        """`fileio.mapped` of an input, noted (and hashed)."""
        with mapped(path, live=live, windows=windows) as buf:
            self._note(path, read_done=False)
            try:
                yield buf
            finally:
                self._finished(str(path))

    def read_small(self, path: Path, limit: int = 64 << 20) -> bytes:
        data = read_small(path, limit)
        self._note(path)
        return data

    def check_parses(self, path: Path, parse: Callable[[bytes], object]) -> list[Finding]:
        """Read a small file and parse it: no findings, or why it is malformed or unreadable."""
        try:
            parse(self.read_small(path))
        except FormatError as e:
            return [from_error(e, str(path))]
        except UnreadableInput as e:
            return [from_unreadable(e, str(path))]
        return []

    def hash_ahead(self, paths: Iterable[Path]) -> None:
        """Start hashing files about to be read (a partition's segments): the hash threads then share
        the cores with the walk from its start, instead of each file's hash waiting for the walk to
        reach it (the hash of a large segment is the longest part of its check). Their reads are
        counted done when the walk's map of them closes."""
        for path in paths:
            self._note(path, read_done=False)

    def note(self, path: Path) -> None:
        """Record a file another reader (RocketMQ checks) read."""
        self._note(path)

    def seen(self, path: Path) -> bool:
        """Whether the file is already recorded (read, or hashed ahead of its read)."""
        return str(path) in self._reads

    def listing(self) -> list[dict[str, object]]:
        """Every file read, with its size and digest (waits for the hashes still running): under "sha256",
        or, hashed with another algorithm, under its name with "sha256" null."""
        out: list[dict[str, object]] = []
        for key in sorted(self._reads):
            read = self._reads[key]
            size, digest = self._digest(read)
            if size is None and read.stat is not None:
                size = read.stat[0]
            entry: dict[str, object] = {"path": key, "size": size, "sha256": digest}
            if self.algorithm != "sha256":
                entry.update(sha256=None, **{self.algorithm: digest})
            out.append(entry)
        return out

    def too_large_to_hash(self) -> list[str]:
        """Paths read but not hashed: larger than `HASH_LIMIT` (their manifest entries have no SHA-256)."""
        return sorted(k for k, r in self._reads.items() if r.stat is not None and r.stat[0] > HASH_LIMIT)

    def changed_since(self) -> list[str]:
        """Paths that changed (or vanished) after they were first read."""
        out = []
        for key, read in self._reads.items():
            size, _ = self._digest(read)
            now = stat_key(key)
            if now is None or now != read.stat or (size is not None and size != now[0]):
                out.append(key)
        return out

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    @staticmethod
    def _digest(read: _Read) -> tuple[int | None, str | None]:
        if read.digest is None:
            return None, None
        try:
            return read.digest.result()
        except (OSError, UnreadableInput):
            return None, None
