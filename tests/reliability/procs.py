"""Real replog processes for the reliability tests: run one, or start two at the same moment (helpers, not tests)."""
from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPLOG = Path(sys.executable).parent / "replog"
REPO = Path(__file__).resolve().parents[2]  # where `python -m tests.reliability.killed_replog` imports from


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str

    @property
    def succeeded(self) -> bool:
        """Did its work: exit 0, or 1 for findings (a replica that loses records is a finding)."""
        return self.code in (0, 1)


def _env(extra: dict[str, str] | None) -> dict[str, str]:
    return dict(os.environ, **(extra or {}))


def run(args: list[str], env: dict[str, str] | None = None, timeout: int = 60, kill_after: int | None = None) -> Run:
    """replog with `args`; with `kill_after`, killed in its (`kill_after`+1)th atomic write (`killed_replog`)."""
    from tests.reliability.killed_replog import command
    argv = [str(REPLOG), *args] if kill_after is None else command(kill_after, args)
    res = subprocess.run(argv, capture_output=True, text=True, env=_env(env), timeout=timeout,
                         cwd=REPO if kill_after is not None else None)
    return Run(res.returncode, res.stdout, res.stderr)


def together(*commands: list[str], timeout: int = 60) -> list[Run]:
    """Start every command at once (each its own process) and wait for all of them."""
    procs = [subprocess.Popen([str(REPLOG), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=_env(None)) for args in commands]
    runs = []
    for p in procs:
        out, err = p.communicate(timeout=timeout)
        runs.append(Run(p.returncode, out, err))
    return runs


def in_place(log_dirs: Path, backup: Path) -> list[str]:
    """`repair --in-place` of the pair `trees.unclean_pair` makes under `log_dirs`, B leading."""
    a, b = log_dirs / "A" / "t-0", log_dirs / "B" / "t-0"
    return ["repair", f"A={a}", f"B={b}", "--leader", "B", "--in-place", "--backup", str(backup), "--format", "json"]
