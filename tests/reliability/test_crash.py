"""Crash safety: `replog repair` and `replog recover` killed at many points, in a real process.

Deterministic kills: `killed_replog` (a hook in `fileio.write_hook`)
makes the process `_exit(137)` inside its (N+1)th atomic write, after the
temporary file and before the rename: every write point of a run is hit.
Plus real SIGKILLs after random delays (seeded) up to a normal run's length.
After every kill: the inputs are bit-identical; the output is absent, lacks
`.replog-complete`, or is complete and loads equal to an uninterrupted run.
"""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from replog.formats.errors import UnreadableInput
from replog.recovery.kafka.replica import batch_rows, load_replica
from replog.recovery.outputs import COMPLETE_MARKER
from tests.reliability.killed_replog import command
from tests.reliability.trees import sha256_tree, unclean_pair

REPLOG = Path(sys.executable).parent / "replog"
REPO = Path(__file__).resolve().parents[2]  # where `python -m tests.reliability.killed_replog` imports from
KILL_POINTS = 8
RANDOM_KILLS = 3
pytestmark = pytest.mark.skipif(not REPLOG.exists(), reason="console script replog not installed")


def run(args: list[str], kill_after: int | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, REPLOG_DEBUG="1")
    argv = [str(REPLOG), *args] if kill_after is None else command(kill_after, args)
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120,
                          cwd=REPO if kill_after is not None else None)


def signature(pdir: Path) -> tuple:
    rep = load_replica(pdir, "x")
    return ([(b.base_offset, b.last_offset, b.crc) for b in batch_rows(rep.log)], rep.log_start_offset,
            rep.high_watermark, [tuple(e) for e in rep.epochs.entries])


def outcome(out: Path, parts: list[str]) -> str:
    """'absent', 'incomplete' or 'complete' (and then every partition must load)."""
    if not out.exists():
        return "absent"
    if not (out / COMPLETE_MARKER).is_file():
        return "incomplete"
    for p in parts:
        try:
            signature(out / p)
        except UnreadableInput as e:  # a complete output that does not load is the bug we look for
            raise AssertionError(f"{out} is marked complete but {p} does not load: {e}") from None
    return "complete"


def kill_points(total_writes: int) -> list[int]:
    """Every write point of a short run, or an even spread of KILL_POINTS of them."""
    if total_writes <= KILL_POINTS:
        return list(range(total_writes))
    step = total_writes / KILL_POINTS
    return sorted({int(i * step) for i in range(KILL_POINTS)} | {total_writes - 1})


def count_writes(args: list[str], monkeypatch: pytest.MonkeyPatch) -> int:
    """How many atomic writes the same run makes, counted in-process by a `fileio.write_hook` the test installs."""
    from typer.testing import CliRunner

    from replog.formats import fileio
    from replog.toolkit.cli import app
    writes: list[int] = []
    with monkeypatch.context() as m:
        m.setattr(fileio, "write_hook", lambda: writes.append(1))
        res = CliRunner().invoke(app, args)
    assert res.exit_code in (0, 1), res.output
    return len(writes)


def random_sigkills(args: list[str], out: Path, normal: float, seed: int) -> list[str]:
    rng = random.Random(seed)
    seen = []
    for _ in range(RANDOM_KILLS):
        proc = subprocess.Popen([str(REPLOG), *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0, normal))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        seen.append(out)
    return [str(s) for s in seen]


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    return unclean_pair(tmp_path / "in")


def check_after_kill(root: Path, inputs: dict[str, str], out: Path, parts: list[str],
                     expected: dict[str, tuple]) -> str:
    assert sha256_tree(root) == inputs, "inputs changed by a killed run"
    state = outcome(out, parts)
    if state == "complete":
        assert {p: signature(out / p) for p in parts} == expected
    return state


def killed_states(tmp_path: Path, args: Callable[[Path], list[str]], parts: list[str], root: Path,
                  inputs: dict[str, str], seed: int, monkeypatch: pytest.MonkeyPatch) -> tuple[int, list[str]]:
    """The command `args(out)` run whole once (the reference output, `tmp_path/reference`, and its time), then
    killed at every write point and at random moments (seeds from `seed`): its number of writes and the state
    each kill left (`check_after_kill`: inputs untouched, a complete output equal to the reference)."""
    t0 = time.perf_counter()
    assert run(args(tmp_path / "reference")).returncode in (0, 1)
    normal = time.perf_counter() - t0
    expected = {p: signature(tmp_path / "reference" / p) for p in parts}
    total = count_writes(args(tmp_path / "probe"), monkeypatch)
    states = []
    for i, n in enumerate(kill_points(total)):
        out = tmp_path / f"k{i}"
        res = run(args(out), kill_after=n)
        assert res.returncode == 137, res.stderr
        states.append(check_after_kill(root, inputs, out, parts, expected))
    for i in range(RANDOM_KILLS):
        out = tmp_path / f"r{i}"
        random_sigkills(args(out), out, normal, seed=seed + i)
        states.append(check_after_kill(root, inputs, out, parts, expected))
    return total, states


def test_repair_killed_at_every_write(tmp_path: Path, pair: tuple[Path, Path],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = pair
    root = tmp_path / "in"
    inputs = sha256_tree(root)
    args = lambda out: ["repair", f"A={a}", f"B={b}", "--leader", "B", "--out", str(out), "--format", "json"]  # noqa: E731
    total, states = killed_states(tmp_path, args, ["A/t-0", "B/t-0"], root, inputs, seed=0, monkeypatch=monkeypatch)
    assert total > 5
    assert "incomplete" in states          # the kills did land mid-run


def test_recover_killed_at_every_write(tmp_path: Path, pair: tuple[Path, Path],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    a, _ = pair
    # damage the last segment so recovery has to truncate
    last = sorted(a.glob("*.log"))[-1]
    last.write_bytes(last.read_bytes()[:-9])
    root = tmp_path / "in"
    inputs = sha256_tree(root)
    args = lambda out: ["recover", str(a), "--out", str(out), "--format", "json"]  # noqa: E731
    _, states = killed_states(tmp_path, args, ["t-0"], root, inputs, seed=100, monkeypatch=monkeypatch)
    assert {"absent", "incomplete"} & set(states)
    leftovers = [p.name for p in tmp_path.iterdir() if ".replog-partial-" in p.name]
    assert all(not (tmp_path / n / COMPLETE_MARKER).exists() for n in leftovers)
