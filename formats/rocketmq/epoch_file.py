"""`epochFileCheckpoint` (controller mode): `CheckpointFile` text of `EpochFileCache` entries.

Layout (docs/reference/rocketmq.md §6.3, `C/utils/CheckpointFile.java`):

    <N>\\n
    <crc32(entry lines, each followed by \\n) & 0x7FFFFFFF, 0 = unchecked>\\n
    <epoch>-<startOffset>\\n   (N times, ascending)

A line that does not split into exactly two parts on "-" is skipped (yet still
counted in the CRC), as `fromLine` returns null for it. Reading falls back to
`<path>.bak` when the main file is missing, empty or invalid.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from replog.formats.errors import FormatError
from replog.formats.fileio import atomic_write, read_with_backup
from replog.formats.rocketmq.commitlog import java_crc32

_CODE = "ROCKETMQ_EPOCH_FILE_INVALID"
_JAVA_INT = re.compile(r"^[+-]?[0-9]+$")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
LONG_MAX = 2**63 - 1
INT_MIN, INT_MAX = -(2**31), 2**31 - 1


@dataclass(frozen=True, slots=True)
class EpochEntry:
    epoch: int
    start_offset: int


@dataclass(frozen=True, slots=True)
class EpochRange:
    """An entry with its end: the next entry's start, `LONG_MAX` (or the log end) for the last."""

    epoch: int
    start_offset: int
    end_offset: int


def _java_int(text: str, lo: int, hi: int, what: str, line: int) -> int:
    if not _JAVA_INT.match(text) or not lo <= int(text) <= hi:
        raise FormatError(_CODE, f"line {line}: {what} {text!r} is not a Java number", position=line)
    return int(text)


def entries_text(entries: list[EpochEntry]) -> str:
    return "".join(f"{e.epoch}-{e.start_offset}\n" for e in entries)


def parse_epoch_file(text: str, *, check_order: bool = True) -> list[EpochEntry]:
    """Strict parse; `FormatError` on bad numbers, count or CRC mismatch, or disorder.

    `position` in errors is a 0-based line number.
    """
    lines = _LINE_BREAK.split(text)   # BufferedReader.readLine: \\n, \\r\\n or \\r
    if lines[-1] == "":
        lines.pop()
    if len(lines) < 2:
        raise FormatError(_CODE, "epoch file needs a count line and a CRC line", position=0)
    count = _java_int(lines[0], INT_MIN, INT_MAX, "count", 0)
    crc = _java_int(lines[1], INT_MIN, INT_MAX, "crc", 1)
    entries = []
    for i, line in enumerate(lines[2:], start=2):
        parts = line.split("-")
        while parts and parts[-1] == "":
            parts.pop()   # Java String.split drops trailing empty strings
        if len(parts) != 2:
            continue
        entries.append(EpochEntry(_java_int(parts[0], INT_MIN, INT_MAX, "epoch", i),
                                  _java_int(parts[1], -LONG_MAX - 1, LONG_MAX, "start offset", i)))
    if count != len(entries):
        raise FormatError(_CODE, f"expected {count} entries, found {len(entries)}", position=0)
    truth = java_crc32("".join(f"{ln}\n" for ln in lines[2:]).encode("utf-8"))
    if crc != 0 and crc != truth:
        raise FormatError(_CODE, f"entries CRC {crc} != {truth}", position=1)
    if check_order:
        for i in range(1, len(entries)):
            a, b = entries[i - 1], entries[i]
            if b.epoch <= a.epoch or b.start_offset <= a.start_offset:
                raise FormatError(_CODE, f"entry {b.epoch}-{b.start_offset} does not follow "
                                  f"{a.epoch}-{a.start_offset}", position=i + 2)
    return entries


def build_epoch_file(entries: list[EpochEntry]) -> str:
    """File text as `CheckpointFile#write` produces it (an empty list is never written)."""
    if not entries:
        raise ValueError("the broker never writes an empty epoch file")
    body = entries_text(entries)
    return f"{len(entries)}\n{java_crc32(body.encode('utf-8'))}\n{body}"


def with_end_offsets(entries: list[EpochEntry], last_end: int = LONG_MAX) -> list[EpochRange]:
    """Chain end offsets as `EpochFileCache` keeps them in memory."""
    ends = [e.start_offset for e in entries[1:]] + [last_end]
    # not strict: with no entries, `ends` still holds `last_end` (and the answer is empty)
    return [EpochRange(e.epoch, e.start_offset, end) for e, end in zip(entries, ends, strict=False)]


def read_epoch_file(path: str | os.PathLike[str]) -> tuple[list[EpochEntry], Path]:
    """Entries and the file they came from, with the broker's `.bak` fallback.

    Raises the main file's `FormatError` (or `UnreadableInput`) if neither gives entries.
    """
    return read_with_backup(path, lambda data: parse_epoch_file(data.decode("utf-8", "replace")) or None,
                            limit=16 << 20)


def write_epoch_file(path: str | os.PathLike[str], entries: list[EpochEntry]) -> None:
    atomic_write(path, build_epoch_file(entries).encode("utf-8"))
