"""The whole-command goals of the issues, measured in one run, each as a ratio to a peer or a peak.

Inputs (`bench.partitions`, kept and reused under `--inputs DIR`):
- one partition of `size` bytes of 100-record batches ("large") and one of 1-record batches ("tiny");
  one tiny partition of `small` bytes;
- three replicas of `size` (and of `small`) bytes of 1-record batches that diverge near the end;
- 9 MiB partitions of each shape and a replica set that warm a process up (imports, the compiled
  kernels' first calls) before a timing inside it.

Goals (`GOALS`), every replog measurement in a fresh process (`bench.children`: peak RSS, CPU
seconds, killed past `--rss-cap`), so a command whose memory grows cannot take the machine down:
- doctor: `diagnose` timed inside a warmed-up process, and the `doctor` command less the start-up
  (`startup_seconds`), evidence hashes included, against aiokafka's compiled batch walk + CRC over
  the same segments' bytes (read into memory first, outside its time): aiokafka seconds / doctor
  seconds >= 1.0 on both shapes. Also doctor / replog's compiled walk (<= 2.0, the earlier goal).
- rss: peak resident set of `ls`, `doctor`, `recover`, `dump --deep` on the tiny partitions and of
  `replay`, `repair` on the replica sets, at `small` and at `size`: under its limit at both sizes,
  memory not growing with the log.
- replay: `replay_paths` of the three replicas timed inside a warmed-up process / replog's compiled
  walk of their segments (<= 1.5); the command's peak RSS (< 500 MiB).
- repair: `cp -r` of the three replicas, and `cp` + fsync of every copied file (repair fsyncs its
  outputs), over the `repair` command less the start-up (>= 0.5).
- spark (`--spark`): the fleet-scan goals of `bench.spark_goal` (throughput per core against doctor, the
  fixed cost, rescans, a fleet of 3 clusters x 20 brokers x 300 partitions).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from bench import inputs, partitions, peers
from bench.children import DEFAULT_CAP_MIB, python_run, replog_run
from replog.formats.fileio import mapped
from replog.formats.kafka import names

T = TypeVar("T")
MiB = 1 << 20
TOPIC = "bench"
WARM = 9 * MiB  # above the 8 MiB from which commands take their compiled paths
SHAPES = {"large": inputs.SHAPES[0], "tiny": inputs.SHAPES[1]}
GOALS = {"doctor": (">=", 1.0), "doctor_walk": ("<=", 2.0), "replay": ("<=", 1.5), "repair": (">=", 0.5)}
RSS_LIMIT_MIB = {"ls": 300, "doctor": 300, "recover": 300, "dump --deep": 300, "replay": 500, "repair": 300}


# --- inputs -------------------------------------------------------------------------


def label(size: int) -> str:
    return f"{size // MiB}m" if size % MiB == 0 else f"{size // 1024}k"


@dataclass(frozen=True)
class Inputs:
    root: Path
    partitions: dict[str, Path]        # "<shape>-<size>" -> partition dir
    replicas: dict[int, list[Path]]    # size -> the three partition dirs

    def partition(self, shape: str, size: int) -> Path:
        return self.partitions[f"{shape}-{label(size)}"]


def prepare(root: Path, size: int, small: int) -> tuple[Inputs, dict[str, float]]:
    """Build the inputs missing under `root` (a finished one has a `.complete` marker); the build seconds."""
    root.mkdir(parents=True, exist_ok=True)
    built: dict[str, float] = {}
    parts: dict[str, Path] = {}
    for shape, nbytes in [("large", size), ("tiny", size), ("tiny", small), ("large", WARM), ("tiny", WARM)]:
        key = f"{shape}-{label(nbytes)}"
        pdir = root / f"partition-{key}" / f"{TOPIC}-0"
        built[key] = _once(pdir.parent, partial(partitions.build_partition, pdir, SHAPES[shape], nbytes))
        parts[key] = pdir
    reps: dict[int, list[Path]] = {}
    for nbytes in sorted({small, size, WARM}):
        home = root / f"replicas-tiny-{label(nbytes)}"
        built[f"replicas-{label(nbytes)}"] = _once(
            home, partial(partitions.build_replicas, home, nbytes, SHAPES["tiny"], topic=TOPIC))
        reps[nbytes] = [home / f"broker-{k}" / f"{TOPIC}-0" for k in (1, 2, 3)]
    return Inputs(root, parts, reps), built


def _once(target: Path, build: Callable[[], object]) -> float:
    """Build `target` unless a previous build finished (0.0 then); the seconds it took."""
    marker = target.with_name(target.name + ".complete")
    if marker.exists():
        return 0.0
    if target.exists():
        shutil.rmtree(target)
    started = time.perf_counter()
    build()
    marker.write_text("built by bench.partitions\n")
    return round(time.perf_counter() - started, 2)


def log_files(pdirs: list[Path]) -> list[tuple[Path, int]]:
    return [(p / n, seg.base_offset) for p in pdirs for n in sorted(os.listdir(p))
            if n.endswith(".log") and (seg := names.parse_segment_file_name(n)) is not None]


def nbytes(files: list[tuple[Path, int]]) -> int:
    return sum(p.stat().st_size for p, _ in files)


def specs(pdirs: list[Path]) -> list[str]:
    return [f"{p.parent.name}={p}" for p in pdirs]


# --- timing -------------------------------------------------------------------------


def timed(fn: Callable[[], T], repeat: int) -> tuple[float, T]:
    """Best wall time of `repeat` runs and the last run's result (inputs in the page cache: walks run first)."""
    times = []
    for _ in range(max(repeat, 1)):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return min(times), result


