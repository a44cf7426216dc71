"""Discovery: a path becomes a typed thing (a file kind, a directory kind).

Detection uses names the way the brokers do and confirms with content where
a name alone could lie (a RocketMQ commitlog file is just 20 digits).
"""
from __future__ import annotations

import os
import re
from enum import StrEnum
from pathlib import Path

from replog.formats.errors import NotRegularFile, UnreadableInput
from replog.formats.fileio import EntryType, entry_type
from replog.formats.kafka import names

_DIGITS20 = re.compile(r"^[0-9]{20}$")


class FileKind(StrEnum):
    KAFKA_SEGMENT = "kafka-segment"
    KAFKA_KRAFT_SNAPSHOT = "kafka-kraft-snapshot"
    KAFKA_OFFSET_INDEX = "kafka-offset-index"
    KAFKA_TIME_INDEX = "kafka-time-index"
    KAFKA_TXN_INDEX = "kafka-txn-index"
    KAFKA_PRODUCER_SNAPSHOT = "kafka-producer-snapshot"
    KAFKA_OFFSET_CHECKPOINT = "kafka-offset-checkpoint"
    KAFKA_EPOCH_CHECKPOINT = "kafka-leader-epoch-checkpoint"
    KAFKA_PARTITION_METADATA = "kafka-partition-metadata"
    KAFKA_META_PROPERTIES = "kafka-meta-properties"
    KAFKA_QUORUM_STATE = "kafka-quorum-state"
    KAFKA_CLEAN_SHUTDOWN = "kafka-clean-shutdown"
    KAFKA_REMOTE_LOG_SNAPSHOT = "kafka-remote-log-snapshot"
    ROCKETMQ_COMMITLOG = "rocketmq-commitlog"
    ROCKETMQ_CONSUMEQUEUE = "rocketmq-consumequeue"
    ROCKETMQ_BATCH_CONSUMEQUEUE = "rocketmq-batch-consumequeue"
    ROCKETMQ_INDEX = "rocketmq-index"
    ROCKETMQ_CHECKPOINT = "rocketmq-checkpoint"
    ROCKETMQ_EPOCH = "rocketmq-epoch-checkpoint"
    ROCKETMQ_CONFIG = "rocketmq-config"
    ROCKETMQ_DLEDGER_DATA = "rocketmq-dledger-data"
    ROCKETMQ_DLEDGER_INDEX = "rocketmq-dledger-index"
    ROCKETMQ_DLEDGER_PROPERTIES = "rocketmq-dledger-properties"
    UNKNOWN = "unknown"


class DirKind(StrEnum):
    KAFKA_LOG_DIR = "kafka-log-dir"
    KAFKA_PARTITION_DIR = "kafka-partition-dir"
    ROCKETMQ_STORE = "rocketmq-store"
    UNKNOWN = "unknown"


_SEGMENT_KINDS = {"log": FileKind.KAFKA_SEGMENT, "index": FileKind.KAFKA_OFFSET_INDEX,
                  "timeindex": FileKind.KAFKA_TIME_INDEX, "txnindex": FileKind.KAFKA_TXN_INDEX,
                  "snapshot": FileKind.KAFKA_PRODUCER_SNAPSHOT}
_NAMED = {names.LEADER_EPOCH_CHECKPOINT: FileKind.KAFKA_EPOCH_CHECKPOINT,
          names.PARTITION_METADATA: FileKind.KAFKA_PARTITION_METADATA,
          names.META_PROPERTIES: FileKind.KAFKA_META_PROPERTIES,
          names.QUORUM_STATE: FileKind.KAFKA_QUORUM_STATE,
          names.CLEAN_SHUTDOWN: FileKind.KAFKA_CLEAN_SHUTDOWN,
          names.REMOTE_LOG_SNAPSHOT: FileKind.KAFKA_REMOTE_LOG_SNAPSHOT,
          names.BOOTSTRAP_CHECKPOINT: FileKind.KAFKA_KRAFT_SNAPSHOT,
          "epochFileCheckpoint": FileKind.ROCKETMQ_EPOCH}


def classify_file(path: str | os.PathLike[str]) -> FileKind:
    """The kind of one file, from its name and, for RocketMQ, its parent dirs."""
    p = Path(path)
    name = p.name
    if name in _NAMED:
        return _NAMED[name]
    if name in names.OFFSET_CHECKPOINT_NAMES:
        return FileKind.KAFKA_OFFSET_CHECKPOINT
    seg = names.parse_segment_file_name(name)
    if seg is not None:
        return _SEGMENT_KINDS[seg.kind]
    if names.parse_kraft_snapshot_name(name) is not None:
        return FileKind.KAFKA_KRAFT_SNAPSHOT
    return _classify_rocketmq(p)


def _classify_rocketmq(p: Path) -> FileKind:
    parents = [q.name for q in p.parents][:4]
    dledger = _classify_dledger(p, parents)
    if dledger is not None:
        return dledger
    if _DIGITS20.match(p.name):
        if parents[:1] == ["commitlog"]:
            return FileKind.ROCKETMQ_COMMITLOG
        if len(parents) >= 3 and parents[2] == "consumequeue":
            return FileKind.ROCKETMQ_CONSUMEQUEUE
        if len(parents) >= 3 and parents[2] == "batchconsumequeue":
            return FileKind.ROCKETMQ_BATCH_CONSUMEQUEUE
    if parents[:1] == ["index"] and re.match(r"^[0-9]{17}$", p.name):
        return FileKind.ROCKETMQ_INDEX
    if p.name == "checkpoint":
        return FileKind.ROCKETMQ_CHECKPOINT
    if parents[:1] == ["config"] and p.name.endswith(".json"):
        return FileKind.ROCKETMQ_CONFIG
    return FileKind.UNKNOWN


