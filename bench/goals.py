"""The whole-command goals of the issues, measured in one run, each as a ratio to a peer or a peak.

Inputs (`bench.partitions`, under `--inputs DIR` kept and reused):
- one partition of `size` bytes of 100-record batches ("large") and one of 1-record batches ("tiny");
  one tiny partition of `small` bytes;
- three replicas of `size` (and of `small`) bytes of 1-record batches that diverge near the end.

Goals (`GOALS`):
- doctor: `diagnose` in process, and the `doctor` command with its start-up subtracted, evidence
  hashes included, against aiokafka's compiled batch walk + CRC over the same segments' bytes
  (read into memory first, outside its time): aiokafka seconds / doctor seconds >= 1.0 on both
  shapes. Also doctor / replog's compiled walk (<= 2.0, the earlier goal).
- rss: peak resident set of `ls`, `doctor`, `recover`, `dump --deep` on the tiny partitions, and
  `replay`, `repair` on the replica sets, each a fresh process (`/usr/bin/time`'s %M where it exists),
  at `small` and at `size`: under its limit at both sizes, so memory does not grow with the log.
- replay: `replay_paths` of the three replicas in process / replog's compiled walk of their segments
  (<= 1.5); the command's peak RSS (< 500 MiB).
- repair: `cp -r` of the three replicas, and `cp` + fsync of every copied file (repair fsyncs its
  outputs), over the `repair` command with its start-up subtracted (>= 0.5).
- spark (`--spark`): fleet scan (`local[2]`, start-up excluded) MB/s per core / the walk's (>= 0.6).
"""
from __future__ import annotations

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
from replog.formats.fileio import mapped
from replog.formats.kafka import names

T = TypeVar("T")
MiB = 1 << 20
TOPIC = "bench"
SHAPES = {"large": inputs.SHAPES[0], "tiny": inputs.SHAPES[1]}
GOALS = {"doctor": (">=", 1.0), "doctor_walk": ("<=", 2.0), "replay": ("<=", 1.5), "repair": (">=", 0.5),
         "spark": (">=", 0.6)}
RSS_LIMIT_MIB = {"ls": 300, "doctor": 300, "recover": 300, "dump --deep": 300, "replay": 500, "repair": 300}
GNU_TIME = Path("/usr/bin/time")


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
    for shape, nbytes in [("large", size), ("tiny", size), ("tiny", small)]:
        key = f"{shape}-{label(nbytes)}"
        pdir = root / f"partition-{key}" / f"{TOPIC}-0"
        built[key] = _once(pdir.parent, partial(partitions.build_partition, pdir, SHAPES[shape], nbytes))
        parts[key] = pdir
    reps: dict[int, list[Path]] = {}
    for nbytes in sorted({small, size}):
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


# --- timing -------------------------------------------------------------------------


def timed(fn: Callable[[], T], repeat: int) -> tuple[float, T]:
    """Best wall time of `repeat` runs (the inputs are in the page cache: the walks run first) and
    the last run's result."""
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


@dataclass(frozen=True)
class Run:
    """One command in a fresh process: wall and CPU (user + system) seconds, peak resident set, exit code.
    The CPU seconds say what a loaded machine's wall clock may stretch."""

    seconds: float
    cpu_seconds: float
    peak_rss_mib: float
    returncode: int
    stderr: str

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"seconds": round(self.seconds, 3), "cpu_seconds": round(self.cpu_seconds, 3),
                               "peak_rss_mib": round(self.peak_rss_mib, 1), "returncode": self.returncode}
        if self.returncode not in (0, 1):
            out["error"] = self.stderr[-300:]
        return out


def replog_command() -> list[str]:
    return [str(Path(sys.executable).with_name("replog"))]


def run_command(args: list[str], stdout: Path = Path(os.devnull)) -> Run:
    """`replog ARGS` as a child; its own peak RSS from GNU time's %M (a child's `ru_maxrss` would
    start from this process's peak), else from `wait4` (then an upper bound)."""
    with tempfile.TemporaryDirectory(prefix="replog-run-") as tmp:
        stats, err = Path(tmp) / "time", Path(tmp) / "stderr"
        cmd = replog_command() + args
        if GNU_TIME.exists():
            cmd = [str(GNU_TIME), "-f", "%M %U %S", "-o", str(stats), *cmd]
        with open(stdout, "wb") as out, open(err, "wb") as errors:
            started = time.perf_counter()
            proc = subprocess.Popen(cmd, stdout=out, stderr=errors)
            _, status, usage = os.wait4(proc.pid, 0)
            seconds = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        if GNU_TIME.exists():  # its last line (a failed command's status line comes first)
            kib, user, system = stats.read_text().split("\n")[-2].split()
            peak, cpu = int(kib) / 1024, float(user) + float(system)
        else:
            peak, cpu = usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime
        return Run(seconds, cpu, peak, proc.returncode, err.read_text(errors="replace"))


