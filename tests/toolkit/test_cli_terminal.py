"""Data reaches stdout, and only stdout, when stderr is a terminal (real processes on a pseudo-terminal).

`replog dump X.log --format jsonl | jq .` and `replog dump X.log --deep > out.jsonl` run from a terminal:
stderr is a terminal, stdout a pipe or a file. Whatever progress is drawn, the data must arrive where the
user sent it, byte for byte as with no terminal at all.
"""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from replog.recovery.kafka.writer import write_partition
from replog.toolkit import progress as progress_module
from tests.formats.kafka.segments import data_batch
from tests.toolkit.terminal import run_on_terminal, run_piped, screen


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated sample fleet (Kafka brokers and RocketMQ stores), made once for the module."""
    out = tmp_path_factory.mktemp("fleet") / "samples"
    assert run_piped(["samples", "generate", str(out)]).returncode == 0
    return out


@pytest.fixture
def segment(tmp_path: Path) -> Path:
    """A segment of 200 batches (some compressed) with keys and values."""
    write_partition(tmp_path / "logs" / "orders-0", [data_batch(i * 3, 3, codec=i % 5) for i in range(200)],
                    segment_bytes=1 << 30, interval=4096)
    return next((tmp_path / "logs" / "orders-0").glob("*.log"))


@pytest.mark.parametrize("stdout", ["pipe", "file"])
@pytest.mark.parametrize("options", [["--format", "jsonl"], ["--deep"], ["--format", "json", "--print-data"],
                                     ["--format", "table", "--deep"]])
def test_dump_data_goes_to_stdout_when_stderr_is_a_terminal(segment: Path, tmp_path: Path, stdout: str,
                                                            options: list[str]) -> None:
    args = ["dump", str(segment), *options]
    baseline = run_piped(args)
    run = run_on_terminal(args, stdout, tmp_path)  # type: ignore[arg-type]
    assert baseline.returncode == run.returncode == 0 and baseline.stdout.count(b"\n") > 200
    assert run.stdout == baseline.stdout
    assert b"base_offset" not in run.terminal and b"baseOffset" not in run.terminal
    assert b"dump" in run.terminal  # the progress bar was drawn, on stderr's terminal


def test_no_progress_when_stderr_is_not_a_terminal(segment: Path) -> None:
    res = run_piped(["dump", str(segment), "--deep"])
    assert res.returncode == 0 and res.stderr == b""


def test_dump_text_on_the_terminal_leaves_no_progress_line(segment: Path, tmp_path: Path) -> None:
    """Data and progress on one terminal: the screen shows the data lines, and nothing of the bar."""
    args = ["dump", str(segment), "--deep", "--print-data", "--format", "table"]
    expected = run_piped(args).stdout.decode().splitlines()
    run = run_on_terminal(args, "terminal", tmp_path)
    shown = screen(run.terminal)
    assert run.returncode == 0
    assert not [line for line in shown if "━" in line or "?/? bytes" in line or "0/? bytes" in line]
    assert shown == expected


class _FakeProgress:
    """What `ByteBar` uses of rich's `Progress`, recording the calls."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def add_task(self, label: str, total: int | None) -> int:
        return 0

    def update(self, task: int, completed: int, total: int) -> None:
        self.calls.append(f"update {completed}")

    def start(self) -> None:
        self.calls.append("start")

    def stop(self) -> None:
        self.calls.append("stop")


def test_bar_steps_aside_for_data_and_comes_back_when_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _FakeProgress()
    bar = progress_module.ByteBar(fake, "dump", steps_aside=True)  # type: ignore[arg-type]
    assert list(bar.gate(["a", "b"])) == ["a", "b"]
    assert fake.calls == ["stop"]  # cleared once, before the first data line
    bar(1 << 20, 1 << 22)
    assert fake.calls[-1] == "update 1048576"  # data came just now: the bar stays away
    monkeypatch.setattr(bar, "data_at", time.monotonic() - bar.IDLE_SECONDS)
    bar(2 << 20, 1 << 22)
    assert fake.calls[-1] == "start"
    items = ["x"]
    assert bar.gate(items) is not items
    other = progress_module.ByteBar(_FakeProgress(), "dump", steps_aside=False)  # type: ignore[arg-type]
    assert other.gate(items) is items  # stdout elsewhere: the bar never has to move


COMMANDS = {
    "ls": lambda s, out: ["ls", str(s / "kafka" / "broker-1")],
    "doctor": lambda s, out: ["doctor", str(s / "kafka" / "broker-2")],
    "doctor-table": lambda s, out: ["doctor", str(s / "kafka" / "broker-2" / "orders-2"), "--format", "table"],
    "replay": lambda s, out: ["replay", *(f"b{i}={s / 'kafka' / f'broker-{i}' / 'orders-2'}" for i in (1, 2, 3))],
    "replay-rocketmq": lambda s, out: ["replay", f"m={s / 'rocketmq' / 'master'}", f"s={s / 'rocketmq' / 'slave'}"],
    "recover": lambda s, out: ["recover", str(s / "kafka" / "broker-2" / "orders-2"), "--out", str(out), "--force"],
    "samples": lambda s, out: ["samples", "generate", str(out), "--force"],
}


@pytest.mark.parametrize("stdout", ["pipe", "file"])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_writes_its_data_to_stdout_under_a_terminal(fleet: Path, tmp_path: Path, command: str,
                                                                   stdout: str) -> None:
    args = COMMANDS[command](fleet, tmp_path / "out")
    baseline = run_piped(args)
    run = run_on_terminal(args, stdout, tmp_path)  # type: ignore[arg-type]
    assert baseline.returncode in (0, 1) and run.returncode == baseline.returncode
    assert baseline.stdout and run.stdout == baseline.stdout
    first = baseline.stdout.splitlines()[0].strip()
    assert first not in run.terminal
