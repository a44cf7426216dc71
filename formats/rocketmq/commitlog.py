"""CommitLog messages (V1/V2), BLANK fillers, mapped-file naming and the writer (the walker is `commitlog_walk`).

`MESSAGE` (construct) is the declarative source of truth for one record
(docs/reference/rocketmq.md §2.2: `MessageExtEncoder#encode`, `CommitLog#checkMessageAndReturnSize`);
`read_message` is the struct-based hot path, checked against it in tests.
All integers are big-endian and signed (Java). Positions are byte positions in
one mapped file; `physical_offset` is the commitlog offset field of a record.
"""
from __future__ import annotations

import ipaddress
import os
import re
import struct
import zlib
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import construct as cs

from replog.formats.errors import FormatError
from replog.formats.fileio import atomic_write
from replog.formats.rocketmq.offset_names import file_name, is_offset_name, offset_files

MAGIC_V1 = -626843481      # 0xDAA320A7, topic length is a signed byte
MAGIC_V2 = -626843477      # 0xDAA320AB, topic length is an i16 (5.1.0+)
MAGIC_BLANK = -875286124   # 0xCBD43194, end-of-file filler
END_FILE_MIN_BLANK_LENGTH = 8     # CommitLog.DefaultAppendMessageCallback
CRC32_RESERVED_LEN = 20           # len("__CRC32#") + 1 + 10 + 1
PROPERTY_CRC32 = "__CRC32#"
DEFAULT_FILE_SIZE = 1 << 30       # mappedFileSizeCommitLog
MAX_TOPIC_LEN_V1 = 127
MAX_PROPERTIES_LEN = 32767

BORNHOST_V6_FLAG = 0x10
STOREHOST_V6_FLAG = 0x20
TRANSACTION_MASK = 0x0C
TRANSACTION_PREPARED = 0x04
TRANSACTION_ROLLBACK = 0x0C

NAME_VALUE_SEPARATOR = "\x01"
PROPERTY_SEPARATOR = "\x02"


def _host_len(flag_bit: int) -> cs.Construct:
    return cs.Bytes(lambda this: 20 if this.sys_flag & flag_bit else 8)


MESSAGE = cs.Struct(
    "total_size" / cs.Int32sb,
    "magic" / cs.Int32sb,
    "body_crc" / cs.Int32sb,
    "queue_id" / cs.Int32sb,
    "flag" / cs.Int32sb,
    "queue_offset" / cs.Int64sb,
    "physical_offset" / cs.Int64sb,
    "sys_flag" / cs.Int32sb,
    "born_timestamp" / cs.Int64sb,
    "born_host" / _host_len(BORNHOST_V6_FLAG),       # address bytes + i32 port
    "store_timestamp" / cs.Int64sb,
    "store_host" / _host_len(STOREHOST_V6_FLAG),
    "reconsume_times" / cs.Int32sb,
    "prepared_transaction_offset" / cs.Int64sb,
    "body" / cs.Prefixed(cs.Int32sb, cs.GreedyBytes),
    "topic" / cs.Prefixed(cs.IfThenElse(cs.this.magic == MAGIC_V2, cs.Int16sb, cs.Int8sb),
                          cs.GreedyBytes),
    "properties" / cs.Prefixed(cs.Int16sb, cs.GreedyBytes),
)
BLANK = cs.Struct("total_size" / cs.Int32sb, "magic" / cs.Const(MAGIC_BLANK, cs.Int32sb))

_HEAD = struct.Struct(">iiiiiqqiq")   # total_size .. born_timestamp (48 bytes)
_HEAD_SIZE = _HEAD.size
# born host, store timestamp, store host, reconsume times, prepared offset, body length
_MIDDLE = {(b6, s6): struct.Struct(f">{16 if b6 else 4}siq{16 if s6 else 4}siiqi")
           for b6 in (False, True) for s6 in (False, True)}
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_I8 = struct.Struct(">b")
_PREFIX = struct.Struct(">ii")
_ADDR = struct.Struct(">iq")
MIN_MESSAGE_SIZE = 91   # V1, IPv4 hosts, empty body, topic and properties
MAGIC_RE = re.compile(b"\xda\xa3\x20[\xa7\xab]|\xcb\xd4\x31\x94")
NONZERO = re.compile(b"[^\x00]")


