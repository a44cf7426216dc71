"""The real kafka-dump-log as a peer: `replog dump` and Kafka's own DumpLogSegments (from the broker lab's jars)
on the same segment, both as whole processes, output to a file, each the best of N runs, in one run of the bench.

replog runs as an installed user's would: with its bytecode (.pyc) and numba's kernel cache written by an untimed
first run, and without PYTHONDONTWRITEBYTECODE (which a developer's shell may set: every import would compile
from source, ~70 ms a process). `--deep` of 1-record batches is also reported in MB/s of segment (issue: >= 100),
and the fixed costs that bound a dump of few batches (interpreter, numpy/pyarrow, numba, a dump of one batch).

The jars are resolved by the broker lab (`python -m tests.brokers.jars`, cached in ~/.cache/replog/brokers/); the
JVM gets the flags Kafka's own `kafka-run-class.sh` gives its tools (`-Xmx256M`, G1 by default) so that the peer
is timed as an operator runs it. A ratio is the peer's seconds over replog's: above 1, replog is faster.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench import inputs

REPO = Path(__file__).resolve().parent.parent
PEER_VERSION = "4.4.0"         # the newest 4.x of the lab: the version a drop-in emulates by default
TOOL_JVM = ["-Xmx256M", "-XX:+UseG1GC", "-Djava.awt.headless=true"]
DUMP_GOAL = 5.0                # issue: replog dump >= 5x the real kafka-dump-log
DEEP_GOAL_MBS = 100.0          # issue: dump --deep of 1-record batches >= 100 MB/s
DEEP_CASES = (("dump-log text", ["--format", "dump-log"]), ("JSON lines", ["--format", "jsonl"]))
CASES: tuple[tuple[str, list[str], list[str]], ...] = (   # label, replog's options, kafka-dump-log's options
    ("batch lines, dump-log text", ["--format", "dump-log"], []),
    ("batch lines, JSON lines", ["--format", "jsonl"], []),
    ("--deep-iteration, dump-log text", ["--format", "dump-log", "--deep-iteration"], ["--deep-iteration"]),
    ("--deep-iteration, JSON lines", ["--format", "jsonl", "--deep-iteration"], ["--deep-iteration"]),
)


def lab_classpath(version: str = PEER_VERSION) -> str:
    """The version's class path, resolved by the broker lab on first use (Maven, once)."""
    subprocess.run([sys.executable, "-m", "tests.brokers.jars", version], cwd=REPO, check=True,
                   capture_output=True, text=True, timeout=1800)
    cache = Path(os.environ.get("REPLOG_CACHE") or Path.home() / ".cache" / "replog")
    return (cache / "brokers" / f"kafka-{version}" / "classpath.txt").read_text().strip()


def dump_log_class(version: str) -> str:
    """DumpLogSegments moved from Scala core to Java kafka-tools in 4.3 (apache/kafka#21223)."""
    newer = tuple(int(x) for x in version.split(".")[:2]) >= (4, 3)
    return "org.apache.kafka.tools.DumpLogSegments" if newer else "kafka.tools.DumpLogSegments"


def quiet_log4j2(scratch: Path) -> str:
    path = scratch / "quiet-log4j2.properties"   # Log4j2 chooses its parser by the file's extension
    path.write_text("rootLogger.level=OFF\n")
    return f"-Dlog4j2.configurationFile={path}"


