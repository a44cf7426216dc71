"""Where outputs may go: never inside or around evidence, never over work without `--force`, one writer at a time.

The one rule for every command that writes (recover, repair, replay --html/--export-lost, doctor --manifest,
fleet scan --out, fleet report --html, their RocketMQ forms): `evidence(inputs)` is every place the inputs
occupy, resolved; an output may not be, lie inside, or hold any of them. A directory output is then claimed
(`claimed_output`): locked against other replog runs before it is checked for emptiness, so two runs cannot
both find it empty and write into each other.
"""
from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path

from replog.formats.discovery import is_partition_dir
from replog.formats.errors import UnsafeOutput
from replog.formats.fileio import EntryType, entry_type, writing
from replog.formats.locks import claim

COMPLETE_MARKER = ".replog-complete"
PathLike = str | os.PathLike[str]


def evidence_roots(partition_dirs: Iterable[PathLike]) -> list[Path]:
    """What a Kafka replica's output must stay out of: each partition dir and its broker log dir, whose
    checkpoints are read and where a broker loads every directory as a partition (core/src/main/scala/kafka/
    log/LogManager.scala `loadLogs`), so a foreign one stops it from starting."""
    out: list[Path] = []
    for p in map(Path, partition_dirs):
        out += [p, Path(os.path.abspath(p)).parent]
    return out


def evidence(inputs: Iterable[PathLike]) -> list[Path]:
    """Every place an output must stay out of, resolved (symlinks followed): each input; the log dir of a Kafka
    partition dir (`evidence_roots`); the directory of a file; and the target of every symlink under an input
    (a partition dir linked in from another disk is evidence wherever it lives)."""
    found: dict[Path, None] = {}
    for raw in inputs:
        p = Path(raw)
        kind = entry_type(p)
        roots = evidence_roots([p]) if is_partition_dir(p) else [p]
        if kind is EntryType.REGULAR:
            roots.append(Path(os.path.abspath(p)).parent)
        for root in roots:
            found[root.resolve()] = None
        if kind is EntryType.DIRECTORY:
            found.update(dict.fromkeys(_linked(p)))
    return list(found)


def _linked(root: Path) -> Iterator[Path]:
    """The resolved target of every symlink under `root`, walking into linked directories once each."""
    seen = {root.resolve()}
    todo = [root]
    while todo:
        try:
            entries = list(os.scandir(todo.pop()))
        except OSError:
            continue   # unreadable: its readers report it
        for e in entries:
            if e.is_symlink():
                target = Path(e.path).resolve()
                yield target
                if target not in seen and entry_type(target) is EntryType.DIRECTORY:
                    seen.add(target)
                    todo.append(target)
            elif e.is_dir(follow_symlinks=False):
                todo.append(Path(e.path))


def _overlaps(a: Path, b: Path) -> bool:
    return a == b or a.is_relative_to(b) or b.is_relative_to(a)


def refuse_evidence(target: PathLike, inputs: Iterable[PathLike], *, file: bool = False) -> Path:
    """`target` resolved, if it stays out of every input's `evidence`; else `UnsafeOutput`. A directory output
    may not be, lie inside or hold evidence; a file output may not be or lie inside it."""
    path = Path(target).resolve()
    for place in evidence(inputs):
        if path == place or path.is_relative_to(place) or (not file and place.is_relative_to(path)):
            raise UnsafeOutput(f"output {path} overlaps the input {place}: inputs are evidence and are never written")
    return path


def check_output(out: PathLike, inputs: Iterable[PathLike], force: bool, marker: str = COMPLETE_MARKER) -> Path:
    """The resolved output dir, if writing there is allowed; nothing is changed on disk.

    Refused: a place inside (or around) an input (`refuse_evidence`); an existing non-empty directory without
    `force`; with `force`, one that does not hold `marker` (a previous replog output), so a typo cannot wipe an
    unrelated tree.
    """
    target = refuse_evidence(out, inputs)
    _check_reuse(target, force, marker)
    return target


def _check_reuse(target: Path, force: bool, marker: str) -> None:
    if target.exists() and not target.is_dir():
        raise UnsafeOutput(f"output {target} exists and is not a directory")
    if target.is_dir() and any(target.iterdir()):
        if not force:
            raise UnsafeOutput(f"{target} exists and is not empty (use --force to replace a previous replog output)")
        if not (target / marker).exists():
            raise UnsafeOutput(f"{target} is not a complete replog output ({marker} missing); "
                               "refusing to delete it even with --force")


@contextlib.contextmanager
def claimed_output(out: PathLike, inputs: Iterable[PathLike], force: bool, marker: str = COMPLETE_MARKER, *,
                   built_aside: bool = False, keep_partial: bool = False) -> Iterator[Path]:
    """The output dir, held against every other replog run for the block, checked (`check_output`) once held.

    By default a previous output is cleared, the dir created, and on any failure in the block what was written
    is removed again (the dir too, if this run created it): a full disk leaves no half-written output behind.
    `built_aside`: the caller builds the output elsewhere and renames it over `out` itself; nothing is created,
    cleared or removed here. `keep_partial`: a failed run's output stays (it records its own state)."""
    target = refuse_evidence(out, inputs)        # before anything is created, even the lock beside it
    with writing(target.parent):
        target.parent.mkdir(parents=True, exist_ok=True)
    with claim(target):
        _check_reuse(target, force, marker)
        if built_aside:
            yield target
            return
        created = not target.exists()
        with writing(target):
            _clear(target)
            target.mkdir(exist_ok=True)
        try:
            yield target
        except BaseException:
            if not keep_partial:
                _clear(target, ignore_errors=True)
                if created:
                    with contextlib.suppress(OSError):
                        target.rmdir()
            raise


def _clear(target: Path, ignore_errors: bool = False) -> None:
    """Empty `target` (a previous output, or this run's partial one), keeping the directory itself."""
    if not target.is_dir():
        return
    for child in list(target.iterdir()):
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=ignore_errors)
        else:
            try:
                child.unlink()
            except OSError:
                if not ignore_errors:
                    raise


def prepare_file_output(target: PathLike, inputs: Iterable[PathLike]) -> Path:
    """A single output file (manifest, HTML report): outside every input (`refuse_evidence`); its directory is
    created. The file itself is written with `atomic_write`, under a unique temporary name: two runs writing
    the same report each write a whole file, and the last rename wins."""
    path = refuse_evidence(target, inputs, file=True)
    with writing(path.parent):
        path.parent.mkdir(parents=True, exist_ok=True)
    return path


def mark_complete(out: Path, summary: str = "") -> None:
    from replog.formats.fileio import atomic_write
    atomic_write(out / COMPLETE_MARKER, (summary + "\n").encode())
