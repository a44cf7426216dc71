"""Run the real `replog` with its stderr (and optionally stdout) on a pseudo-terminal.

On-call engineers run replog at a terminal and pipe or redirect its data, so
stderr is a terminal while stdout is a pipe or a file; these helpers reproduce
exactly that in a child process, and read back what reached each side.
"""
from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

REPLOG = Path(sys.executable).parent / "replog"
Stdout = Literal["pipe", "file", "terminal"]
COLUMNS = 120


@dataclass(frozen=True)
class TerminalRun:
    returncode: int
    stdout: bytes    # what reached the pipe or file (empty when stdout is the terminal)
    terminal: bytes  # every byte written to the pseudo-terminal


def _drain(fd: int, into: bytearray) -> None:
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:  # EIO: every writer of the terminal has closed it
            return
        if not chunk:
            return
        into.extend(chunk)


def run_on_terminal(args: list[str], stdout: Stdout, tmp_path: Path, timeout: float = 180) -> TerminalRun:
    """`replog ARGS` with stderr on a fresh pseudo-terminal (120x40) and stdout a pipe, a file, or the same
    terminal; the terminal is read while the child runs, so a chatty child never blocks on it."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, COLUMNS, 0, 0))
    out_path = tmp_path / "stdout.bin"
    out_file = out_path.open("wb") if stdout == "file" else None
    target = {"pipe": subprocess.PIPE, "file": out_file, "terminal": slave}[stdout]
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "COLUMNS", "LINES")}
    env["TERM"] = "xterm-256color"
    seen = bytearray()
    reader = threading.Thread(target=_drain, args=(master, seen), daemon=True)
    reader.start()
    try:
        proc = subprocess.Popen([str(REPLOG), *args], stdin=subprocess.DEVNULL, stdout=target, stderr=slave, env=env)
        os.close(slave)
        piped = proc.stdout.read() if proc.stdout else b""
        proc.wait(timeout)
        reader.join(timeout)
    finally:
        if out_file:
            out_file.close()
        os.close(master)
    data = out_path.read_bytes() if stdout == "file" else piped
    return TerminalRun(proc.returncode, data, bytes(seen))


def run_piped(args: list[str], timeout: float = 180) -> subprocess.CompletedProcess[bytes]:
    """`replog ARGS` with stdout and stderr both pipes: the baseline a terminal must not change (tables laid
    out for the terminal's 120 columns, as rich sizes them from whichever standard stream is a terminal)."""
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "LINES")}
    env["COLUMNS"] = str(COLUMNS)
    return subprocess.run([str(REPLOG), *args], capture_output=True, stdin=subprocess.DEVNULL, timeout=timeout,
                          env=env)


_CONTROL = re.compile(rb"\x1b\[([0-9;?]*)([A-Za-z])|\x1b\][^\x07]*\x07|\r|\n|\x1b[()][0-9A-Za-z]")


def screen(raw: bytes) -> list[str]:
    """The lines a terminal shows after `raw`: enough of a VT100 for rich's output (carriage return,
    line feed, erase line, cursor up; colours and cursor visibility ignored), no wrapping."""
    lines, row, col = [""], 0, 0
    pos = 0
    for m in _CONTROL.finditer(raw):
        text = raw[pos:m.start()].decode("utf-8", "replace")
        line = lines[row]
        lines[row] = line[:col].ljust(col) + text + line[col + len(text):]
        col += len(text)
        pos = m.end()
        token = m.group(0)
        if token == b"\r":
            col = 0
        elif token == b"\n":
            row += 1
            col = 0
            if row == len(lines):
                lines.append("")
        elif m.group(2) == b"K":
            lines[row] = lines[row][:col] if m.group(1) in (b"", b"0") else ""
        elif m.group(2) == b"A":
            row = max(0, row - int(m.group(1) or 1))
    tail = raw[pos:].decode("utf-8", "replace")
    lines[row] = lines[row][:col].ljust(col) + tail + lines[row][col + len(tail):]
    while lines and not lines[-1].strip():
        lines.pop()
    return lines
