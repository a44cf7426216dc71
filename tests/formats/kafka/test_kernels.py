"""The kernels' record walk (`kernels.record_frame`, `record_fields`) reads the fields the construct layout
(`batch.RECORD_BODY`) declares, in its order, on any record the writer makes."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replog.formats.kafka import batch as v2
from replog.formats.kafka import kernels

if not kernels.HAVE_NUMBA:
    pytest.skip("the kernels need numba", allow_module_level=True)

_BYTES = st.none() | st.binary(max_size=40)


@settings(max_examples=60, deadline=None)
@given(delta=st.integers(0, 2**31 - 1), ts_delta=st.integers(-2**62, 2**62), key=_BYTES, value=_BYTES,
       headers=st.lists(st.tuples(st.text(max_size=5), _BYTES), max_size=3), attributes=st.integers(0, 255))
def test_record_fields_follow_the_construct_layout(delta, ts_delta, key, value, headers, attributes) -> None:
    raw = v2.encode_record(delta, ts_delta, key, value, headers, attributes)
    parsed = v2.RECORD.parse(raw)
    data = np.frombuffer(raw, dtype=np.uint8)
    body, end, ok = kernels.record_frame(data, 0, len(data))
    assert ok and end == len(data), "record_frame: the length prefix does not frame the record"
    (attrs, ts, off, key_pos, key_len, value_pos, value_len, _hp, header_count,
     ok) = kernels.record_fields(data, body, end)
    assert ok, "record_fields refused a record the writer made"
    assert (attrs, ts, off) == (parsed.attributes, parsed.timestamp_delta, parsed.offset_delta), "leading fields"
    assert (key_len, value_len) == (parsed.key_length, parsed.value_length), "key/value lengths"
    assert (None if key_len < 0 else raw[key_pos:key_pos + key_len]) == parsed.key, "key bytes"
    assert (None if value_len < 0 else raw[value_pos:value_pos + value_len]) == parsed.value, "value bytes"
    assert header_count == parsed.header_count, "header count"


def test_a_null_header_key_is_refused() -> None:
    raw = bytearray(v2.encode_record(0, 0, None, None, [("k", b"v")]))
    at = raw.index(b"k") - 1  # the header key's length varint: 1 -> -1 (zig-zag 0x01)
    raw[at] = 0x01
    data = np.frombuffer(bytes(raw), dtype=np.uint8)
    body, end, ok = kernels.record_frame(data, 0, len(data))
    assert ok, "framing of the damaged record"
    assert not kernels.record_fields(data, body, end)[-1], "a null header key must be refused"
