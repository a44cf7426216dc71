"""The header hop yields the rows a walk of the same range yields (its CRC column aside)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replog.formats.fileio import RELEASE_STEP
from replog.formats.kafka import batch as v2
from replog.formats.kafka.blocks import ROW, BatchBlock
from replog.formats.kafka.fastwalk import FastWalk
from replog.formats.kafka.hop import hop_blocks
from tests.formats.kafka.segments import TS
from tests.recovery.kafka.writer_cases import partitions

CRC_VALID = ROW["crc_valid"]


def walked(data: bytes) -> np.ndarray:
    return BatchBlock.concat(b.copy() for b in FastWalk(data, "<seg>").blocks()).cols


def hopped(buf: bytes, start: int, end: int, compiled: bool, chunk: int = 65536) -> np.ndarray:
    return BatchBlock.concat(b.copy() for b in hop_blocks(buf, "<seg>", start, end, compiled=compiled,
                                                          chunk=chunk)).cols


@settings(max_examples=80, deadline=None)
@given(partitions(), st.binary(max_size=70), st.binary(max_size=70), st.booleans(), st.integers(1, 9))
def test_hop_rows_are_the_walks_rows(batches: list[bytes], before: bytes, after: bytes, compiled: bool,
                                     chunk: int) -> None:
    data = b"".join(batches)
    expected = walked(data)
    got = hopped(before + data + after, len(before), len(before) + len(data), compiled, chunk)
    got[ROW["position"]] -= len(before)
    assert (got[CRC_VALID] == 1).all()
    keep = [k for k in range(len(expected)) if k != CRC_VALID]
    assert np.array_equal(got[keep], expected[keep])


@pytest.mark.parametrize("compiled", [False, True])
def test_blocks_span_at_most_a_release_step_and_batches_across_it_are_read(compiled: bool) -> None:
    one = v2.build_batch([v2.Record(0, TS, None, b"z" * 1000)], base_offset=0)  # 16 MiB is no multiple of it
    data = one * (2 * RELEASE_STEP // len(one) + 3)
    blocks = [(int(b.position[0]), int(b.end[-1]), len(b)) for b in hop_blocks(data, "<seg>", 0, len(data),
                                                                                compiled=compiled)]
    assert blocks[0][0] == 0 and blocks[-1][1] == len(data)
    assert all(a[1] == b[0] for a, b in zip(blocks, blocks[1:], strict=False))  # back to back, none lost
    assert all(end - start <= RELEASE_STEP + len(one) for start, end, _ in blocks)
    assert sum(n for _, _, n in blocks) == len(data) // len(one)


@pytest.mark.parametrize("compiled", [False, True])
def test_a_range_that_cuts_a_batch_is_refused(compiled: bool) -> None:
    one = v2.build_batch([v2.Record(0, TS, None, b"z" * 10)], base_offset=0)
    with pytest.raises(ValueError, match=f"no whole batch at position {2 * len(one)}"):
        list(hop_blocks(one * 3, "<seg>", len(one), 3 * len(one) - 1, compiled=compiled))
    with pytest.raises(ValueError, match="outside the file"):
        list(hop_blocks(one, "<seg>", 0, len(one) + 1, compiled=compiled))
