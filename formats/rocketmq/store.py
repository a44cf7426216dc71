"""Recognising a RocketMQ store root by its content and listing its files.

Layout (docs/reference/rocketmq.md §1): `commitlog/` (20-digit files), `consumequeue/<topic>/<queueId>/`,
`index/` (17-digit local-time names), `checkpoint` (4 KiB), `abort`, `lock`,
`config/*.json`, `epochFileCheckpoint`, `brokerIdentity`. A DLedger commit log (4.5-4.9 `enableDLegerCommitLog`)
lives in `dledger-<selfId>/` beside them (`DLedgerConfig#getDefaultPath` under `storePathRootDir`), or under
`commitlog/` when the broker's root was set that way: its format is `dledger`'s.
With `storeType=defaultRocksDB` (5.x)
`consumequeue/` is a RocksDB database and `config/consumerOffsets|topics|subscriptionGroups/` are too
(`rocksdb_store`, §14).
"""
from __future__ import annotations

import os
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from replog.formats.errors import UnreadableInput
from replog.formats.fileio import is_regular, open_regular
from replog.formats.rocketmq.abort import ABORT, ABORT_BAK, LOCK
from replog.formats.rocketmq.checkpoint import FILE_SIZE as CHECKPOINT_SIZE
from replog.formats.rocketmq.commitlog import MAGIC_BLANK, MAGIC_V1, MAGIC_V2
from replog.formats.rocketmq.dledger import find_peers
from replog.formats.rocketmq.offset_names import is_offset_name
from replog.formats.rocketmq.rocksdb_store import STORE_TYPE_DEFAULT, config_dbs, store_type

_INDEX_NAME = re.compile(r"^\d{17}$")
_QUEUE_ID = re.compile(r"^\d+$")
_MAGICS = {MAGIC_V1, MAGIC_V2, MAGIC_BLANK, 0}

CHECKPOINT = "checkpoint"
BATCH_CONSUME_QUEUE = "batchconsumequeue"   # StorePathConfigHelper#getStorePathBatchConsumeQueue
# Store paths of features replog names but does not check (apache/rocketmq 5.3.3): path relative to the root ->
# what it is and where the broker defines it. Their files are hashed for the manifest and reported once per path.
FEATURES = {
    "compaction": "compacted topics' store (compactionLog/, compactionCq/, position-checkpoint; "
                  "store/kv/CompactionStore, CompactionPositionMgr)",
    "config/tieredStoreMetadata.json": "tiered storage metadata (tieredstore/metadata/DefaultMetadataStore)",
    "config/rdb": "RocksDB-backed metadata (broker/config/v2/ConfigStorage)",
    "config/topics": "RocksDB-backed topic config (broker/config/v1/RocksDBTopicConfigManager)",
    "config/consumerOffsets": "RocksDB-backed consumer offsets (broker/config/v1/RocksDBConsumerOffsetManager)",
    "config/subscriptionGroups": "RocksDB-backed subscription groups "
                                 "(broker/config/v1/RocksDBSubscriptionGroupManager)",
    "config/transactionMetrics": "half messages per topic (broker/transaction/TransactionMetrics)",
    "transaction": "4.x transaction state table and redo log (StorePathConfigHelper#getTranStateTableStorePath)",
}
EPOCH_FILE = "epochFileCheckpoint"
BROKER_IDENTITY = "brokerIdentity"


@dataclass
class StoreLayout:
    """Files found under a store root (paths; nothing is opened beyond a few header bytes)."""

    root: Path
    commitlog_files: list[Path] = field(default_factory=list)
    consume_queues: dict[tuple[str, int], list[Path]] = field(default_factory=dict)
    consume_queue_ext: dict[tuple[str, int], list[Path]] = field(default_factory=dict)
    batch_consume_queues: dict[tuple[str, int], list[Path]] = field(default_factory=dict)
    index_files: list[Path] = field(default_factory=list)
    checkpoint: Path | None = None
    abort: Path | None = None
    abort_bak: Path | None = None
    lock: Path | None = None
    config_files: list[Path] = field(default_factory=list)
    epoch_file: Path | None = None
    broker_identity: Path | None = None
    dledger: bool = False
    store_type: str = STORE_TYPE_DEFAULT          # "defaultRocksDB" when consumequeue/ is a RocksDB database
    config_dbs: dict[str, Path] = field(default_factory=dict)   # RocksDB config stores by dir name

    @property
    def rocksdb(self) -> bool:
        return self.store_type != STORE_TYPE_DEFAULT
    dledger_dirs: list[Path] = field(default_factory=list)    # `dledger-<selfId>` dirs holding `data/`

    @property
    def commitlog_dir(self) -> Path:
        return self.root / "commitlog"

    @property
    def unclean_shutdown(self) -> bool:
        return self.abort is not None


