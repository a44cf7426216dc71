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

from replog.formats.fileio import atomic_write, reading_pool
from replog.formats.kafka import checkpoint, names
from replog.recovery.kafka.divergence import Fingerprint
from replog.recovery.kafka.replay import ReplayResult, compare_replicas
from replog.recovery.kafka.replica import Replica
from replog.recovery.kafka.replica_log import ReplicaLog
from replog.recovery.kafka.segment_writer import DEFAULT_SEGMENT_BYTES, ByteRun, write_partition_runs
from replog.recovery.outputs import claimed_output, evidence_roots, mark_complete

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
    """(rep's batches are the leader's first ones, and they are all of them), paired from the first batch.
    Below the cleaner points a compacted replica's batches may differ from the leader's while its records
    agree as the cleaner keeps them (`replay.compare_replicas`): a prefix still, not identical."""
    compared = compare_replicas(rep, leader, FIRST)
    shorter = (rep.log.batches <= leader.log.batches if compared.compaction is None
               else rep.kept_end <= leader.kept_end)
    prefix = compared.diverged_at is None and shorter
    return prefix, prefix and compared.compaction is None and rep.log.batches == leader.log.batches


def write_replica(final: Replica, out_dir: Path, segment_bytes: int = DEFAULT_SEGMENT_BYTES) -> Replica:
    """`out_dir` becomes a log dir holding this replica's partition and its checkpoints.

    Returns the replica as written, with the fingerprint of the written batches (taken from the
    writer's own pass over them) when its offsets only grow."""
    part = out_dir / names.partition_dir_name(final.topic, final.partition)
    fingerprint = Fingerprint()
    # Segments start at the local log start; the log-start checkpoint keeps the log start, below it when the
    # topic has remote storage (`tiered`): a raised one would make the broker delete the remote segments below it
    # (apache/kafka core/src/main/java/kafka/log/remote/RemoteLogManager.java, 3.9: the expiration task
    # deletes every remote segment that `isSegmentBreachByLogStartOffset`).
    write_partition_runs(part, byte_runs(final.log), segment_bytes=segment_bytes, topic_id=final.topic_id,
                         epochs=final.epochs, start_offset=final.local_start, observe=fingerprint.feed,
                         tiered=final.local_log_start_offset is not None)
    tp = (final.topic, final.partition)
    atomic_write(out_dir / names.REPLICATION_OFFSET_CHECKPOINT,
                 checkpoint.build_offset_checkpoint({tp: final.high_watermark}))
    atomic_write(out_dir / names.RECOVERY_POINT_OFFSET_CHECKPOINT,
                 checkpoint.build_offset_checkpoint({tp: final.log_end_offset}))
    atomic_write(out_dir / names.LOG_START_OFFSET_CHECKPOINT,
                 checkpoint.build_offset_checkpoint({tp: final.log_start_offset}))
    written = final.copy()
    written.path = str(part)
    written.fingerprint = fingerprint if final.log.ordered else None
    return written


def write_replicas(finals: list[Replica], root: Path, segment_bytes: int = DEFAULT_SEGMENT_BYTES) -> dict[str, Replica]:
    """`write_replica` of each replica under `root/NAME/`, side by side on the machine's cores (at most 4).

    Each write is its own copies, index hop and checksums over its own files (kernels and checksums
    release the GIL), so one replica's fsync waits while another's bytes are copied and checked. One
    write per core: a third at once on two cores gained nothing and added its buffers to the peak."""
    workers = max(1, min(4, os.cpu_count() or 1, len(finals)))
    with reading_pool(workers, "replog-write") as pool:
        done = pool.map(lambda final: write_replica(final, root / final.name, segment_bytes), finals)
        return {rep.name: rep for rep in done}


def repair(result: ReplayResult, out: str | os.PathLike[str], *, force: bool = False,
           segment_bytes: int = DEFAULT_SEGMENT_BYTES) -> list[RepairedReplica]:
    """Write every replica's final state under `out/NAME/` and prove the result.

    The writer proves the bytes: every `.log` is read back and checked against a checksum of the
    ranges it was copied from, which the replay's load had validated batch by batch (CRC, offsets).
    The replay's plan proves the content: each written log is a prefix of (or equal to) the leader's,
    compared by the fingerprints of what was written."""
    from replog.recovery.kafka.quorum import refuse_repair
    refuse_repair(result)
    with claimed_output(out, evidence_roots(r.replica.path for r in result.replicas), force) as root:
        return _write_and_prove(result, root, segment_bytes)


def _write_and_prove(result: ReplayResult, root: Path, segment_bytes: int) -> list[RepairedReplica]:
    """`repair`'s work in its claimed output: write every replica, compare each with the leader, mark it done."""
    written = write_replicas([r.final for r in result.replicas], root, segment_bytes)
    leader = written[result.leader.name]
    report = []
    for r in result.replicas:
        rep = written[r.replica.name]
        same, identical = agrees_with(rep, leader)
        problems = [] if same else ["log is not a prefix of the leader's"]
        if r.outcome is not None and r.outcome.failed is not None:
            problems.append(f"written as the broker leaves it when its fetcher fails: {r.outcome.failed['reason']}")
        report.append(RepairedReplica(r.replica.name, rep.path, rep.log_end_offset, rep.high_watermark, identical,
                                      problems))
    mark_complete(root, f"replog repair: {len(report)} replicas")
    return report