def java_crc32(data: bytes | bytearray | memoryview) -> int:
    """`UtilAll.crc32`: java.util.zip.CRC32 masked with 0x7FFFFFFF."""
    return zlib.crc32(data) & 0x7FFFFFFF


def java_string_hash(text: str) -> int:
    """Java `String.hashCode()` (over UTF-16 code units) as a signed i32."""
    units = text.encode("utf-16-be", "surrogatepass")
    h = 0
    for (u,) in struct.iter_unpack(">H", units):
        h = (31 * h + u) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def tags_code(tags: str | None) -> int:
    """Consume-queue tag code of a (non-schedule) message: hashCode of TAGS, 0 if none."""
    return java_string_hash(tags) if tags else 0


def message_length(version: int, sys_flag: int, body_len: int, topic_len: int,
                   properties_len: int) -> int:
    """`MessageExtEncoder.calMsgLength`."""
    born = 20 if sys_flag & BORNHOST_V6_FLAG else 8
    store = 20 if sys_flag & STOREHOST_V6_FLAG else 8
    return (68 + born + store + 4 + max(body_len, 0) + (2 if version == 2 else 1) + topic_len
            + 2 + max(properties_len, 0))


def parse_properties(text: str) -> dict[str, str]:
    """`MessageDecoder.string2messageProperties`: keep pairs with a non-empty key and value."""
    out: dict[str, str] = {}
    for part in text.split(PROPERTY_SEPARATOR):
        if len(part) < 3:
            continue
        key, sep, value = part.partition(NAME_VALUE_SEPARATOR)
        if sep and key and value:
            out[key] = value
    return out


def encode_properties(properties: Mapping[str, str]) -> bytes:
    """`MessageDecoder.messageProperties2String`: `key 0x01 value 0x02` for each pair."""
    parts = []
    for key, value in properties.items():
        if NAME_VALUE_SEPARATOR in key or PROPERTY_SEPARATOR in key or PROPERTY_SEPARATOR in value:
            raise ValueError(f"property {key!r} contains a separator character")
        parts.append(f"{key}{NAME_VALUE_SEPARATOR}{value}{PROPERTY_SEPARATOR}")
    return "".join(parts).encode("utf-8")


def _decode_host(raw: bytes) -> str:
    if len(raw) == 8:
        return f"{raw[0]}.{raw[1]}.{raw[2]}.{raw[3]}:{_I32.unpack_from(raw, 4)[0]}"
    return f"[{ipaddress.IPv6Address(raw[:16]).compressed}]:{_I32.unpack_from(raw, 16)[0]}"



def encode_host(host: str) -> bytes:
    """`"a.b.c.d:port"` or `"[v6]:port"` -> address bytes + i32 port (8 or 20 bytes)."""
    addr, sep, port = host.rpartition(":")
    if not sep:
        raise ValueError(f"host {host!r} has no port")
    ip = ipaddress.ip_address(addr.strip("[]"))
    return ip.packed + _I32.pack(int(port))


def message_id(store_host_raw: bytes, physical_offset: int) -> str:
    """offsetMsgId: upper-case hex of store host address, port and physical offset."""
    return (store_host_raw + struct.pack(">q", physical_offset)).hex().upper()


def decode_property_crc(value: str) -> int | None:
    """`__CRC32#` digits are least-significant first (MessageDecoder.createCrc32)."""
    if len(value) != 10 or not value.isascii() or not value.isdigit():
        return None
    return int(value[::-1])


