"""Where outputs may go: never inside evidence, never over work without `--force`."""
from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from replog.formats.errors import UnsafeOutput

COMPLETE_MARKER = ".replog-complete"


def _overlaps(a: Path, b: Path) -> bool:
    return a == b or a.is_relative_to(b) or b.is_relative_to(a)


def check_output(out: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str]], force: bool,
                 marker: str = COMPLETE_MARKER) -> Path:
    """The resolved output dir, if writing there is allowed; nothing is changed on disk.

    Refused: a place inside (or around) an input; an existing non-empty
    directory without `force`; with `force`, one that does not hold `marker`
    (a previous replog output), so a typo cannot wipe an unrelated tree.
    """
    target = Path(out).resolve()
    for src in inputs:
        if _overlaps(target, Path(src).resolve()):
            raise UnsafeOutput(f"output {target} overlaps the input {src}: inputs are evidence and are never written")
    if target.exists() and not target.is_dir():
        raise UnsafeOutput(f"output {target} exists and is not a directory")
    if target.is_dir() and any(target.iterdir()):
        if not force:
            raise UnsafeOutput(f"{target} exists and is not empty (use --force to replace a previous replog output)")
        if not (target / marker).exists():
            raise UnsafeOutput(f"{target} is not a complete replog output ({marker} missing); "
                               "refusing to delete it even with --force")
    return target


def prepare_output(out: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str]], force: bool,
                   marker: str = COMPLETE_MARKER) -> Path:
    """`check_output`, then clear a previous output and create the directory."""
    target = check_output(out, inputs, force, marker)
    if target.is_dir() and any(target.iterdir()):
        shutil.rmtree(target)
    target.mkdir(parents=True, exist_ok=True)
    return target


def prepare_file_output(target: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str]]) -> Path:
    """A single output file (manifest, HTML report): outside every input; its directory is created."""
    path = Path(target).resolve()
    for src in inputs:
        s = Path(src).resolve()
        if path == s or path.is_relative_to(s if s.is_dir() else s.parent):
            raise UnsafeOutput(f"{target} would be written inside the input {src}")
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def evidence_roots(partition_dirs: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """What a replica output must stay out of: each partition dir and its broker log dir,
    whose checkpoints are read and where a broker chokes on foreign directories."""
    out: list[Path] = []
    for p in map(Path, partition_dirs):
        out += [p, p.parent]
    return out


def mark_complete(out: Path, summary: str = "") -> None:
    from replog.formats.fileio import atomic_write
    atomic_write(out / COMPLETE_MARKER, (summary + "\n").encode())
