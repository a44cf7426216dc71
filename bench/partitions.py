"""Fast builders of big benchmark partitions: GiBs of valid batches in seconds, not minutes.

A cycle of `inputs.TEMPLATES` distinct batches (built once with our writer) is
tiled into a chunk, and each copy's base offset and partition leader epoch are
stamped in with numpy (both sit before the CRC'd part of a v2 batch, so every
batch stays valid); chunks are written straight to a raw `.log` file. The
partition around those bytes (segments rolled at `segment_bytes`, indexes,
producer snapshots, the epoch checkpoint) is then written by the streaming
partition writer from byte runs of the raw files.
"""
from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench import inputs
from replog.formats.kafka import batch as v2

MiB = 1 << 20
CHUNK_BYTES = 32 * MiB  # bytes stamped and written at a time
_AT_BASE, _AT_EPOCH = v2.AT["base_offset"], v2.AT["partition_leader_epoch"]


@dataclass(frozen=True)
class Cycle:
    """The templates of one shape back to back, and where each one starts."""

    data: np.ndarray      # uint8, every template once
    starts: np.ndarray    # start of each template in `data`
    records: int          # records per batch

    @classmethod
    def of(cls, shape: inputs.Shape, seed: int) -> Cycle:
        rnd = random.Random(seed)
        templates = [inputs._template(rnd, shape) for _ in range(inputs.TEMPLATES)]
        starts = np.cumsum([0] + [len(t) for t in templates[:-1]])
        return cls(np.frombuffer(b"".join(templates), dtype=np.uint8), starts, shape.records)

    def batches_for(self, size: int) -> int:
        """How many batches make at least `size` bytes (whole cycles count exactly)."""
        whole, rest = divmod(size, len(self.data))
        sizes = np.diff(np.append(self.starts, len(self.data)))
        return whole * len(self.starts) + int(np.searchsorted(np.cumsum(sizes), rest, side="left")) + (rest > 0)

    def position(self, batch: int) -> int:
        """Where batch number `batch` starts in a raw log of this cycle."""
        whole, k = divmod(batch, len(self.starts))
        return whole * len(self.data) + int(self.starts[k])

    def stamped(self, first_batch: int, cycles: int, first_offset: int, epoch: int) -> np.ndarray:
        """`cycles` whole cycles whose batch k gets base offset first_offset + (first_batch + k) * records."""
        out = np.tile(self.data, cycles).reshape(cycles, len(self.data))
        n = len(self.starts)
        index = first_batch + np.arange(cycles * n, dtype=np.int64).reshape(cycles, n)
        offsets = (first_offset + index * self.records).astype(">i8").view(np.uint8).reshape(cycles, n, 8)
        epoch_bytes = np.frombuffer(np.array(epoch, dtype=">i4").tobytes(), dtype=np.uint8)
        for k, start in enumerate(self.starts.tolist()):
            out[:, start + _AT_BASE:start + _AT_BASE + 8] = offsets[:, k]
            out[:, start + _AT_EPOCH:start + _AT_EPOCH + 4] = epoch_bytes
        return out.reshape(-1)


def write_raw_log(path: Path, shape: inputs.Shape, batches: int, first_offset: int, epoch: int,
                  seed: int = 7) -> int:
    """`batches` consecutive valid batches from `first_offset` into a new raw log file; its size in bytes."""
    cycle = Cycle.of(shape, seed)
    n = len(cycle.starts)
    per_chunk = max(CHUNK_BYTES // len(cycle.data), 1)
    written = done = 0
    with open(path, "wb") as f:
        while done < batches:
            cycles = min(per_chunk, -(-(batches - done) // n))
            data = cycle.stamped(done, cycles, first_offset, epoch)
            take = min(batches - done, cycles * n)
            stop = cycle.position(take)
            f.write(data[:stop].data)
            written += stop
            done += take
        f.flush()
        os.fsync(f.fileno())
    return written


def build_partition(pdir: Path, shape: inputs.Shape, size: int, *, segment_bytes: int = 1 << 30,
                    seed: int = 7) -> int:
    """A partition dir of about `size` bytes of `shape` batches (epoch 3, offsets from 0); its batch count."""
    from replog.recovery.kafka.segment_writer import ByteRun, write_partition_runs
    batches = Cycle.of(shape, seed).batches_for(size)
    pdir.parent.mkdir(parents=True, exist_ok=True)
    raw = pdir.parent / f".{pdir.name}.raw"
    try:
        nbytes = write_raw_log(raw, shape, batches, 0, 3, seed)
        write_partition_runs(pdir, [ByteRun(str(raw), 0, nbytes, 0)], segment_bytes=segment_bytes)
    finally:
        raw.unlink(missing_ok=True)
    return batches


LEADER_TAIL, UNREPLICATED_TAIL, LAG = 20, 30, 10


def build_replicas(root: Path, size: int, shape: inputs.Shape, *, topic: str = "bench",
                   segment_bytes: int = 1 << 30) -> list[Path]:
    """Three broker log dirs under `root` holding `<topic>-0`, about `size` bytes each; the partition dirs.

    A common prefix of epoch 3; then broker-1 (the leader) has `LEADER_TAIL` batches
    of a new epoch 4, broker-2 `UNREPLICATED_TAIL` batches of epoch 3 it never
    replicated, broker-3 lags `LAG` batches behind the prefix. Each broker's high
    watermark checkpoint says the prefix end (or its own log end, when lower).
    """
    from replog.formats.fileio import atomic_write
    from replog.formats.kafka import checkpoint, names
    from replog.recovery.kafka.segment_writer import ByteRun, write_partition_runs
    cycle = Cycle.of(shape, 7)
    common = max(cycle.batches_for(size), LEADER_TAIL + LAG + 1) - LEADER_TAIL
    end = common * shape.records
    scratch = root / ".raw"
    scratch.mkdir(parents=True, exist_ok=True)
    try:
        raw = {name: scratch / f"{name}.raw" for name in ("prefix", "epoch4", "old-epoch")}
        prefix = write_raw_log(raw["prefix"], shape, common, 0, 3, seed=7)
        lead = write_raw_log(raw["epoch4"], shape, LEADER_TAIL, end, 4, seed=8)
        old = write_raw_log(raw["old-epoch"], shape, UNREPLICATED_TAIL, end, 3, seed=9)
        lagging = cycle.position(common - LAG)
        runs = {"broker-1": [ByteRun(str(raw["prefix"]), 0, prefix, 0), ByteRun(str(raw["epoch4"]), 0, lead, end)],
                "broker-2": [ByteRun(str(raw["prefix"]), 0, prefix, 0), ByteRun(str(raw["old-epoch"]), 0, old, end)],
                "broker-3": [ByteRun(str(raw["prefix"]), 0, lagging, 0)]}
        out = []
        for broker, broker_runs in runs.items():
            pdir = root / broker / f"{topic}-0"
            written = write_partition_runs(pdir, broker_runs, segment_bytes=segment_bytes)
            atomic_write(root / broker / names.REPLICATION_OFFSET_CHECKPOINT,
                         checkpoint.build_offset_checkpoint({(topic, 0): min(end, written.log_end_offset)}))
            out.append(pdir)
        return out
    finally:
        for path in scratch.glob("*.raw"):
            path.unlink()
        scratch.rmdir()
