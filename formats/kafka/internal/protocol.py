"""Kafka message-schema primitives and a tiny schema DSL shared by decoders and encoders.

Kafka's internal records (``__consumer_offsets``, ``__transaction_state``,
``__cluster_metadata``) are generated "messages": a list of fields, each present
in a range of versions, with *flexible* versions using compact (unsigned
varint, length + 1) strings/bytes/arrays and a tagged-fields section after
every struct. A `Message` written with `Field`s below is the single
description both `Message.decode` and `Message.encode` walk.

Decoded values are JSON-able: uuids are 22-char base64url (Kafka's
``Uuid.toString``), bytes are lowercase hex, unknown tags are kept as
``{"tag": n, "data": hex}`` under ``unknownTaggedFields`` so they survive a
round trip. Every length and count is checked against the bytes remaining
before anything is allocated; bad input raises
``FormatError("KAFKA_RECORDS_UNDECODABLE", ...)``.
"""
from __future__ import annotations

import base64
import binascii
import math
import struct
from dataclasses import dataclass, field
from typing import Any

from replog.formats.errors import FormatError

CODE = "KAFKA_RECORDS_UNDECODABLE"
UNKNOWN_TAGS = "unknownTaggedFields"
_UNSET: Any = object()


# --- versions -----------------------------------------------------------------

def parse_versions(spec: str) -> tuple[int, int] | None:
    """"0+", "3", "0-2" or "none" → inclusive (low, high) or None; open end = 2**15."""
    spec = spec.strip()
    if spec == "none":
        return None
    if spec.endswith("+"):
        return int(spec[:-1]), 0x7FFF
    if "-" in spec:
        low, high = spec.split("-")
        return int(low), int(high)
    return int(spec), int(spec)


def in_versions(spec: tuple[int, int] | None, version: int) -> bool:
    return spec is not None and spec[0] <= version <= spec[1]


# --- types --------------------------------------------------------------------

@dataclass(frozen=True)
class Prim:
    """A fixed-size or length-prefixed primitive (int8..int64, uint16, float64, bool, uuid, string, bytes)."""

    name: str
    fmt: str = ""          # struct format for fixed-size numbers
    size: int = 0          # fixed size; 0 = length-prefixed (string/bytes)

    def __repr__(self) -> str:
        return self.name


INT8 = Prim("int8", ">b", 1)
INT16 = Prim("int16", ">h", 2)
UINT16 = Prim("uint16", ">H", 2)
INT32 = Prim("int32", ">i", 4)
INT64 = Prim("int64", ">q", 8)
FLOAT64 = Prim("float64", ">d", 8)
BOOL = Prim("bool", "", 1)
UUID = Prim("uuid", "", 16)
STRING = Prim("string")
BYTES = Prim("bytes")
_FIXED = {p.name: struct.Struct(p.fmt) for p in (INT8, INT16, UINT16, INT32, INT64, FLOAT64)}
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"


@dataclass(frozen=True)
class Array:
    item: Type


@dataclass(frozen=True)
class Struct:
    name: str
    fields: tuple[Field, ...]


Type = Prim | Array | Struct


@dataclass(frozen=True)
class Field:
    """One schema field: `Field("group", STRING, "0+")`; tagged fields give `tag=` and their tagged versions."""

    name: str
    type: Type
    versions: str = "0+"
    nullable: str = "none"
    tag: int | None = None
    default: Any = _UNSET
    _versions: tuple[int, int] | None = field(init=False, repr=False, compare=False)
    _nullable: tuple[int, int] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_versions", parse_versions(self.versions))
        object.__setattr__(self, "_nullable", parse_versions(self.nullable))

    def present(self, version: int) -> bool:
        return in_versions(self._versions, version)

    def is_nullable(self, version: int) -> bool:
        return in_versions(self._nullable, version)

    def default_value(self) -> Any:
        if self.default is not _UNSET:
            return self.default
        return type_default(self.type)


def json_view(fields: tuple[Field, ...], data: dict) -> dict:
    """Decoded `data` as Kafka's generated JSON converters write it: a tagged field holding its default is left
    out, bytes (hex here) are Base64 (Jackson's `byte[]`), nested structs alike; field order as decoded."""
    by_name = {f.name: f for f in fields}
    out = {}
    for name, value in data.items():
        f = by_name.get(name)
        if f is not None and f.tag is not None and _holds_default(f, value):
            continue
        out[name] = _json_value(f.type, value) if f is not None else value
    return out