def best(fn: Callable[[], Any], repeat: int) -> float:
    return timed(fn, repeat)[0]


def walk_files(files: list[tuple[Path, int]]) -> int:
    """The baseline: replog's compiled batch walk (with CRC) of every segment, block by block."""
    from replog.formats.kafka.fastwalk import FastWalk
    n = 0
    for path, base in files:
        with mapped(path) as buf:
            for block in FastWalk(buf, str(path), base).blocks():
                n += len(block)
    return n


def aiokafka_seconds(files: list[tuple[Path, int]], repeat: int) -> float:
    """aiokafka's batch walk + CRC of every segment, each read into memory first (outside the time)."""
    total = 0.0
    for path, _ in files:
        data = path.read_bytes()
        total += best(partial(peers.aiokafka_walk, data, str(path)), repeat)
        del data
    return total


STARTUP = ("import replog.toolkit.cli, replog.toolkit.commands, replog.toolkit.doctor_view, replog.recovery.doctor, "
           "replog.recovery.kafka.replay, replog.recovery.kafka.repair; "
           "from replog.formats.kafka import batch, fastwalk, fastrecords; "
           "d = batch.build_batch([batch.Record(0, 0, b'k', b'v')], base_offset=0); "
           "fastrecords.record_columns(d, 'p', next(fastwalk.FastWalk(d, 'p', 0).blocks()))")


def startup_seconds(repeat: int = 3) -> float:
    """What a command pays before it reads its input: the interpreter, replog's imports and the
    compiled kernels' first calls (numba's cache warm), in a fresh process."""
    return best(lambda: subprocess.run([sys.executable, "-c", STARTUP], check=True), repeat)


# Timed inside a child after a warm-up on the 9 MiB inputs: in process, start-up excluded.
DOCTOR_IN_PROCESS = """
import json, sys, time
from replog.recovery.doctor import diagnose
warm, target, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3])
diagnose([warm])
times = []
for _ in range(repeat):
    t = time.perf_counter()
    report = diagnose([target])
    times.append(time.perf_counter() - t)
print(json.dumps({"seconds": min(times), "errors": report.summary["errors"]}))
"""

REPLAY_IN_PROCESS = """
import json, sys, time
from replog.recovery.kafka.replay import replay_paths
warm, target, repeat = json.loads(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3])
replay_paths(warm)
times = []
for _ in range(repeat):
    t = time.perf_counter()
    result = replay_paths(target)
    times.append(time.perf_counter() - t)
print(json.dumps({"seconds": min(times), "leader": result.leader.name,
                  "lost_records": sum(r.lost.records for r in result.replicas)}))
"""


