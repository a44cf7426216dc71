"""RocketMQ 5.x `storeType=defaultRocksDB`: consume queues, queue offsets and config kept in RocksDB.

Where each database lives (tag rocketmq-all-5.3.3, docs/reference/rocketmq.md §14):
- `<store>/consumequeue/` is itself a RocksDB (`RocksDBConsumeQueueStore`: `StorePathConfigHelper.
  getStorePathConsumeQueue`), column families `default` (CQ units, `RocksDBConsumeQueueTable`) and `offset`
  (max/min queue offsets, `RocksDBConsumeQueueOffsetTable`; `ConsumeQueueRocksDBStorage.OFFSET_COLUMN_FAMILY`).
- `<store>/config/consumerOffsets/`, `config/topics/`, `config/subscriptionGroups/` are `ConfigRocksDBStorage`s
  (`RocksDBConsumerOffsetManager#rocksdbConfigFilePath` and its siblings), column families `default` (name ->
  JSON), `kvDataVersion` (`kvDataVersionKey` -> DataVersion JSON) and `forbidden`.

Every column family uses RocksDB's default bytewise comparator (`RocksDBOptionsFactory`, `ConfigHelper` set none);
the `StringAppendOperator` merge operator and the CQ compaction filter matter only to writers. Keys are built with
the control bytes `AbstractRocksDBStorage.CTRL_0/1/2` (0x00, 0x01, 0x02), all integers big-endian (Java ByteBuffer):

- CQ key: topicLen(4) 0x01 topic 0x01 queueId(4) 0x01 cqOffset(8); value: phyOffset(8) size(4) tagsCode(8)
  storeTime(8) (`RocksDBConsumeQueueTable`, CQ_UNIT_SIZE 28).
- offset key: topicLen(4) 0x01 topic 0x01 "max"|"min" 0x01 queueId(4); value: phyOffset(8) cqOffset(8). The
  topic `CHECKPOINT_TOPIC` (`TopicValidator.RMQ_SYS_ROCKSDB_OFFSET_TOPIC`) holds the max physical offset the CQ
  dispatch built, an 8-byte value (`RocksDBConsumeQueueOffsetTable`).

The databases are evidence and must not change. rocksdict's read-only open still writes a `rocksdict-config.json`
into the directory it opens, so each database is copied (its regular files, read only) to a private temporary
directory and the copy is opened read-only; the input directory is never opened by RocksDB at all.
"""
from __future__ import annotations

import json
import shutil
import struct
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from replog.formats.errors import UnreadableInput
from replog.formats.fileio import is_regular

CTRL_0, CTRL_1, CTRL_2 = 0, 1, 2
CQ_UNIT_SIZE = 28
OFFSET_VALUE_SIZE = 16
CHECKPOINT_TOPIC = "CHECKPOINT_TOPIC"
OFFSET_CF = "offset"
KV_DATA_VERSION_CF = "kvDataVersion"
KV_DATA_VERSION_KEY = b"kvDataVersionKey"
CONSUMEQUEUE = "consumequeue"
CONFIG_DBS = {"consumerOffsets": "consumerOffset.json", "topics": "topics.json",
              "subscriptionGroups": "subscriptionGroup.json"}   # RocksDB dir under config/ -> the JSON it replaces
STORE_TYPE_DEFAULT, STORE_TYPE_ROCKSDB = "default", "defaultRocksDB"
_CQ_KEY = struct.Struct(">iB")


def is_rocksdb_dir(d: Path) -> bool:
    """A RocksDB database directory: a `CURRENT` file naming a `MANIFEST-*` beside it."""
    current = d / "CURRENT"
    if not is_regular(current):
        return False
    try:
        name = current.read_bytes()[:256].decode("ascii", "replace").strip()
    except OSError:
        return False
    return name.startswith("MANIFEST-") and (d / name).exists()


def db_files(d: Path) -> list[Path]:
    """Every regular file of a database directory (CURRENT, MANIFEST-*, OPTIONS-*, *.sst, *.log, IDENTITY, LOCK)."""
    return sorted(p for p in d.iterdir() if is_regular(p)) if d.is_dir() else []


# --- keys and values ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RocksCQUnit:
    """One consume-queue unit of the `default` column family."""

    topic: str
    queue_id: int
    queue_offset: int
    commitlog_offset: int
    size: int
    tags_code: int
    store_timestamp: int