def _holds_default(f: Field, value: Any) -> bool:
    """Whether a converter leaves this tagged field out. A struct is compared with a new, all-default struct (the
    4.4.0 jar's ConsumerGroupMemberMetadataValueJsonConverter: `x == null || !x.equals(new X())` writes it, a null
    as JSON null); any other field with its declared default."""
    if isinstance(f.type, Struct):
        return isinstance(value, dict) and value == {g.name: g.default_value() for g in f.type.fields}
    return bool(value == f.default_value())


def _json_value(t: Type, value: Any) -> Any:
    if t == BYTES and isinstance(value, str):
        return base64.b64encode(bytes.fromhex(value)).decode("ascii")
    if isinstance(t, Struct) and isinstance(value, dict):
        return json_view(t.fields, value)
    if isinstance(t, Array) and isinstance(value, list):
        return [_json_value(t.item, v) for v in value]
    return value


def type_default(t: Type) -> Any:
    """Kafka's implicit default for a field without one: zero, empty, false, zero uuid."""
    if isinstance(t, Array):
        return []
    if isinstance(t, Struct):
        return None
    return {"string": "", "bytes": "", "bool": False, "uuid": ZERO_UUID, "float64": 0.0}.get(t.name, 0)


@dataclass(frozen=True)
class Message:
    """A versioned message: name, fields, valid versions and first flexible version."""

    name: str
    fields: tuple[Field, ...]
    valid: str = "0"
    flexible: str = "none"

    def supports(self, version: int) -> bool:
        return in_versions(parse_versions(self.valid), version)

    def is_flexible(self, version: int) -> bool:
        return in_versions(parse_versions(self.flexible), version)

    def decode(self, buf: bytes | memoryview, version: int, pos: int = 0) -> tuple[dict, int]:
        """Read the message body at `pos`; returns (data, end position). Raises FormatError."""
        reader = Reader(buf, pos)
        data = read_struct(reader, self.fields, version, self.is_flexible(version))
        return data, reader.pos

    def encode(self, data: dict, version: int) -> bytes:
        """Write `data` at `version`; missing fields take their defaults. Raises ValueError on bad data."""
        out = bytearray()
        write_struct(out, self.fields, data, version, self.is_flexible(version))
        return bytes(out)


# --- reader -------------------------------------------------------------------

class Reader:
    """Bounds-checked cursor over a buffer; every read checks the bytes remaining first."""

    __slots__ = ("buf", "pos", "end")

    def __init__(self, buf: bytes | memoryview, pos: int = 0, end: int | None = None) -> None:
        self.buf = buf
        self.pos = pos
        self.end = len(buf) if end is None else end

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def fail(self, message: str) -> FormatError:
        return FormatError(CODE, f"{message} at byte {self.pos}", position=self.pos)

    def need(self, n: int, what: str) -> None:
        if n < 0 or n > self.remaining:
            raise self.fail(f"{what} needs {n} bytes, {self.remaining} remain")

    def take(self, n: int, what: str = "field") -> bytes:
        self.need(n, what)
        start = self.pos
        self.pos += n
        return bytes(self.buf[start:self.pos])

    def fixed(self, prim: Prim) -> Any:
        self.need(prim.size, prim.name)
        value = _FIXED[prim.name].unpack_from(self.buf, self.pos)[0]
        self.pos += prim.size
        return value

    def uvarint(self) -> int:
        """Unsigned varint as Kafka's `readUnsignedVarint` (at most 5 bytes, 32 bits)."""
        result = 0
        for i in range(5):
            if self.pos >= self.end:
                raise self.fail("unsigned varint runs past the end")
            b = self.buf[self.pos]
            self.pos += 1
            result |= (b & 0x7F) << (7 * i)
            if not b & 0x80:
                return result & 0xFFFFFFFF
        raise self.fail("unsigned varint longer than 5 bytes")


def _length(r: Reader, flexible: bool, wide: bool) -> int:
    """A length or count: compact uvarint (n + 1, 0 = null) or int16/int32 (-1 = null)."""
    if flexible:
        return r.uvarint() - 1
    return r.fixed(INT32 if wide else INT16)


