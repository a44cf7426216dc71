"""Live progress on a terminal's stderr, none in a pipe; stdout holds the data only, either way.

Each command runs as a real process on a partition of a few MB (built with the bench's
writer) with its stderr on a pseudo-terminal, or on a pipe, and its stdout on a pipe.
"""
from __future__ import annotations

import json
import os
import pty
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from bench import inputs, partitions
from tests.recovery.kafka.log_dirs import set_checkpoint

REPLOG = Path(sys.executable).parent / "replog"
ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")
# what the progress line shows: bytes done of the total, and files done of the total
PROGRESS = re.compile(r"[\d.]+/[\d.]+ [kMG]?B .*\d+/\d+ files")


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A broker log dir with one partition `t-0` of about 3 MB of small batches in 1 MB segments."""
    root = tmp_path_factory.mktemp("progress") / "broker"
    batches = partitions.build_partition(root / "t-0", inputs.SHAPES[1], 3 << 20, segment_bytes=1 << 20)
    set_checkpoint(root, "replication-offset-checkpoint", batches)
    set_checkpoint(root, "recovery-point-offset-checkpoint", batches)
    return root


def _on_a_terminal(args: list[str]) -> tuple[int, str, str]:
    """Run replog with stderr on a pseudo-terminal (80 columns) and stdout on a pipe: (code, stdout, terminal)."""
    leader, follower = pty.openpty()
    os.set_blocking(leader, True)
    seen = bytearray()

    def drain() -> None:
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:   # EIO: the last writer closed the terminal
                return
            if not chunk:
                return
            seen.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    env = dict(os.environ, COLUMNS="80", TERM="xterm")
    try:
        proc = subprocess.run([str(REPLOG), *args], stdout=subprocess.PIPE, stderr=follower, env=env,
                              text=True, timeout=600)
    finally:
        os.close(follower)
    reader.join(30)
    os.close(leader)
    return proc.returncode, proc.stdout, ANSI.sub(b"", bytes(seen)).decode("utf-8", "replace")


def _in_a_pipe(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(REPLOG), *args], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def replicas(log_dir: Path) -> list[str]:
    """Two replicas of `t-0`: the log dir's and a copy of it in a second log dir."""
    copy = log_dir.parent / "broker-copy"
    shutil.copytree(log_dir, copy)
    return [f"b1={log_dir / 't-0'}", f"b2={copy / 't-0'}"]


def _commands(log_dir: Path, replicas: list[str], out: Path) -> dict[str, list[str]]:
    return {"doctor": ["doctor", str(log_dir)],
            "ls": ["ls", str(log_dir)],
            "recover": ["recover", str(log_dir / "t-0"), "--out", str(out / "recovered")],
            "replay": ["replay", *replicas],
            "repair": ["repair", *replicas, "--out", str(out / "repaired")]}


@pytest.mark.parametrize("command", ["doctor", "ls", "recover", "replay", "repair"])
def test_progress_on_a_terminal_only(command: str, log_dir: Path, replicas: list[str], tmp_path: Path) -> None:
    args = _commands(log_dir, replicas, tmp_path / "tty")[command] + ["--format", "json"]
    code, stdout, terminal = _on_a_terminal(args)
    assert code == 0, terminal[-2000:]
    assert PROGRESS.search(terminal), terminal[-2000:]
    doc = json.loads(stdout)   # the data alone: not a byte of the progress line
    piped = _in_a_pipe(_commands(log_dir, replicas, tmp_path / "pipe")[command] + ["--format", "json"])
    assert piped.returncode == 0, piped.stderr
    assert piped.stderr == ""
    assert type(json.loads(piped.stdout)) is type(doc)


@pytest.mark.parametrize("command", ["replay", "repair"])
def test_rocketmq_loading_shows_progress_on_a_terminal_only(command: str, tmp_path: Path) -> None:
    """RocketMQ stores too: the commit-log files loaded, of the total, while replay and repair read them."""
    from tests.recovery.rocketmq.stores import build, spec

    master = build(tmp_path / "master", [spec(i) for i in range(60)])
    slave = build(tmp_path / "slave", [spec(i) for i in range(30)])

    def args(out: Path) -> list[str]:
        return [command, f"master={master.root}", f"slave={slave.root}", "--format", "json",
                *(["--out", str(out)] if command == "repair" else [])]

    code, stdout, terminal = _on_a_terminal(args(tmp_path / "tty"))
    assert code == 0, terminal[-2000:]
    assert PROGRESS.search(terminal), terminal[-2000:]
    json.loads(stdout)
    piped = _in_a_pipe(args(tmp_path / "pipe"))
    assert piped.returncode == 0 and piped.stderr == "", piped.stderr
