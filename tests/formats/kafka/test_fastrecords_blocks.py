"""The record decode takes a walk's `BatchBlock`s as they are: same rows as from a `BATCH_SCHEMA` table."""
from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replog.formats.kafka import fastrecords, fastwalk
from replog.formats.kafka.blocks import BatchBlock
from replog.formats.kafka.fastwalk import FastWalk
from tests.formats.kafka.test_fastwalk import segments

pytestmark = pytest.mark.skipif(not fastwalk.HAVE_NUMBA, reason="numba not installed: nothing fast to compare")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(segments(), st.integers(1, 4))
def test_blocks_give_the_rows_of_the_table(buf: bytes, chunk: int) -> None:
    blocks = [block.copy() for block in FastWalk(buf, "seg.log", None).blocks(chunk)]
    table = fastwalk.BATCH_SCHEMA.empty_table() if not blocks else \
        BatchBlock.concat(blocks).to_arrow("seg.log")
    from_table = fastrecords.record_columns(buf, "seg.log", table)
    from_blocks = [fastrecords.record_columns(buf, "seg.log", block) for block in blocks]
    assert fastrecords.as_block(table).cols.tolist() == BatchBlock.concat(blocks).cols.tolist()
    rows = [t for t, _ in from_blocks]
    assert (pa.concat_tables(rows) if rows else fastrecords.RECORD_SCHEMA.empty_table()).equals(from_table[0])
    assert [f.to_dict() for _, found in from_blocks for f in found] == [f.to_dict() for f in from_table[1]]
    ref = fastrecords.reference_record_columns(buf, "seg.log", BatchBlock.concat(blocks))
    assert ref[0].equals(from_table[0])



@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(segments(), st.integers(1, 400))
def test_pages_are_released_only_behind_the_consumer(buf: bytes, step: int) -> None:
    """A block's bytes stay mapped until its consumer asks for the next block (a record check reads them)."""
    consumed = [0]  # end of the last batch handed to the consumer
    released: list[tuple[int, int]] = []

    def release(_buf: object, start: int, end: int) -> None:
        assert end <= consumed[0], "pages released before their block was read"
        released.append((start, end))

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fastwalk, "RELEASE_STEP", step)
        mp.setattr(fastwalk, "release_pages", release)
        walk = FastWalk(buf, "seg.log", None)
        blocks = []
        for block in walk.blocks():
            blocks.append(block.copy())
            consumed[0] = int(block.end[-1])
    rows = BatchBlock.concat(blocks).cols.tolist() if blocks else BatchBlock.empty().cols.tolist()
    ref = FastWalk(buf, "seg.log", None)
    assert rows == BatchBlock.concat([b.copy() for b in ref.blocks()]).cols.tolist()
    assert walk.findings == ref.findings and walk.valid_bytes == ref.valid_bytes