@dataclass(frozen=True, slots=True)
class QueueOffset:
    """One `offset` column family entry: the max (next) or min queue offset of a queue, with its physical offset."""

    topic: str
    queue_id: int
    kind: str            # "max" | "min"
    commitlog_offset: int
    queue_offset: int


def _topic_prefix(key: bytes) -> tuple[str, int] | None:
    """(topic, index after the topic's trailing CTRL_1) of `topicLen(4) 0x01 topic 0x01`, or None."""
    if len(key) < 5:
        return None
    n, ctrl = _CQ_KEY.unpack_from(key, 0)
    end = 5 + n
    if ctrl != CTRL_1 or n < 0 or len(key) <= end or key[end] != CTRL_1:
        return None
    try:
        return key[5:end].decode("utf-8"), end + 1
    except UnicodeDecodeError:
        return None


def cq_key(topic: str, queue_id: int, queue_offset: int) -> bytes:
    """`RocksDBConsumeQueueTable#buildCQKeyByteBuffer0`."""
    t = topic.encode("utf-8")
    return struct.pack(">iB", len(t), CTRL_1) + t + struct.pack(">BiBq", CTRL_1, queue_id, CTRL_1, queue_offset)


def decode_cq(key: bytes, value: bytes) -> RocksCQUnit | str:
    """A unit, or what is wrong with the pair (the broker reads the value at fixed positions)."""
    head = _topic_prefix(key)
    if head is None or len(key) != head[1] + 13 or key[head[1] + 4] != CTRL_1:
        return f"key {key[:64].hex()} is not topicLen 0x01 topic 0x01 queueId 0x01 cqOffset"
    if len(value) != CQ_UNIT_SIZE:
        return f"value of {len(value)} bytes (a unit is {CQ_UNIT_SIZE})"
    qid = struct.unpack_from(">i", key, head[1])[0]
    cq_offset = struct.unpack_from(">q", key, head[1] + 5)[0]
    phy, size, tags, stored = struct.unpack(">qiqq", value)
    return RocksCQUnit(head[0], qid, cq_offset, phy, size, tags, stored)


def decode_offset(key: bytes, value: bytes) -> QueueOffset | int | str:
    """An offset entry; the dispatch checkpoint (CHECKPOINT_TOPIC, 8-byte value) as its physical offset; else
    what is wrong."""
    head = _topic_prefix(key)
    if head is None or len(key) != head[1] + 8 or key[head[1] + 3] != CTRL_1:
        return f"key {key[:64].hex()} is not topicLen 0x01 topic 0x01 max|min 0x01 queueId"
    topic, at = head
    kind = key[at:at + 3].decode("latin-1")
    if topic == CHECKPOINT_TOPIC and len(value) == 8:
        return int(struct.unpack(">q", value)[0])
    if kind not in ("max", "min") or len(value) != OFFSET_VALUE_SIZE:
        return f"{topic}: {kind!r} entry with a {len(value)}-byte value"
    phy, cq = struct.unpack(">qq", value)
    return QueueOffset(topic, struct.unpack_from(">i", key, at + 4)[0], kind, phy, cq)


# --- opening ------------------------------------------------------------------------------------------------------


@contextmanager
def open_copy(d: Path) -> Iterator[Any]:
    """The database of `d`, copied to a private temporary directory and opened read-only there with every column
    family; raises `UnreadableInput` naming the reason (no binding, open failed)."""
    try:
        from rocksdict import AccessType, Options, Rdict
    except ImportError as e:
        raise UnreadableInput(f"{d}: a RocksDB store; the rocksdict binding is not installed ({e})") from None
    with tempfile.TemporaryDirectory(prefix="replog-rocksdb-") as tmp:
        copy = Path(tmp) / "db"
        copy.mkdir()
        for p in db_files(d):
            if p.name != "LOCK":
                shutil.copyfile(p, copy / p.name)
        try:
            families = Rdict.list_cf(str(copy), Options(raw_mode=True))
            db = Rdict(str(copy), options=Options(raw_mode=True), access_type=AccessType.read_only(False),
                       column_families={c: Options(raw_mode=True) for c in families if c != "default"})
        except Exception as e:  # noqa: BLE001 - the binding raises plain Exception for every RocksDB status
            raise UnreadableInput(f"{d}: RocksDB will not open it read-only: {e}") from None
        try:
            yield db
        finally:
            db.close()


def _family(db: Any, name: str) -> Any:
    try:
        return db if name == "default" else db.get_column_family(name)
    except Exception:  # noqa: BLE001 - a missing family
        return None