def read_value(r: Reader, t: Type, version: int, flexible: bool, nullable: bool) -> Any:
    if isinstance(t, Array):
        return _read_array(r, t, version, flexible, nullable)
    if isinstance(t, Struct):
        if nullable and r.fixed(INT8) < 0:
            return None
        return read_struct(r, t.fields, version, flexible)
    if t.size and t.fmt:
        return r.fixed(t)
    if t is BOOL:
        return r.take(1, "bool")[0] != 0
    if t is UUID:
        return uuid_to_str(r.take(16, "uuid"))
    n = _length(r, flexible, wide=t is BYTES)
    if n < 0:
        if n == -1 and nullable:
            return None
        raise r.fail(f"null or negative length {n} for a non-nullable {t.name}")
    raw = r.take(n, t.name)
    if t is BYTES:
        return raw.hex()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(CODE, f"string is not UTF-8 ending at byte {r.pos}: {exc.reason}",
                          position=r.pos) from None


def _read_array(r: Reader, t: Array, version: int, flexible: bool, nullable: bool) -> list | None:
    n = _length(r, flexible, wide=True)
    if n < 0:
        if n == -1 and nullable:
            return None
        raise r.fail(f"null or negative count {n} for a non-nullable array")
    r.need(n * min_size(t.item, version, flexible), f"array of {n}")
    return [read_value(r, t.item, version, flexible, False) for _ in range(n)]


def min_size(t: Type, version: int, flexible: bool) -> int:
    """Smallest encoding of one value (at least 1): bounds array counts before looping."""
    if isinstance(t, Array):
        return 1 if flexible else 4
    if isinstance(t, Struct):
        body = sum(min_size(f.type, version, flexible) for f in t.fields
                   if f.tag is None and f.present(version))
        return max(1, body + (1 if flexible else 0))
    if t.size:
        return t.size
    return 1 if flexible else (4 if t is BYTES else 2)


def read_struct(r: Reader, fields: tuple[Field, ...], version: int, flexible: bool) -> dict:
    data: dict[str, Any] = {}
    tagged: dict[int, Field] = {}
    for f in fields:
        if not f.present(version):
            continue
        if f.tag is not None:
            if flexible:
                tagged[f.tag] = f
                data[f.name] = f.default_value()
            continue
        data[f.name] = read_value(r, f.type, version, flexible, f.is_nullable(version))
    if flexible:
        unknown = _read_tagged(r, tagged, data, version)
        if unknown:
            data[UNKNOWN_TAGS] = unknown
    return data


def _read_tagged(r: Reader, tagged: dict[int, Field], data: dict, version: int) -> list[dict]:
    count = r.uvarint()
    r.need(2 * count, f"{count} tagged fields")
    unknown = []
    for _ in range(count):
        tag = r.uvarint()
        size = r.uvarint()
        r.need(size, f"tagged field {tag}")
        f = tagged.get(tag)
        if f is None:
            unknown.append({"tag": tag, "data": r.take(size).hex()})
            continue
        sub = Reader(r.buf, r.pos, r.pos + size)
        if isinstance(f.type, Struct) and f.is_nullable(version):
            # a tagged nullable struct's marker is an unsigned varint, 0 for null (the 4.4.0 jar's generated
            # readers, e.g. ConsumerGroupMemberMetadataValue: `readUnsignedVarint() > 0` reads the struct)
            data[f.name] = read_struct(sub, f.type.fields, version, True) if sub.uvarint() > 0 else None
        else:
            data[f.name] = read_value(sub, f.type, version, True, f.is_nullable(version))
        if sub.remaining:
            raise sub.fail(f"tagged field {f.name} has {sub.remaining} unread bytes")
        r.pos += size
    return unknown


# --- writer -------------------------------------------------------------------

def write_uvarint(out: bytearray, value: int) -> None:
    if not 0 <= value <= 0xFFFFFFFF:
        raise ValueError(f"unsigned varint out of range: {value}")
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _write_length(out: bytearray, n: int, flexible: bool, wide: bool) -> None:
    if flexible:
        write_uvarint(out, n + 1)
    else:
        out += _pack(INT32 if wide else INT16, n)


