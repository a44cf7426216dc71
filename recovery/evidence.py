"""Evidence handling for checks: every input read is opened read-only and hashed.

`Evidence` is the one door through which the checks read files, so the report
can list exactly what was read, with size and SHA-256, and re-hash at the end.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from replog.formats.errors import FormatError, UnreadableInput
from replog.formats.fileio import mapped, read_small
from replog.formats.findings import Finding, finding, from_error

_CHUNK = 1 << 20


def sha256_of_view(view: memoryview | bytes) -> str:
    h = hashlib.sha256()
    mv = memoryview(view)
    for start in range(0, len(mv), _CHUNK):
        h.update(mv[start:start + _CHUNK])
    return h.hexdigest()


def sha256_file(path: str | os.PathLike[str]) -> tuple[int, str]:
    """(size, sha256) of a file, streamed in 1 MiB reads."""
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
            size += len(chunk)
    return size, h.hexdigest()


class Evidence:
    """Read-only reads that record (path, size, sha256) of every file read."""

    def __init__(self) -> None:
        self.inputs: dict[str, dict[str, object]] = {}

    def _note(self, path: Path, data: memoryview | bytes) -> None:
        key = str(path)
        if key not in self.inputs:
            self.inputs[key] = {"path": key, "size": len(data), "sha256": sha256_of_view(data)}

    @contextlib.contextmanager
    def mapped(self, path: Path) -> Iterator[memoryview]:
        with mapped(path) as buf:
            self._note(path, buf)
            yield buf

    def read_small(self, path: Path, limit: int = 64 << 20) -> bytes:
        data = read_small(path, limit)
        self._note(path, data)
        return data

    def check_parses(self, path: Path, parse: Callable[[bytes], object]) -> list[Finding]:
        """Read a small file and parse it: no findings, or why it is malformed or unreadable."""
        try:
            parse(self.read_small(path))
        except FormatError as e:
            return [from_error(e, str(path))]
        except UnreadableInput as e:
            return [finding("UNREADABLE_FILE", str(path), message=str(e))]
        return []

    def note(self, path: Path) -> None:
        """Record a file another reader (RocketMQ checks) read, hashing it here."""
        if str(path) not in self.inputs:
            size, digest = sha256_file(path)
            self.inputs[str(path)] = {"path": str(path), "size": size, "sha256": digest}

    def listing(self) -> list[dict[str, object]]:
        return [self.inputs[k] for k in sorted(self.inputs)]

    def changed_since(self) -> list[str]:
        """Paths whose size or hash differ now from when they were read."""
        out = []
        for key, rec in self.inputs.items():
            try:
                size, digest = sha256_file(key)
            except OSError:
                out.append(key)
                continue
            if (size, digest) != (rec["size"], rec["sha256"]):
                out.append(key)
        return out
