"""Progress bars on stderr, shown only when stderr is a terminal.

A bar never takes sys.stdout over: rich's live display redirects sys.stdout
into its own console by default, which sent a command's data to the terminal
(stderr) instead of the pipe or file the user gave it. Data goes to stdout,
progress to stderr, always.
"""
from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

from replog.toolkit.output import stderr

T = TypeVar("T")


def shares_terminal() -> bool:
    """True when stdout and stderr are the same terminal: data lines and a live bar there draw over each other."""
    try:
        return os.isatty(1) and os.isatty(2) and os.fstat(1).st_rdev == os.fstat(2).st_rdev
    except OSError:
        return False


class ByteBar:
    """The update(done, total) callback of a transient byte bar.

    When the data goes to the same terminal, the bar steps aside (is cleared)
    before data is written, and comes back only after `IDLE_SECONDS` without
    data (a long skip, an index verified without output), so no bar line is
    ever left glued to a data line.
    """

    IDLE_SECONDS = 1.0
    STEP = 1 << 20  # redraw at most once per MiB read

    def __init__(self, bar: Progress, label: str, steps_aside: bool) -> None:
        self.bar, self.task, self.steps_aside = bar, bar.add_task(label, total=None), steps_aside
        self.last, self.hidden, self.data_at = 0, False, 0.0

    def __call__(self, done: int, total: int) -> None:
        if done - self.last >= self.STEP or done == total:
            self.bar.update(self.task, completed=done, total=total)
            self.last = done
        if self.hidden and time.monotonic() - self.data_at >= self.IDLE_SECONDS:
            sys.stdout.flush()  # the data before the bar, never after it
            self.bar.start()
            self.hidden = False

    def before_data(self) -> None:
        """Clear the bar before a data line is written to the terminal it is drawn on."""
        self.data_at = time.monotonic()
        if not self.hidden:
            self.bar.stop()
            self.hidden = True

    def gate(self, items: Iterable[T]) -> Iterable[T]:
        """`items`, clearing the bar before each is handed to a writer when the data shares its terminal."""
        return self._stepping_aside(items) if self.steps_aside else items

    def _stepping_aside(self, items: Iterable[T]) -> Iterator[T]:
        for item in items:
            self.before_data()
            yield item


@contextlib.contextmanager
def byte_progress(label: str) -> Iterator[ByteBar | None]:
    """Yields a `ByteBar` (an update(done, total) callback), or None when stderr is not a terminal."""
    if not sys.stderr.isatty():
        yield None
        return
    with Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                  TimeRemainingColumn(), console=stderr, transient=True,
                  redirect_stdout=False, redirect_stderr=False) as bar:
        yield ByteBar(bar, label, shares_terminal())


@contextlib.contextmanager
def work_progress(label: str) -> Iterator[Callable[[int, int, int, int], None] | None]:
    """The one progress line of doctor, ls, recover, replay and repair: bytes and files done, of the total.

    Yields the library's `recovery.progress.Progress` callback, or None when stderr is not a terminal
    (nothing is counted then). The line is drawn on stderr and cleared when the block ends, so the
    command's data, written after the block, never meets it; stdout is never redirected into it.
    """
    if not sys.stderr.isatty():
        yield None
        return
    with Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                  TextColumn("{task.fields[files]} files"), TransferSpeedColumn(), TimeRemainingColumn(),
                  console=stderr, transient=True, redirect_stdout=False, redirect_stderr=False) as bar:
        task = bar.add_task(label, total=None, files="0/?")

        def update(done: int, total: int, files_done: int, files_total: int) -> None:
            bar.update(task, completed=done, total=total, files=f"{files_done}/{files_total}")

        yield update
