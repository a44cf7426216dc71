"""Replicas on disk for replay tests, written with our writers (helpers, not tests)."""
from __future__ import annotations

from pathlib import Path

from replog.formats.fileio import atomic_write
from replog.formats.kafka import batch as v2
from replog.formats.kafka import checkpoint
from replog.recovery.kafka.epoch_cache import EpochCache
from replog.recovery.kafka.writer import write_partition

TS = 1_700_000_000_000


def batch(offset: int, epoch: int, tag: str = "", n: int = 1) -> bytes:
    recs = [v2.Record(offset + i, TS + offset + i, f"k{offset + i}".encode(), f"o{offset + i}e{epoch}{tag}".encode())
            for i in range(n)]
    return v2.build_batch(recs, base_offset=offset, partition_leader_epoch=epoch)


def replica_dir(root: Path, name: str, batches: list[tuple[int, int]] | list[bytes], *, hw: int,
                epochs: list[tuple[int, int]] | None = None, log_start: int | None = None,
                topic: str = "t", partition: int = 0, segment_bytes: int = 1 << 20) -> Path:
    """A log dir `root/name` holding `topic-partition` with one record per (offset, epoch) batch."""
    log_dir = root / name
    data = [b if isinstance(b, bytes) else batch(*b) for b in batches]
    part = log_dir / f"{topic}-{partition}"
    write_partition(part, data, segment_bytes=segment_bytes, epochs=EpochCache(epochs) if epochs is not None else None,
                    start_offset=log_start or 0)
    atomic_write(log_dir / "replication-offset-checkpoint",
                 checkpoint.build_offset_checkpoint({(topic, partition): hw}))
    if log_start is not None:
        atomic_write(log_dir / "log-start-offset-checkpoint",
                     checkpoint.build_offset_checkpoint({(topic, partition): log_start}))
    return part
