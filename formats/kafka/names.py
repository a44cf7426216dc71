"""File- and directory-name conventions of a Kafka log dir (reference §7.1, §7.2, §7.4).

Names are evidence too: the broker derives a segment's base offset and a
replica's topic-partition from them, so these parsers follow the broker's own
rules (`LogFileUtils`, `LocalLog.parseTopicPartitionName`, raft `Snapshots`).
"""
from __future__ import annotations

import re
from typing import NamedTuple

OFFSET_DIGITS = 20
EPOCH_DIGITS = 10
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1

# segment-family suffixes (`LogFileUtils`), without the dot
SEGMENT_KINDS = ("log", "index", "timeindex", "txnindex", "snapshot")
TRANSIENT_SUFFIXES = ("deleted", "cleaned", "swap")

# log-dir root files (§7.4)
META_PROPERTIES = "meta.properties"
CLEAN_SHUTDOWN = ".kafka_cleanshutdown"
LOCK_FILE = ".lock"
BOOTSTRAP_CHECKPOINT = "bootstrap.checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
RECOVERY_POINT_OFFSET_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
# partition-dir files (§7.3)
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"
QUORUM_STATE = "quorum-state"

# the log-dir root offset checkpoints and what each holds per topic-partition
ROOT_OFFSET_CHECKPOINTS = {
    REPLICATION_OFFSET_CHECKPOINT: "high_watermarks",
    RECOVERY_POINT_OFFSET_CHECKPOINT: "recovery_points",
    LOG_START_OFFSET_CHECKPOINT: "log_start_offsets",
    CLEANER_OFFSET_CHECKPOINT: "cleaner_offsets",
}
OFFSET_CHECKPOINT_NAMES = frozenset(ROOT_OFFSET_CHECKPOINTS)
CHECKPOINT_NAMES = OFFSET_CHECKPOINT_NAMES | {LEADER_EPOCH_CHECKPOINT}
ROOT_FILE_NAMES = frozenset({META_PROPERTIES, CLEAN_SHUTDOWN, LOCK_FILE, BOOTSTRAP_CHECKPOINT})
CHECKPOINT_TMP_SUFFIX = ".tmp"

METADATA_TOPIC = "__cluster_metadata"
REMOTE_LOG_SNAPSHOT = "remote_log_snapshot"   # a partition's remote-log metadata cache, Kafka 3.0-3.7
REMOTE_INDEX_CACHE_DIR = "remote-log-index-cache"  # tiered storage's `RemoteIndexCache.DIR_NAME`
# dirs of a log dir that `LogManager.loadLogs` does not load as partitions (the raft layer owns the metadata log)
SKIPPED_DIR_NAMES = frozenset({f"{METADATA_TOPIC}-0", REMOTE_INDEX_CACHE_DIR})

DIR_STATES = {"-delete": "delete", "-future": "future", "-stray": "stray"}
_SUFFIXED_DIR = {s: re.compile(rf"^(\S+)-(\S+)\.(\S+){s}$") for s in DIR_STATES}
_JAVA_INT = re.compile(r"[+-]?[0-9]+", re.ASCII)
_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}", re.ASCII)
_SEGMENT = re.compile(
    rf"^([0-9]+)\.({'|'.join(SEGMENT_KINDS)})(?:\.({'|'.join(TRANSIENT_SUFFIXES)}))?$", re.ASCII)
_REMOTE_INDEX = re.compile(r"^([0-9]+)_([A-Za-z0-9_-]{22})\.(index|timeindex|txnindex)(?:\.(deleted|tmp))?$", re.ASCII)
_KRAFT_SNAPSHOT = re.compile(
    rf"^([0-9]{{{OFFSET_DIGITS}}})-([0-9]{{{EPOCH_DIGITS}}})\.checkpoint(\.part|\.deleted)?$", re.ASCII)


class SegmentFileName(NamedTuple):
    base_offset: int
    kind: str  # "log" | "index" | "timeindex" | "txnindex" | "snapshot"
    transient: str | None  # "deleted" | "cleaned" | "swap" | None


class RemoteIndexName(NamedTuple):
    """A file of tiered storage's `remote-log-index-cache/`: one index of a remote segment."""
    start_offset: int          # the remote segment's start offset: the index's base offset
    segment_id: str            # `Uuid.toString()` of the segment id (22 chars of URL-safe base64)
    kind: str                  # "index" | "timeindex" | "txnindex"
    transient: str | None      # "deleted" (being removed) | "tmp" (being fetched) | None


def parse_remote_index_file_name(name: str) -> RemoteIndexName | None:
    """`<startOffset>_<segmentId>.index|.timeindex|.txnindex`, as `RemoteIndexCache.generateFileNamePrefixForIndex`
    names them (the offset in decimal, not zero-padded), with `.tmp` while `createCacheEntry` copies one from
    remote storage and `.deleted` once `Entry.markForCleanup` renames it (`Utils.replaceSuffix(path, "",
    ".deleted")`); apache/kafka storage/.../internals/log/RemoteIndexCache.java, branches 3.9 and trunk."""
    m = _REMOTE_INDEX.match(name)
    if m is None or int(m.group(1)) > INT64_MAX:
        return None
    return RemoteIndexName(int(m.group(1)), m.group(2), m.group(3), m.group(4))


