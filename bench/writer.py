"""The partition writer and `recover` on production-sized logs of one-record batches, against `cp`.

`python -m bench.writer --gib 2 --dir /tmp/wbench` builds a partition of
~94-byte batches (`inputs.SHAPES[1]`, restamped templates) in 1 GiB segments,
then measures, each in a fresh process with its peak RSS (VmHWM):
- `cp` of the segment files, and `cp` + `sync` (what a durable copy costs);
- `write_partition_runs` of the segments as runs (it fsyncs and verifies);
- `recover_partition` of the partition (what `replog recover` runs), with `--recover`.
Goals (issue "Production-sized logs"): the writer at >= 0.5x the throughput of
`cp` of the same bytes, peak RSS < 300 MB whatever the size.
The input is built with numpy, a block of templates restamped at a time: a
2 GiB partition takes seconds. `--keep` leaves the input for the next run.
"""
from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import inputs
from replog.formats.kafka import checkpoint, names

GiB = 1 << 30
TOPIC = "bench"
ROOT = Path(__file__).resolve().parent.parent
_BLOCK = 1 << 16  # batches restamped per numpy step


def build_partition(pdir: Path, total: int, segment_bytes: int = GiB, shape: inputs.Shape = inputs.SHAPES[1],
                    seed: int = 7) -> list[tuple[Path, int]]:
    """About `total` bytes of one-shape batches in segments rolled at `segment_bytes`, as the broker
    rolls them; returns (segment, base offset) pairs. All templates of a shape have one size."""
    rnd = random.Random(seed)
    templates = [inputs._template(rnd, shape) for _ in range(inputs.TEMPLATES)]
    size = len(templates[0])
    if any(len(t) != size for t in templates):
        raise ValueError("templates of different sizes")
    tile = np.frombuffer(b"".join(templates) * (_BLOCK // len(templates)), dtype=np.uint8).reshape(_BLOCK, size)
    block = tile.copy()
    per_segment = segment_bytes // size
    count = total // size
    pdir.mkdir(parents=True, exist_ok=True)
    segments, offset = [], 0
    while offset < count * shape.records:
        base = offset
        path = pdir / names.segment_file_name(base, "log")
        n = min(per_segment, count - offset // shape.records)
        with open(path, "wb") as f:
            for start in range(0, n, _BLOCK):
                rows = min(_BLOCK, n - start)
                offsets = base + (start + np.arange(rows, dtype=np.int64)) * shape.records
                block[:rows, :8] = offsets.astype(">i8").view(np.uint8).reshape(rows, 8)
                f.write(block[:rows].tobytes())
        segments.append((path, base))
        offset += n * shape.records
    tp = (TOPIC, 0)
    for name, value in ((names.REPLICATION_OFFSET_CHECKPOINT, offset),
                        (names.RECOVERY_POINT_OFFSET_CHECKPOINT, offset)):
        (pdir.parent / name).write_bytes(checkpoint.build_offset_checkpoint({tp: value}))
    return segments


def _child(code: str, *args: str) -> dict[str, Any]:
    """Run `code` in a fresh interpreter; it prints a JSON dict, to which its CPU seconds (user + system,
    imports included: a loaded machine stretches the wall clock, not these) and peak RSS are added."""
    tail = ("import json as _j, resource as _res; _u = _res.getrusage(_res.RUSAGE_SELF); "
            "_r['cpu_seconds'] = round(_u.ru_utime + _u.ru_stime, 2); "
            "_r['peak_rss_mib'] = [int(l.split()[1]) for l in open('/proc/self/status') "
            "if l.startswith('VmHWM')][0] / 1024; print(_j.dumps(_r))")
    out = subprocess.run([sys.executable, "-c", code + "\n" + tail, *args], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


WRITE = """
import sys, time
from replog.recovery.kafka.segment_writer import ByteRun, write_partition_runs
from replog.formats.kafka import names
from pathlib import Path
runs = []
for p in sorted(Path(sys.argv[1]).glob('*.log')):
    runs.append(ByteRun(str(p), 0, p.stat().st_size, names.parse_segment_file_name(p.name).base_offset))
t = time.perf_counter()
w = write_partition_runs(sys.argv[2], runs)
_r = {'seconds': time.perf_counter() - t, 'segments': len(w.segment_bases), 'log_end_offset': w.log_end_offset}
"""

RECOVER = """
import sys, time
from replog.recovery.kafka.recover import recover_partition
t = time.perf_counter()
res = recover_partition(sys.argv[1], sys.argv[2])
_r = {'seconds': time.perf_counter() - t, 'log_end_offset': res.log_end_offset, 'verified': res.verified}
"""


def timed(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True)
    return time.perf_counter() - t


def measure(directory: Path, total: int, recover: bool, repeat: int) -> dict[str, Any]:
    """Build (or reuse) the partition under `directory`/in, then best-of-`repeat` of each contender."""
    pdir = directory / "in" / f"{TOPIC}-0"
    started = time.perf_counter()
    segments = sorted(pdir.glob("*.log")) if pdir.is_dir() else [p for p, _ in build_partition(pdir, total)]
    nbytes = sum(p.stat().st_size for p in segments)
    batch_size = len(inputs._template(random.Random(7), inputs.SHAPES[1]))
    report: dict[str, Any] = {"bytes": nbytes, "segments": len(segments), "batches": nbytes // batch_size,
                              "build_seconds": round(time.perf_counter() - started, 2), "repeat": repeat}
    subprocess.run(["cat", *map(str, segments)], stdout=subprocess.DEVNULL, check=True)  # in the page cache
    rounds: dict[str, list[dict[str, Any]]] = {"cp": [], "cp_sync": [], "write_partition_runs": [], "recover": []}
    for _ in range(repeat):
        subprocess.run(["sync"], check=True)
        for name, with_sync in (("cp", False), ("cp_sync", True)):
            dest = directory / name
            dest.mkdir()
            seconds = timed(["cp", *map(str, segments), str(dest)])
            if with_sync:
                seconds += timed(["sync"])
            rounds[name].append({"seconds": round(seconds, 3)})
            shutil.rmtree(dest)
            subprocess.run(["sync"], check=True)
        out = directory / "out" / f"{TOPIC}-0"
        w = _child(WRITE, str(pdir), str(out))
        w["logs_identical_to_input"] = all(
            subprocess.run(["cmp", "-s", str(p), str(out / p.name)]).returncode == 0 for p in segments)
        rounds["write_partition_runs"].append(w)
        shutil.rmtree(out.parent)
        if recover:
            subprocess.run(["sync"], check=True)
            rounds["recover"].append(_child(RECOVER, str(pdir), str(directory / "recovered")))
            shutil.rmtree(directory / "recovered")
    for name, runs in rounds.items():
        if runs:
            best = min(runs, key=lambda r: r["seconds"])
            report[name] = dict(best, mb_s=round(nbytes / best["seconds"] / 1e6, 1),
                                all_seconds=[round(r["seconds"], 3) for r in runs])
            if "peak_rss_mib" in best:
                report[name]["max_peak_rss_mib"] = max(r["peak_rss_mib"] for r in runs)
    writer = report["write_partition_runs"]
    writer["vs_cp"] = round(report["cp"]["seconds"] / writer["seconds"], 3)
    writer["vs_cp_sync"] = round(report["cp_sync"]["seconds"] / writer["seconds"], 3)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.writer", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gib", type=float, default=2.0, help="partition size in GiB (default 2)")
    parser.add_argument("--dir", type=Path, required=True,
                        help="scratch dir; an input partition left there by --keep is reused")
    parser.add_argument("--recover", action="store_true", help="also measure `recover_partition`")
    parser.add_argument("--repeat", type=int, default=1, help="best of N (default 1)")
    parser.add_argument("--keep", action="store_true", help="keep the input partition for the next run")
    args = parser.parse_args(argv)
    args.dir.mkdir(parents=True, exist_ok=True)
    try:
        report = measure(args.dir, int(args.gib * GiB), args.recover, args.repeat)
    finally:
        if not args.keep:
            shutil.rmtree(args.dir, ignore_errors=True)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
