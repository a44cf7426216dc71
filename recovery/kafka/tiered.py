"""Tiered storage (KIP-405): the log start and the local log start of a partition with remote storage.

Without remote storage a partition's log starts at its first local segment or later: the broker loads
`max(log-start-offset-checkpoint, first segment's base)`. With `remote.storage.enable` the segments below the
local ones live in remote storage, still readable, and the broker keeps the checkpointed log start as it is:

* apache/kafka core/src/main/scala/kafka/log/LogLoader.scala `load` (branch 3.9):
  `newLogStartOffset = if (isRemoteLogEnabled) logStartOffsetCheckpoint else math.max(logStartOffsetCheckpoint,
  segments.firstSegment.get.baseOffset)`; storage/.../internals/log/LogLoader.java on trunk (4.x) the same.
* core/src/main/scala/kafka/log/UnifiedLog.scala (3.9): `updateLocalLogStartOffset(math.max(logStartOffset,
  firstSegmentBaseOffset))` and `if (!remoteLogEnabled()) logStartOffset = localLogStartOffset()`: the local
  log start is where the local segments start, the log start stays below it only with remote storage.
* A checkpoint without the partition's entry reads as 0 (`logStartOffsets.getOrElse(tp, 0L)` in LogManager).

Whether the topic has remote storage is not in the partition's files: it comes from the cluster profile
(`remote.storage.enable` read from the metadata log, or stated with `--remote-storage/--no-remote-storage`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from replog.formats.errors import FormatError, ReplogError
from replog.formats.fileio import read_small
from replog.formats.findings import Finding, finding, from_error
from replog.formats.kafka import names
from replog.formats.kafka.remote_log_snapshot import parse_remote_log_snapshot
from replog.recovery.kafka.checks_broker import PartitionOffsets
from replog.recovery.kafka.logdir import BrokerCheckpoints, PartitionSummary
from replog.recovery.kafka.profile import DEFAULT, REMOTE, ClusterProfile, Setting, read_profile
from replog.recovery.kafka.replica import Replica


def log_starts(checkpointed: int | None, first_segment_base: int | None, remote: bool) -> tuple[int, int]:
    """(log start, local log start) as the broker loads them (LogLoader / UnifiedLog, cited above)."""
    cp = checkpointed or 0
    local = max(cp, first_segment_base if first_segment_base is not None else cp)
    return (cp if remote else local), local


def remote_setting(profile: ClusterProfile, topic: str) -> Setting:
    """`remote.storage.enable` for the topic: read, stated or Kafka's default (false)."""
    return profile.setting(topic, REMOTE)


def with_remote_storage(rep: Replica) -> Replica:
    """The replica as a broker with remote storage loads it: its log start the checkpointed one, its local log
    start where its segments start (unchanged figures when they are the same)."""
    local = rep.log_start_offset
    start, _ = log_starts(rep.log_start_checkpointed, local, remote=True)
    if start >= local:
        return rep
    out = rep.copy()
    out.log_start_offset, out.local_log_start_offset = start, local
    return out


def tiered_replicas(replicas: list[Replica], profile: ClusterProfile) -> list[Replica]:
    """Each replica with its remote-storage log starts when the topic has remote storage, else as loaded."""
    if not replicas or not profile.flag(replicas[0].topic, REMOTE):
        return replicas
    return [with_remote_storage(r) for r in replicas]


def profile_beside(path: Path, assumed: dict[str, str] | None = None) -> ClusterProfile:
    """The cluster profile from the KRaft metadata log in the log dir `path` (or beside the partition dir
    `path`): a KRaft broker keeps `__cluster_metadata-0` in its first log dir. Without one (ZooKeeper mode, or
    another log dir), or one that cannot be read, the options' values and Kafka's defaults alone."""
    for d in (path, path.parent):
        if (d / f"{names.METADATA_TOPIC}-0").is_dir():
            try:
                return read_profile(d, assumed)
            except (ReplogError, OSError):
                break   # the metadata log's own checks report what is wrong with it
    return ClusterProfile(assumed=dict(assumed or {}))


def tier_summary(part: PartitionSummary, profile: ClusterProfile) -> None:
    """`ls`: the partition's log start and local log start as the broker loads them with the profile's
    remote.storage.enable (`log_starts`), and where that setting came from."""
    setting = remote_setting(profile, part.topic)
    part.remote_storage = setting
    first_base = part.segments[0].base_offset if part.segments else None
    start, local = log_starts(part.log_start_checkpointed, first_base, setting.value.strip().lower() == "true")
    part.log_start_offset = start
    part.local_log_start_offset = local if local != start else None