def _pack(t: Prim, value: Any) -> bytes:
    try:
        return _FIXED[t.name].pack(value)
    except struct.error as exc:
        raise ValueError(f"{t.name} value {value!r}: {exc}") from None


def write_value(out: bytearray, t: Type, value: Any, version: int, flexible: bool,
                nullable: bool) -> None:
    if value is None and (not isinstance(t, Prim) or t in (STRING, BYTES)):
        if not nullable:
            raise ValueError(f"null for a non-nullable {t}")
        if isinstance(t, Struct):
            out += b"\xff"
        else:
            _write_length(out, -1, flexible, wide=t is not STRING)
        return
    if isinstance(t, Array):
        _write_length(out, len(value), flexible, wide=True)
        for item in value:
            write_value(out, t.item, item, version, flexible, False)
    elif isinstance(t, Struct):
        if nullable:
            out += b"\x01"
        write_struct(out, t.fields, value, version, flexible)
    elif t.fmt:
        out += _pack(t, value)
    elif t is BOOL:
        out.append(1 if value else 0)
    elif t is UUID:
        out += uuid_to_bytes(value)
    else:
        raw = to_bytes(value) if t is BYTES else value.encode("utf-8")
        if t is STRING and not flexible and len(raw) > 0x7FFF:
            raise ValueError("string longer than 32767 bytes")
        _write_length(out, len(raw), flexible, wide=t is BYTES)
        out += raw


def write_struct(out: bytearray, fields: tuple[Field, ...], data: dict, version: int,
                 flexible: bool) -> None:
    tags: list[tuple[int, bytes]] = []
    for f in fields:
        if not f.present(version):
            continue
        value = data.get(f.name, f.default_value())
        if f.tag is None:
            write_value(out, f.type, value, version, flexible, f.is_nullable(version))
        elif flexible and not _equal(value, f.default_value()):
            body = bytearray()
            write_value(body, f.type, value, version, True, f.is_nullable(version))
            tags.append((f.tag, bytes(body)))
    if flexible:
        tags += [(u["tag"], to_bytes(u["data"])) for u in data.get(UNKNOWN_TAGS, ())]
        tags.sort(key=lambda item: item[0])
        write_uvarint(out, len(tags))
        for tag, tagged in tags:
            write_uvarint(out, tag)
            write_uvarint(out, len(tagged))
            out += tagged


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


# --- value forms ----------------------------------------------------------------

def uuid_to_str(raw: bytes) -> str:
    """16 big-endian bytes → Kafka's text form (base64url, no padding, 22 chars)."""
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def uuid_to_bytes(value: str | bytes) -> bytes:
    if isinstance(value, (bytes, bytearray)):
        raw = bytes(value)
    else:
        try:
            raw = base64.urlsafe_b64decode(value + "==")
        except (binascii.Error, ValueError) as exc:
            raise ValueError(f"not a base64url uuid: {value!r}") from exc
    if len(raw) != 16:
        raise ValueError(f"uuid must be 16 bytes, got {len(raw)}")
    return raw


def to_bytes(value: str | bytes | bytearray | memoryview) -> bytes:
    """Hex text (the decoded form) or raw bytes → bytes."""
    if isinstance(value, str):
        return bytes.fromhex(value)
    return bytes(value)


def read_int16(buf: bytes | memoryview, pos: int = 0) -> int:
    """The int16 version prefix of coordinator keys and values."""
    return Reader(buf, pos).fixed(INT16)


def version_prefixed(version: int, body: bytes) -> bytes:
    return _pack(INT16, version) + body


def decode_version_prefixed(schema: Message, buf: bytes) -> dict:
    """A coordinator key or value (int16 version, then `schema`'s body at that version): ``{"version", "data"}``,
    or ``{"version", "raw"}`` (the body as hex) at a version `schema` does not know. Raises FormatError on a body
    the schema cannot read."""
    version = read_int16(buf)
    if not schema.supports(version):
        return {"version": version, "raw": bytes(buf[2:]).hex()}
    data, end = schema.decode(buf, version, 2)
    return with_trailing({"version": version, "data": data}, buf, end)


def with_trailing(out: dict, buf: bytes, end: int) -> dict:
    """`out` with the bytes after the message as ``trailingBytes``: the coordinators ignore them; replog shows them."""
    if end < len(buf):
        out["trailingBytes"] = bytes(buf[end:]).hex()
    return out
