"""`python -m tests.reliability.killed_replog N ARGS...`: the `replog` command, dying like `kill -9` (exit 137)
in its (N+1)th atomic write, after the temporary file is written and before the rename.

The hook is installed here, in the test's own process launcher (`fileio.write_hook`), so replog itself reads
no environment variable to know it is under test."""
from __future__ import annotations

import os
import sys
from collections.abc import Callable


def kill_after(writes: int) -> Callable[[], None]:
    """A `fileio.write_hook` letting `writes` atomic writes finish and killing the process in the next."""
    started = 0

    def hook() -> None:
        nonlocal started
        started += 1
        if started > writes:
            os._exit(137)
    return hook


def command(kill_after_writes: int, args: list[str]) -> list[str]:
    """The argv running replog with `args`, killed after `kill_after_writes` atomic writes."""
    return [sys.executable, "-m", "tests.reliability.killed_replog", str(kill_after_writes), *args]


if __name__ == "__main__":
    from replog.formats import fileio
    from replog.toolkit.cli import main
    fileio.write_hook = kill_after(int(sys.argv[1]))
    sys.argv = ["replog", *sys.argv[2:]]
    main()