def log_start_findings(parts: list[PartitionOffsets], cps: BrokerCheckpoints, log_dir: Path,
                       profile: ClusterProfile) -> list[Finding]:
    """`doctor`: each live partition whose checkpointed log start is below its first local segment. With remote
    storage (read or stated) the records between are in remote storage (`KAFKA_REMOTE_LOG_RANGE`); not known,
    the two readings are named (`KAFKA_LOG_START_BELOW_LOCAL`); known off, the broker raises the log start and
    nothing is said (as before)."""
    out: list[Finding] = []
    path = str(log_dir / names.LOG_START_OFFSET_CHECKPOINT)
    known: dict[str, dict[tuple[str, int], list[tuple[int, int]]]] = {}
    for p in parts:
        tp = (p.topic, p.partition)
        cp = (cps.log_start_offsets or {}).get(tp)
        if p.state != "live" or cp is None or p.first_segment_base is None or cp >= p.first_segment_base:
            continue
        setting = remote_setting(profile, p.topic)
        at = cps.line_positions.get("log_start_offsets", {}).get(tp)
        span = f"offsets {cp}..{p.first_segment_base - 1}"
        if setting.source != DEFAULT and setting.value.strip().lower() == "true":
            out.append(finding("KAFKA_REMOTE_LOG_RANGE", path, offset=cp, position=at,
                               message=f"{p.topic}-{p.partition}: log start {cp}, local log start "
                                       f"{p.first_segment_base}: {span} are held in remote storage "
                                       f"(remote.storage.enable=true, {setting.where}); the broker keeps the log "
                                       f"start at {cp} (LogLoader)",
                               log_start_offset=cp, local_log_start_offset=p.first_segment_base,
                               remote_storage=setting.to_dict()))
            out += _gap_findings(p, cp, log_dir, known)
        elif setting.source == DEFAULT:
            out.append(finding("KAFKA_LOG_START_BELOW_LOCAL", path, offset=cp, position=at,
                               message=f"{p.topic}-{p.partition}: log-start-offset-checkpoint says {cp}, the first "
                                       f"local segment starts at {p.first_segment_base}; remote.storage.enable is "
                                       f"not known ({setting.where}): with remote storage {span} are in remote "
                                       f"storage and the log start stays {cp}; without it the broker raises the "
                                       f"log start to {p.first_segment_base} (a checkpoint that lagged)",
                               log_start_offset=cp, local_log_start_offset=p.first_segment_base,
                               remote_storage=setting.to_dict()))
    return out


def tier_summaries(parts: list[PartitionSummary], assumed: dict[str, str] | None = None) -> None:
    """`tier_summary` of each partition with the profile of its log dir (read once per log dir)."""
    profiles: dict[Path, ClusterProfile] = {}
    for part in parts:
        log_dir = Path(part.path).parent
        if log_dir not in profiles:
            profiles[log_dir] = profile_beside(log_dir, assumed)
        tier_summary(part, profiles[log_dir])


def remote_log_snapshot_findings(data: bytes, path: str) -> list[Finding]:
    """`doctor` of a partition's `remote_log_snapshot` (Kafka 3.0-3.7): read as `RemoteLogMetadataSnapshotFile.read`
    reads it (`formats.kafka.remote_log_snapshot`), then each cached segment for what no broker writes: an end
    offset before its start, a leader epoch starting outside the segment (`RemoteLogSegmentMetadata` requires
    start <= end and epochs within; storage-api RemoteLogSegmentMetadata's constructor checks)."""
    try:
        snap = parse_remote_log_snapshot(data)
    except FormatError as e:
        return [from_error(e, path)]
    out: list[Finding] = []
    for i, seg in enumerate(snap.segments if snap is not None else []):
        start, end = seg["startOffset"], seg["endOffset"]
        epochs = [e["offset"] for e in seg["segmentLeaderEpochs"]]
        if end < start or any(not start <= o <= end for o in epochs) or not epochs:
            out.append(finding("KAFKA_REMOTE_LOG_SNAPSHOT_SEGMENT", path, offset=start,
                               message=f"remote segment {seg['segmentId']} (entry {i}): offsets {start}..{end}, "
                                       f"leader epochs starting at {epochs}"))
    return out


