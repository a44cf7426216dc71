"""The fast forms derived from each construct layout read and write the same bytes as the layout itself."""
from __future__ import annotations

import construct as cs
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from replog.formats.kafka import batch, offset_index, producer_snapshot, time_index, txn_index
from replog.formats.layout import dtype_of, field_positions, struct_of
from replog.formats.rocketmq import checkpoint, consumequeue, index_file

LAYOUTS = {
    "batch header": batch.BATCH_HEADER, "offset index entry": offset_index.ENTRY,
    "time index entry": time_index.ENTRY, "txn index entry": txn_index.ENTRY,
    "producer snapshot header": producer_snapshot.SNAPSHOT_HEADER, "producer snapshot entry": producer_snapshot.ENTRY,
    "consume queue entry": consumequeue.CQ_ENTRY, "index file header": index_file.INDEX_HEADER,
    "index file entry": index_file.INDEX_ENTRY, "rocketmq checkpoint": checkpoint.CHECKPOINT,
}


def _values(layout: cs.Struct) -> st.SearchStrategy[dict[str, int]]:
    """Any value each integer field of the layout holds, from the field's own width and signedness."""
    fields = {}
    for sub in layout.subcons:
        f = sub.subcon
        bits = 8 * f.sizeof()
        signed = f.fmtstr[1].islower()
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
        fields[sub.name] = st.integers(lo, hi)
    return st.fixed_dictionaries(fields)


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_struct_and_dtype_read_what_the_layout_builds(name: str) -> None:
    layout = LAYOUTS[name]
    fast, dtype = struct_of(layout), dtype_of(layout)
    assert fast.size == layout.sizeof() == dtype.itemsize, name
    assert list(dtype.names or ()) == [s.name for s in layout.subcons], name

    @given(_values(layout))
    def check(values: dict[str, int]) -> None:
        data = layout.build(values)
        ordered = tuple(values[s.name] for s in layout.subcons)
        assert fast.pack(*ordered) == data, name
        assert fast.unpack(data) == ordered, name
        row = np.frombuffer(data, dtype=dtype)[0]
        assert tuple(int(row[k]) for k in dtype.names or ()) == ordered, name

    check()


def test_field_positions_follow_the_layout() -> None:
    at = field_positions(batch.BATCH_HEADER)
    assert (at["batch_length"], at["partition_leader_epoch"], at["crc"], at["attributes"], at["records_count"]) == \
        (8, 12, 17, 21, 57)


def test_a_layout_of_variable_size_has_no_fixed_form() -> None:
    with pytest.raises(TypeError, match="not a fixed-size field"):
        struct_of(cs.Struct("n" / cs.Int32sb, "data" / cs.Prefixed(cs.Int32sb, cs.GreedyBytes)))
    with pytest.raises(TypeError, match="big-endian"):
        struct_of(cs.Struct("a" / cs.Int32sl))
