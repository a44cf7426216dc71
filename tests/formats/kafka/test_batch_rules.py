"""Every batch rule of `batch_rules.RULES` fires on both paths: the reference `SegmentWalk.check` and the
compiled judge of the fast walk, on a hand-built batch that breaks it."""
from __future__ import annotations

import struct
from collections.abc import Callable

import numpy as np
import pytest
from crc32c import crc32c

from replog.formats.kafka import batch as v2
from replog.formats.kafka import batch_rules
from replog.formats.kafka.blocks import column_buffer, int64_row
from replog.formats.kafka.segment import SegmentWalk

fastwalk = pytest.importorskip("replog.formats.kafka.fastwalk")
if not fastwalk.HAVE_NUMBA:
    pytest.skip("the compiled judge needs numba", allow_module_level=True)


def _batch(base: int, n: int = 1, **kwargs: object) -> bytes:
    records = [v2.Record(base + i, 1000 + i, b"k", b"v") for i in range(n)]
    return v2.build_batch(records, base_offset=base, **kwargs)  # type: ignore[arg-type]


def _patched(batch: bytes, **fields: int) -> bytes:
    """The batch with header fields replaced and its CRC recomputed (a well-formed batch that breaks a rule)."""
    header = dict(zip((f.name for f in v2.BATCH_HEADER.subcons), v2.HEADER.unpack_from(batch, 0), strict=True))
    header.update(fields)
    raw = bytearray(v2.HEADER.pack(*header.values()) + batch[v2.HEADER_SIZE:])
    struct.pack_into(">I", raw, v2.AT["crc"], crc32c(bytes(raw[v2.CRC_START:])))
    return bytes(raw)


def _too_small() -> bytes:
    """A magic-2 entry of 32 bytes: framed, but smaller than a v2 header."""
    return struct.pack(">qiib", 0, 20, -1, 2) + bytes(15)


def _bad_control() -> bytes:
    return v2.build_batch([v2.Record(0, 1000, b"\x00", b"")], base_offset=0, control=True)


# rule code -> (segment bytes, the file name's base offset)
CASES: dict[str, Callable[[], tuple[bytes, int | None]]] = {
    "KAFKA_BATCH_BAD_MAGIC": lambda: (_batch(0, magic=3), None),
    "KAFKA_BATCH_LENGTH_TOO_SMALL": lambda: (_too_small(), None),
    "KAFKA_BATCH_CRC_MISMATCH": lambda: (_batch(0, crc=1234), None),
    "KAFKA_BATCH_BAD_CODEC": lambda: (_patched(_batch(0), attributes=5), None),
    "KAFKA_BATCH_BAD_RECORD_COUNT": lambda: (_patched(_batch(0), records_count=-1), None),
    "KAFKA_SEGMENT_NAME_MISMATCH": lambda: (_batch(5, 10), 10),
    "KAFKA_SEGMENT_OFFSET_OVERFLOW": lambda: (_batch(2**31 + 5), 0),
    "KAFKA_OFFSETS_NOT_INCREASING": lambda: (_batch(0) + _batch(0), None),
    "KAFKA_OFFSET_GAP": lambda: (_batch(0) + _batch(5), None),
    "KAFKA_CONTROL_RECORD_INVALID": lambda: (_bad_control(), None),
}


def test_every_rule_of_the_table_has_a_case() -> None:
    assert sorted(CASES) == sorted(r.code for r in batch_rules.RULES), "a batch rule without a bad batch here"


@pytest.mark.parametrize("code", list(CASES))
def test_the_rule_fires_in_the_reference_and_in_the_judge(code: str) -> None:
    buf, seg = CASES[code]()
    bit = 1 << [r.code for r in batch_rules.RULES].index(code)
    walk = SegmentWalk(buf, "s.log", seg)
    infos = list(walk.batches())
    assert code in [f.code for f in walk.findings], f"reference check: {code} not found in {walk.findings}"
    cols = column_buffer(len(infos))
    for i, info in enumerate(infos):
        cols[:, i] = int64_row(info)
    flagged, prev = np.zeros(len(infos), dtype=np.bool_), np.zeros(len(infos), dtype=np.int64)
    fastwalk.judge_kernel(cols, 0, len(infos), 0, False, seg or 0, seg is not None, True, flagged, prev)
    row = len(infos) - 1  # every case breaks its rule on its last batch
    assert flagged[row], f"compiled judge: the batch breaking {code} is not flagged"
    args = (infos[row].magic, infos[row].size, infos[row].crc_valid, infos[row].codec, infos[row].count,
            infos[row].base_offset, infos[row].last_offset, infos[row].is_control, int(prev[row]), row > 0,
            seg or 0, seg is not None, row == 0)
    assert batch_rules.broken_rules(*args) & bit, f"reference predicate: {code} bit not set"
    assert fastwalk._broken_rules(*args) & bit, f"compiled predicate: {code} bit not set"
    fast = fastwalk.FastWalk(buf, "s.log", seg)
    for _ in fast.blocks():
        pass
    assert fast.findings == walk.findings, f"fast walk findings differ from the reference's on {code}"
    assert fast.valid_bytes == walk.valid_bytes, f"fast walk valid_bytes differ on {code}"


def test_rule_severities_are_the_codes_own() -> None:
    from replog.formats import codes
    for rule in batch_rules.RULES:
        assert rule.severity.value == codes.severity_of(rule.code), f"{rule.code}: severity drifted"


# rule code -> (offset, message, details) of its finding on its case: the messages of `segment._RULE_FINDINGS`
FOUND = {
    "KAFKA_BATCH_BAD_MAGIC": (0, "magic 3", {}),
    "KAFKA_BATCH_LENGTH_TOO_SMALL": (0, "v2 batch of 32 bytes is smaller than its 61-byte header", {}),
    "KAFKA_BATCH_CRC_MISMATCH": (0, "stored crc 0x000004d2 does not match the batch bytes", {}),
    "KAFKA_BATCH_BAD_CODEC": (0, "codec id 5", {}),
    "KAFKA_BATCH_BAD_RECORD_COUNT": (0, "-1 records in offsets 0..0", {}),
    "KAFKA_SEGMENT_NAME_MISMATCH": (5, "first batch starts at 5, file name says 10", {}),
    "KAFKA_SEGMENT_OFFSET_OVERFLOW": (2**31 + 5, "offset 2147483653 is outside the segment's 32-bit range from 0", {}),
    "KAFKA_OFFSETS_NOT_INCREASING": (0, "batch starts at 0, previous batch ended at 0", {}),
    "KAFKA_OFFSET_GAP": (5, "offsets 1..4 are absent", {"gap_start": 1, "gap_end": 4}),
}


@pytest.mark.parametrize("code", list(FOUND))
def test_each_rule_finding_says_where_and_what(code: str) -> None:
    buf, seg = CASES[code]()
    walk = SegmentWalk(buf, "s.log", seg)
    list(walk.batches())
    found = [(f.offset, f.message, f.details) for f in walk.findings if f.code == code]
    assert found == [FOUND[code]], f"{code}: the finding's offset, message or details changed: {found}"


def test_an_offset_overflow_is_reported_at_the_batch_last_offset() -> None:
    walk = SegmentWalk(_batch(2**31 - 1, 3), "s.log", 0)
    list(walk.batches())
    found = [(f.offset, f.message) for f in walk.findings if f.code == "KAFKA_SEGMENT_OFFSET_OVERFLOW"]
    assert found == [(2**31 + 1, "offset 2147483649 is outside the segment's 32-bit range from 0")], \
        f"the overflow is the batch's last offset, past the base's 32-bit range: {found}"
