"""The message-schema primitives and DSL of formats.kafka.internal.protocol.

`struct_values` turns any schema into a hypothesis strategy of valid decoded
values; the other internal-topic tests import it for their round trips.
"""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replog.formats.errors import FormatError
from replog.formats.kafka.internal.protocol import (
    BOOL,
    BYTES,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    UINT16,
    UNKNOWN_TAGS,
    UUID,
    Array,
    Field,
    Message,
    Reader,
    Struct,
    Type,
    uuid_to_str,
    write_uvarint,
)
from tests.mutate import damage

_RANGES = {"int8": 7, "int16": 15, "int32": 31, "int64": 63}


def value_strategy(t: Type, version: int, nullable: bool) -> st.SearchStrategy:
    """Valid decoded values of type `t` (None allowed when nullable)."""
    if isinstance(t, Array):
        inner = st.lists(value_strategy(t.item, version, False), max_size=3)
    elif isinstance(t, Struct):
        inner = struct_values(t.fields, version, tags=False)
    elif t.name in _RANGES:
        bits = _RANGES[t.name]
        inner = st.integers(-(1 << bits), (1 << bits) - 1)
    elif t is UINT16:
        inner = st.integers(0, 0xFFFF)
    elif t is FLOAT64:
        inner = st.floats(allow_nan=False)
    elif t is BOOL:
        inner = st.booleans()
    elif t is UUID:
        inner = st.binary(min_size=16, max_size=16).map(uuid_to_str)
    elif t is STRING:
        inner = st.text(max_size=12)
    else:
        inner = st.binary(max_size=12).map(bytes.hex)
    return st.one_of(st.none(), inner) if nullable else inner


def struct_values(fields: tuple[Field, ...], version: int, tags: bool = True) -> st.SearchStrategy:
    """Dicts a decoder would return for `fields` at `version` (unknown tags only when `tags`)."""
    known = {f.name: value_strategy(f.type, version, f.is_nullable(version))
             for f in fields if f.present(version)}
    base = st.fixed_dictionaries(known)
    if not tags:
        return base
    unknown = st.lists(st.tuples(st.integers(100, 300), st.binary(max_size=6)), max_size=2,
                       unique_by=lambda x: x[0])
    return st.tuples(base, unknown).map(lambda p: _with_unknown(*p))


def _with_unknown(data: dict, unknown: list[tuple[int, bytes]]) -> dict:
    if unknown:
        data[UNKNOWN_TAGS] = [{"tag": t, "data": d.hex()} for t, d in sorted(unknown)]
    return data


def message_values(schema: Message, version: int) -> st.SearchStrategy:
    return struct_values(schema.fields, version, tags=schema.is_flexible(version))


# --- a test schema exercising every type -------------------------------------------

SAMPLE = Message("Sample", (
    Field("i8", INT8), Field("i16", INT16), Field("u16", UINT16), Field("i32", INT32, "1+"),
    Field("i64", INT64), Field("f64", FLOAT64), Field("flag", BOOL), Field("id", UUID),
    Field("name", STRING), Field("maybe", STRING, nullable="0+"), Field("blob", BYTES, nullable="1+"),
    Field("ids", Array(INT32), nullable="1+"),
    Field("items", Array(Struct("Item", (Field("k", STRING), Field("v", Array(STRING)))))),
    Field("tagA", INT64, "2+", tag=0, default=-1),
    Field("tagB", Array(INT32), "2+", nullable="2+", tag=3, default=None),
    Field("tagS", Struct("Opt", (Field("x", INT32),)), "2+", nullable="2+", tag=5, default=None),
), valid="0-3", flexible="2+")


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_round_trip_every_type(data) -> None:
    version = data.draw(st.integers(0, 3))
    value = data.draw(message_values(SAMPLE, version))
    encoded = SAMPLE.encode(value, version)
    decoded, end = SAMPLE.decode(encoded, version)
    assert decoded == value
    assert end == len(encoded)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_mutations_raise_only_format_error(data) -> None:
    version = data.draw(st.integers(0, 3))
    buf = bytearray(SAMPLE.encode(data.draw(message_values(SAMPLE, version)), version))
    damage(buf, data)
    try:
        SAMPLE.decode(bytes(buf), version)
    except FormatError as exc:
        assert exc.code == "KAFKA_RECORDS_UNDECODABLE"


