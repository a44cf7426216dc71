"""The batch rules, declared once: the table both batch checks read.

`SegmentWalk.check` (the reference, plain Python) and `fastwalk.judge_kernel` (compiled, over a
walk's columns) both call `broken_rules`, written once in numba-compatible Python: it returns a bit
mask with bit i set when rule `RULES[i]` is broken. The reference turns each set bit into its finding,
in table order; the judge flags every row whose mask is not 0 and hands it to the reference. So a rule
added to the table runs on both paths, and a rule that is not in the table runs on neither.

Compiled, the arithmetic is int64 and may wrap on absurd values (a last offset near INT64_MAX): every
predicate is written so that a wrap can only set more bits, never fewer (the judge then over-flags and
the reference, on Python ints, decides). `segment_checkable` is False where a segment base offset is
outside what the compiled form can compare against: the judge then flags every row.
No numba here: the reference walk must not pay its import.
"""
from __future__ import annotations

from typing import NamedTuple

from replog.formats import codes as _codes
from replog.formats.findings import Severity


class BatchRule(NamedTuple):
    """One batch rule: its finding code and whether breaking it stops broker recovery (`valid_bytes`)."""

    code: str
    stops_recovery: bool

    @property
    def severity(self) -> Severity:
        """As the code declares it (`formats.codes`): declared there once."""
        return Severity(_codes.severity_of(self.code))


# Table order is the order of the findings of one batch (`SegmentWalk.check`).
RULES = (
    BatchRule("KAFKA_BATCH_BAD_MAGIC", True),
    BatchRule("KAFKA_BATCH_LENGTH_TOO_SMALL", True),
    BatchRule("KAFKA_BATCH_CRC_MISMATCH", True),
    BatchRule("KAFKA_BATCH_BAD_CODEC", False),
    BatchRule("KAFKA_BATCH_BAD_RECORD_COUNT", False),
    BatchRule("KAFKA_SEGMENT_NAME_MISMATCH", False),
    BatchRule("KAFKA_SEGMENT_OFFSET_OVERFLOW", True),
    BatchRule("KAFKA_OFFSETS_NOT_INCREASING", False),
    BatchRule("KAFKA_OFFSET_GAP", False),
    # a control batch's records are decoded and parsed (`SegmentWalk._check_control`): the predicate
    # only says which batches need that look, the reference says whether one fails it
    BatchRule("KAFKA_CONTROL_RECORD_INVALID", True),
)
(BAD_MAGIC, LENGTH_TOO_SMALL, CRC_MISMATCH, BAD_CODEC, BAD_RECORD_COUNT, SEGMENT_NAME_MISMATCH,
 SEGMENT_OFFSET_OVERFLOW, OFFSETS_NOT_INCREASING, OFFSET_GAP, CONTROL_RECORDS) = (1 << i for i in range(len(RULES)))
FRAMING = BAD_MAGIC | LENGTH_TOO_SMALL  # broken: no other rule is looked at
V2_HEADER_SIZE = 61
MAX_CODEC_V2, MAX_CODEC_LEGACY = 4, 3
INT32_MAX = 2147483647


def broken_rules(magic, size, crc_valid, codec, count, base, last, is_control, prev_last, has_prev,
                 segment_base, has_segment, first_of_segment):  # pragma: no cover - compiled form too
    """The mask of the `RULES` one batch breaks (`prev_last`: the highest last offset before it, when
    `has_prev`; `segment_base`: its file name's base offset, when `has_segment`)."""
    if magic > 2 or magic < 0:
        return BAD_MAGIC
    if magic == 2 and size < V2_HEADER_SIZE:
        return LENGTH_TOO_SMALL
    mask = 0
    if not crc_valid:
        mask |= CRC_MISMATCH
    if codec > (MAX_CODEC_V2 if magic == 2 else MAX_CODEC_LEGACY):
        mask |= BAD_CODEC
    if magic == 2 and (count < 0 or last < base or count > last - base + 1):
        mask |= BAD_RECORD_COUNT
    if has_segment:
        if first_of_segment and base < segment_base:
            mask |= SEGMENT_NAME_MISMATCH
        if last < segment_base or last > segment_base + INT32_MAX:
            mask |= SEGMENT_OFFSET_OVERFLOW
    if has_prev:
        if base <= prev_last:
            mask |= OFFSETS_NOT_INCREASING
        elif base - prev_last != 1:  # (compiled: a wrapped difference is never 1 either)
            mask |= OFFSET_GAP
    if is_control and magic == 2:
        mask |= CONTROL_RECORDS
    return mask


def codes(mask: int) -> list[str]:
    """The codes of the rules set in `mask`, in table order."""
    return [rule.code for i, rule in enumerate(RULES) if mask >> i & 1]
