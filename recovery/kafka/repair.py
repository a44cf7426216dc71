"""Applying a replay's plan: every replica written as a partition dir a broker can start from.

Each replica's final log is its own bytes below its truncation point plus
the leader's bytes it would fetch; both are copied byte-for-byte from the
input files (read-only). The written replicas are then loaded back and
compared: identical to the leader up to their log end.
"""
from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from replog.formats.fileio import atomic_write, mapped
from replog.formats.kafka import checkpoint, names
from replog.recovery.doctor import diagnose
from replog.recovery.kafka.replay import ReplayResult
from replog.recovery.kafka.replica import BatchRef, Replica, load_replica
from replog.recovery.kafka.writer import DEFAULT_SEGMENT_BYTES, write_partition
from replog.recovery.outputs import evidence_roots, mark_complete, prepare_output


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


def read_batches(refs: Iterable[BatchRef]) -> list[bytes]:
    """The bytes of each batch, read from its file through a read-only map."""
    refs = list(refs)
    by_file: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(refs):
        by_file[r.file].append(i)
    out: list[bytes] = [b""] * len(refs)
    for path, idxs in by_file.items():
        with mapped(path) as buf:
            for i in idxs:
                out[i] = bytes(buf[refs[i].position:refs[i].position + refs[i].size])
    return out


def write_replica(final: Replica, out_dir: Path, segment_bytes: int = DEFAULT_SEGMENT_BYTES) -> Path:
    """`out_dir` becomes a log dir holding this replica's partition and its checkpoints."""
    part = out_dir / names.partition_dir_name(final.topic, final.partition)
    write_partition(part, read_batches(final.batches), segment_bytes=segment_bytes, topic_id=final.topic_id,
                    epochs=final.epochs, start_offset=final.log_start_offset)
    tp = (final.topic, final.partition)
    atomic_write(out_dir / names.REPLICATION_OFFSET_CHECKPOINT,
                 checkpoint.build_offset_checkpoint({tp: final.high_watermark}))
    atomic_write(out_dir / names.RECOVERY_POINT_OFFSET_CHECKPOINT,
                 checkpoint.build_offset_checkpoint({tp: final.log_end_offset}))
    atomic_write(out_dir / names.LOG_START_OFFSET_CHECKPOINT,
                 checkpoint.build_offset_checkpoint({tp: final.log_start_offset}))
    return part


def _signature(rep: Replica) -> list[tuple[int, int, int]]:
    return [(b.base_offset, b.last_offset, b.crc) for b in rep.batches]


def repair(result: ReplayResult, out: str | os.PathLike[str], *, force: bool = False,
           segment_bytes: int = DEFAULT_SEGMENT_BYTES) -> list[RepairedReplica]:
    """Write every replica's final state under `out/NAME/` and prove the result:
    each reloads as a prefix of (or equal to) the leader and doctor finds no error in it."""
    root = prepare_output(out, evidence_roots(r.replica.path for r in result.replicas), force)
    written = {r.replica.name: write_replica(r.final, root / r.replica.name, segment_bytes) for r in result.replicas}
    reloaded = {name: load_replica(path, name) for name, path in written.items()}
    doctor = {name: diagnose([root / name]) for name in written}
    leader_sig = _signature(reloaded[result.leader.name])
    report = []
    for name, rep in reloaded.items():
        sig = _signature(rep)
        problems = [f"{f.code} at {f.path}:{f.position}" for f in doctor[name].findings if f.severity.value == "error"]
        same = sig == leader_sig[:len(sig)]
        if not same:
            problems.append("log is not a prefix of the leader's")
        report.append(RepairedReplica(name, str(written[name]), rep.log_end_offset, rep.high_watermark,
                                      same and len(sig) == len(leader_sig), problems))
    mark_complete(root, f"replog repair: {len(report)} replicas")
    return report
