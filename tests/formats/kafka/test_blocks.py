"""The columnar batch model: a block's rows are the reference walk's `BatchInfo`s, field for field."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replog.formats.errors import FormatError
from replog.formats.kafka import batch as v2
from replog.formats.kafka.blocks import FIELDS, BatchBlock
from replog.formats.kafka.columns import to_record_batch
from replog.formats.kafka.segment import BatchInfo, SegmentWalk, batch_records
from tests.formats.kafka.segments import TS, marker


def _segment(sizes: list[int], epoch: int, pid: int) -> bytes:
    out, offset = b"", 0
    for n in sizes:
        recs = [v2.Record(i, TS + i, b"k%d" % i, b"v" * i) for i in range(n)]
        out += v2.build_batch(recs, base_offset=offset, partition_leader_epoch=epoch, producer_id=pid,
                              producer_epoch=1 if pid >= 0 else -1, base_sequence=offset if pid >= 0 else -1)
        offset += n
    return out + marker(offset, commit=False, pid=7, epoch=epoch)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=12), st.integers(0, 9), st.integers(-1, 3))
def test_rows_are_the_reference_batches(sizes: list[int], epoch: int, pid: int) -> None:
    buf = _segment(sizes, epoch, pid)
    infos = list(SegmentWalk(buf, "s.log", 0).batches())
    block = BatchBlock.from_infos(infos)
    assert list(block.rows()) == infos
    assert block.to_arrow("s.log").equals(to_record_batch("s.log", infos))
    assert block.end.tolist() == [b.end for b in infos]
    for name in FIELDS:  # every named column is the field of that name
        assert getattr(block, name).tolist() == [int(getattr(b, name)) for b in infos]


def test_selection_concat_and_copy() -> None:
    infos = list(SegmentWalk(_segment([1, 2, 3, 4], 2, -1), "s.log", 0).batches())
    block = BatchBlock.from_infos(infos)
    assert list(block[block.count > 2].rows()) == [b for b in infos if b.count > 2]
    assert list(BatchBlock.concat([block[:2], block[2:]]).rows()) == infos
    kept = block.copy()
    block.cols[:] = 0
    assert list(kept.rows()) == infos and len(BatchBlock.empty()) == 0
    with pytest.raises(ValueError):
        BatchBlock(np.zeros((3, 2), dtype=np.int64))


def test_header_positions_come_from_the_layout() -> None:
    assert v2.AT["records_count"] + 4 == v2.HEADER_SIZE == v2.HEADER.size
    assert (v2.LENGTH_OFFSET, v2.LOG_OVERHEAD, v2.CRC_START) == (8, 12, 21)


def test_records_of_a_v2_batch_shorter_than_its_header_are_a_format_error() -> None:
    info = BatchInfo(0, 30, 2, 5, 5, 0, -1, 0, False, 0, 0, -1, -1, -1, -1, -1, -1, False, False, False)
    with pytest.raises(FormatError) as err:
        batch_records(bytes(30), info)
    assert (err.value.code, err.value.position) == ("KAFKA_BATCH_LENGTH_TOO_SMALL", 0)


def test_a_last_offset_past_int64_is_held_clamped() -> None:
    raw = bytearray(v2.build_batch([v2.Record(0, TS, b"k", b"v"), v2.Record(1, TS, b"k", b"v")], base_offset=0))
    raw[0:8] = (2**63 - 1).to_bytes(8, "big")  # the base offset is outside the CRC: the batch stays CRC-valid
    infos = list(SegmentWalk(bytes(raw), "s.log", None).batches())
    assert infos[0].last_offset == 2**63  # what the header says; no int64 holds it
    block = BatchBlock.from_infos(infos)
    assert block.last_offset.tolist() == [2**63 - 1] and block.base_offset.tolist() == [2**63 - 1]