STARTUP = ("import replog.toolkit.cli, replog.toolkit.commands, replog.toolkit.doctor_view, replog.recovery.doctor, "
           "replog.recovery.kafka.replay, replog.recovery.kafka.repair; "
           "from replog.formats.kafka import batch, fastwalk, fastrecords; "
           "d = batch.build_batch([batch.Record(0, 0, b'k', b'v')], base_offset=0); "
           "fastrecords.record_columns(d, 'p', next(fastwalk.FastWalk(d, 'p', 0).blocks()))")


def startup_seconds(repeat: int = 3) -> float:
    """What a command pays before it reads its input: the interpreter, replog's imports and the
    compiled kernels' first calls (numba's cache warm), in a fresh process."""
    root = Path(__file__).resolve().parent.parent

    def once() -> None:
        subprocess.run([sys.executable, "-c", STARTUP], cwd=root, check=True)
    return best(once, repeat)


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


def _ratio(name: str, value: float) -> dict[str, Any]:
    op, target = GOALS[name]
    met = value <= target if op == "<=" else value >= target
    return {"ratio": round(value, 3), "goal": f"{op} {target}", "met": met}


# --- the goals ------------------------------------------------------------------------


def doctor_goal(pdir: Path, startup: float, repeat: int) -> dict[str, Any]:
    """doctor (in process, and the command less its start-up) against aiokafka's walk + CRC."""
    from replog.recovery.doctor import diagnose
    files = log_files([pdir])
    walk = best(lambda: walk_files(files), repeat + 1)  # also brings the segments into the page cache
    peer = aiokafka_seconds(files, repeat)
    in_process, report = timed(lambda: diagnose([pdir]), repeat)
    command = run_command(["doctor", str(pdir), "--format", "json"])
    net = command.seconds - startup
    out = {"bytes": nbytes(files), "aiokafka_seconds": round(peer, 3), "walk_seconds": round(walk, 3),
           "doctor_seconds": round(in_process, 3), "command": command.to_dict(), "command_net_seconds": round(net, 3),
           "errors": report.summary["errors"], **_ratio("doctor", peer / in_process)}
    # a command on a small input can take less than the start-up measured apart: no ratio then
    out["command_ratio"] = round(peer / net, 3) if net > 0 else None
    out["met"] = out["met"] and (net <= 0 or peer / net >= GOALS["doctor"][1])
    out["walk_ratio"] = _ratio("doctor_walk", in_process / walk)
    return out


def rss_goal(data: Inputs, sizes: list[int]) -> list[dict[str, Any]]:
    """Peak RSS of every command, each in a fresh process, on the inputs of every size."""
    rows = []
    for size in sizes:
        pdir = data.partition("tiny", size)
        logs = [str(p) for p, _ in log_files([pdir])]
        specs = [f"{p.parent.name}={p}" for p in data.replicas[size]]
        with scratch(data.root, "out") as out:
            commands = {"ls": ["ls", str(pdir), "--format", "json"],
                        "doctor": ["doctor", str(pdir), "--format", "json"],
                        "recover": ["recover", str(pdir), "--out", str(out / "recover"), "--format", "json"],
                        "dump --deep": ["dump", *logs, "--deep", "--format", "jsonl"],
                        "replay": ["replay", *specs, "--format", "json"],
                        "repair": ["repair", *specs, "--out", str(out / "repair"), "--format", "json"]}
            for name, args in commands.items():
                run = run_command(args)
                shutil.rmtree(out / name, ignore_errors=True)
                limit = RSS_LIMIT_MIB[name]
                rows.append({"command": name, "input": f"{'replicas' if name in ('replay', 'repair') else 'tiny'}"
                             f"-{label(size)}", "bytes": size, **run.to_dict(), "limit_mib": limit,
                             "met": run.peak_rss_mib < limit and run.returncode in (0, 1)})
    return rows


def replay_goal(pdirs: list[Path], rss: dict[str, Any], repeat: int) -> dict[str, Any]:
    """replay_paths of the three replicas / the compiled walk of their segments; the command's RSS."""
    from replog.recovery.kafka.replay import replay_paths
    files = log_files(pdirs)
    walk = best(lambda: walk_files(files), repeat)
    specs = [f"{p.parent.name}={p}" for p in pdirs]
    seconds, result = timed(lambda: replay_paths(specs), repeat)
    out = {"bytes": nbytes(files), "seconds": round(seconds, 3), "walk_seconds": round(walk, 3),
           **_ratio("replay", seconds / walk), "leader": result.leader.name,
           "lost_records": sum(sum(b.count for b in r.lost) for r in result.replicas),
           "command": rss, "rss_limit_mib": RSS_LIMIT_MIB["replay"]}
    out["met"] = out["met"] and rss["peak_rss_mib"] < RSS_LIMIT_MIB["replay"]
    return out


