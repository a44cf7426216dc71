"""Progress bars on stderr, shown only when stderr is a terminal."""
from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

from replog.toolkit.output import stderr


@contextlib.contextmanager
def byte_progress(label: str) -> Iterator[Callable[[int, int], None] | None]:
    """Yields an update(done, total) callback, or None when not on a terminal."""
    if not sys.stderr.isatty():
        yield None
        return
    with Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                  TimeRemainingColumn(), console=stderr, transient=True) as bar:
        task = bar.add_task(label, total=None)
        last = [0]

        def update(done: int, total: int) -> None:
            if done - last[0] >= 1 << 20 or done == total:
                bar.update(task, completed=done, total=total)
                last[0] = done

        yield update


@contextlib.contextmanager
def work_progress(label: str) -> Iterator[Callable[[int, int, int, int], None] | None]:
    """The one progress line of doctor, ls, recover, replay and repair: bytes and files done, of the total.

    Yields the library's `recovery.progress.Progress` callback, or None when stderr is not a terminal
    (nothing is counted then). The line is drawn on stderr and cleared when the block ends, so the
    command's data, written after the block, never meets it.
    """
    if not sys.stderr.isatty():
        yield None
        return
    with Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                  TextColumn("{task.fields[files]} files"), TransferSpeedColumn(), TimeRemainingColumn(),
                  console=stderr, transient=True) as bar:
        task = bar.add_task(label, total=None, files="0/?")

        def update(done: int, total: int, files_done: int, files_total: int) -> None:
            bar.update(task, completed=done, total=total, files=f"{files_done}/{files_total}")

        yield update