class KraftSnapshotName(NamedTuple):
    end_offset: int
    epoch: int
    state: str  # "complete" | "partial" | "deleted"


class PartitionDirName(NamedTuple):
    topic: str
    partition: int
    state: str  # "live" | "delete" | "future" | "stray"
    uuid: str | None


def is_valid_topic_name(topic: str) -> bool:
    """Kafka's `Topic.validate`: 1..249 of [a-zA-Z0-9._-], and not "." or ".."."""
    return topic not in (".", "..") and _TOPIC.fullmatch(topic) is not None


def segment_file_name(base_offset: int, suffix: str) -> str:
    """`00000000000000368769.log` for (368769, "log"); suffix with or without the dot."""
    if not 0 <= base_offset <= INT64_MAX:
        raise ValueError(f"base offset {base_offset} outside [0, 2^63-1]")
    return f"{base_offset:0{OFFSET_DIGITS}d}.{suffix.lstrip('.')}"


def sibling_file_name(seg: SegmentFileName, kind: str) -> str:
    """The name of `seg`'s sibling of another kind ("log", "index", ...) in the same state: a segment's
    files carry one suffix together, as `LogSegment.changeFileSuffixes` renames the log and its three
    indexes at once (`.cleaned` -> `.swap` in the cleaner, "" -> `.deleted` before async deletion;
    storage/.../log/LogSegment.java), so `00..05.index.swap` belongs to `00..05.log.swap`."""
    name = segment_file_name(seg.base_offset, kind)
    return f"{name}.{seg.transient}" if seg.transient else name


def _segment_match(name: str) -> re.Match[str] | None:
    return _SEGMENT.match(name)


def parse_segment_file_name(name: str) -> SegmentFileName | None:
    """Split a segment-family name; None unless the prefix is a 20-digit offset."""
    m = _segment_match(name)
    if m is None or len(m.group(1)) != OFFSET_DIGITS:
        return None
    base = int(m.group(1))
    if base > INT64_MAX:
        return None
    return SegmentFileName(base, m.group(2), m.group(3))


def is_segment_like(name: str) -> bool:
    """A segment-family suffix on a digit prefix that is not a valid 20-digit offset."""
    return _segment_match(name) is not None and parse_segment_file_name(name) is None


def kraft_snapshot_file_name(end_offset: int, epoch: int) -> str:
    """`<20-digit end offset>-<10-digit epoch>.checkpoint` (raft `Snapshots`)."""
    if not (0 <= end_offset <= INT64_MAX and 0 <= epoch <= INT32_MAX):
        raise ValueError(f"snapshot id ({end_offset}, {epoch}) out of range")
    return f"{end_offset:0{OFFSET_DIGITS}d}-{epoch:0{EPOCH_DIGITS}d}.checkpoint"


def parse_kraft_snapshot_name(name: str) -> KraftSnapshotName | None:
    """(end_offset, epoch, state) of a KRaft snapshot name, incl. `.part`/`.deleted`."""
    m = _KRAFT_SNAPSHOT.match(name)
    if m is None:
        return None
    end_offset, epoch = int(m.group(1)), int(m.group(2))
    if end_offset > INT64_MAX or epoch > INT32_MAX:
        return None
    state = {None: "complete", ".part": "partial", ".deleted": "deleted"}[m.group(3)]
    return KraftSnapshotName(end_offset, epoch, state)


def is_checkpoint_name(name: str) -> bool:
    """One of the text checkpoint files (offset checkpoints or leader-epoch)."""
    return name in CHECKPOINT_NAMES


def is_checkpoint_tmp_name(name: str) -> bool:
    """`<checkpoint>.tmp`: left over by a crash in the middle of a checkpoint write."""
    return name.endswith(CHECKPOINT_TMP_SUFFIX) and is_checkpoint_name(name[: -len(CHECKPOINT_TMP_SUFFIX)])


def partition_dir_name(topic: str, partition: int, state: str = "live", uuid: str | None = None) -> str:
    """The directory name the broker uses for a replica in `state`."""
    base = f"{topic}-{partition}"
    if state == "live":
        return base
    suffix = next((s for s, st in DIR_STATES.items() if st == state), None)
    if suffix is None or not uuid:
        raise ValueError(f"state {state!r} needs a known suffix and a uuid")
    return f"{base}.{uuid}{suffix}"


def parse_partition_dir(name: str) -> PartitionDirName | None:
    """Topic-partition of a replica dir by the broker's rules; None where it would throw."""
    if not name or "-" not in name:
        return None
    state, uuid, stem = "live", None, name
    for suffix, st in DIR_STATES.items():
        if name.endswith(suffix):
            if not _SUFFIXED_DIR[suffix].match(name):
                return None
            dot = name.rindex(".")
            state, uuid, stem = st, name[dot + 1 : -len(suffix)], name[:dot]
            break
    dash = stem.rfind("-")
    topic, part = stem[:dash], stem[dash + 1 :]
    if dash < 0 or not topic or not _JAVA_INT.fullmatch(part):
        return None
    partition = int(part)
    if not 0 <= partition <= INT32_MAX:
        return None
    return PartitionDirName(topic, partition, state, uuid)