def _classify_dledger(p: Path, parents: list[str]) -> FileKind | None:
    """Files of a `dledger-<selfId>` dir (`DLedgerConfig#getDefaultPath`): data/, index/, checkpoint, currterm."""
    if _DIGITS20.match(p.name) and len(parents) >= 2 and parents[1].startswith("dledger-"):
        return {"data": FileKind.ROCKETMQ_DLEDGER_DATA, "index": FileKind.ROCKETMQ_DLEDGER_INDEX}.get(parents[0])
    if p.name in ("checkpoint", "currterm") and parents[:1] and parents[0].startswith("dledger-"):
        return FileKind.ROCKETMQ_DLEDGER_PROPERTIES
    return None


def _is_dir(path: Path) -> bool:
    """`Path.is_dir` that never raises (an entry that cannot be examined is not taken for a dir)."""
    return entry_type(path) is EntryType.DIRECTORY


def is_partition_dir(path: str | os.PathLike[str]) -> bool:
    """A topic-partition dir: a broker-parsable name and segment-family content.

    A directory with a partition's name that cannot be listed counts as one: its readers then
    report it as unreadable, where skipping it would hide a partition.
    """
    p = Path(path)
    if names.parse_partition_dir(p.name) is None or not _is_dir(p):
        return False
    try:
        entries = os.listdir(p)
    except OSError:
        return True
    return any(names.parse_segment_file_name(e) or e in (names.LEADER_EPOCH_CHECKPOINT,
               names.PARTITION_METADATA) for e in entries) or not entries


def is_log_dir(path: str | os.PathLike[str]) -> bool:
    """A broker log dir: root files (meta.properties, checkpoints) or partition dirs."""
    p = Path(path)
    if not _is_dir(p):
        return False
    try:
        entries = os.listdir(p)
    except OSError:
        return False
    if any(e in names.OFFSET_CHECKPOINT_NAMES or e == names.META_PROPERTIES for e in entries):
        return True
    return any(is_partition_dir(p / e) for e in entries)


def is_rocketmq_store(path: str | os.PathLike[str]) -> bool:
    """A store root: a `commitlog` dir of 20-digit files, consumequeue with a checkpoint, or a DLedger peer's
    `dledger-<selfId>/data` dir (`DLedgerConfig#getDefaultPath`)."""
    p = Path(path)
    commitlog = p / "commitlog"
    if _has_dledger_data(p):
        return True
    if _is_dir(commitlog):
        try:
            return any(_DIGITS20.match(e) for e in os.listdir(commitlog)) or os.path.lexists(p / "checkpoint")
        except OSError:
            return False
    return _is_dir(p / "consumequeue") and entry_type(p / "checkpoint") is EntryType.REGULAR


def _has_dledger_data(root: Path) -> bool:
    try:
        names = [e for e in os.listdir(root) if e.startswith("dledger-")] if _is_dir(root) else []
    except OSError:
        return False
    return any(_is_dir(root / e / "data") for e in names)


def classify_dir(path: str | os.PathLike[str]) -> DirKind:
    if is_rocketmq_store(path):
        return DirKind.ROCKETMQ_STORE
    if is_partition_dir(path):
        return DirKind.KAFKA_PARTITION_DIR
    if is_log_dir(path):
        return DirKind.KAFKA_LOG_DIR
    return DirKind.UNKNOWN


def find_roots(path: str | os.PathLike[str], max_depth: int = 3) -> list[tuple[DirKind, Path]]:
    """Every log dir, partition dir or store at or below `path` (not inside one already found).

    A folder holding several brokers' log dirs is the common case; depth is
    bounded so a wrong path cannot make us walk a whole filesystem.
    """
    p = Path(path)
    kind = classify_dir(p)
    if kind is not DirKind.UNKNOWN:
        return [(kind, p)]
    if max_depth == 0 or not _is_dir(p):
        return []
    try:
        children = sorted(c for c in p.iterdir() if _is_dir(c) and not c.is_symlink())
    except OSError:
        return []
    return [root for c in children for root in find_roots(c, max_depth - 1)]


def input_roots(paths: list[str] | list[Path]) -> list[Path]:
    """The trees a command given `paths` reads: each path, and the folder holding each file or partition
    dir among them, whose neighbours the command reads too (a segment's indexes and sibling log, a
    partition's log-dir checkpoints and meta.properties)."""
    out: list[Path] = []
    for p in map(Path, paths):
        out.append(p)
        if entry_type(p) is not EntryType.DIRECTORY or names.parse_partition_dir(p.name) is not None:
            out.append(p.parent)
    return out


def roots_under(path: str | os.PathLike[str]) -> list[tuple[DirKind, Path]]:
    """`find_roots` of a directory, or why there is nothing to read there (`UnreadableInput`):
    `ls` and `doctor` say the same thing about the same path."""
    p = Path(path)
    kind = entry_type(p)
    if kind is EntryType.MISSING:
        raise UnreadableInput(f"{p}: no such file or directory")
    if kind is EntryType.REGULAR:
        raise UnreadableInput(f"{p}: a file, not a Kafka log dir, partition dir or RocketMQ store")
    if kind is EntryType.INACCESSIBLE:
        raise UnreadableInput(f"{p}: cannot be examined (permission denied?)")
    if kind is not EntryType.DIRECTORY:
        raise NotRegularFile(str(p), kind.value, "a directory")
    roots = find_roots(p)
    if not roots:
        raise UnreadableInput(f"{p}: no Kafka log dir, partition dir or RocketMQ store in it")
    return roots