def repair_goal(root: Path, pdirs: list[Path], rss: dict[str, Any], startup: float) -> dict[str, Any]:
    """`cp -r` (and `cp` + fsync) of the three replicas / the repair command less its start-up."""
    with scratch(root, "cp") as out:
        out.mkdir()
        cp = best(lambda: _cp(pdirs, out, sync=False), 1)
    with scratch(root, "cp") as out:
        out.mkdir()
        cp_sync = best(lambda: _cp(pdirs, out, sync=True), 1)
    net = max(rss["seconds"] - startup, 1e-3)  # a repair never takes less than its start-up: it writes files
    return {"bytes": nbytes(log_files(pdirs)), "command": rss, "command_net_seconds": round(net, 3),
            "cp_seconds": round(cp, 3), "cp_sync_seconds": round(cp_sync, 3), **_ratio("repair", cp / net),
            "sync_ratio": round(cp_sync / net, 3)}


def _cp(pdirs: list[Path], out: Path, sync: bool) -> None:
    """What a plain copy of the replicas costs; with `sync`, every copied file fsynced (coreutils `sync FILE`)."""
    for k, pdir in enumerate(pdirs):
        subprocess.run(["cp", "-r", str(pdir), str(out / f"{k}")], check=True)
    if sync:
        copied = [str(p) for p in out.rglob("*") if p.is_file()]
        subprocess.run(["sync", *copied], check=True)


def measure(size: int, small: int, repeat: int = 1, spark: bool = False,
            inputs_dir: Path | None = None) -> dict[str, Any]:
    """Every goal on inputs of `size` (and `small`) bytes, built under `inputs_dir` (kept) or a temp dir."""
    with _root(inputs_dir) as root:
        data, built = prepare(root, size, small)
        startup = startup_seconds()
        out: dict[str, Any] = {"inputs": {"root": str(root), "size_bytes": size, "small_bytes": small,
                                          "build_seconds": built},
                               "startup_seconds": round(startup, 3)}
        out["doctor"] = {shape: doctor_goal(data.partition(shape, size), startup, repeat) for shape in SHAPES}
        out["rss"] = rss_goal(data, sorted({small, size}))
        at_size = {r["command"]: r for r in out["rss"] if r["bytes"] == size}
        out["replay"] = replay_goal(data.replicas[size], at_size["replay"], repeat)
        out["repair"] = repair_goal(root, data.replicas[size], at_size["repair"], startup)
        if spark:
            out["spark"] = spark_goal(root, data.replicas[small])
    return out


@contextmanager
def _root(inputs_dir: Path | None) -> Iterator[Path]:
    if inputs_dir is not None:
        yield inputs_dir
        return
    with tempfile.TemporaryDirectory(prefix="replog-goals-") as tmp:
        yield Path(tmp)


def spark_goal(root: Path, pdirs: list[Path], cores: int = 2) -> dict[str, Any]:
    """Fleet scan of the three brokers with 4 partitions each (hard links of `bench-0`), `local[cores]`."""
    from replog.spark.fleet import scan_fleet
    from replog.spark.session import get_session
    walk_seconds = best(lambda: walk_files(log_files(pdirs)), 1)
    nbytes_walked = nbytes(log_files(pdirs))
    with scratch(root, "fleet") as fleet:
        logdirs = []
        for pdir in pdirs:
            broker = fleet / pdir.parent.name
            for k in range(4):
                shutil.copytree(pdir, broker / f"{TOPIC}-{k}", copy_function=os.link)
            logdirs.append(str(broker))
        started = time.perf_counter()
        session = get_session(f"local[{cores}]", "replog-bench")
        startup = time.perf_counter() - started
        try:
            scan_fleet(logdirs, fleet / "warm", session=session)   # python workers, numba cache, JIT
            t = time.perf_counter()
            scan_fleet(logdirs, fleet / "scan", session=session)
            seconds = time.perf_counter() - t
        finally:
            session.stop()
    per_core = 4 * nbytes_walked / seconds / 1e6 / cores
    walk_mb_s = nbytes_walked / walk_seconds / 1e6
    return {"seconds": round(seconds, 3), "startup_seconds": round(startup, 1), "bytes": 4 * nbytes_walked,
            "cores": cores, "mb_s_per_core": round(per_core, 1), "walk_mb_s": round(walk_mb_s, 1),
            **_ratio("spark", per_core / walk_mb_s)}
