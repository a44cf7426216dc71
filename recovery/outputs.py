"""Where outputs may go: never inside evidence, never over work without `--force`."""
from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from formats.errors import UnsafeOutput

COMPLETE_MARKER = ".replog-complete"


def _inside(child: Path, parent: Path) -> bool:
    try:
        child.relative_to(parent)
        return True
    except ValueError:
        return False


def prepare_output(out: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str]], force: bool,
                   marker: str = COMPLETE_MARKER) -> Path:
    """Create `out` for writing; refuse a place inside (or around) an input, or over existing work.

    With `force`, only a directory replog completed before (it holds the
    `marker` file) is replaced, so a typo cannot wipe an unrelated tree.
    """
    target = Path(out).resolve()
    for src in inputs:
        s = Path(src).resolve()
        if _inside(target, s) or _inside(s, target):
            raise UnsafeOutput(f"output {target} overlaps the input {s}: inputs are evidence and are never written")
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        if not force:
            raise UnsafeOutput(f"{target} exists and is not empty (use --force to replace a previous replog output)")
        if not (target / marker).exists():
            raise UnsafeOutput(f"{target} is not a complete replog output ({marker} missing); "
                               "refusing to delete it even with --force")
        shutil.rmtree(target)
    target.mkdir(parents=True, exist_ok=True)
    return target


def mark_complete(out: Path, summary: str = "") -> None:
    from formats.fileio import atomic_write
    atomic_write(out / COMPLETE_MARKER, (summary + "\n").encode())
