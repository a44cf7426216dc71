"""Where the broker's commit-log recovery starts scanning, by broker version (docs/reference/rocketmq.md §7.2).

Read in apache/rocketmq `store/src/main/java/org/apache/rocketmq/store/CommitLog.java`
(`recoverNormally`, `recoverAbnormally`, `isMappedFileMatchedRecover`) at the tags
rocketmq-all-4.9.8, 5.3.1, 5.3.2 and 5.3.3 and on develop (5.3.4-SNAPSHOT, the rule
from commit 9d9431dc1c), with `store/.../queue/ConsumeQueueStore.java#isMappedFileMatchedRecover`:

* up to 5.3.1 — normal: the third file from the last (or the first). Abnormal: the
  newest file whose first record has magic V1 (V1 or V2 from 5.1.0, when V2 came),
  a store timestamp other than 0 and at most the checkpoint's `getMinTimestamp()`;
  none: the first. Only the magic and the timestamp are read, nothing is validated.
* 5.3.2 and 5.3.3 — normal: the newest file that starts at or below the consume
  queues' maximum physical offset (index 0 is the fallback, never tested). Abnormal: as above.
* later (develop) — normal: the newest file (index 0 by default) whose first record passes
  the full check (`checkMessageAndReturnSize`, CRC on), has a store timestamp other
  than 0 and a PHYSICALOFFSET at or below the consume queues' maximum. Abnormal: the
  newest file (down to index 0) whose first record passes the check, with a store
  timestamp other than 0 and at most the checkpoint's `getMinTimestamp()`.

The consume queues' maximum is `ConsumeQueueStore.getMaxPhyOffsetInConsumeQueue()`:
offset + size of the last valid entry, the largest over all queues. The
`messageIndexSafe` variant (off by default) and RocksDB's accelerated recovery are not modelled.
"""
from __future__ import annotations

import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from replog.formats.errors import FormatError, ReplogError, UnreadableInput
from replog.formats.fileio import mapped
from replog.formats.rocketmq import commitlog as cl
from replog.formats.rocketmq.checkpoint import Checkpoint

THIRD_FROM_LAST, QUEUE_OFFSET, VALIDATED = "4.x-5.3.1", "5.3.2-5.3.3", "5.3.4+"
V2_SINCE = (5, 1, 0)
_VERSION = re.compile(r"^(?:rocketmq-all-)?v?(\d{1,3})\.(\d{1,3})(?:\.(\d{1,3}))?(?:[-.].*)?$")
_TS_BEFORE_BORN_HOST = 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8   # MessageDecoder: store timestamp after the born host
_I32, _I64 = struct.Struct(">i"), struct.Struct(">q")


@dataclass(frozen=True)
class RecoveryRule:
    """The broker version's rule for the scan's start file."""

    name: str                     # THIRD_FROM_LAST | QUEUE_OFFSET | VALIDATED
    version: str | None           # as given; None: the newest rule by default
    magic_v2: bool = True         # abnormal: a V2 first record may start the scan (5.1.0+)
    reput_from_queues: bool = False   # 4.x: at start, dispatch again from the consume queues' maximum

    def to_dict(self) -> dict[str, str | None]:
        return {"rule": self.name, "broker_version": self.version}


NEWEST = RecoveryRule(VALIDATED, None)


def rule_for(version: str | None) -> RecoveryRule:
    """The recovery rule of a broker version such as 4.9.8, 5.3.1 or 5.3.4-SNAPSHOT (None: the newest)."""
    if version is None:
        return NEWEST
    v = version_tuple(version)
    name = THIRD_FROM_LAST if v < (5, 3, 2) else QUEUE_OFFSET if v <= (5, 3, 3) else VALIDATED
    return RecoveryRule(name, version, v >= V2_SINCE, v < (5, 0, 0))


def version_tuple(version: str) -> tuple[int, int, int]:
    """(major, minor, patch) of a broker version such as 4.9.8, 5.3.4-SNAPSHOT or rocketmq-all-4.9.7."""
    m = _VERSION.match(version.strip())
    if m is None:
        raise ReplogError(f"--broker-version {version!r} is not a RocketMQ version such as 4.9.8 or 5.3.2")
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def start_index(files: list[tuple[int, Path]], cp: Checkpoint | None, abnormal: bool, rule: RecoveryRule,
                queue_max_physic_offset: int) -> int:
    """Index of the file in `files` (ascending) where the broker's recovery scan starts."""
    if not files:
        return 0
    min_ts = cp.min_timestamp if cp is not None else 0
    if abnormal:
        if rule.name == VALIDATED:
            return _newest(files, 0, lambda m: m is not None and m.store_timestamp != 0
                           and m.store_timestamp <= min_ts)
        return _newest_raw(files, rule.magic_v2, min_ts)
    if rule.name == THIRD_FROM_LAST:
        return max(0, len(files) - 3)
    if rule.name == QUEUE_OFFSET:
        index = len(files) - 1
        while index > 0 and files[index][0] > queue_max_physic_offset:
            index -= 1
        return index
    return _newest(files, 1, lambda m: m is not None and m.store_timestamp != 0
                   and m.physical_offset <= queue_max_physic_offset)


def _newest(files: list[tuple[int, Path]], lowest: int, matched: Callable[[cl.Message | None], bool]) -> int:
    """The newest file down to `lowest` whose first record passes the full check and `matched`; else 0."""
    for i in range(len(files) - 1, lowest - 1, -1):
        if matched(_first_valid(files[i])):
            return i
    return 0


def _first_valid(file: tuple[int, Path]) -> cl.Message | None:
    """The first record when `checkMessageAndReturnSize` (CRC on) accepts it as a message, else None."""
    try:
        with mapped(file[1]) as buf:
            msg = cl.read_message(buf, 0, file_start=file[0], check_crc=True)
    except (FormatError, UnreadableInput):
        return None
    return msg if msg.kind == "message" and msg.crc_valid else None


def _newest_raw(files: list[tuple[int, Path]], v2: bool, min_ts: int) -> int:
    """Up to 5.3.3: only the first record's magic and store timestamp are read, as they lie."""
    magics = (cl.MAGIC_V1, cl.MAGIC_V2) if v2 else (cl.MAGIC_V1,)
    for i in range(len(files) - 1, -1, -1):
        try:
            with mapped(files[i][1]) as buf:
                if len(buf) < 48:
                    continue
                magic, sys_flag = _I32.unpack_from(buf, 4)[0], _I32.unpack_from(buf, 36)[0]
                at = _TS_BEFORE_BORN_HOST + (20 if sys_flag & cl.BORNHOST_V6_FLAG else 8)
                if magic not in magics or at + 8 > len(buf):
                    continue
                ts = _I64.unpack_from(buf, at)[0]
        except UnreadableInput:
            continue
        if ts != 0 and ts <= min_ts:
            return i
    return 0
