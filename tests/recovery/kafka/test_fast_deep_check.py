"""Doctor's record check gives the same findings on the compiled record kernel as on the reference."""
from __future__ import annotations

import random
import struct

import pytest

from replog.formats.kafka import batch as v2
from replog.formats.kafka import codecs, fastwalk
from replog.formats.kafka.segment import SegmentWalk
from replog.recovery.kafka.checks_segments import record_findings
from tests.recovery.kafka.test_fast_load import _damage, _segment

pytestmark = pytest.mark.skipif(not fastwalk.HAVE_NUMBA, reason="numba not installed: nothing fast to compare")


def _bad_records(rnd: random.Random, offset: int, offsets: bool | None = None) -> bytes:
    """A CRC-valid batch whose records break its bounds: offsets beyond last_offset or timestamps above max."""
    recs = [v2.Record(offset + i, 1_700_000_000_000 + i, b"k", b"v") for i in range(3)]
    if (rnd.random() < 0.5) if offsets is None else offsets:
        return v2.build_batch(recs, base_offset=offset, last_offset_delta=1)
    return v2.build_batch(recs, base_offset=offset, max_timestamp=1_700_000_000_000)


@pytest.mark.parametrize("seed", range(30))
def test_fast_record_findings_equal_reference(seed: int) -> None:
    rnd = random.Random(seed)
    data, offset, _ = _segment(rnd, 0, 0, 40)
    data += _bad_records(rnd, offset + 1)
    data = _damage(rnd, data) if rnd.random() < 0.6 else data
    batches = list(SegmentWalk(data, "s.log", 0).batches())
    ref = record_findings(data, batches, "s.log", fast_threshold=1 << 62)
    fast = record_findings(data, batches, "s.log", fast_threshold=0)
    assert [f.to_dict() for f in fast] == [f.to_dict() for f in ref]


def test_the_cases_produce_findings() -> None:
    rnd = random.Random(1)
    data = _bad_records(rnd, 0, offsets=True) + _bad_records(rnd, 3, offsets=False)
    batches = list(SegmentWalk(data, "s.log", 0).batches())
    codes = {f.code for f in record_findings(data, batches, "s.log", fast_threshold=0)}
    assert codes == {"KAFKA_BATCH_LAST_OFFSET_MISMATCH", "KAFKA_TIMESTAMP_INVALID"}


@pytest.mark.parametrize("codec", [codecs.GZIP, codecs.SNAPPY, codecs.LZ4, codecs.ZSTD])
def test_undecodable_payload_is_placed_at_its_batch(codec: int) -> None:
    """A CRC-valid batch whose compressed payload is garbage: the codec's error carries no position;
    the compiled path must still report it at its batch, as the reference does (it raised KeyError)."""
    good = v2.build_batch([v2.Record(i, 1_700_000_000_000 + i, b"k", b"v" * 50) for i in range(3)], base_offset=0)
    bad = bytearray(v2.build_batch([v2.Record(3 + i, 1_700_000_000_000 + i, b"k", b"v" * 50) for i in range(3)],
                                   base_offset=3, codec=codec))
    for i in range(v2.HEADER_SIZE + 10, len(bad)):
        bad[i] ^= 0x5A
    bad[17:21] = struct.pack(">I", v2.compute_crc(bytes(bad), 0, len(bad)))  # the CRC covers the damage
    data = good + bytes(bad)
    batches = list(SegmentWalk(data, "s.log", 0).batches())
    assert all(b.crc_valid for b in batches)
    ref = record_findings(data, batches, "s.log", fast_threshold=1 << 62)
    fast = record_findings(data, batches, "s.log", fast_threshold=0)
    assert [f.to_dict() for f in fast] == [f.to_dict() for f in ref]
    assert [(f.code, f.position, f.offset) for f in fast] == [("KAFKA_RECORDS_UNDECODABLE", len(good), 3)]
