"""`replog recover` against the broker's own startup recovery of the same damaged partition, from the broker lab.

A real Kafka 4.4.0 broker (controller c1 and broker b2 of the lab, on loopback) creates a single-replica topic and
stops cleanly; its empty partition is replaced by a partition of about `size` bytes of 100-record batches (the
bench's partition builder; the broker's own `partition.metadata` kept, so the topic id is the broker's), the last
segment's tail is torn, and `.kafka_cleanshutdown` is removed: at its next start the broker validates every batch
above its recovery point (0) and truncates the torn batch away, as `replog recover` does.

Timed, each the best of `repeat`, inputs in the page cache:
- the broker: from the lab writing its start line (just before the JVM is spawned) to the timestamp of its
  `Loaded N logs in ...` line, i.e. JVM start, broker start-up, metadata catch-up and the recovery itself (the log
  loader's own figure, `Completed load of Log(...) in N ms`, is reported beside it); each run starts on a fresh copy
  of the damaged partition;
- replog: `replog recover PARTITION --out DIR` as a whole process (it writes the recovered partition to a new
  dir; the broker rewrites its own in place).

Both must keep the same log end (the broker's `logEndOffset` in its load line, replog's report): a ratio of two
different recoveries would mean nothing. The ratio is the broker's seconds over replog's: above 1, replog is faster.
"""
from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from bench import inputs, partitions

VERSION = "4.4.0"
TOPIC = "bench-recover"
RECOVER_GOAL = 1.0        # issue: recover >= 1x the broker's startup recovery
_LOADED = re.compile(r"\[([^\]\n]+)\] INFO Loaded \d+ logs in \d+ms")
_COMPLETED = re.compile(rf"Completed load of Log\(dir=[^)]*{re.escape(TOPIC)}-0.*?"
                        r"logEndOffset=(\d+)\).* in (\d+) ?ms")


def _wall(stamp: str) -> float:
    """A log4j `[yyyy-MM-dd HH:mm:ss,SSS]` stamp (the broker's local time) as epoch seconds."""
    return datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp()


def _damage(pdir: Path) -> None:
    """The torn tail of a crash mid-write: the last segment loses its last 7 bytes."""
    log = sorted(pdir.glob("*.log"))[-1]
    os.truncate(log, log.stat().st_size - 7)


def prepare(cluster: Any, size: int, damaged: Path) -> None:
    """The broker's empty partition replaced by `size` bytes of batches, torn, without a clean-shutdown marker."""
    cluster.start(brokers=(2,))
    cluster.create_topic(TOPIC, [2], wait_isr=False)
    cluster.stop_all()
    log_dir = cluster.brokers[2].log_dir
    pdir = log_dir / f"{TOPIC}-0"
    metadata = (pdir / "partition.metadata").read_bytes()
    shutil.rmtree(pdir)
    partitions.build_partition(pdir, inputs.SHAPES[0], size)
    (pdir / "partition.metadata").write_bytes(metadata)
    _damage(pdir)
    (log_dir / ".kafka_cleanshutdown").unlink(missing_ok=True)
    subprocess.run(["cp", "-a", str(log_dir), str(damaged)], check=True)


def broker_once(cluster: Any, damaged: Path) -> tuple[float, int, int]:
    """One start of the broker on a fresh copy of the damaged dir: (seconds to loaded, loader ms, log end)."""
    b2 = cluster.brokers[2]
    shutil.rmtree(b2.log_dir)
    subprocess.run(["cp", "-a", str(damaged), str(b2.log_dir)], check=True)
    mark = len(b2.output())
    b2.start()
    try:
        b2.wait_for_line(_LOADED.pattern, timeout=600)
        text = b2.output()[mark:]
    finally:
        b2.kill()
    started = float(text.split("===== replog lab: start ", 1)[1].split()[0])
    loaded = _LOADED.search(text)
    completed = _COMPLETED.search(text)
    assert loaded is not None and completed is not None, f"the broker's load lines are missing:\n{text[-2000:]}"
    return _wall(loaded.group(1)) - started, int(completed.group(2)), int(completed.group(1))


def replog_once(damaged: Path, out: Path) -> tuple[float, int]:
    """`replog recover` as a whole process: (seconds, the log end it kept)."""
    shutil.rmtree(out, ignore_errors=True)
    cmd = [str(Path(sys.executable).parent / "replog"), "recover", str(damaged / f"{TOPIC}-0"), "--out", str(out),
           "--format", "json"]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise RuntimeError(f"replog recover exited {done.returncode}: {done.stderr[-500:]}")
    return seconds, int(json.loads(done.stdout)["log_end_offset"])


def measure(scratch: Path, size: int, repeat: int) -> dict[str, Any]:
    """The broker's startup recovery and `replog recover` of the same damaged partition, best of `repeat` each."""
    lab = importlib.import_module("tests.brokers.kafka_lab")   # the lab is a test harness, outside the package
    (scratch / "cluster").mkdir(parents=True)
    cluster = lab.Cluster(lab.ClusterSpec(VERSION, "kraft"), scratch / "cluster")
    damaged = scratch / "damaged"
    try:
        prepare(cluster, size, damaged)
        cluster.start(brokers=())
        broker = [broker_once(cluster, damaged) for _ in range(repeat)]
    finally:
        cluster.close()
    ours = [replog_once(damaged, scratch / "recovered") for _ in range(repeat)]
    broker_seconds, loader_ms, broker_end = min(broker)
    replog_seconds, replog_end = min(ours)
    if broker_end != replog_end:
        raise RuntimeError(f"the broker kept {broker_end} offsets, replog {replog_end}: not the same recovery")
    nbytes = sum(f.stat().st_size for f in (damaged / f"{TOPIC}-0").glob("*.log"))
    return {"peer": f"Kafka {VERSION} broker startup (JVM start to 'Loaded N logs')", "bytes": nbytes,
            "repeat": repeat, "log_end_offset": broker_end, "broker_seconds": round(broker_seconds, 3),
            "broker_loader_ms": loader_ms, "replog_seconds": round(replog_seconds, 3),
            "ratio": round(broker_seconds / replog_seconds, 2), "goal": f">= {RECOVER_GOAL:g}",
            "met": broker_seconds / replog_seconds >= RECOVER_GOAL}