def encode_property_crc(crc: int) -> bytes:
    digits = "".join(str((crc // 10**i) % 10) for i in range(10))
    return f"{PROPERTY_CRC32}{NAME_VALUE_SEPARATOR}{digits}{PROPERTY_SEPARATOR}".encode()


@dataclass(slots=True)
class Message:
    """One commitlog record (kind "message") or BLANK filler (kind "blank")."""

    kind: str
    position: int
    size: int
    magic: int
    file_start: int = 0
    physical_offset: int = 0
    body_crc: int = 0
    crc_valid: bool = True
    queue_id: int = 0
    flag: int = 0
    queue_offset: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: str = ""
    store_timestamp: int = 0
    store_host: str = ""
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    body: bytes = b""
    topic: str = ""
    properties: dict[str, str] = field(default_factory=dict)
    properties_raw: bytes = b""
    msg_id: str = ""
    prop_crc: int | None = None          # value of the `__CRC32#` property, if any
    prop_crc_valid: bool | None = None   # None when absent or not checked

    @property
    def commitlog_offset(self) -> int:
        """Where the record really is in the commit log (file start + position)."""
        return self.file_start + self.position

    @property
    def version(self) -> int:
        return 2 if self.magic == MAGIC_V2 else 1

    @property
    def tags_code(self) -> int:
        return tags_code(self.properties.get("TAGS"))


def _bad(code: str, msg: str, pos: int, file_start: int) -> FormatError:
    return FormatError(code, msg, position=pos, offset=file_start + pos)


def read_message(buf: bytes | memoryview, pos: int, *, file_start: int = 0,
                 check_crc: bool = True) -> Message:
    """Decode the record at `pos` of a mapped file (`buf` is the whole file).

    Raises `FormatError` (bad magic, impossible size, truncated record, malformed
    BLANK); CRC results are reported in `crc_valid` / `prop_crc_valid`, not raised.
    """
    end = len(buf)
    if end - pos < 8:
        raise _bad("ROCKETMQ_MESSAGE_BAD_SIZE", f"only {end - pos} bytes left at {pos}", pos, file_start)
    total, magic = _PREFIX.unpack_from(buf, pos)
    if magic == MAGIC_BLANK:
        if total < END_FILE_MIN_BLANK_LENGTH or total > end - pos:
            raise _bad("ROCKETMQ_BLANK_INVALID", f"BLANK size {total} at {pos} does not fit the file "
                       f"({end - pos} bytes left)", pos, file_start)
        return Message("blank", pos, total, magic, file_start)
    if magic != MAGIC_V1 and magic != MAGIC_V2:
        raise _bad("ROCKETMQ_MESSAGE_BAD_MAGIC", f"magic 0x{magic & 0xFFFFFFFF:08X} at {pos}", pos, file_start)
    if total < MIN_MESSAGE_SIZE or total > end - pos:
        raise _bad("ROCKETMQ_MESSAGE_BAD_SIZE", f"total size {total} at {pos} impossible "
                   f"({end - pos} bytes left in the file)", pos, file_start)
    return _decode_fields(buf, pos, total, magic, file_start, check_crc)


def _decode_fields(buf: bytes | memoryview, pos: int, total: int, magic: int, file_start: int,
                   check_crc: bool) -> Message:
    (_, _, body_crc, queue_id, flag, queue_offset, physical_offset, sys_flag,
     born_ts) = _HEAD.unpack_from(buf, pos)
    b6, s6 = bool(sys_flag & BORNHOST_V6_FLAG), bool(sys_flag & STOREHOST_V6_FLAG)
    mid = _MIDDLE[(b6, s6)]
    rec_end = pos + total
    p = pos + _HEAD_SIZE
    if p + mid.size > rec_end:
        raise _bad("ROCKETMQ_MESSAGE_BAD_SIZE", f"host fields run past the record at {pos}", pos, file_start)
    (born_ip, born_port, store_ts, store_ip, store_port, reconsume, prepared,
     body_len) = mid.unpack_from(buf, p)
    p += mid.size
    if body_len < 0 or p + body_len > rec_end:
        raise _bad("ROCKETMQ_MESSAGE_BAD_SIZE", f"body length {body_len} at {pos} exceeds the record",
                   pos, file_start)
    body = bytes(buf[p:p + body_len])
    p += body_len
    tl_struct = _I16 if magic == MAGIC_V2 else _I8
    if p + tl_struct.size > rec_end:
        raise _bad("ROCKETMQ_MESSAGE_BAD_SIZE", f"topic length runs past the record at {pos}", pos, file_start)
    (topic_len,) = tl_struct.unpack_from(buf, p)
    p += tl_struct.size
    if topic_len < 0 or p + topic_len + 2 > rec_end:
        raise _bad("ROCKETMQ_MESSAGE_BAD_SIZE", f"topic length {topic_len} at {pos} exceeds the record",
                   pos, file_start)
    topic = bytes(buf[p:p + topic_len]).decode("utf-8", "replace")
    p += topic_len
    (props_len,) = _I16.unpack_from(buf, p)
    p += 2
    if props_len < 0 or p + props_len != rec_end:
        raise _bad("ROCKETMQ_MESSAGE_BAD_SIZE", f"total size {total} at {pos} disagrees with the "
                   f"field lengths (properties length {props_len})", pos, file_start)
    props_raw = bytes(buf[p:rec_end])
    props = parse_properties(props_raw.decode("utf-8", "replace")) if props_raw else {}
    born_raw = born_ip + _I32.pack(born_port)
    store_raw = store_ip + _I32.pack(store_port)
    crc_valid = True
    prop_crc = prop_ok = None
    if PROPERTY_CRC32 in props:
        prop_crc = decode_property_crc(props[PROPERTY_CRC32])
    if check_crc:
        crc_valid = java_crc32(body) == body_crc
        if PROPERTY_CRC32 in props:
            prop_ok = (prop_crc is not None and total >= CRC32_RESERVED_LEN
                       and java_crc32(buf[pos:rec_end - CRC32_RESERVED_LEN]) == prop_crc)
    return Message(
        "message", pos, total, magic, file_start, physical_offset, body_crc, crc_valid, queue_id,
        flag, queue_offset, sys_flag, born_ts, _decode_host(born_raw), store_ts,
        _decode_host(store_raw), reconsume, prepared, body, topic, props, props_raw,
        message_id(store_raw, physical_offset), prop_crc, prop_ok)


# --- writer -----------------------------------------------------------------------------------

def build_blank(size: int) -> bytes:
    """The 8 bytes the broker writes for an end-of-file filler of `size` bytes.

    Only the header is written (the rest of the file stays as it was, normally zeros).
    """
    if size < END_FILE_MIN_BLANK_LENGTH:
        raise ValueError(f"BLANK filler needs at least {END_FILE_MIN_BLANK_LENGTH} bytes, got {size}")
    return _PREFIX.pack(size, MAGIC_BLANK)


def build_message(*, topic: str, body: bytes = b"", properties: Mapping[str, str] | bytes | None = None,
                  queue_id: int = 0, flag: int = 0, queue_offset: int = 0, physical_offset: int = 0,
                  sys_flag: int = 0, born_timestamp: int = 0, born_host: str = "127.0.0.1:0",
                  store_timestamp: int = 0, store_host: str = "127.0.0.1:0", reconsume_times: int = 0,
                  prepared_transaction_offset: int = 0, version: int | None = None,
                  body_crc: int | None = None, prop_crc: bool = False) -> bytes:
    """Encode one record as the broker stores it.

    `version` None picks V2 when the topic has more than 127 characters, like
    `autoMessageVersionOnTopicLen`. The host-v6 sysflag bits follow the hosts'
    address families. `prop_crc` appends the 5.2+ `__CRC32#` tail
    (`enabledAppendPropCRC`). `body_crc` overrides the computed CRC (for damage tests).
    """
    born_raw, store_raw = encode_host(born_host), encode_host(store_host)
    sys_flag = (sys_flag & ~(BORNHOST_V6_FLAG | STOREHOST_V6_FLAG)) \
        | (BORNHOST_V6_FLAG if len(born_raw) == 20 else 0) | (STOREHOST_V6_FLAG if len(store_raw) == 20 else 0)
    topic_raw = topic.encode("utf-8")
    if version is None:
        version = 2 if len(topic) > MAX_TOPIC_LEN_V1 else 1
    if version not in (1, 2) or len(topic_raw) > (MAX_TOPIC_LEN_V1 if version == 1 else 32767):
        raise ValueError(f"topic of {len(topic_raw)} bytes does not fit message version {version}")
    props = properties if isinstance(properties, bytes) else encode_properties(properties or {})
    if prop_crc:
        if props and not props.endswith(b"\x02"):
            props += b"\x02"
        props += bytes(CRC32_RESERVED_LEN)
    if len(props) > MAX_PROPERTIES_LEN:
        raise ValueError(f"properties of {len(props)} bytes exceed {MAX_PROPERTIES_LEN}")
    total = message_length(version, sys_flag, len(body), len(topic_raw), len(props))
    out = bytearray(_HEAD.pack(
        total, MAGIC_V2 if version == 2 else MAGIC_V1, java_crc32(body) if body_crc is None else body_crc,
        queue_id, flag, queue_offset, physical_offset, sys_flag, born_timestamp))
    out += born_raw + struct.pack(">q", store_timestamp) + store_raw
    out += struct.pack(">iqi", reconsume_times, prepared_transaction_offset, len(body)) + body
    out += (_I16.pack(len(topic_raw)) if version == 2 else _I8.pack(len(topic_raw))) + topic_raw
    out += _I16.pack(len(props)) + props
    if prop_crc:
        out[-CRC32_RESERVED_LEN:] = encode_property_crc(java_crc32(out[:-CRC32_RESERVED_LEN]))
    return bytes(out)


def encode_message(msg: Message) -> bytes:
    """Re-encode a decoded record byte for byte (stored CRC and raw properties kept)."""
    if msg.kind == "blank":
        return build_blank(msg.size)
    return build_message(
        topic=msg.topic, body=msg.body, properties=msg.properties_raw, queue_id=msg.queue_id,
        flag=msg.flag, queue_offset=msg.queue_offset, physical_offset=msg.physical_offset,
        sys_flag=msg.sys_flag, born_timestamp=msg.born_timestamp, born_host=msg.born_host,
        store_timestamp=msg.store_timestamp, store_host=msg.store_host,
        reconsume_times=msg.reconsume_times, prepared_transaction_offset=msg.prepared_transaction_offset,
        version=msg.version, body_crc=msg.body_crc)


@dataclass(frozen=True, slots=True)
class Appended:
    """Where `CommitLogWriter.append` put a record."""

    physical_offset: int
    size: int
    queue_offset: int


class CommitLogWriter:
    """Lays records into fixed-size mapped files exactly as `DefaultAppendMessageCallback` does.

    A record that does not fit with `END_FILE_MIN_BLANK_LENGTH` to spare closes
    the file with a BLANK header and starts the next file. Queue offsets are
    assigned per (topic, queue id) unless given; PREPARED/ROLLBACK get 0.
    """

    def __init__(self, file_size: int = DEFAULT_FILE_SIZE, *, start_offset: int = 0,
                 store_host: str = "127.0.0.1:10911", prop_crc: bool = False) -> None:
        if file_size <= MIN_MESSAGE_SIZE + END_FILE_MIN_BLANK_LENGTH:
            raise ValueError(f"file size {file_size} too small")
        self.file_size = file_size
        self.store_host = store_host
        self.prop_crc = prop_crc
        self._files: dict[int, bytearray] = {}
        self._file_start = start_offset - start_offset % file_size
        self._write_pos = start_offset % file_size
        self._queue_offsets: dict[tuple[str, int], int] = defaultdict(int)

    @property
    def max_offset(self) -> int:
        """Logical end of the log (next physical offset to write)."""
        return self._file_start + self._write_pos

    def _current(self) -> bytearray:
        if self._file_start not in self._files:
            self._files[self._file_start] = bytearray(self.file_size)
        return self._files[self._file_start]

    def append(self, *, topic: str, body: bytes = b"", queue_id: int = 0,
               queue_offset: int | None = None, store_host: str | None = None,
               prop_crc: bool | None = None, **fields: Any) -> Appended:
        """Append one message; `fields` are the other `build_message` keywords."""
        sys_flag = int(fields.get("sys_flag", 0))
        tran = sys_flag & TRANSACTION_MASK
        key = (topic, queue_id)
        qoff = queue_offset if queue_offset is not None else (
            0 if tran in (TRANSACTION_PREPARED, TRANSACTION_ROLLBACK) else self._queue_offsets[key])
        kwargs = dict(fields, topic=topic, body=body, queue_id=queue_id, queue_offset=qoff,
                      store_host=store_host or self.store_host,
                      prop_crc=self.prop_crc if prop_crc is None else prop_crc)
        size = len(build_message(**kwargs))
        if size + END_FILE_MIN_BLANK_LENGTH > self.file_size:
            raise ValueError(f"a {size}-byte message can never fit a {self.file_size}-byte file")
        if size + END_FILE_MIN_BLANK_LENGTH > self.file_size - self._write_pos:
            self.close_file()
        pos = self._write_pos
        raw = build_message(physical_offset=self._file_start + pos, **kwargs)
        self._current()[pos:pos + size] = raw
        self._write_pos += size
        if queue_offset is None and tran not in (TRANSACTION_PREPARED, TRANSACTION_ROLLBACK):
            self._queue_offsets[key] = qoff + 1
        elif queue_offset is not None:
            self._queue_offsets[key] = max(self._queue_offsets[key], queue_offset + 1)
        return Appended(self._file_start + pos, size, qoff)

    def close_file(self) -> None:
        """Fill the rest of the current file with a BLANK and move to the next file."""
        if self._write_pos == 0:
            return
        buf = self._current()
        blank = self.file_size - self._write_pos
        buf[self._write_pos:self._write_pos + 8] = build_blank(blank)
        self._file_start += self.file_size
        self._write_pos = 0

    def files(self) -> dict[int, bytes]:
        """File start offset -> full-size file content (unwritten tail zero)."""
        return {start: bytes(buf) for start, buf in sorted(self._files.items())}

    def write_to(self, directory: str | os.PathLike[str]) -> list[Path]:
        """Write every file as `<20-digit start offset>` under `directory` (atomic writes)."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        paths = []
        for start, data in self.files().items():
            path = out / file_name(start)
            atomic_write(path, data)
            paths.append(path)
        return paths


# --- walker -----------------------------------------------------------------------------------

def commitlog_files(source: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]
                    ) -> list[tuple[int, Path]]:
    """(start offset, path) of the mapped files of a store root, commitlog dir or file list.

    In a directory only 20-digit names count; a listed file with another name is
    returned with offset -1 so the walker can report it.
    """
    if isinstance(source, (str, os.PathLike)):
        root = Path(source)
        if root.is_file():
            paths = [root]
        else:
            d = root / "commitlog" if (root / "commitlog").is_dir() else root
            paths = [p for _, p in offset_files(d)]
    else:
        paths = [Path(p) for p in source]
    named = [(int(p.name) if is_offset_name(p.name) else -1, p) for p in paths]
    return sorted(named, key=lambda t: (t[0], t[1].name))


def deleted_at_load(files: list[tuple[int, Path]], size_of: dict[Path, int]) -> Path | None:
    """The file a broker deletes when it loads the commit log: the last one when it is empty (a mapped
    file created and never written). RocketMQ 5.1.3+ deletes it (`MappedFileQueue.doLoad`: "size is 0,
    auto delete", the last file only); 4.x and 5.0-5.1.2 refuse to load it ("length not matched")."""
    return files[-1][1] if files and size_of.get(files[-1][1]) == 0 else None


def infer_file_size(sizes: Iterable[int]) -> int | None:
    """The most common non-zero file size (ties: the largest); None if there is none."""
    counts = Counter(s for s in sizes if s > 0)
    if not counts:
        return None
    return max(counts.items(), key=lambda kv: (kv[1], kv[0]))[0]
