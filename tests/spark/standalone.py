"""A Spark standalone cluster on 127.0.0.1 for a test (helpers, not tests): a master and one worker started
from pyspark's own `spark-class`, on free ports, each waited for within a deadline and stopped by its PID
(with the executors and Python workers it started) however the test ends."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from bench.children import descendants

START_SECONDS = 90
QUICK_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"   # short-lived JVMs on a shared 2-core machine


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cluster_env(work: Path) -> dict[str, str]:
    """What the master, the worker and a driver need: Spark's home, the loopback address, the test's Python."""
    import pyspark

    return {**os.environ, "SPARK_HOME": str(Path(pyspark.__file__).parent), "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_WORKER_DIR": str(work / "worker"), "SPARK_LOG_DIR": str(work / "logs"),
            "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false", "SPARK_DAEMON_JAVA_OPTS": QUICK_JVM,
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable}


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the process, then SIGKILL to it and whatever it started that is still there."""
    kids = descendants(proc.pid)
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
    for pid in kids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _wait(ready: object, what: str, procs: list[subprocess.Popen[bytes]], log: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while not ready():  # type: ignore[operator]
        if any(p.poll() is not None for p in procs) or time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not come up: {log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.3)


def _alive_workers(ui: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=2) as r:
            return int(json.load(r).get("aliveworkers", 0))
    except (OSError, ValueError):
        return 0


@contextlib.contextmanager
def standalone_cluster(work: Path, cores: int = 2, memory: str = "1g") -> Iterator[str]:
    """A master and one worker (`cores`, `memory`) on 127.0.0.1; yields the master URL."""
    work.mkdir(parents=True, exist_ok=True)
    env = cluster_env(work)
    spark_class = str(Path(env["SPARK_HOME"]) / "bin" / "spark-class")
    port, ui, worker_port, worker_ui = free_port(), free_port(), free_port(), free_port()
    url = f"spark://127.0.0.1:{port}"
    procs: list[subprocess.Popen[bytes]] = []
    try:
        with open(work / "master.log", "wb") as log:
            procs.append(subprocess.Popen([spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                           "--port", str(port), "--webui-port", str(ui)],
                                          stdout=log, stderr=subprocess.STDOUT, env=env))
        _wait(lambda: _listening(port), "the master", procs, work / "master.log")
        with open(work / "worker.log", "wb") as log:
            procs.append(subprocess.Popen([spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                                           "--port", str(worker_port), "--webui-port", str(worker_ui),
                                           "--cores", str(cores), "--memory", memory, url],
                                          stdout=log, stderr=subprocess.STDOUT, env=env))
        _wait(lambda: _alive_workers(ui) >= 1, "the worker", procs, work / "worker.log")
        yield url
    finally:
        for proc in reversed(procs):
            _stop(proc)


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0
