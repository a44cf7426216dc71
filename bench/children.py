"""Commands measured in fresh processes: wall and CPU seconds, peak resident set, and a memory cap.

A child's own peak RSS comes from GNU time's %M where it exists: a child's
`ru_maxrss` seen from here would start from this process's peak at fork. A
watchdog polls the child's process tree and kills it past `cap_mib`, so a
command whose memory grows with the log cannot take a shared machine down; its
run then says so (`killed_over_mib`).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

GNU_TIME = Path("/usr/bin/time")
ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CAP_MIB = 4096
_POLL_SECONDS = 0.1


@dataclass(frozen=True)
class Run:
    """One child: wall and CPU (user + system) seconds, peak RSS, exit code; the CPU seconds say what
    a loaded machine's wall clock may have stretched."""

    seconds: float
    cpu_seconds: float
    peak_rss_mib: float
    returncode: int
    stderr: str
    stdout: str = ""
    killed_over_mib: int | None = None
    result: dict[str, Any] = field(default_factory=dict)  # what a Python child printed as JSON

    @property
    def ok(self) -> bool:
        """It finished on its own with exit 0 or 1 (1: findings, or replicas that lose records)."""
        return self.killed_over_mib is None and self.returncode in (0, 1)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"seconds": round(self.seconds, 3), "cpu_seconds": round(self.cpu_seconds, 3),
                               "peak_rss_mib": round(self.peak_rss_mib, 1), "returncode": self.returncode}
        if self.killed_over_mib is not None:
            out["killed_over_mib"] = self.killed_over_mib
        elif self.returncode not in (0, 1):
            out["error"] = self.stderr[-300:]
        return out


def tree_rss_mib(pid: int) -> float:
    """Resident MiB of `pid` and all its descendants (Linux /proc); 0 once they are gone."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status") as f:
                total += next((int(line.split()[1]) for line in f if line.startswith("VmRSS:")), 0)
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            continue
    return total / 1024


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (from /proc's children lists; gone ones skipped)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    kids = [int(c) for c in f.read().split()]
                out += kids
                todo += kids
        except (OSError, ValueError):
            continue
    return out


class _Watchdog(threading.Thread):
    """Kills a process tree whose resident set passes `cap_mib`."""

    def __init__(self, pid: int, cap_mib: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.cap_mib = pid, cap_mib
        self.done, self.killed = threading.Event(), False

    def run(self) -> None:
        while not self.done.wait(_POLL_SECONDS):
            if tree_rss_mib(self.pid) > self.cap_mib:
                self.killed = True
                # the measured command is a descendant when GNU time wraps it: time then reports its peak
                for p in descendants(self.pid) or [self.pid]:
                    try:
                        os.kill(p, signal.SIGKILL)
                    except OSError:
                        pass
                return


def run_child(cmd: list[str], stdout: Path | None = None, cap_mib: int = DEFAULT_CAP_MIB) -> Run:
    """Run `cmd`; stdout to `stdout` (None: captured), measured as `Run`."""
    with tempfile.TemporaryDirectory(prefix="replog-run-") as tmp:
        stats, err, out = Path(tmp) / "time", Path(tmp) / "stderr", stdout or Path(tmp) / "stdout"
        if GNU_TIME.exists():
            cmd = [str(GNU_TIME), "-f", "%M %U %S", "-o", str(stats), *cmd]
        with open(out, "wb") as sink, open(err, "wb") as errors:
            started = time.perf_counter()
            proc = subprocess.Popen(cmd, stdout=sink, stderr=errors, cwd=ROOT)
            watchdog = _Watchdog(proc.pid, cap_mib)
            watchdog.start()
            _, status, usage = os.wait4(proc.pid, 0)
            seconds = time.perf_counter() - started
            watchdog.done.set()
            watchdog.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        peak, cpu = usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime  # upper bounds without GNU time
        lines = stats.read_text().splitlines() if stats.exists() else []
        if lines and len(lines[-1].split()) == 3:  # its last line (a failed command's status comes first)
            kib, user, system = lines[-1].split()
            peak, cpu = int(kib) / 1024, float(user) + float(system)
        return Run(seconds, cpu, peak, proc.returncode, err.read_text(errors="replace"),
                   "" if stdout else out.read_text(errors="replace"),
                   cap_mib if watchdog.killed else None)


def replog_run(args: list[str], cap_mib: int = DEFAULT_CAP_MIB, stdout: Path = Path(os.devnull)) -> Run:
    """`replog ARGS`, output discarded."""
    return run_child([str(Path(sys.executable).with_name("replog")), *args], stdout, cap_mib)


def python_run(code: str, args: list[str], cap_mib: int = DEFAULT_CAP_MIB) -> Run:
    """`python -c CODE ARGS` whose last stdout line is a JSON object: that object is `result`."""
    run = run_child([sys.executable, "-c", code, *args], None, cap_mib)
    lines = run.stdout.strip().splitlines()
    if run.ok and lines:
        return Run(run.seconds, run.cpu_seconds, run.peak_rss_mib, run.returncode, run.stderr, run.stdout,
                   None, json.loads(lines[-1]))
    return run
