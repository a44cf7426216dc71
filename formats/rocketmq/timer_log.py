"""The timer log `timerlog/` (RocketMQ 5.x timer messages): mapped files of 52-byte units.

`UNIT` (construct) is the source of truth (`store/timer/TimerLog.java` `UNIT_SIZE`, written by
`TimerMessageStore#doEnqueue`, tag rocketmq-all-5.3.3; docs/reference/rocketmq.md §16.2). Files are named by the
timer-log position of their first byte (20 digits, like the commit log), `mappedFileSizeTimerLog` bytes each
(100 MiB by default). A unit that does not fit before the end of a file (with 16 bytes to spare) is preceded by a
blank: size = the bytes left, prevPos 0, magic `BLANK_MAGIC_CODE` (`TimerLog#append`). `prevPos` links the units
of one wheel slot backwards; `offsetPy`/`sizePy` locate the message in the commit log (a message of
`rmq_sys_wheel_timer`); its delivery time is `currWriteTime + delayedTime`.

`walk_timerlog` follows the broker's own check at start (`TimerMessageStore#recoverAndRevise` with
`checkTimerLog`): units every 52 bytes from each file's start; a blank ends the file; a unit whose size is not 52
or whose magic has bits above 0xF (`isMagicOK`) ends the log there (the broker truncates it: `truncateDirtyFiles`).
"""
from __future__ import annotations

import os
import struct
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import construct as cs

from replog.formats.errors import UnreadableInput
from replog.formats.fileio import mapped
from replog.formats.findings import Finding, finding, from_unreadable
from replog.formats.layout import struct_of
from replog.formats.rocketmq.offset_names import offset_files

UNIT = cs.Struct(
    "size" / cs.Int32sb,              # UNIT_SIZE (52), or the bytes left for a blank
    "prev_pos" / cs.Int64sb,          # previous unit of the same slot (the slot's lastPos when written)
    "magic" / cs.Int32sb,             # MAGIC_DEFAULT | MAGIC_ROLL | MAGIC_DELETE, or BLANK_MAGIC_CODE
    "curr_write_time" / cs.Int64sb,   # currWriteTimeMs when enqueued
    "delayed_time" / cs.Int32sb,      # delivery time - currWriteTime
    "offset_py" / cs.Int64sb,         # commit-log offset of the timer message
    "size_py" / cs.Int32sb,           # its size
    "topic_hash" / cs.Int32sb,        # String#hashCode of its REAL_TOPIC (hashTopicForMetrics)
    "reserved" / cs.Int64sb,
)
UNIT_STRUCT = struct_of(UNIT)
UNIT_SIZE = UNIT_STRUCT.size                   # 52
BLANK_MAGIC = -875286124                       # 0xBBCCDDEE ^ 1880681586 + 8 (Java: + binds first)
MIN_BLANK_LEN = 16                             # size, prevPos, magic
_HEAD = struct.Struct(UNIT_STRUCT.format[:4])   # size, prevPos, magic: all a blank has
MAGIC_DEFAULT, MAGIC_ROLL, MAGIC_DELETE = 1, 2, 4
DEFAULT_FILE_SIZE = 100 * 1024 * 1024          # mappedFileSizeTimerLog
DIR_NAME = "timerlog"
_CODE = "ROCKETMQ_TIMER_LOG_INVALID"


def magic_ok(magic: int) -> bool:
    """`TimerMessageStore#isMagicOK`: no bit above the low four."""
    return (magic | 0xF) == 0xF


@dataclass(frozen=True, slots=True)
class TimerUnit:
    """One unit; `pos` is its timer-log position (file start + byte position), `file` its file."""

    pos: int
    size: int
    prev_pos: int
    magic: int
    curr_write_time: int
    delayed_time: int
    offset_py: int
    size_py: int
    topic_hash: int
    reserved: int
    file: str = ""

    @property
    def delivery_ms(self) -> int:
        """`delayTime = currWriteTime + delayedTime` (recoverAndRevise): the slot's time."""
        return self.curr_write_time + self.delayed_time

    @property
    def is_delete(self) -> bool:
        return bool(self.magic & MAGIC_DELETE)

    @property
    def is_roll(self) -> bool:
        return bool(self.magic & MAGIC_ROLL)


