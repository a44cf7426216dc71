"""The fixed cost a user pays on every command: `replog --help`, and `doctor` of a 1 MiB partition.

Whole processes, best of `repeat` after one warm-up run (the warm-up writes the interpreter's bytecode
caches, as an installed package has them, and warms numba's kernel cache and the page cache). Both are
absolute goals (issue 31): `--help` <= 0.2 s, doctor of 1 MiB <= 0.35 s, everything counted: interpreter
start, imports, reading and hashing the input, rendering.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from bench import inputs, partitions
from bench.children import replog_run

GOALS = {"help": 0.2, "doctor_1mib": 0.35}
MiB = 1 << 20


def whole_command(args: list[str], repeat: int) -> dict[str, Any]:
    """`replog ARGS`: the best wall seconds of `repeat` fresh processes after a warm-up, and its peak RSS."""
    replog_run(args)
    runs = [replog_run(args) for _ in range(repeat)]
    failed = [r for r in runs if r.returncode not in (0, 1)]
    if failed:
        return {"error": f"exited {failed[0].returncode}: {failed[0].stderr[-300:]}", "met": False}
    best = min(runs, key=lambda r: r.seconds)
    return {"seconds": round(best.seconds, 3), "median_seconds": round(sorted(r.seconds for r in runs)[repeat // 2], 3),
            "peak_rss_mib": round(best.peak_rss_mib, 1)}


def measure(scratch: Path, repeat: int = 7) -> dict[str, Any]:
    """Both start-up goals; `scratch` receives the 1 MiB partition."""
    pdir = scratch / "startup-1m" / "bench-0"
    partitions.build_partition(pdir, inputs.SHAPES[0], MiB)  # 100-record batches
    out = {"help": whole_command(["--help"], repeat),
           "doctor_1mib": whole_command(["doctor", str(pdir)], repeat)}
    for name, limit in GOALS.items():
        row = out[name]
        row["goal"] = f"<= {limit} s"
        if "seconds" in row:
            row["met"] = row["seconds"] <= limit
    return out
