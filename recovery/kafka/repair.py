"""Applying a replay's plan: every replica written as a partition dir a broker can start from.

Each replica's final log is its own bytes below its truncation point plus
the leader's bytes it would fetch; both are copied byte-for-byte from the
input files (read-only). The written replicas are then loaded back and
compared: identical to the leader up to their log end.
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from replog.formats.fileio import atomic_write
from replog.formats.kafka import checkpoint, names
from replog.recovery.doctor import diagnose
from replog.recovery.kafka.replay import ReplayResult, first_divergence
from replog.recovery.kafka.replica import Replica, load_replica
from replog.recovery.kafka.replica_log import ReplicaLog
from replog.recovery.kafka.segment_writer import DEFAULT_SEGMENT_BYTES, ByteRun, write_partition_runs
from replog.recovery.outputs import evidence_roots, mark_complete, prepare_output

FIRST = -2**63  # pair from the very first batch


@dataclass
class RepairedReplica:
    name: str
    path: str
    log_end_offset: int
    high_watermark: int
    identical_to_leader: bool
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def byte_runs(log: ReplicaLog) -> list[ByteRun]:
    """Where the log's batches lie on disk, as the writer copies them (consecutive ranges joined)."""
    return [ByteRun(file, start, end, base) for file, start, end, base in log.byte_ranges()]


def agrees_with(rep: Replica, leader: Replica) -> tuple[bool, bool]:
    """(rep's batches are the leader's first ones, and they are all of them), paired from the first batch."""
    prefix = first_divergence(rep, leader, FIRST) is None and rep.log.batches <= leader.log.batches
    return prefix, prefix and rep.log.batches == leader.log.batches


def write_replica(final: Replica, out_dir: Path, segment_bytes: int = DEFAULT_SEGMENT_BYTES) -> Path:
    """`out_dir` becomes a log dir holding this replica's partition and its checkpoints."""
    part = out_dir / names.partition_dir_name(final.topic, final.partition)
    write_partition_runs(part, byte_runs(final.log), segment_bytes=segment_bytes, topic_id=final.topic_id,
                         epochs=final.epochs, start_offset=final.log_start_offset)
    tp = (final.topic, final.partition)
    atomic_write(out_dir / names.REPLICATION_OFFSET_CHECKPOINT,
                 checkpoint.build_offset_checkpoint({tp: final.high_watermark}))
    atomic_write(out_dir / names.RECOVERY_POINT_OFFSET_CHECKPOINT,
                 checkpoint.build_offset_checkpoint({tp: final.log_end_offset}))
    atomic_write(out_dir / names.LOG_START_OFFSET_CHECKPOINT,
                 checkpoint.build_offset_checkpoint({tp: final.log_start_offset}))
    return part


def repair(result: ReplayResult, out: str | os.PathLike[str], *, force: bool = False,
           segment_bytes: int = DEFAULT_SEGMENT_BYTES) -> list[RepairedReplica]:
    """Write every replica's final state under `out/NAME/` and prove the result:
    each reloads as a prefix of (or equal to) the leader and doctor finds no error in it."""
    root = prepare_output(out, evidence_roots(r.replica.path for r in result.replicas), force)
    written = {r.replica.name: write_replica(r.final, root / r.replica.name, segment_bytes) for r in result.replicas}
    reloaded = {name: load_replica(path, name) for name, path in written.items()}
    doctor = {name: diagnose([root / name]) for name in written}
    leader = reloaded[result.leader.name]
    report = []
    for name, rep in reloaded.items():
        problems = [f"{f.code} at {f.path}:{f.position}" for f in doctor[name].findings if f.severity.value == "error"]
        same, identical = agrees_with(rep, leader)
        if not same:
            problems.append("log is not a prefix of the leader's")
        report.append(RepairedReplica(name, str(written[name]), rep.log_end_offset, rep.high_watermark,
                                      identical, problems))
    mark_complete(root, f"replog repair: {len(report)} replicas")
    return report
