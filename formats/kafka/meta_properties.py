"""`meta.properties` (reference §8.7): broker/cluster identity of a log dir.

A Java `Properties.store` file (ISO-8859-1, `#` comment and date lines,
`key=value` in hash order). Parsed with the full `Properties.load` grammar
(comments `#`/`!`, `=` `:` or whitespace separators, backslash escapes, line
continuations), because operators edit these files by hand.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from replog.formats.errors import FormatError
from replog.formats.kafka.partition_metadata import topic_id_to_uuid

CODE = "KAFKA_META_PROPERTIES_INVALID"
VERSION_KEY, CLUSTER_ID_KEY, DIRECTORY_ID_KEY = "version", "cluster.id", "directory.id"
NODE_ID_KEY = {0: "broker.id", 1: "node.id"}  # v0 = ZooKeeper era, v1 = KRaft
_WS = " \t\f"
_NATURAL_EOL = re.compile(r"\r\n|\r|\n")
_JAVA_INT = re.compile(r"[+-]?[0-9]+", re.ASCII)
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


@dataclass(frozen=True)
class MetaProperties:
    version: int
    cluster_id: str | None
    node_id: int | None        # broker.id (v0) or node.id (v1)
    directory_id: str | None   # KIP-858, base64url UUID
    properties: dict[str, str] = field(default_factory=dict)  # every key as stored

    @classmethod
    def of(cls, version: int, cluster_id: str | None, node_id: int | None,
           directory_id: str | None = None, extra: Mapping[str, str] | None = None) -> MetaProperties:
        """A consistent instance: `properties` = `extra` plus the identity keys."""
        props = dict(extra or {})
        props[VERSION_KEY] = str(version)
        for key, value in ((CLUSTER_ID_KEY, cluster_id), (NODE_ID_KEY[version], node_id),
                           (DIRECTORY_ID_KEY, directory_id)):
            if value is not None:
                props[key] = str(value)
        return cls(version, cluster_id, node_id, directory_id, props)


# --- Java Properties grammar --------------------------------------------------------


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(char position, logical line): comments and blanks dropped, continuations joined."""
    naturals: list[tuple[int, str]] = []
    start = 0
    for m in _NATURAL_EOL.finditer(text):
        naturals.append((start, text[start:m.start()]))
        start = m.end()
    if start < len(text):
        naturals.append((start, text[start:]))
    out: list[tuple[int, str]] = []
    i = 0
    while i < len(naturals):
        pos, line = naturals[i]
        line = line.lstrip(_WS)
        i += 1
        if not line or line[0] in "#!":
            continue
        parts = []
        while _ends_with_odd_backslashes(line) and i < len(naturals):
            parts.append(line[:-1])
            line = naturals[i][1].lstrip(_WS)
            i += 1
        if _ends_with_odd_backslashes(line):
            line = line[:-1]  # a continuation at end of file ends the line
        parts.append(line)
        out.append((pos, "".join(parts)))
    return out


def _ends_with_odd_backslashes(line: str) -> bool:
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _split_key_value(line: str) -> tuple[str, str]:
    """`Properties.load0`: key ends at an unescaped `=`, `:` or whitespace."""
    key_len, value_start, has_sep, escaped = 0, len(line), False, False
    while key_len < len(line):
        c = line[key_len]
        if c in "=:" and not escaped:
            value_start, has_sep = key_len + 1, True
            break
        if c in _WS and not escaped:
            value_start = key_len + 1
            break
        escaped = (c == "\\") and not escaped
        key_len += 1
    while value_start < len(line):
        c = line[value_start]
        if c not in _WS:
            if has_sep or c not in "=:":
                break
            has_sep = True
        value_start += 1
    return line[:key_len], line[value_start:]


def _unescape(s: str, position: int) -> str:
    out: list[str] = []
    i = 0
    while i < len(s):
        c = s[i]
        i += 1
        if c != "\\" or i >= len(s):
            out.append(c)
            continue
        c = s[i]
        i += 1
        if c == "u":
            hexdigits = s[i:i + 4]
            if len(hexdigits) != 4 or not all(h in "0123456789abcdefABCDEF" for h in hexdigits):
                raise FormatError(CODE, "malformed \\uxxxx escape", position=position)
            out.append(chr(int(hexdigits, 16)))
            i += 4
        else:
            out.append(_ESCAPES.get(c, c))
    text = "".join(out)
    # Java strings are UTF-16: a \uD800\uDC00 pair of escapes is one character
    return text.encode("utf-16-be", "surrogatepass").decode("utf-16-be", "surrogatepass")