def _files(d: Path, named: Callable[[str], bool]) -> list[Path]:
    if not d.is_dir():
        return []
    return sorted(p for p in d.iterdir() if is_regular(p) and named(p.name))


def _is_index_name(name: str) -> bool:
    """An index file's name: its creation time, 17 digits (`IndexService#getAndCreateLastIndexFile` names it
    `UtilAll.timeMillisToHumanString`, yyyyMMddHHmmssSSS)."""
    return _INDEX_NAME.match(name) is not None


def _queues(d: Path) -> dict[tuple[str, int], list[Path]]:
    out: dict[tuple[str, int], list[Path]] = {}
    if not d.is_dir():
        return out
    for topic in sorted(p for p in d.iterdir() if p.is_dir()):
        for q in sorted(p for p in topic.iterdir() if p.is_dir() and _QUEUE_ID.match(p.name)):
            out[(topic.name, int(q.name))] = _files(q, is_offset_name)
    return out


def _opt(p: Path) -> Path | None:
    return p if p.is_file() else None


def _looks_like_commitlog(path: Path) -> bool:
    """First record's magic is V1, V2, BLANK, or the file starts unwritten: zeros, or no byte at all (a
    mapped file the broker created and never wrote; it deletes an empty last file when it loads)."""
    try:
        fd = open_regular(path)
    except UnreadableInput:
        return False
    try:
        head = os.pread(fd, 8, 0)
    except OSError:
        return False
    finally:
        os.close(fd)
    return not head or (len(head) == 8 and struct.unpack(">ii", head)[1] in _MAGICS)


def scan_store(root: str | os.PathLike[str]) -> StoreLayout:
    """List the store files under `root` (whether or not it really is a store)."""
    r = Path(root)
    cl = r / "commitlog"
    cfg = r / "config"
    peers = find_peers(r)
    return StoreLayout(
        root=r,
        commitlog_files=_files(cl, is_offset_name),
        consume_queues=_queues(r / "consumequeue"),
        consume_queue_ext=_queues(r / "consumequeue_ext"),
        batch_consume_queues=_queues(r / BATCH_CONSUME_QUEUE),
        index_files=_files(r / "index", _is_index_name),
        checkpoint=_opt(r / CHECKPOINT),
        abort=_opt(r / ABORT),
        abort_bak=_opt(r / ABORT_BAK),
        lock=_opt(r / LOCK),
        config_files=sorted(p for p in cfg.glob("*.json")) if cfg.is_dir() else [],
        epoch_file=_opt(r / EPOCH_FILE),
        broker_identity=_opt(r / BROKER_IDENTITY),
        dledger=bool(peers) or _dledger_named(cl),
        dledger_dirs=peers,
        store_type=store_type(r),
        config_dbs=config_dbs(r),
    )


def _dledger_named(commitlog: Path) -> bool:
    """A `commitlog/dledger-*` dir, even without `data/` yet: DLedger's, never a plain commit log."""
    return commitlog.is_dir() and any(p.is_dir() and p.name.startswith("dledger-") for p in commitlog.iterdir())


def is_rocketmq_store(path: str | os.PathLike[str]) -> bool:
    """True when `path` holds a commit log whose files look like RocketMQ segments, or
    a 4 KiB checkpoint next to a commitlog/ dir (empty: a new slave), consume queues, index files or
    broker config."""
    return detect_store(path) is not None


def _empty_commitlog(root: Path, layout: StoreLayout) -> bool:
    """A `commitlog/` dir without a segment yet (files that are not a commit log's do not count as empty)."""
    return (root / "commitlog").is_dir() and not layout.commitlog_files


def detect_store(path: str | os.PathLike[str]) -> StoreLayout | None:
    """`StoreLayout` of `path` if its content says RocketMQ store, else None."""
    r = Path(path)
    if not r.is_dir():
        return None
    layout = scan_store(r)
    if layout.dledger:
        return layout
    if layout.commitlog_files and _looks_like_commitlog(layout.commitlog_files[0]):
        return layout
    cp = layout.checkpoint
    if cp is not None and cp.stat().st_size == CHECKPOINT_SIZE and (
            _empty_commitlog(r, layout) or layout.consume_queues or layout.index_files or layout.config_files
            or layout.rocksdb):
        return layout  # a checkpoint beside an empty commitlog/ is a store too: a freshly started slave
    return None
