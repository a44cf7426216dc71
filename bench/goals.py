"""The whole-command goals of issue 7, each as a ratio to a batch walk of the same bytes.

- `doctor` on one partition vs the compiled batch walk of its segments (goal <= 2x);
- `replay` of three replicas that diverge near the end vs the walk of all three (goal <= 1.5x);
- Spark fleet scan (`local[2]`, start-up excluded) throughput per core vs the
  single-process walk (goal >= 60%), only with `--spark`.

The replicas are written with our own writer (`write_partition`, indexes
included): a common prefix, then broker-1 (the leader) has 20 batches of a new
epoch, broker-2 30 unreplicated batches of the old epoch, broker-3 lags by 10.
"""
from __future__ import annotations

import os
import random
import shutil
import struct
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import inputs
from replog.formats.fileio import atomic_write, mapped
from replog.formats.kafka import checkpoint, names

MiB = 1 << 20
TOPIC = "bench"
GOALS = {"doctor": ("<=", 2.0), "replay": ("<=", 1.5), "spark": (">=", 0.6)}


def _batches(shape: inputs.Shape, count: int, first_offset: int, epoch: int, seed: int) -> list[bytes]:
    """`count` valid batches from `first_offset`, restamped (offset and epoch are outside the CRC)."""
    rnd = random.Random(seed)
    templates = [inputs._template(rnd, shape) for _ in range(inputs.TEMPLATES)]
    out = []
    for i in range(count):
        raw = bytearray(templates[i % len(templates)])
        struct.pack_into(">q", raw, 0, first_offset + i * shape.records)
        struct.pack_into(">i", raw, 12, epoch)
        out.append(bytes(raw))
    return out


def build_replicas(root: Path, size: int, shape: inputs.Shape = inputs.SHAPES[0],
                   segment_bytes: int = 16 * MiB) -> list[Path]:
    """Three broker log dirs holding `bench-0`, about `size` bytes each; returns the partition dirs."""
    from replog.recovery.kafka.writer import write_partition
    one = len(_batches(shape, 1, 0, 0, 1)[0])
    n = max(size // one, 40)
    prefix = _batches(shape, n - 20, 0, 3, 7)
    end = (n - 20) * shape.records
    tails = {"broker-1": _batches(shape, 20, end, 4, 8), "broker-2": _batches(shape, 30, end, 3, 9)}
    logs = {"broker-1": prefix + tails["broker-1"], "broker-2": prefix + tails["broker-2"],
            "broker-3": prefix[:-10]}
    out = []
    for broker, batches in logs.items():
        pdir = root / broker / f"{TOPIC}-0"
        written = write_partition(pdir, batches, segment_bytes=segment_bytes)
        hw = min(end, written.log_end_offset)
        atomic_write(root / broker / names.REPLICATION_OFFSET_CHECKPOINT,
                     checkpoint.build_offset_checkpoint({(TOPIC, 0): hw}))
        out.append(pdir)
    return out


def log_files(pdirs: list[Path]) -> list[tuple[Path, int]]:
    return [(p / n, seg.base_offset) for p in pdirs for n in sorted(os.listdir(p))
            if n.endswith(".log") and (seg := names.parse_segment_file_name(n)) is not None]


def walk_files(files: list[tuple[Path, int]]) -> int:
    """The baseline: the compiled batch walk (with CRC) of every segment, mapped like the commands map them."""
    from replog.formats.kafka.fastwalk import fast_batch_columns
    n = 0
    for path, base in files:
        with mapped(path) as buf:
            table, _valid, _found = fast_batch_columns(buf, str(path), base)
            n += table.num_rows
    return n


def best(fn: Callable[[], Any], repeat: int) -> float:
    fn()  # warm-up: page cache, numba cache, imports
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def _goal(name: str, seconds: float, walk_seconds: float, nbytes: int, **extra: Any) -> dict[str, Any]:
    op, target = GOALS[name]
    ratio = seconds / walk_seconds
    return {"seconds": round(seconds, 4), "walk_seconds": round(walk_seconds, 4), "bytes": nbytes,
            "ratio": round(ratio, 3), "goal": f"{op} {target}",
            "met": ratio <= target if op == "<=" else ratio >= target, **extra}


def measure(size: int, repeat: int, spark: bool = False) -> dict[str, Any]:
    """Build the replicas under a temp dir and measure every goal on them."""
    from replog.recovery.doctor import diagnose
    from replog.recovery.kafka.replay import replay_paths
    with tempfile.TemporaryDirectory(prefix="replog-goals-") as tmp:
        pdirs = build_replicas(Path(tmp), size)
        files = log_files(pdirs)
        nbytes = sum(p.stat().st_size for p, _ in files)
        leader = [f for f in files if f[0].parent == pdirs[0]]
        out: dict[str, Any] = {"replica_bytes": size, "segments": len(files)}
        walk_leader = best(lambda: walk_files(leader), repeat)
        doctor = best(lambda: diagnose([pdirs[0]]), repeat)
        out["doctor"] = _goal("doctor", doctor, walk_leader, sum(p.stat().st_size for p, _ in leader))
        walk_all = best(lambda: walk_files(files), repeat)
        specs = [f"{p.parent.name}={p}" for p in pdirs]
        result = replay_paths(specs)
        replay = best(lambda: replay_paths(specs), repeat)
        out["replay"] = _goal("replay", replay, walk_all, nbytes, leader=result.leader.name,
                              lost_records=sum(r.lost.records for r in result.replicas))
        if spark:
            out["spark"] = spark_goal(Path(tmp), pdirs, walk_all, nbytes)
    return out


def spark_goal(root: Path, pdirs: list[Path], walk_seconds: float, nbytes: int, cores: int = 2) -> dict[str, Any]:
    """Fleet scan of the three brokers with 4 partitions each (hard links of `bench-0`), `local[cores]`."""
    from replog.spark.fleet import scan_fleet
    from replog.spark.session import get_session
    for pdir in pdirs:
        for k in range(1, 4):
            twin = pdir.parent / f"{TOPIC}-{k}"
            shutil.copytree(pdir, twin, copy_function=os.link)
    fleet_bytes = 4 * nbytes
    walk_mb_s = nbytes / walk_seconds / 1e6
    started = time.perf_counter()
    session = get_session(f"local[{cores}]", "replog-bench")
    startup = time.perf_counter() - started
    logdirs = [str(p.parent) for p in pdirs]
    try:
        scan_fleet(logdirs, root / "warm", session=session)   # python workers, numba cache, JIT
        t = time.perf_counter()
        scan_fleet(logdirs, root / "fleet", session=session)
        seconds = time.perf_counter() - t
    finally:
        session.stop()
    per_core = fleet_bytes / seconds / 1e6 / cores
    return {"seconds": round(seconds, 3), "startup_seconds": round(startup, 1), "bytes": fleet_bytes,
            "cores": cores, "mb_s_per_core": round(per_core, 1), "walk_mb_s": round(walk_mb_s, 1),
            "ratio": round(per_core / walk_mb_s, 3), "goal": ">= 0.6", "met": per_core / walk_mb_s >= 0.6}