class ConsumeQueueDB:
    """An opened copy of a RocksDB consume-queue store: its units and its offset table."""

    def __init__(self, db: Any) -> None:
        self.db = db

    def units(self) -> Iterator[RocksCQUnit | str]:
        """Every unit in key order (topic length, topic, queue, queue offset), or a message per pair the broker
        could not read."""
        for k, v in self.db.items():
            yield decode_cq(bytes(k), bytes(v))

    def offsets(self) -> tuple[list[QueueOffset], int | None, list[str]]:
        """(max/min entries of the `offset` family, the dispatch checkpoint's physical offset, malformed pairs)."""
        entries: list[QueueOffset] = []
        problems: list[str] = []
        checkpoint = None
        cf = _family(self.db, OFFSET_CF)
        for k, v in (cf.items() if cf is not None else ()):
            got = decode_offset(bytes(k), bytes(v))
            if isinstance(got, QueueOffset):
                entries.append(got)
            elif isinstance(got, int):
                checkpoint = got
            else:
                problems.append(got)
        return entries, checkpoint, problems


@contextmanager
def consume_queue_db(d: Path) -> Iterator[ConsumeQueueDB]:
    """One private copy of `d`, opened read-only, for as many passes as the caller makes."""
    with open_copy(d) as db:
        yield ConsumeQueueDB(db)


def cq_entries(d: Path) -> Iterator[RocksCQUnit | str]:
    """`ConsumeQueueDB.units` of a fresh copy of `d`."""
    with consume_queue_db(d) as cq:
        yield from cq.units()


@dataclass
class ConfigTable:
    """A `ConfigRocksDBStorage`: its default family as name -> parsed JSON, and its kvDataVersion."""

    path: Path
    table: dict[str, Any]
    data_version: dict[str, Any] | None
    problems: list[str]

    @property
    def counter(self) -> int:
        c = (self.data_version or {}).get("counter")
        return c if isinstance(c, int) else 0


def read_config_db(d: Path) -> ConfigTable:
    """`RocksDBConfigManager#loadData` and `#loadDataVersion`: every key (UTF-8) with its JSON value."""
    table: dict[str, Any] = {}
    problems: list[str] = []
    version = None
    with open_copy(d) as db:
        for k, v in db.items():
            name = bytes(k).decode("utf-8", "replace")
            try:
                table[name] = json.loads(bytes(v))
            except ValueError as e:
                problems.append(f"{name}: value is not JSON ({e})")
        cf = _family(db, KV_DATA_VERSION_CF)
        raw = cf.get(KV_DATA_VERSION_KEY) if cf is not None else None
        if raw:
            try:
                version = json.loads(bytes(raw))
            except ValueError as e:
                problems.append(f"kvDataVersion is not JSON ({e})")
    return ConfigTable(d, table, version if isinstance(version, dict) else None, problems)


def offset_table(cfg: ConfigTable) -> dict[str, dict[int, int]]:
    """"topic@group" -> {queue id: offset} of a consumerOffsets database (`RocksDBOffsetSerializeWrapper` JSON:
    {"offsetTable": {"<queueId>": offset}})."""
    out: dict[str, dict[int, int]] = {}
    for key, doc in cfg.table.items():
        queues = doc.get("offsetTable") if isinstance(doc, dict) else None
        if isinstance(queues, dict):
            out[key] = {int(q): o for q, o in queues.items() if str(q).lstrip("-").isdigit() and isinstance(o, int)}
    return out


def store_type(root: Path) -> str:
    """`defaultRocksDB` when `consumequeue/` is a RocksDB database, or when there is no `consumequeue/` and
    `config/consumerOffsets` is a RocksDB (only a defaultRocksDB broker keeps one: `BrokerController#<init>` creates
    `RocksDBConsumerOffsetManager` only when `isEnableRocksDBStore`; a `recover`/`repair` output leaves the
    consume-queue database out for the broker to rebuild, `rocksdb_repair`); else `default` (file consume queues)."""
    cq = root / CONSUMEQUEUE
    if is_rocksdb_dir(cq) or (not cq.exists() and is_rocksdb_dir(root / "config" / "consumerOffsets")):
        return STORE_TYPE_ROCKSDB
    return STORE_TYPE_DEFAULT


def config_dbs(root: Path) -> dict[str, Path]:
    """The config databases present under `root/config`, by directory name."""
    return {name: root / "config" / name for name in CONFIG_DBS if is_rocksdb_dir(root / "config" / name)}
