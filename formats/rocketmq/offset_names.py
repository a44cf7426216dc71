"""How the broker names the files of a mapped-file queue, and lists them.

Every directory of fixed-size mapped files (commitlog/, a consume queue, a batch consume queue, timerlog/, a DLedger
data dir) names each file for the offset of its first byte or unit, zero-padded to 20 digits
(`common/.../UtilAll#offset2FileName`), and the broker loads the files of such a directory sorted by name
(`store/.../MappedFileQueue#load`, DLedger's `MmapFileList#doLoad`). One rule, read here by every reader of those
directories.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

_OFFSET_NAME = re.compile(r"^\d{20}$")


def file_name(start_offset: int) -> str:
    """`UtilAll.offset2FileName`: 20-digit zero-padded offset."""
    return f"{start_offset:020d}"


def is_offset_name(name: str) -> bool:
    """Whether `name` is a mapped file's name (20 digits)."""
    return _OFFSET_NAME.match(name) is not None


def offset_files(directory: str | os.PathLike[str]) -> list[tuple[int, Path]]:
    """(start offset, path) of the offset-named regular files of `directory`, in the broker's load order; none when
    `directory` is not a directory."""
    d = Path(directory)
    if not d.is_dir():
        return []
    return sorted((int(p.name), p) for p in d.iterdir() if p.is_file() and is_offset_name(p.name))
