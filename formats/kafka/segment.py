"""Walking a `.log` segment (or a KRaft `.checkpoint`) batch by batch.

The walk follows the broker's framing (`FileLogInputStream`, docs/reference/kafka.md §6) but
does not stop at the first bad batch when the length field still says where
the next one starts: every defect becomes a `Finding` and the walk goes on.
`valid_bytes` is where the broker's own recovery would truncate.
Records are decoded only on request (`batch_records`).
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from replog.formats.errors import FormatError
from replog.formats.fileio import RELEASE_STEP, all_zero, release_pages
from replog.formats.fileview import readable
from replog.formats.findings import Finding, finding, from_error
from replog.formats.kafka import batch as v2
from replog.formats.kafka import batch_rules as rules
from replog.formats.kafka import control, legacy
from replog.formats.kafka.batch import BatchInfo as BatchInfo  # re-exported: the walk yields it

HEADER_SIZE_UP_TO_MAGIC = v2.AT["magic"] + 1  # offset, length, epoch, magic: what every magic shares
MIN_ENTRY_SIZE = 14          # LegacyRecord.RECORD_OVERHEAD_V0: smaller is corrupt
V2_MIN_LENGTH = v2.HEADER_SIZE - v2.LOG_OVERHEAD
# The largest file a segment can be: `FileRecords` refuses to open a larger one ("The size of segment
# ... is larger than the maximum allowed segment size of Integer.MAX_VALUE";
# clients/.../record/FileRecords.java), positions being ints; `log.segment.bytes` is an int too.
MAX_SEGMENT_BYTES = v2.INT32_MAX


# Each batch rule's finding (`batch_rules.RULES` but the control records, checked by decoding them): whether it is
# reported at the batch's last offset (else its base offset), and its message, a `str.format` template over the
# batch `b`, `prev_last` (the last offset before it), `segment` (the file name's base offset) and, for a gap,
# `gap_start` and `gap_end`.
_RULE_FINDINGS: dict[int, tuple[bool, str]] = {
    rules.BAD_MAGIC: (False, "magic {b.magic}"),
    rules.LENGTH_TOO_SMALL: (False, "v2 batch of {b.size} bytes is smaller than its 61-byte header"),
    rules.CRC_MISMATCH: (False, "stored crc {b.crc:#010x} does not match the batch bytes"),
    rules.BAD_CODEC: (False, "codec id {b.codec}"),
    rules.BAD_RECORD_COUNT: (False, "{b.count} records in offsets {b.base_offset}..{b.last_offset}"),
    rules.SEGMENT_NAME_MISMATCH: (False, "first batch starts at {b.base_offset}, file name says {segment}"),
    rules.SEGMENT_OFFSET_OVERFLOW: (True, ("offset {b.last_offset} is outside the segment's 32-bit range from "
                                           "{segment}")),
    rules.OFFSETS_NOT_INCREASING: (False, "batch starts at {b.base_offset}, previous batch ended at {prev_last}"),
    rules.OFFSET_GAP: (False, "offsets {gap_start}..{gap_end} are absent"),
}


@dataclass
class SegmentWalk:
    """State and outcome of one walk; filled in while `batches()` is consumed."""

    buf: bytes | memoryview
    path: str
    base_offset: int | None = None
    limit: int | None = None
    findings: list[Finding] = field(default_factory=list)
    valid_bytes: int = 0          # broker recovery truncates here
    end_position: int = 0         # where the walk stopped
    batch_count: int = 0
    first_offset: int | None = None
    next_offset: int | None = None  # last offset + 1 of the last batch seen
    zero_tail: bool = False
    prev_last: int | None = field(default=None, repr=False)  # highest last offset so far
    broken: bool = field(default=False, repr=False)          # an invalid batch was met

    def batches(self, release: bool = True) -> Iterator[BatchInfo]:
        """Yield every batch whose framing can be read, valid or not. A batch's bytes stay in memory
        until the next one is asked for; with `release`, those behind go then (memory stays flat on
        multi-GiB segments). Without, the caller releases them (it holds batches longer)."""
        end = len(self.buf) if self.limit is None else min(self.limit, len(self.buf))
        self.begin()
        pos, released = 0, 0
        while pos < end:
            if release and pos - released > RELEASE_STEP:  # batches the consumer is done with
                release_pages(self.buf, released, pos)
                released = pos
            info = self.read_at(pos, end)
            if info is None:
                break
            self.step(info)
            pos = info.end
            yield info
        self.end_position = pos

    def begin(self) -> None:
        """Start (or restart) a walk from position 0; a file larger than any segment is a finding first."""
        self.prev_last, self.broken = None, False
        if len(self.buf) > MAX_SEGMENT_BYTES:
            self._add("KAFKA_SEGMENT_TOO_LARGE", 0, self.base_offset,
                      f"{len(self.buf)} bytes; a segment holds at most {MAX_SEGMENT_BYTES} (Integer.MAX_VALUE): "
                      "the broker refuses to open it")

    def step(self, info: BatchInfo) -> None:
        """Account for one batch: its findings, the recovery truncation point, the counters."""
        ok = self.check(info, self.prev_last)
        if ok and not self.broken:
            self.valid_bytes = info.end
        self.broken = self.broken or not ok
        self.prev_last = info.last_offset if self.prev_last is None else max(self.prev_last, info.last_offset)
        self.batch_count += 1
        if self.first_offset is None:
            self.first_offset = info.base_offset
        self.next_offset = info.next_offset

    def walk(self) -> SegmentWalk:
        """Consume the walk for its side effects (findings, counters)."""
        for _ in self.batches():
            pass
        return self

    # -- framing -----------------------------------------------------------------

    def read_at(self, pos: int, end: int) -> BatchInfo | None:
        buf, remaining = self.buf, end - pos
        if remaining < HEADER_SIZE_UP_TO_MAGIC:
            self._tail(pos, end, "KAFKA_TRAILING_BYTES")
            return None
        readable(buf, pos, pos + HEADER_SIZE_UP_TO_MAGIC)
        offset = int.from_bytes(buf[pos:pos + 8], "big", signed=True)
        size = int.from_bytes(buf[pos + v2.LENGTH_OFFSET:pos + v2.LOG_OVERHEAD], "big", signed=True)
        if size < MIN_ENTRY_SIZE:
            self._tail(pos, end, "KAFKA_BATCH_LENGTH_TOO_SMALL",
                       f"length field {size} is below the minimum of {MIN_ENTRY_SIZE}", offset)
            return None
        magic = int.from_bytes(buf[pos + v2.AT["magic"]:pos + HEADER_SIZE_UP_TO_MAGIC], "big", signed=True)
        if pos + v2.LOG_OVERHEAD + size > end:
            if self.limit is None or end == len(buf):
                code = "KAFKA_TORN_TAIL" if 0 <= magic <= 2 else "KAFKA_BATCH_LENGTH_IMPOSSIBLE"
                self._add(code, pos, offset, f"batch of {v2.LOG_OVERHEAD + size} bytes declared, "
                          f"{remaining} bytes remain in the file (magic {magic})")
            return None
        readable(buf, pos, pos + v2.LOG_OVERHEAD + size)
        if magic >= 2:
            return self._read_v2(pos, size, magic)
        return self._read_legacy(pos, offset)

    def _read_v2(self, pos: int, size: int, magic: int) -> BatchInfo:
        buf = self.buf
        if size < V2_MIN_LENGTH:
            offset = int.from_bytes(buf[pos:pos + 8], "big", signed=True)
            return BatchInfo(pos, size + v2.LOG_OVERHEAD, magic, offset, offset, 0, -1, 0, False, 0, 0, -1,
                             -1, -1, -1, -1, -1, False, False, False)
        return v2.read_header(buf, pos)

    def _read_legacy(self, pos: int, offset: int) -> BatchInfo:
        try:
            e = legacy.read_legacy_entry(self.buf, pos)
        except FormatError as err:
            self.findings.append(from_error(err, self.path))
            length = int.from_bytes(self.buf[pos + v2.LENGTH_OFFSET:pos + v2.LOG_OVERHEAD], "big", signed=True)
            size = length + v2.LOG_OVERHEAD
            magic = int.from_bytes(self.buf[pos + v2.AT["magic"]:pos + HEADER_SIZE_UP_TO_MAGIC], "big", signed=True)
            return BatchInfo(pos, size, magic, offset, offset, 0, -1, 0, False, 0, 0,
                             -1, -1, -1, -1, -1, -1, False, False, False)
        base, count = e.offset, 1
        if e.codec and e.crc_valid:
            try:
                inner = legacy.inner_records(e)
                base, count = inner[0].offset, len(inner)
            except FormatError as err:
                self.findings.append(finding(err.code, self.path, position=pos, offset=e.offset,
                                             message=err.message))
        ts_type = _LEGACY_TS_TYPES.get(e.timestamp_type, v2.NO_TIMESTAMP_TYPE)
        return BatchInfo(pos, e.size, e.magic, base, e.offset, count, -1, e.crc, e.crc_valid,
                         e.attributes, e.codec, ts_type, e.timestamp, e.timestamp, -1, -1, -1,
                         False, False, False)

    # -- checks --------------------------------------------------------------------

    def check(self, b: BatchInfo, prev_last: int | None) -> bool:
        """Record findings for one batch; False when broker recovery would stop here. Which rules the batch
        breaks is `batch_rules.broken_rules`, the predicate the compiled judge (`fastwalk`) runs too."""
        seg = self.base_offset
        mask = rules.broken_rules(b.magic, b.size, b.crc_valid, b.codec, b.count, b.base_offset, b.last_offset,
                                  b.is_control, 0 if prev_last is None else prev_last, prev_last is not None,
                                  0 if seg is None else seg, seg is not None, self.batch_count == 0)
        ok = True
        for i, rule in enumerate(rules.RULES):
            if not mask >> i & 1:
                continue
            if 1 << i == rules.CONTROL_RECORDS:
                ok = ok and self._check_control(b)
                continue
            offset, message, details = self._rule_finding(1 << i, b, prev_last)
            self._add(rule.code, b.position, offset, message, **details)
            ok = ok and not rule.stops_recovery
        return ok

    def _rule_finding(self, rule: int, b: BatchInfo, prev_last: int | None) -> tuple[int, str, dict[str, Any]]:
        """(offset, message, details) of the finding of a broken batch rule (`_RULE_FINDINGS`)."""
        at_last, message = _RULE_FINDINGS[rule]
        gap: dict[str, Any] = {}
        if rule == rules.OFFSET_GAP:
            assert prev_last is not None, "an offset gap needs a batch before"
            gap = {"gap_start": prev_last + 1, "gap_end": b.base_offset - 1}
        text = message.format(b=b, prev_last=prev_last, segment=self.base_offset, **gap)
        return (b.last_offset if at_last else b.base_offset), text, gap

    def _check_control(self, b: BatchInfo) -> bool:
        try:
            for rec in batch_records(self.buf, b):
                key = control.parse_control_key(rec.key)
                if key.type in (control.ABORT, control.COMMIT):
                    control.parse_end_txn_marker(rec.value)
        except FormatError as err:
            self._add("KAFKA_CONTROL_RECORD_INVALID", b.position, b.base_offset, err.message)
            return False
        return True

    def _tail(self, pos: int, end: int, code: str, message: str = "", offset: int | None = None) -> None:
        """Classify what is left at `pos`: a zero-filled tail or damage."""
        if self.limit is not None and end < len(self.buf):
            return
        if all_zero(self.buf, pos, end):
            self.zero_tail = True
            self._add("KAFKA_ZERO_TAIL", pos, None, f"{end - pos} zero bytes from position {pos} to the end")
        else:
            self._add(code, pos, offset, message or f"{end - pos} bytes after the last batch")

    def _add(self, code: str, position: int, offset: int | None, message: str, **details: Any) -> None:
        self.findings.append(finding(code, self.path, position=position, offset=offset,
                                     message=message, **details))


_LEGACY_TS_TYPES = {"CreateTime": v2.CREATE_TIME, "LogAppendTime": v2.LOG_APPEND_TIME,
                    "NoTimestampType": v2.NO_TIMESTAMP_TYPE}


def batch_records(buf: bytes | memoryview, info: BatchInfo) -> list[v2.Record]:
    """Decode the records of one batch (decompressing, bounded). Raises FormatError."""
    if info.magic == 2 and (info.size < v2.HEADER_SIZE or info.position + v2.HEADER_SIZE > len(buf)):
        raise FormatError("KAFKA_BATCH_LENGTH_TOO_SMALL", f"v2 batch of {info.size} bytes is smaller than its "
                          f"{v2.HEADER_SIZE}-byte header", info.position, info.base_offset)
    if info.magic == 2:
        header = v2.read_header(buf, info.position, crc_valid=info.crc_valid)
        v2.check_record_count(header)
        return v2.decode_records(header, v2.records_payload(buf, header))
    entry = legacy.read_legacy_entry(buf, info.position)
    return [v2.Record(r.offset, r.timestamp, _copy(r.key), _copy(r.value), (), r.attributes)
            for r in legacy.inner_records(entry)]


def legacy_batch_records(buf: bytes | memoryview, info: BatchInfo) -> list[legacy.LegacyRecord]:
    """The logical messages of one v0/v1 entry with their own CRC and its check (an inner message of a
    compressed wrapper has its own, which kafka-dump-log prints). Raises FormatError."""
    return legacy.inner_records(legacy.read_legacy_entry(buf, info.position))


def _copy(b: bytes | memoryview | None) -> bytes | None:
    return None if b is None else bytes(b)


def walk_segment(buf: bytes | memoryview, path: str, base_offset: int | None = None,
                 limit: int | None = None) -> SegmentWalk:
    """Walk a whole segment buffer and return the finished walk (no batch list kept)."""
    return SegmentWalk(buf, path, base_offset, limit).walk()
