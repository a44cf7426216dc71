"""The offset and time index readers (fast struct forms) against their construct layouts, on any bytes."""
from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replog.formats.kafka import offset_index as oi
from replog.formats.kafka import time_index as ti

BASE = 100
# module, reader, the (offset, position) / (timestamp, offset) a layout entry reads as, the layout's fields of an
# entry read
INDEXES = [
    pytest.param(oi, oi.read_offset_index, lambda e: (BASE + e.relative_offset, e.position),
                 lambda e: {"relative_offset": e.offset - BASE, "position": e.position}, id="offset"),
    pytest.param(ti, ti.read_time_index, lambda e: (e.timestamp, BASE + e.relative_offset),
                 lambda e: {"timestamp": e.timestamp, "relative_offset": e.offset - BASE}, id="time"),
]


@pytest.mark.parametrize(("module", "read", "row", "fields"), INDEXES)
@given(raw=st.binary(max_size=240))
def test_construct_layout_agrees_with_fast_reader(module: ModuleType, read: Callable[[bytes, int], Any],
                                                 row: Callable[[Any], tuple[int, int]],
                                                 fields: Callable[[Any], dict[str, int]], raw: bytes) -> None:
    size = module.ENTRY.sizeof()
    raw = raw[: len(raw) // size * size]
    result = read(raw, BASE)
    entries = result.entries
    layout = module.cs.GreedyRange(module.ENTRY)
    parsed = layout.parse(raw)
    n = len(entries)
    assert [row(e) for e in parsed][:n] == [tuple(e) for e in entries], "the entries read"
    assert all(row(e) == row(layout.parse(bytes(size))[0]) for e in parsed[n:]), "the entries left out are zeros"
    assert result.zero_tail_entries == len(parsed) - n, "the zero entries counted as the tail"
    assert layout.build([fields(e) for e in entries]) == raw[: n * size], "the entries read, built again"