def replog_env() -> dict[str, str]:
    """The environment of a user's shell: bytecode caching on."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def whole_process(cmd: list[str], out: Path, repeat: int, env: dict[str, str] | None = None) -> float:
    """Best wall-clock of `repeat` runs of `cmd` as a fresh process, its stdout written to `out`."""
    times = []
    for _ in range(repeat):
        with out.open("wb") as sink:
            start = time.perf_counter()
            done = subprocess.run(cmd, stdout=sink, stderr=subprocess.PIPE, timeout=3600, env=env)
            times.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd[:3])}... exited {done.returncode}: {done.stderr[-500:]!r}")
    return min(times)


def replog_process(cmd: list[str], out: Path, repeat: int) -> float:
    """`whole_process` of a replog command after one untimed run (writes the .pyc files and numba's cache)."""
    whole_process(cmd, out, 1, replog_env())
    return whole_process(cmd, out, repeat, replog_env())


def segment(scratch: Path, shape: inputs.Shape, size: int) -> Path:
    data, _, _ = inputs.build_segment(shape, size)
    path = scratch / shape.name / "00000000000000000000.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def replog_dump() -> list[str]:
    return [str(Path(sys.executable).parent / "replog"), "dump"]


def measure(scratch: Path, size: int, repeat: int, deep_size: int | None = None,
            deep_rate_size: int | None = None) -> dict[str, Any]:
    """replog dump vs kafka-dump-log on a segment of 100-record batches (`size` bytes; the deep cases on
    `deep_size`, the real tool formats every record) and on one of 1-record batches; then replog's `--deep` of
    `deep_rate_size` bytes of 1-record batches in MB/s, and the fixed costs."""
    cp = lab_classpath()
    java = ["java", *TOOL_JVM, quiet_log4j2(scratch), "-cp", cp, dump_log_class(PEER_VERSION)]
    rows = []
    for shape in (inputs.SHAPES[0], inputs.SHAPES[1]):
        for label, mine, theirs in CASES:
            deep = "--deep-iteration" in theirs
            seg = segment(scratch / ("deep" if deep else "batches"), shape, deep_size if deep and deep_size else size)
            ours = replog_process([*replog_dump(), str(seg), *mine], scratch / "replog.out", repeat)
            peer = whole_process([*java, "--files", str(seg), *theirs], scratch / "peer.out", repeat)
            rows.append({"case": f"{shape.name}: {label}", "bytes": seg.stat().st_size,
                         "replog_seconds": round(ours, 3), "kafka_dump_log_seconds": round(peer, 3),
                         "ratio": round(peer / ours, 2), "goal": f">= {DUMP_GOAL:g}", "met": peer / ours >= DUMP_GOAL})
    return {"peer": f"kafka-dump-log {PEER_VERSION} ({dump_log_class(PEER_VERSION)})", "jvm": " ".join(TOOL_JVM),
            "repeat": repeat, "replog_env": "PYTHONDONTWRITEBYTECODE unset, .pyc and numba cache warm (untimed run)",
            "cases": rows, "deep_rate": deep_rate(scratch, deep_rate_size or size, repeat),
            "fixed": fixed_costs(scratch, repeat)}


def deep_rate(scratch: Path, size: int, repeat: int) -> list[dict[str, Any]]:
    """`replog dump --deep` of `size` bytes of 1-record batches, output to a file: MB/s of segment."""
    seg = segment(scratch / "deep-rate", inputs.SHAPES[1], size)
    rows = []
    for label, opts in DEEP_CASES:
        seconds = replog_process([*replog_dump(), str(seg), "--deep", *opts], scratch / "replog.out", repeat)
        rate = seg.stat().st_size / seconds / 1e6
        rows.append({"case": f"tiny: --deep, {label}", "bytes": seg.stat().st_size, "replog_seconds": round(seconds, 3),
                     "mb_per_s": round(rate, 1), "goal": f">= {DEEP_GOAL_MBS:g} MB/s", "met": rate >= DEEP_GOAL_MBS})
    return rows


def fixed_costs(scratch: Path, repeat: int) -> dict[str, float]:
    """What a process pays before its first batch: what bounds `dump` of a segment of few batches (whose JVM
    peer is mostly its own start-up): 5x the peer's ~0.5 s is 0.1 s for the whole replog process."""
    seg = segment(scratch / "one", inputs.SHAPES[0], 1)
    python = sys.executable
    commands = {"python -c pass": [python, "-c", "pass"],
                "python -c 'import numpy, pyarrow'": [python, "-c", "import numpy, pyarrow"],
                "python -c 'import numba'": [python, "-c", "import numba"],
                "replog --help": [*replog_dump()[:1], "--help"],
                "replog dump (one batch)": [*replog_dump(), str(seg), "--format", "dump-log"]}
    return {label: round(replog_process(cmd, scratch / "fixed.out", repeat), 3) for label, cmd in commands.items()}