def parse_java_properties(data: bytes) -> dict[str, str]:
    """`Properties.load(InputStream)`: ISO-8859-1 text, later keys win."""
    text = bytes(data).decode("latin-1")
    out: dict[str, str] = {}
    for pos, line in _logical_lines(text):
        key, value = _split_key_value(line)
        out[_unescape(key, pos)] = _unescape(value, pos)
    return out


def _escape(s: str, is_key: bool) -> str:
    """`Properties.saveConvert` with unicode escapes (what `store(OutputStream)` writes)."""
    out: list[str] = []
    for i, c in enumerate(s):
        if c == "\\":
            out.append("\\\\")
        elif c == " ":
            out.append("\\ " if i == 0 or is_key else " ")
        elif c in "\t\n\r\f":
            out.append("\\" + {"\t": "t", "\n": "n", "\r": "r", "\f": "f"}[c])
        elif c in "=:#!":
            out.append("\\" + c)
        elif " " < c <= "~":
            out.append(c)
        else:
            out.extend(f"\\u{u:04X}" for u in _utf16_units(c))
    return "".join(out)


def _utf16_units(c: str) -> list[int]:
    raw = c.encode("utf-16-be", "surrogatepass")
    return [int.from_bytes(raw[i:i + 2], "big") for i in range(0, len(raw), 2)]


def java_date(when: datetime) -> str:
    """`java.util.Date.toString()` in UTC: `Sun Jan 19 17:55:21 UTC 2025`."""
    t = when.astimezone(UTC)
    return (f"{_DAYS[t.weekday()]} {_MONTHS[t.month - 1]} {t.day:02d} "
            f"{t.hour:02d}:{t.minute:02d}:{t.second:02d} UTC {t.year}")


def build_java_properties(props: Mapping[str, str], *, comment: str = "",
                          when: datetime | str | None = None) -> bytes:
    """`Properties.store(out, comment)`: comment line, date line, key=value lines.

    `when` is the date to stamp (default now, in UTC) or the date text to copy
    verbatim (brokers stamp their local zone, e.g. `Sun Feb 27 16:00:38 ICT 2022`).
    """
    if any(c in text for text in (comment, when if isinstance(when, str) else "") for c in "\r\n"):
        raise ValueError("comment and date must be single lines")
    date = when if isinstance(when, str) else java_date(when or datetime.now(UTC))
    lines = ["#" + comment, "#" + date]
    lines += [f"{_escape(k, True)}={_escape(v, False)}" for k, v in props.items()]
    return "".join(x + "\n" for x in lines).encode("latin-1")


# --- meta.properties ----------------------------------------------------------------


def _int_prop(props: Mapping[str, str], key: str) -> int | None:
    raw = props.get(key)
    if raw is None:
        return None
    text = raw.strip()
    if not _JAVA_INT.fullmatch(text) or not -(2**31) <= int(text) < 2**31:
        raise FormatError(CODE, f"{key}={raw[:40]!r} is not a 32-bit integer")
    return int(text)


def parse_meta_properties(data: bytes) -> MetaProperties:
    """Identity of a log dir as `MetaProperties.Builder(Properties)` reads it."""
    props = parse_java_properties(data)
    version = _int_prop(props, VERSION_KEY)
    version = 0 if version is None else version
    if version not in NODE_ID_KEY:
        raise FormatError(CODE, f"unknown meta.properties version {version}")
    node_id = _int_prop(props, NODE_ID_KEY[version])
    cluster_id = props.get(CLUSTER_ID_KEY)
    if version == 1 and (node_id is None or cluster_id is None):
        raise FormatError(CODE, "version 1 requires node.id and cluster.id")
    directory_id = props.get(DIRECTORY_ID_KEY)
    if directory_id is not None:
        try:
            topic_id_to_uuid(directory_id)
        except ValueError as e:
            raise FormatError(CODE, f"invalid directory.id: {e}") from None
    return MetaProperties(version, cluster_id, node_id, directory_id, props)


def build_meta_properties(meta: MetaProperties, *, when: datetime | str | None = None) -> bytes:
    """Bytes as Kafka writes them (`store(out, "")`): `#`, date line, properties."""
    consistent = MetaProperties.of(meta.version, meta.cluster_id, meta.node_id, meta.directory_id,
                                   meta.properties)
    return build_java_properties(consistent.properties, when=when)
