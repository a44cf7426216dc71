"""The store `checkpoint` file (`StoreCheckpoint`): five i64 fields in a 4 KiB page.

`CHECKPOINT` (construct) is the source of truth (docs/reference/rocketmq.md §5). Bytes 24 and 32
exist only in 5.x (`masterFlushedOffset` 5.0+, `confirmPhyOffset` 5.1.1+); 4.x
files leave them zero, so zero means "unknown". The rest of the page is unused.
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from dataclasses import dataclass

import construct as cs

from replog.formats.fileio import atomic_write
from replog.formats.findings import Finding, Severity, finding
from replog.formats.layout import FixedPage

CHECKPOINT = cs.Struct(
    "physic_msg_timestamp" / cs.Int64sb,
    "logics_msg_timestamp" / cs.Int64sb,
    "index_msg_timestamp" / cs.Int64sb,
    "master_flushed_offset" / cs.Int64sb,
    "confirm_phy_offset" / cs.Int64sb,
)
FILE_SIZE = 4096        # OS_PAGE_SIZE, mapped in full
MIN_SIZE = 24           # the three 4.x timestamps
_CODE = "ROCKETMQ_CHECKPOINT_INVALID"


@dataclass(frozen=True, slots=True)
class Checkpoint:
    physic_msg_timestamp: int = 0
    logics_msg_timestamp: int = 0
    index_msg_timestamp: int = 0
    master_flushed_offset: int = 0
    confirm_phy_offset: int = 0

    @property
    def min_timestamp(self) -> int:
        """`getMinTimestamp`: max(0, min(physic, logics) - 3000), where abnormal recovery starts."""
        return max(0, min(self.physic_msg_timestamp, self.logics_msg_timestamp) - 3000)

    @property
    def min_timestamp_index(self) -> int:
        """`getMinTimestampIndex`."""
        return min(self.min_timestamp, self.index_msg_timestamp)


PAGE = FixedPage(CHECKPOINT, Checkpoint, FILE_SIZE, MIN_SIZE, _CODE, "checkpoint")
FIELDS = PAGE.fields
# a file shorter than 40 bytes (but >= 24) reads with zero 5.x fields; built, it is the broker's 4096-byte page
parse_checkpoint, build_checkpoint, read_checkpoint = PAGE.parse, PAGE.build, PAGE.read


def write_checkpoint(path: str | os.PathLike[str], cp: Checkpoint) -> None:
    atomic_write(path, build_checkpoint(cp))


def check_checkpoint(data: bytes | memoryview, path: str = "") -> Iterator[Finding]:
    """Findings about the file itself: size, negative fields, bytes past the used 40."""
    yield from PAGE.check(data, path, tuple(f.name for f in dataclasses.fields(Checkpoint)))
    if len(data) >= MIN_SIZE and any(bytes(data[FIELDS.size:])):
        yield finding(_CODE, path, position=FIELDS.size, severity=Severity.WARNING,
                      message="non-zero bytes after the 40 used bytes")