def read_unit(buf: bytes | memoryview, position: int, *, file_start: int = 0, file: str = "") -> TimerUnit:
    size, prev, magic, write, delay, offset_py, size_py, topic_hash, reserved = UNIT_STRUCT.unpack_from(buf, position)
    return TimerUnit(file_start + position, size, prev, magic, write, delay, offset_py, size_py, topic_hash, reserved,
                     file)


def timerlog_files(directory: str | os.PathLike[str]) -> list[tuple[int, Path]]:
    return offset_files(directory)


def walk_timerlog(files: Iterable[tuple[int, Path]]) -> Generator[TimerUnit | Finding, None, int]:
    """Units in log order and findings; returns where the broker's check ends the log (`checkOffset`)."""
    end = 0
    prev_end: int | None = None
    listed = list(files)
    for i, (start, path) in enumerate(listed):
        if prev_end is not None and start != prev_end:
            yield finding("ROCKETMQ_FILE_GAP", str(path), offset=prev_end,
                          message=f"timer log file starts at {start}, the previous one ends at {prev_end}")
        try:
            with mapped(path) as buf:
                pos, stopped = yield from _walk_file(buf, start, str(path))
                prev_end = start + len(buf)
        except UnreadableInput as e:
            yield from_unreadable(e, str(path))
            return end
        end = start + pos
        if stopped:
            for _, later in listed[i + 1:]:
                yield finding(_CODE, str(later), position=0, offset=end,
                              message=f"timer-log file after the end the broker's check stops at ({end}): "
                                      "truncateDirtyFiles deletes it at start")
            return end
    return end


def _walk_file(buf: memoryview, start: int, path: str) -> Generator[TimerUnit | Finding, None, tuple[int, bool]]:
    """(position where the file's units end, whether the log ends there)."""
    pos = 0
    while pos + MIN_BLANK_LEN <= len(buf):
        size, _prev, magic = _HEAD.unpack_from(buf, pos)
        if magic == BLANK_MAGIC:
            if size != len(buf) - pos:
                yield finding(_CODE, path, position=pos, offset=start + pos,
                              message=f"blank of {size} bytes, {len(buf) - pos} are left in the file")
            return len(buf), False
        if pos + UNIT_SIZE > len(buf) or size != UNIT_SIZE or not magic_ok(magic):
            if any(buf[pos:pos + UNIT_SIZE]):
                yield finding(_CODE, path, position=pos, offset=start + pos,
                              message=f"unit with size {size} and magic {magic:#x}: the broker's check at start "
                                      f"ends the timer log here and truncates the rest")
            return pos, True
        yield read_unit(buf, pos, file_start=start, file=path)
        pos += UNIT_SIZE
    if pos < len(buf) and any(buf[pos:]):
        yield finding(_CODE, path, position=pos, offset=start + pos,
                      message=f"{len(buf) - pos} trailing bytes do not form a unit")
    return pos, True


def units_of(files: Iterable[tuple[int, Path]]) -> Iterator[TimerUnit]:
    """The units alone."""
    for item in walk_timerlog(files):
        if isinstance(item, TimerUnit):
            yield item


def build_unit(*, prev_pos: int, magic: int = MAGIC_DEFAULT, curr_write_time: int, delayed_time: int,
               offset_py: int, size_py: int, topic_hash: int = 0, reserved: int = 0) -> bytes:
    return UNIT_STRUCT.pack(UNIT_SIZE, prev_pos, magic, curr_write_time, delayed_time, offset_py, size_py,
                            topic_hash, reserved)


def build_blank(size: int) -> bytes:
    """The 16 bytes `TimerLog#append` writes before moving to the next file."""
    return UNIT_STRUCT.pack(size, 0, BLANK_MAGIC, 0, 0, 0, 0, 0, 0)[:MIN_BLANK_LEN]


def build_files(units: Iterable[bytes], *, file_size: int = DEFAULT_FILE_SIZE) -> dict[int, bytes]:
    """Lay units out as `TimerLog#append` does: a blank when a unit plus 16 bytes no longer fits."""
    files: dict[int, bytearray] = {0: bytearray()}
    start = 0
    for unit in units:
        cur = files[start]
        if len(unit) + MIN_BLANK_LEN > file_size - len(cur):
            cur += build_blank(file_size - len(cur))
            start += file_size
            files[start] = bytearray()
            cur = files[start]
        cur += unit
    return {s: bytes(b.ljust(file_size, b"\0")) for s, b in files.items()}
