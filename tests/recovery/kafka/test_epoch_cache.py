"""Leader-epoch cache: the broker's own unit-test cases (docs/reference/kafka.md §11, LeaderEpochFileCacheTest)."""
from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replog.recovery.kafka.epoch_cache import EpochCache


def cache(*assigns: tuple[int, int]) -> EpochCache:
    c = EpochCache()
    for e, o in assigns:
        c.assign(e, o)
    return c


@pytest.mark.parametrize("assigns, expected", [
    ([(2, 9), (2, 10)], [(2, 9)]),
    ([(2, 9), (3, 9)], [(3, 9)]),
    ([(2, 6), (3, 5)], [(3, 5)]),
    ([(1, 5), (2, 6), (1, 7)], [(1, 7)]),
    ([(5, 11), (6, 12), (7, 13), (7, 12)], [(5, 11), (7, 12)]),
    ([(0, 0), (1, 0)], [(1, 0)]),
])
def test_assign(assigns: list[tuple[int, int]], expected: list[tuple[int, int]]) -> None:
    assert [tuple(e) for e in cache(*assigns).entries] == expected


def test_end_offset_for() -> None:
    assert cache((2, 10)).end_offset_for(2, 11) == (2, 11)
    c = cache((5, 11), (6, 12), (7, 13))
    assert c.end_offset_for(4, 20) == (4, 11)
    c = cache((0, 10), (2, 13), (4, 17))
    assert [c.end_offset_for(e, 30) for e in (1, 2, 3)] == [(0, 13), (2, 17), (2, 17)]
    c = cache((1, 11), (1, 12), (2, 13), (2, 14), (3, 15), (3, 16))
    assert c.end_offset_for(2, 17) == (2, 15)
    assert cache((2, 100)).end_offset_for(3, 100) == (-1, -1)
    assert EpochCache().end_offset_for(7, 0) == (-1, -1)
    c = cache((0, 0), (1, 0))
    assert c.end_offset_for(0, 0) == (0, 0) and c.end_offset_for(1, 5) == (1, 5)
    c = cache((0, 0), (1, 3), (2, 6))
    assert [c.end_offset_for(e, 9) for e in (0, 1, 2)] == [(0, 3), (1, 6), (2, 9)]


@pytest.mark.parametrize("end, expected", [(8, [(2, 6)]), (9, [(2, 6), (3, 8)]), (-1, [(2, 6), (3, 8), (4, 11)])])
def test_truncate_from_end(end: int, expected: list[tuple[int, int]]) -> None:
    c = cache((2, 6), (3, 8), (4, 11))
    c.truncate_from_end(end)
    assert [tuple(e) for e in c.entries] == expected


@pytest.mark.parametrize("start, expected", [
    (8, [(3, 8), (4, 11)]), (9, [(3, 9), (4, 11)]), (1, [(2, 6), (3, 8), (4, 11)]),
    (6, [(2, 6), (3, 8), (4, 11)]), (11, [(4, 11)]), (15, [(4, 15)]), (-1, [(2, 6), (3, 8), (4, 11)])])
def test_truncate_from_start(start: int, expected: list[tuple[int, int]]) -> None:
    c = cache((2, 6), (3, 8), (4, 11))
    c.truncate_from_start(start)
    assert [tuple(e) for e in c.entries] == expected


def test_truncate_from_start_keeps_epoch_of_last_removed() -> None:
    c = cache((0, 0), (1, 7), (2, 10))
    c.truncate_from_start(5)
    assert [tuple(e) for e in c.entries] == [(0, 5), (1, 7), (2, 10)]
    c = cache((2, 6), (3, 8), (4, 11))
    c.truncate_from_end(11)
    c.truncate_from_start(8)
    assert [tuple(e) for e in c.entries] == [(3, 8)]


def test_epoch_for_offset() -> None:
    c = cache((0, 10), (1, 20), (5, 30))
    assert [c.epoch_for_offset(o) for o in (25, 20, 30, 50, 5)] == [1, 1, 5, 5, None]


@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 500)), max_size=30))
def test_invariant_strictly_increasing(assigns: list[tuple[int, int]]) -> None:
    c = cache(*assigns)
    for a, b in pairwise(c.entries):
        assert a.epoch < b.epoch and a.start_offset < b.start_offset
