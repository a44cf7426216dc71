"""Broker-level checks: the log dir root files and the checkpoints against the logs.

Rules (docs/reference/kafka.md §7.4, §8.4, §10.2): HW <= LEO, log start <= HW, recovery
point <= LEO. Every live partition (except `__cluster_metadata-0`, which the
broker does not checkpoint) belongs in the replication-offset and
recovery-point checkpoints; the log-start and cleaner checkpoints only list
some partitions by design, so absence there is normal.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from replog.formats.errors import NotRegularFile
from replog.formats.fileio import EntryType, entry_type, locked_by_another_process
from replog.formats.findings import Finding, finding, from_unreadable
from replog.formats.kafka import names
from replog.formats.kafka.clean_shutdown import parse_clean_shutdown
from replog.formats.kafka.meta_properties import parse_meta_properties
from replog.recovery.evidence import Evidence
from replog.recovery.kafka.logdir import BrokerCheckpoints, read_broker_checkpoints
from replog.recovery.outputs import COMPLETE_MARKER

MEMBERSHIP_CHECKPOINTS = (names.REPLICATION_OFFSET_CHECKPOINT, names.RECOVERY_POINT_OFFSET_CHECKPOINT)
MAX_LISTED = 10


@dataclass
class PartitionOffsets:
    """What the checks need to compare a partition with the broker checkpoints."""

    path: str
    topic: str
    partition: int
    state: str
    first_segment_base: int | None
    log_end_offset: int


def read_checkpoints(ev: Evidence, log_dir: Path) -> BrokerCheckpoints:
    return read_broker_checkpoints(log_dir, ev.read_small)


def check_root_files(ev: Evidence, log_dir: Path) -> list[Finding]:
    """meta.properties, the clean-shutdown marker, leftover .tmp files, stray entries, a live broker."""
    out: list[Finding] = []
    if locked_by_another_process(log_dir / names.LOCK_FILE):
        out.append(finding("KAFKA_BROKER_RUNNING", str(log_dir / names.LOCK_FILE),
                           message="another process (the broker) holds .lock: copy the log dir, or expect torn "
                                   "tails on active segments and checkpoints newer than the logs"))
    for name in sorted(os.listdir(log_dir)):
        path = log_dir / name
        kind = entry_type(path)
        if kind is EntryType.DIRECTORY:
            if names.parse_partition_dir(name) is None and name not in names.SKIPPED_DIR_NAMES:
                out.append(finding("KAFKA_BAD_PARTITION_DIR", str(path),
                                   message=f"{name!r} is not <topic>-<partition>; some brokers refuse to start"))
            continue
        if kind is not EntryType.REGULAR:
            if name not in names.ROOT_OFFSET_CHECKPOINTS:  # read_broker_checkpoints reports those
                out.append(_not_a_file(path, kind))
            continue
        parser = {names.META_PROPERTIES: parse_meta_properties,
                  names.CLEAN_SHUTDOWN: parse_clean_shutdown}.get(name)
        if parser is not None:
            out += ev.check_parses(path, parser)
        elif name.endswith(names.CHECKPOINT_TMP_SUFFIX):
            out.append(finding("KAFKA_CHECKPOINT_TMP_LEFTOVER", str(path),
                               message=f"{name}: interrupted atomic write; the file without .tmp is authoritative"))
        elif name not in names.ROOT_OFFSET_CHECKPOINTS and name not in names.ROOT_FILE_NAMES \
                and name != COMPLETE_MARKER:
            out.append(finding("UNKNOWN_FILE", str(path)))
    return out


def _not_a_file(path: Path, kind: EntryType) -> Finding:
    """A log-dir entry that is neither a regular file nor a directory (or cannot be examined)."""
    if kind is EntryType.INACCESSIBLE:
        return finding("UNREADABLE_FILE", str(path), message=f"{path.name}: cannot be examined")
    expected = "a partition directory" if names.parse_partition_dir(path.name) else "a regular file"
    return from_unreadable(NotRegularFile(str(path), kind.value, expected), str(path))


def check_partition_offsets(p: PartitionOffsets, cps: BrokerCheckpoints, log_dir: Path) -> list[Finding]:
    """HW, log start and recovery point of one partition against its log end."""
    out: list[Finding] = []
    tp = (p.topic, p.partition)
    lso_cp = (cps.log_start_offsets or {}).get(tp)
    log_start = max(lso_cp or 0, p.first_segment_base or 0)
    hw = (cps.high_watermarks or {}).get(tp)
    rp = (cps.recovery_points or {}).get(tp)
    hw_path = str(log_dir / names.REPLICATION_OFFSET_CHECKPOINT)
    hw_at = cps.line_positions.get("high_watermarks", {}).get(tp)
    if hw is not None and hw > p.log_end_offset:
        out.append(finding("KAFKA_HW_ABOVE_LEO", hw_path, offset=hw, position=hw_at,
                           message=f"{p.topic}-{p.partition}: high watermark {hw} > log end offset "
                                   f"{p.log_end_offset}: acknowledged records are missing from this replica"))
    if hw is not None and log_start > hw:
        out.append(finding("KAFKA_LSO_ABOVE_HW", hw_path, offset=log_start, position=hw_at,
                           message=f"{p.topic}-{p.partition}: log start offset {log_start} > high watermark {hw}"))
    if rp is not None and rp > p.log_end_offset:
        out.append(finding("KAFKA_RECOVERY_POINT_ABOVE_LEO", str(log_dir / names.RECOVERY_POINT_OFFSET_CHECKPOINT),
                           offset=rp, position=cps.line_positions.get("recovery_points", {}).get(tp),
                           message=f"{p.topic}-{p.partition}: recovery point {rp} > log end offset "
                                   f"{p.log_end_offset}: flushed data is missing"))
    return out


def check_membership(parts: list[PartitionOffsets], cps: BrokerCheckpoints, log_dir: Path) -> list[Finding]:
    """Partitions on disk missing from checkpoints, and checkpoint entries without a dir."""
    out: list[Finding] = []
    on_disk = {(p.topic, p.partition) for p in parts if p.state == "live" and p.topic != names.METADATA_TOPIC}
    for name in MEMBERSHIP_CHECKPOINTS:
        mapping = getattr(cps, names.ROOT_OFFSET_CHECKPOINTS[name])
        if mapping is None:
            continue
        path = str(log_dir / name)
        for topic, partition in sorted(on_disk - set(mapping)):
            out.append(finding("KAFKA_PARTITION_NOT_IN_CHECKPOINT", path, message=
                               f"{topic}-{partition} is on disk but not in {name} (created just before a crash, "
                               "or the checkpoint is stale)", topic=topic, partition=partition))
    for name in names.ROOT_OFFSET_CHECKPOINTS:
        mapping = getattr(cps, names.ROOT_OFFSET_CHECKPOINTS[name])
        if not mapping:
            continue
        extra = sorted(set(mapping) - {(p.topic, p.partition) for p in parts})
        if extra:
            shown = ", ".join(f"{t}-{n}" for t, n in extra[:MAX_LISTED])
            more = f" and {len(extra) - MAX_LISTED} more" if len(extra) > MAX_LISTED else ""
            out.append(finding("KAFKA_CHECKPOINT_WITHOUT_PARTITION", str(log_dir / name),
                               message=f"{len(extra)} entries for partitions not in this log dir: {shown}{more}",
                               partitions=[f"{t}-{n}" for t, n in extra]))
    return out
