"""The columnar rules of the writers (`IndexBuilder`, `assign_epochs`) equal the reference `rebuild_indexes`."""
from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replog.formats.kafka.blocks import BatchBlock
from replog.formats.kafka.segment import SegmentWalk
from replog.recovery.kafka.epoch_cache import EpochCache
from replog.recovery.kafka.rebuild import EpochRises, IndexBuilder, assign_epochs, rebuild_indexes
from tests.recovery.kafka.writer_cases import partitions

FEW = settings(max_examples=80, deadline=None)


def blocks_of(block: BatchBlock, cuts: list[int]) -> list[BatchBlock]:
    edges = [0, *sorted(c % (len(block) + 1) for c in cuts), len(block)]
    return [block[a:b] for a, b in zip(edges, edges[1:], strict=False)]


@FEW
@given(partitions(), st.lists(st.integers(0, 100), max_size=5), st.sampled_from([0, 1, 150, 4096]),
       st.integers(0, 3), st.booleans(), st.lists(st.tuples(st.integers(0, 4), st.integers(0, 60)), max_size=3))
def test_columnar_rules_equal_rebuild_indexes(batches: list[bytes], cuts: list[int], interval: int, below: int,
                                              compiled: bool, cache_entries: list[tuple[int, int]]) -> None:
    data = b"".join(batches)
    infos = list(SegmentWalk(data, "<seg>").batches())
    base = max(0, min((b.base_offset for b in infos), default=0) - below)
    reference_epochs, epochs = EpochCache(cache_entries), EpochCache(cache_entries)
    try:
        expected: Any = rebuild_indexes(data, base, infos, reference_epochs, None, interval)
    except ValueError:  # an offset below the base (offsets step back): the reference refuses, and so do we
        expected = None
    builder = IndexBuilder(base, interval, compiled=compiled)
    got_offsets, got_times = b"", b""
    try:
        for block in blocks_of(BatchBlock.from_infos(infos), cuts):
            offsets, times = builder.feed(block)
            got_offsets, got_times = got_offsets + offsets, got_times + times
            assign_epochs(epochs, block)
        got_times += builder.finish()
    except ValueError:
        assert expected is None
        return
    assert expected is not None
    assert (got_offsets, got_times) == (expected.offset_index, expected.time_index)
    assert epochs.entries == reference_epochs.entries


@pytest.mark.parametrize("compiled", [False, True])
def test_entries_follow_the_interval(compiled: bool) -> None:
    """Every batch after more than `interval` bytes since the last entry gets one: 100-byte batches, 250."""
    from tests.formats.kafka.segments import data_batch
    data = b"".join(data_batch(i, 1) for i in range(10))
    infos = list(SegmentWalk(data, "<seg>").batches())
    builder = IndexBuilder(0, 2 * infos[0].size + 1, compiled=compiled)
    offsets, times = builder.feed(BatchBlock.from_infos(infos))
    expected = rebuild_indexes(data, 0, infos, None, None, 2 * infos[0].size + 1)
    assert offsets == expected.offset_index and len(offsets) == 8 * 3  # entries at batches 3, 6, 9
    assert times + builder.finish() == expected.time_index


@FEW
@given(partitions(), st.lists(st.integers(0, 100), max_size=5),
       st.lists(st.tuples(st.integers(0, 4), st.integers(0, 60)), max_size=3))
def test_epoch_rises_replayed_onto_any_cache_are_the_rule(batches: list[bytes], cuts: list[int],
                                                           cache_entries: list[tuple[int, int]]) -> None:
    """Keeping only the rises and replaying them later onto a cache gives what the rule gives row by row."""
    data = b"".join(batches)
    infos = list(SegmentWalk(data, "<seg>").batches())
    expected, got = EpochCache(cache_entries), EpochCache(cache_entries)
    rebuild_indexes(data, 0, infos, expected)  # the reference's rule, row by row
    rises = EpochRises()
    for block in blocks_of(BatchBlock.from_infos(infos), cuts):
        rises.feed(block)
    rises.assign_to(got)
    assert got.entries == expected.entries
