"""The `abort` marker (and `abort.bak`): presence means an unclean shutdown.

4.x creates it empty; 5.x writes the broker PID as decimal text through
`MixAll.string2File`, which first copies the old content to `abort.bak`
(docs/reference/rocketmq.md §6.1). So `abort.bak` holding a PID says the previous run crashed too.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from replog.formats.errors import FormatError, UnreadableInput
from replog.formats.fileio import atomic_write, read_small

ABORT = "abort"
ABORT_BAK = "abort.bak"
LOCK = "lock"
LOCK_CONTENT = b"lock"
_PID = re.compile(rb"^\s*([0-9]+)\s*$")


@dataclass(frozen=True, slots=True)
class AbortMarker:
    present: bool
    pid: int | None = None          # 5.x: PID of the run that did not shut down cleanly
    bak_pid: int | None = None      # from abort.bak: PID of the run before it, if it crashed


def parse_abort(data: bytes) -> int | None:
    """PID in an abort file, None when empty (4.x); `FormatError` for other content."""
    if not data.strip():
        return None
    m = _PID.match(data)
    if not m:
        raise FormatError("ROCKETMQ_ABORT_PRESENT", f"abort file holds {data[:40]!r}, not a PID", position=0)
    return int(m.group(1))


def build_abort(pid: int | None) -> bytes:
    return b"" if pid is None else str(pid).encode()


def read_abort(store_root: str | os.PathLike[str]) -> AbortMarker:
    """State of `abort` / `abort.bak` under a store root (content errors read as no PID)."""
    root = Path(store_root)

    def pid_of(name: str) -> int | None:
        try:
            return parse_abort(read_small(root / name, limit=4096))
        except (FormatError, UnreadableInput):  # evidence only; never fatal
            return None

    present = (root / ABORT).is_file()
    return AbortMarker(present, pid_of(ABORT) if present else None,
                       pid_of(ABORT_BAK) if (root / ABORT_BAK).is_file() else None)


def write_abort(store_root: str | os.PathLike[str], pid: int | None) -> None:
    atomic_write(Path(store_root) / ABORT, build_abort(pid))