def test_compact_forms_and_tagged_section() -> None:
    msg = Message("M", (Field("s", STRING), Field("b", BYTES, nullable="0+"), Field("t", INT8, tag=2)),
                  valid="0", flexible="0+")
    encoded = msg.encode({"s": "ab", "b": None, "t": 7}, 0)
    # "ab" = uvarint 3 + bytes; null bytes = 0; 1 tagged field: tag 2, size 1, value 7
    assert encoded == b"\x03ab\x00\x01\x02\x01\x07"
    assert msg.decode(encoded, 0)[0] == {"s": "ab", "b": None, "t": 7}
    # default-valued tagged fields are not written
    assert msg.encode({"s": "", "b": "00"}, 0) == b"\x01\x02\x00\x00"


def test_non_flexible_forms() -> None:
    msg = Message("M", (Field("s", STRING, nullable="0+"), Field("a", Array(INT16))))
    assert msg.encode({"s": None, "a": [1]}, 0) == b"\xff\xff\x00\x00\x00\x01\x00\x01"
    assert msg.decode(b"\x00\x01x\x00\x00\x00\x00", 0)[0] == {"s": "x", "a": []}


def test_unknown_tags_reported_as_hex() -> None:
    msg = Message("M", (Field("a", INT8),), valid="0", flexible="0+")
    decoded, _ = msg.decode(b"\x05\x02\x07\x02\xab\xcd\x09\x00", 0)
    assert decoded == {"a": 5, UNKNOWN_TAGS: [{"tag": 7, "data": "abcd"}, {"tag": 9, "data": ""}]}
    assert msg.encode(decoded, 0) == b"\x05\x02\x07\x02\xab\xcd\x09\x00"


@pytest.mark.parametrize("buf, why", [
    (b"\x00\x05ab", "string longer than the bytes left"),
    (b"\xff\xff", "null in a non-nullable string"),
    (b"\x00\x02\xff\xfe", "not UTF-8"),
])
def test_bad_strings(buf: bytes, why: str) -> None:
    with pytest.raises(FormatError):
        Message("M", (Field("s", STRING),)).decode(buf, 0)


def test_huge_counts_fail_before_allocating() -> None:
    msg = Message("M", (Field("a", Array(INT64)),))
    with pytest.raises(FormatError, match="array of 2147483647"):
        msg.decode(b"\x7f\xff\xff\xff" + b"\x00" * 16, 0)
    flex = Message("M", (Field("a", Array(STRING)),), flexible="0+")
    with pytest.raises(FormatError):
        flex.decode(b"\xff\xff\xff\xff\x0f", 0)       # compact count 2**32 - 2
    with pytest.raises(FormatError, match="tagged fields"):
        flex.decode(b"\x01\xff\xff\xff\x7f", 0)       # empty array, then 2**28 tags


def test_tagged_field_size_must_match() -> None:
    msg = Message("M", (Field("t", INT32, tag=0),), flexible="0+")
    with pytest.raises(FormatError, match="unread"):
        msg.decode(b"\x01\x00\x05\x00\x00\x00\x01\x00", 0)


def test_uvarint_limits() -> None:
    out = bytearray()
    write_uvarint(out, 0xFFFFFFFF)
    assert Reader(bytes(out)).uvarint() == 0xFFFFFFFF
    with pytest.raises(FormatError, match="longer than 5"):
        Reader(b"\x80\x80\x80\x80\x80\x01").uvarint()
    with pytest.raises(FormatError):
        Reader(b"\x80").uvarint()


def test_bad_values_to_the_writer_are_value_errors() -> None:
    msg = Message("M", (Field("i", INT8), Field("u", UUID)))
    with pytest.raises(ValueError):
        msg.encode({"i": 300}, 0)
    with pytest.raises(ValueError):
        msg.encode({"i": 1, "u": "short"}, 0)