REMOTE_LOG_METADATA = "__remote_log_metadata"
_COPY_FINISHED, _DELETE_STARTED = 1, 2          # RemoteLogSegmentState ids (storage-api)


def remote_segments(log_dir: Path) -> dict[tuple[str, int], list[tuple[int, int]]]:
    """(start, end) of every remote segment whose copy finished and whose deletion has not begun, per (topic id,
    partition), from the `__remote_log_metadata` replicas in `log_dir`, replayed in offset order as
    TopicBasedRemoteLogMetadataManager's consumer task does (RemoteLogSegmentMetadataRecord adds a segment,
    RemoteLogSegmentMetadataUpdateRecord moves its state, RemotePartitionDeleteMetadataRecord drops the
    partition). Records it cannot decode are passed over."""
    from replog.formats.kafka.internal.remote_log_metadata import decode_remote_log_metadata
    from replog.recovery.kafka.internal_topics import coordinator_copy, internal_records, partition_copies
    segments: dict[str, tuple[tuple[str, int], int, int, int]] = {}
    for copies in partition_copies([log_dir], REMOTE_LOG_METADATA).values():
        for rec in internal_records(coordinator_copy(copies), []):
            try:
                got = decode_remote_log_metadata(rec.value)
            except FormatError:
                continue
            data = (got or {}).get("data")
            if data is None:
                continue
            _apply(segments, got.get("apiKey") if got else None, data)
    out: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for tp, start, end, state in segments.values():
        if state == _COPY_FINISHED:
            out.setdefault(tp, []).append((start, end))
    return {tp: sorted(spans) for tp, spans in out.items()}


def _apply(segments: dict[str, tuple[tuple[str, int], int, int, int]], api_key: Any, data: dict[str, Any]) -> None:
    if api_key in (0, 1):
        sid = data["remoteLogSegmentId"]
        tip = sid["topicIdPartition"]
        tp, key = (tip["id"], tip["partition"]), sid["id"]
        if api_key == 0:
            segments[key] = (tp, data["startOffset"], data["endOffset"], data["remoteLogSegmentState"])
        elif key in segments:
            old = segments[key]
            segments[key] = (old[0], old[1], old[2], data["remoteLogSegmentState"])
    elif api_key == 2:
        tip = data["topicIdPartition"]
        for key in [k for k, v in segments.items() if v[0] == (tip["id"], tip["partition"])]:
            del segments[key]


def remote_gaps(spans: list[tuple[int, int]], start: int, local: int) -> list[tuple[int, int]]:
    """The offsets in [start, local) no span covers, as (first, last) ranges."""
    gaps, at = [], start
    for first, last in spans:
        if first > at and at < local:
            gaps.append((at, min(first, local) - 1))
        at = max(at, last + 1)
    if at < local:
        gaps.append((at, local - 1))
    return gaps


def _gap_findings(p: PartitionOffsets, start: int, log_dir: Path,
                  known: dict[str, dict[tuple[str, int], list[tuple[int, int]]]]) -> list[Finding]:
    """`KAFKA_REMOTE_LOG_GAP` for offsets between the log start and the local one in no remote segment that the
    log dir's `__remote_log_metadata` (read once, into `known`) names, when it names any of the partition's: a
    consumer fetching there gets no data from remote storage. Said nothing when the log dir holds no record
    of the partition (its metadata partition lives elsewhere)."""
    from replog.formats.kafka.partition_metadata import parse_partition_metadata
    try:
        topic_id = parse_partition_metadata(read_small(Path(p.path) / names.PARTITION_METADATA)).topic_id
        if "" not in known:
            known[""] = remote_segments(log_dir)
    except (ReplogError, OSError):
        return []
    spans = known[""].get((topic_id, p.partition))
    if not spans or p.first_segment_base is None:
        return []
    return [finding("KAFKA_REMOTE_LOG_GAP", p.path, offset=first,
                    message=f"{p.topic}-{p.partition}: offsets {first}..{last}, below the local log start "
                            f"{p.first_segment_base}, are in no remote segment {REMOTE_LOG_METADATA} names "
                            f"(copy finished, not deleted): {len(spans)} segments cover {spans[0][0]}..{spans[-1][1]}")
            for first, last in remote_gaps(spans, start, p.first_segment_base)]
