"""Progress of a long read, as numbers handed to a callback: the library never draws anything.

A command that may take more than a second (doctor, ls, recover, replay and
repair loading their replicas) counts the files it has finished against the
files under its inputs; the toolkit turns the counts into a progress line on a
terminal and passes None otherwise, which makes every count here a no-op.
"""
from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

# (bytes done, bytes total, files done, files total)
Progress = Callable[[int, int, int, int], None]


def file_sizes(paths: Iterable[str | os.PathLike[str]], suffix: str = "") -> dict[str, int]:
    """Size of every regular file at or under `paths` whose name ends in `suffix` (what a command over
    them reads: everything for doctor, the segments' `.log` files for a command that walks them), by path."""
    sizes: dict[str, int] = {}
    for path in paths:
        p = Path(path)
        if p.is_file():
            sizes[str(p)] = _size(str(p))
            continue
        for folder, _, names in os.walk(p):
            for name in names:
                if not name.endswith(suffix):
                    continue
                full = os.path.join(folder, name)
                try:
                    sizes[full] = os.stat(full).st_size
                except OSError:
                    continue   # gone meanwhile: the command itself will say so if it matters
    return sizes


class Tally:
    """Files finished out of a known set, reported as bytes and files after each one; thread-safe.

    A file is counted once, however often it is finished; a file outside the set (created
    since, or named differently) counts too, so the totals grow rather than being exceeded.
    """

    def __init__(self, report: Progress | None, sizes: dict[str, int]) -> None:
        self._report = report
        self._sizes = dict(sizes)
        self._total = sum(sizes.values())
        self._done: set[str] = set()
        self._done_bytes = 0
        self._lock = threading.Lock()

    @classmethod
    def of(cls, report: Progress | None, paths: Iterable[str | os.PathLike[str]], suffix: str = "") -> Tally:
        """A tally over the files under `paths` (named `*suffix`), reported to at once; started, so the
        line shows what is ahead. No walk of the paths at all when there is nobody to report to."""
        tally = cls(report, file_sizes(paths, suffix) if report is not None else {})
        tally.start()
        return tally

    def start(self) -> None:
        """Report the totals before any file is done, so the line shows what is ahead."""
        if self._report is not None:
            self._report(0, self._total, 0, len(self._sizes))

    def done(self, path: str | os.PathLike[str]) -> None:
        if self._report is None:
            return
        key = str(path)
        with self._lock:
            if key in self._done:
                return
            self._done.add(key)
            if key not in self._sizes:
                self._sizes[key] = _size(key)
                self._total += self._sizes[key]
            self._done_bytes += self._sizes[key]
            counts = (self._done_bytes, self._total, len(self._done), len(self._sizes))
        self._report(*counts)


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