@contextmanager
def scratch(root: Path, name: str) -> Iterator[Path]:
    """An empty directory under `root` (same file system as the inputs), removed afterwards."""
    path = root / ".scratch" / name
    shutil.rmtree(path, ignore_errors=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        try:
            path.parent.rmdir()  # the last one out leaves the inputs dir as it was
        except OSError:
            pass


def _ratio(name: str, numerator: float | None, denominator: float | None) -> dict[str, Any]:
    """numerator / denominator against the goal; no ratio where a side is missing (a failed run)."""
    op, target = GOALS[name]
    if not numerator or not denominator or denominator <= 0:
        return {"ratio": None, "goal": f"{op} {target}", "met": False}
    value = numerator / denominator
    met = value <= target if op == "<=" else value >= target
    return {"ratio": round(value, 3), "goal": f"{op} {target}", "met": met}


def _net(command: dict[str, Any], startup: float) -> float | None:
    """A finished command's seconds less the start-up (None when it failed or took less)."""
    ok = command["returncode"] in (0, 1) and "killed_over_mib" not in command
    net = command["seconds"] - startup
    return round(net, 3) if ok and net > 0 else None


# --- the goals ------------------------------------------------------------------------


def doctor_goal(data: Inputs, shape: str, size: int, startup: float, repeat: int, cap: int) -> dict[str, Any]:
    """doctor (timed in a warmed-up process, and the command less its start-up) vs aiokafka's walk + CRC."""
    pdir = data.partition(shape, size)
    files = log_files([pdir])
    walk = best(lambda: walk_files(files), repeat + 1)  # also brings the segments into the page cache
    peer = aiokafka_seconds(files, repeat)
    child = python_run(DOCTOR_IN_PROCESS, [str(data.partition(shape, WARM)), str(pdir), str(repeat)], cap)
    command = replog_run(["doctor", str(pdir), "--format", "json"], cap).to_dict()
    seconds, net = child.result.get("seconds"), _net(command, startup)
    out = {"bytes": nbytes(files), "aiokafka_seconds": round(peer, 3), "walk_seconds": round(walk, 3),
           "doctor_seconds": None if seconds is None else round(seconds, 3), "process": child.to_dict(),
           "errors": child.result.get("errors"), "command": command, "command_net_seconds": net,
           **_ratio("doctor", peer, seconds)}
    command_ratio = _ratio("doctor", peer, net)
    out["command_ratio"], out["met"] = command_ratio["ratio"], out["met"] and command_ratio["met"]
    out["walk_ratio"] = _ratio("doctor_walk", seconds, walk)
    return out


def rss_goal(data: Inputs, sizes: list[int], cap: int, progress: Callable[[str], None]) -> list[dict[str, Any]]:
    """Peak RSS of every command, each in a fresh process, on the inputs of every size."""
    rows = []
    for size in sizes:
        pdir = data.partition("tiny", size)
        logs = [str(p) for p, _ in log_files([pdir])]
        with scratch(data.root, "out") as out:
            commands = {"ls": ["ls", str(pdir), "--format", "json"],
                        "doctor": ["doctor", str(pdir), "--format", "json"],
                        "recover": ["recover", str(pdir), "--out", str(out / "recover"), "--format", "json"],
                        "dump --deep": ["dump", *logs, "--deep", "--format", "jsonl"],
                        "replay": ["replay", *specs(data.replicas[size]), "--format", "json"],
                        "repair": ["repair", *specs(data.replicas[size]), "--out", str(out / "repair"),
                                   "--format", "json"]}
            for name, args in commands.items():
                run = replog_run(args, cap)
                shutil.rmtree(out / name, ignore_errors=True)
                limit = RSS_LIMIT_MIB[name]
                kind = "replicas" if name in ("replay", "repair") else "tiny"
                rows.append({"command": name, "input": f"{kind}-{label(size)}", "bytes": size, **run.to_dict(),
                             "limit_mib": limit, "met": run.ok and run.peak_rss_mib < limit})
                progress(f"rss {name} {kind}-{label(size)}: {run.to_dict()}")
    return rows


def replay_goal(data: Inputs, size: int, command: dict[str, Any], repeat: int, cap: int) -> dict[str, Any]:
    """replay_paths of the three replicas (timed in a warmed-up process) / the compiled walk of their segments."""
    pdirs = data.replicas[size]
    files = log_files(pdirs)
    walk = best(lambda: walk_files(files), repeat)
    child = python_run(REPLAY_IN_PROCESS, [json.dumps(specs(data.replicas[WARM])), json.dumps(specs(pdirs)),
                                           str(repeat)], cap)
    seconds = child.result.get("seconds")
    out = {"bytes": nbytes(files), "seconds": None if seconds is None else round(seconds, 3),
           "walk_seconds": round(walk, 3), "process": child.to_dict(), **_ratio("replay", seconds, walk),
           "leader": child.result.get("leader"), "lost_records": child.result.get("lost_records"),
           "command": command, "rss_limit_mib": RSS_LIMIT_MIB["replay"]}
    out["met"] = out["met"] and command["met"]
    return out


def repair_goal(data: Inputs, size: int, command: dict[str, Any], startup: float) -> dict[str, Any]:
    """`cp -r` (and `cp` + fsync) of the three replicas / the repair command less its start-up."""
    pdirs = data.replicas[size]
    times = {}
    for name, sync in (("cp", False), ("cp_sync", True)):
        with scratch(data.root, "cp") as out:
            out.mkdir()
            times[name] = best(partial(_cp, pdirs, out, sync), 1)
    net = _net(command, startup)
    return {"bytes": nbytes(log_files(pdirs)), "command": command, "command_net_seconds": net,
            "cp_seconds": round(times["cp"], 3), "cp_sync_seconds": round(times["cp_sync"], 3),
            **_ratio("repair", times["cp"], net), "sync_ratio": _ratio("repair", times["cp_sync"], net)["ratio"]}


def _cp(pdirs: list[Path], out: Path, sync: bool) -> None:
    """What a plain copy of the replicas costs; with `sync`, every copied file fsynced (coreutils `sync FILE`)."""
    for k, pdir in enumerate(pdirs):
        subprocess.run(["cp", "-r", str(pdir), str(out / f"{k}")], check=True)
    if sync:
        copied = [str(p) for p in out.rglob("*") if p.is_file()]
        subprocess.run(["sync", *copied], check=True)


def measure(size: int, small: int, repeat: int = 1, spark: bool = False, inputs_dir: Path | None = None,
            cap_mib: int = DEFAULT_CAP_MIB) -> dict[str, Any]:
    """Every goal on inputs of `size` (and `small`) bytes, built under `inputs_dir` (kept) or a temp dir.
    Progress goes to stderr as each measurement ends; a goal that fails says why and the others go on."""
    def progress(text: str) -> None:
        print(f"[goals] {text}", file=sys.stderr, flush=True)

    with _root(inputs_dir) as root:
        data, built = prepare(root, size, small)
        progress(f"inputs under {root}: {built}")
        startup = startup_seconds()
        out: dict[str, Any] = {"inputs": {"root": str(root), "size_bytes": size, "small_bytes": small,
                                          "build_seconds": built},
                               "startup_seconds": round(startup, 3), "rss_cap_mib": cap_mib}
        out["doctor"] = {}
        for shape in SHAPES:
            out["doctor"][shape] = _guard(partial(doctor_goal, data, shape, size, startup, repeat, cap_mib))
            progress(f"doctor {shape}: {out['doctor'][shape]}")
        out["rss"] = rss_goal(data, sorted({small, size}), cap_mib, progress)
        at_size = {r["command"]: r for r in out["rss"] if r["bytes"] == size}
        out["replay"] = _guard(lambda: replay_goal(data, size, at_size["replay"], repeat, cap_mib))
        progress(f"replay: {out['replay']}")
        out["repair"] = _guard(lambda: repair_goal(data, size, at_size["repair"], startup))
        progress(f"repair: {out['repair']}")
        if spark:
            from bench.spark_goal import spark_goal
            out["spark"] = _guard(lambda: spark_goal(root, cap=cap_mib, progress=progress))
    return out


def _guard(fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """A goal's figures, or what stopped it: one goal failing never loses the others'."""
    try:
        return fn()
    except Exception as err:  # noqa: BLE001 - a measurement harness reports, it does not stop
        return {"error": f"{type(err).__name__}: {err}"[:300], "met": False}


@contextmanager
def _root(inputs_dir: Path | None) -> Iterator[Path]:
    if inputs_dir is not None:
        yield inputs_dir
        return
    with tempfile.TemporaryDirectory(prefix="replog-goals-") as tmp:
        yield Path(tmp)
