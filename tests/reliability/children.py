"""`replog` in a child process for the reliability tests (helpers, not tests).

`run` starts the real command line (the venv's `replog` script) with its output in files, waits for
that one child with `os.wait4` (its own peak RSS, not the session's other children), and can set a
resource limit in the child before it starts (`preexec_fn`). `python -m tests.reliability.children
vanish VICTIM ARGS...` runs `replog ARGS...` with a file system that loses VICTIM (renamed to
VICTIM.deleted, as a broker's async deletion does) right after the first `stat` of it, or right
before a directory listing of it: a file or folder that disappears between two looks.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
REPLOG = Path(sys.executable).parent / "replog"
ENV = dict(os.environ, COLUMNS="250", PYTHONPATH=os.pathsep.join(
    p for p in (os.environ.get("PYTHONPATH"), str(REPO)) if p))


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    peak_rss: int  # bytes

    def json(self) -> Any:
        return json.loads(self.stdout)

    def lines(self) -> list[Any]:
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]

    def codes(self) -> list[str]:
        """Finding codes anywhere in a `--format json` document (doctor, recover, ls rows, replay) or in
        `jsonl` entries, sorted."""
        try:
            docs = json.loads(self.stdout)
        except json.JSONDecodeError:
            docs = self.lines()
        return sorted(_codes(docs))

    def clean(self) -> bool:
        """Ended by itself with a result: 0 or 1, or 2 with one line of replog's own (never a signal,
        a traceback or an internal error)."""
        bad = self.returncode < 0 or "Traceback" in self.stderr or "internal error" in self.stderr
        return not bad and self.returncode in (0, 1, 2)


def _codes(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["code"]] if isinstance(node.get("code"), str) and "message" in node else []
        return own + [c for v in node.values() for c in _codes(v)]
    if isinstance(node, list):
        return [c for v in node for c in _codes(v)]
    return []


def run(*args: str | os.PathLike[str], tmp: Path, timeout: float = 120, prefix: Sequence[str] = (),
        preexec_fn: Callable[[], None] | None = None) -> Ran:
    """`replog ARGS` (after `prefix`, a wrapper) in a child; its exit code, output, time and peak RSS."""
    tmp.mkdir(parents=True, exist_ok=True)
    out, err = tmp / f"out-{time.monotonic_ns()}", tmp / f"err-{time.monotonic_ns()}"
    start = time.monotonic()
    with open(out, "wb") as o, open(err, "wb") as e:
        cmd = [*prefix, *map(os.fspath, args)] if prefix else [str(REPLOG), *map(os.fspath, args)]
        child = subprocess.Popen(cmd, stdout=o, stderr=e, env=ENV, cwd=REPO, preexec_fn=preexec_fn)
    deadline = start + timeout
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            child.kill()
            os.wait4(child.pid, 0)
            raise TimeoutError(f"replog {' '.join(map(str, args))} still running after {timeout} s")
        time.sleep(0.02)
    child.returncode = os.waitstatus_to_exitcode(status)
    return Ran(child.returncode, out.read_text("utf-8", "replace"), err.read_text("utf-8", "replace"),
               time.monotonic() - start, usage.ru_maxrss * 1024)


def vanish_prefix(victim: Path) -> list[str]:
    """A `run` prefix: the command sees `victim` vanish (see the module docstring)."""
    return [sys.executable, "-m", "tests.reliability.children", "vanish", str(victim)]


def _vanish(victim: str, args: list[str]) -> None:
    real_stat, real_scandir = os.stat, os.scandir
    gone = [False]

    def lose() -> None:
        if not gone[0] and os.path.lexists(victim):
            gone[0] = True
            os.rename(victim, victim + ".deleted")

    def is_victim(path: object) -> bool:
        return isinstance(path, (str, os.PathLike)) and os.path.abspath(os.fspath(path)) == victim

    def stat(path: Any, *a: Any, **k: Any) -> os.stat_result:
        result = real_stat(path, *a, **k)
        if is_victim(path):
            lose()
        return result

    def scandir(path: Any = ".") -> Any:
        if is_victim(path):
            lose()
        return real_scandir(path)

    os.stat, os.scandir = stat, scandir  # type: ignore[assignment]
    sys.argv = ["replog", *args]
    from replog.toolkit.cli import main
    main()


if __name__ == "__main__" and sys.argv[1] == "vanish":
    _vanish(os.path.abspath(sys.argv[2]), sys.argv[3:])
