"""Text checkpoint files (reference §8.4): offset checkpoints and leader-epoch-checkpoint.

    <version>\\n<entry count>\\n<entry line>\\n...

Parsed the way `CheckpointFile` reads them (Java `readLine`, `\\s+` split,
`Integer/Long.parseInt`), with one addition: topic names must be valid Kafka
topic names, because later code builds paths from them.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from replog.formats.errors import FormatError
from replog.formats.kafka.names import (
    CHECKPOINT_NAMES,
    INT32_MAX,
    INT64_MAX,
    is_valid_topic_name,
)

CODE = "KAFKA_CHECKPOINT_INVALID"
OFFSET_CHECKPOINT_VERSION = 0
LEADER_EPOCH_CHECKPOINT_VERSION = 0
KNOWN_CHECKPOINT_NAMES = CHECKPOINT_NAMES

_EOL = re.compile(rb"\r\n|\r|\n")
_JAVA_WS = re.compile(r"[ \t\n\x0b\f\r]+")
_JAVA_INT = re.compile(r"[+-]?[0-9]+", re.ASCII)
_INT32 = (-(2**31), INT32_MAX)
_INT64 = (-(2**63), INT64_MAX)


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


class _Line(NamedTuple):
    position: int
    text: str


def _lines(data: bytes) -> list[_Line]:
    """Lines as Java's `readLine` returns them, with their byte positions."""
    out: list[_Line] = []
    start = 0
    for m in _EOL.finditer(data):
        out.append(_Line(start, _decode(data[start:m.start()], start)))
        start = m.end()
    if start < len(data):
        out.append(_Line(start, _decode(data[start:], start)))
    return out


def _decode(raw: bytes, position: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FormatError(CODE, f"line is not valid UTF-8: {e.reason}", position=position + e.start) from None


def _java_int(text: str, bounds: tuple[int, int], what: str, position: int) -> int:
    if _JAVA_INT.fullmatch(text):
        value = int(text)
        if bounds[0] <= value <= bounds[1]:
            return value
    raise FormatError(CODE, f"{what} {text[:40]!r} is not a {bounds[1].bit_length() + 1}-bit integer",
                      position=position)


def _fields(line: _Line) -> list[str]:
    """`\\s+` split as Java does it: trailing empty fields dropped, a leading one kept."""
    parts = _JAVA_WS.split(line.text)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _read(data: bytes, version: int) -> list[_Line]:
    """The entry lines after checking the version line and the declared count."""
    lines = _lines(bytes(data))
    if not lines:
        return []
    found = _java_int(lines[0].text, _INT32, "version", lines[0].position)
    if found != version:
        raise FormatError(CODE, f"version {found}, expected {version}", position=lines[0].position)
    if len(lines) == 1:
        return []
    count_line = lines[1]
    declared = _java_int(count_line.text, _INT32, "entry count", count_line.position)
    entries = lines[2:]
    if declared != len(entries):
        raise FormatError(CODE, f"declared {declared} entries, found {len(entries)} lines",
                          position=count_line.position)
    return entries


def parse_offset_checkpoint(data: bytes) -> dict[tuple[str, int], int]:
    """{(topic, partition): offset} of an offset checkpoint; an empty file is {}."""
    out: dict[tuple[str, int], int] = {}
    for line in _read(data, OFFSET_CHECKPOINT_VERSION):
        parts = _fields(line)
        if len(parts) != 3:
            raise FormatError(CODE, f"expected 'topic partition offset', got {line.text[:80]!r}",
                              position=line.position)
        topic, partition, offset = parts
        if not is_valid_topic_name(topic):
            raise FormatError(CODE, f"invalid topic name {topic[:80]!r}", position=line.position)
        p = _java_int(partition, _INT32, "partition", line.position)
        if p < 0:
            raise FormatError(CODE, f"negative partition {p}", position=line.position)
        out[(topic, p)] = _java_int(offset, _INT64, "offset", line.position)
    return out


def offset_checkpoint_positions(data: bytes) -> dict[tuple[str, int], int]:
    """Byte position of each entry's line, so a finding can point at the line (best effort)."""
    out: dict[tuple[str, int], int] = {}
    try:
        lines = _read(data, OFFSET_CHECKPOINT_VERSION)
    except FormatError:
        return out
    for line in lines:
        parts = _fields(line)
        if len(parts) == 3 and _JAVA_INT.fullmatch(parts[1]):
            out[(parts[0], int(parts[1]))] = line.position
    return out


def parse_leader_epoch_checkpoint(data: bytes) -> list[EpochEntry]:
    """Entries of a leader-epoch-checkpoint in file order (not checked for order here)."""
    out: list[EpochEntry] = []
    for line in _read(data, LEADER_EPOCH_CHECKPOINT_VERSION):
        parts = _fields(line)
        if len(parts) != 2:
            raise FormatError(CODE, f"expected 'epoch start_offset', got {line.text[:80]!r}",
                              position=line.position)
        out.append(EpochEntry(_java_int(parts[0], _INT32, "epoch", line.position),
                              _java_int(parts[1], _INT64, "start offset", line.position)))
    return out


def _build(version: int, lines: list[str]) -> bytes:
    return "".join(f"{x}\n" for x in [str(version), str(len(lines)), *lines]).encode("utf-8")


def build_offset_checkpoint(mapping: Mapping[tuple[str, int], int]) -> bytes:
    """Bytes of an offset checkpoint holding `mapping`, in its iteration order."""
    lines = []
    for (topic, partition), offset in mapping.items():
        if not is_valid_topic_name(topic):
            raise ValueError(f"invalid topic name {topic!r}")
        if not 0 <= partition <= INT32_MAX or not _INT64[0] <= offset <= _INT64[1]:
            raise ValueError(f"partition {partition} or offset {offset} out of range")
        lines.append(f"{topic} {partition} {offset}")
    return _build(OFFSET_CHECKPOINT_VERSION, lines)


def build_leader_epoch_checkpoint(entries: Iterable[EpochEntry | tuple[int, int]]) -> bytes:
    """Bytes of a leader-epoch-checkpoint holding `entries` in the given order."""
    lines = []
    for epoch, start_offset in entries:
        if not _INT32[0] <= epoch <= _INT32[1] or not _INT64[0] <= start_offset <= _INT64[1]:
            raise ValueError(f"epoch {epoch} or start offset {start_offset} out of range")
        lines.append(f"{epoch} {start_offset}")
    return _build(LEADER_EPOCH_CHECKPOINT_VERSION, lines)
