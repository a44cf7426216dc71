"""`replog fleet scan` as an operator runs it: a real process, its exit code, its stderr, Ctrl-C.

Two Spark starts in all: a whole scan at the default log level (quiet, and the same exit code as
`fleet report`), and a scan at `--spark-log-level INFO` interrupted while a job runs.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from replog.spark.report import MARKER
from tests.spark.fleet_builder import build_divergent_fleet

pytestmark = pytest.mark.spark
REPLOG = Path(sys.executable).parent / "replog"
SPARK_NOISE = ("WARNING: Using incubator modules", "log4j", "resolves to a loopback address", "NativeCodeLoader",
               "Setting default log level", "setLogLevel", " WARN ", " INFO ")


@pytest.fixture(autouse=True)
def _java() -> None:
    from replog.spark.java import java_problem
    if java_problem():
        pytest.skip(java_problem())


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("scanproc") / "fleet"
    build_divergent_fleet(root)
    return root


def test_scan_is_quiet_and_exits_as_report_does(fleet: Path, tmp_path: Path) -> None:
    """A divergent fleet without one error finding: both commands exit 1, and Spark says nothing."""
    out = tmp_path / "scan"
    scan = subprocess.run([str(REPLOG), "fleet", "scan", str(fleet), "--out", str(out), "--format", "json"],
                          capture_output=True, text=True, timeout=600)
    assert [line for line in scan.stderr.splitlines() if any(n in line for n in SPARK_NOISE)] == []
    assert scan.stderr.strip() == ""
    result = json.loads(scan.stdout)
    assert (result["errors"], result["divergent_replica_sets"]) == (0, 1)
    report = subprocess.run([str(REPLOG), "fleet", "report", str(out), "--format", "json"],
                            capture_output=True, text=True, timeout=120)
    assert json.loads(report.stdout)["totals"]["divergent_replica_sets"] == 1
    assert scan.returncode == report.returncode == 1
    assert json.loads((out / MARKER).read_text())["state"] == "complete"


def _parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _descendants(root: int) -> dict[int, str]:
    """pid -> command line of every process below `root`, from /proc."""
    parents = {int(p.name): _parent(int(p.name)) for p in Path("/proc").iterdir() if p.name.isdigit()}
    found: dict[int, str] = {}
    frontier = [root]
    while frontier:
        kids = [pid for pid, ppid in parents.items() if ppid in frontier]
        for pid in kids:
            try:
                found[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                pass
        frontier = kids
    return found


def _alive(pid: int) -> bool:
    """Running (a zombie is not: it has ended and only waits to be reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _pgrep(marker: str) -> list[str]:
    ps = subprocess.run(["pgrep", "-af", marker], capture_output=True, text=True)
    return [line for line in ps.stdout.splitlines() if "java" in line]


def test_ctrl_c_stops_the_jvm_marks_the_scan_and_exits_130(fleet: Path, tmp_path: Path) -> None:
    """Ctrl-C while a Spark job runs: exit 130, state `interrupted`, no JVM or worker of the run left."""
    out = tmp_path / "interrupted-scan"
    proc = subprocess.Popen([str(REPLOG), "fleet", "scan", str(fleet), "--out", str(out), "--format", "json",
                             "--spark-log-level", "INFO"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    lines: list[str] = []
    assert proc.stderr is not None
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stderr.readline, "")), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 300
        while not any("DAGScheduler: Got job" in line for line in lines):   # Spark is at work on the scan
            assert proc.poll() is None and time.monotonic() < deadline, "".join(lines)[-3000:]
            time.sleep(0.2)
        assert json.loads((out / MARKER).read_text())["state"] == "running"
        started = _descendants(proc.pid)
        jvms = [pid for pid, cmd in started.items() if "java" in cmd and str(out) in cmd]
        assert jvms, started
        os.killpg(proc.pid, signal.SIGINT)   # what a terminal does on Ctrl-C: the foreground process group
        stdout, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    reader.join(10)
    assert proc.returncode == 130, "".join(lines)[-3000:]
    assert stdout == ""
    assert any(" INFO SparkContext: Running Spark version" in line for line in lines)   # --spark-log-level INFO
    assert not any("WARNING: Using incubator modules" in line for line in lines)
    assert json.loads((out / MARKER).read_text())["state"] == "interrupted"
    deadline = time.monotonic() + 30
    while [pid for pid in started if _alive(pid)] and time.monotonic() < deadline:   # workers exit on their own
        time.sleep(0.2)
    assert {pid: started[pid] for pid in started if _alive(pid)} == {}
    assert _pgrep(str(out)) == []
