"""Error types shared by every layer.

Parsers of whole small files (checkpoints, snapshots) raise `FormatError`;
walkers over large files turn damage into `Finding`s instead and go on.
"""
from __future__ import annotations


class ReplogError(Exception):
    """Base of every error replog raises on purpose (never a bug)."""


class UnreadableInput(ReplogError):
    """An input that cannot be opened or identified at all (exit code 2)."""


class NotRegularFile(UnreadableInput):
    """An input that is not a regular file (a FIFO, device, socket, directory, symlink loop):
    replog never reads one. `what` names it ("FIFO", "character device", ...); `expected` is
    what belongs under that name."""

    def __init__(self, path: str, what: str, expected: str = "a regular file") -> None:
        article = "an" if what[:1].lower() in "aeiou" else "a"
        super().__init__(f"{path} is {article} {what}, not {expected}; replog reads only regular files "
                         "and directories")
        self.path, self.what = path, what


class VanishedInput(UnreadableInput):
    """An input that was listed and is gone when replog opens it: renamed or deleted meanwhile (a live
    broker rolls, cleans and deletes segments by renaming them). A finding, never the end of a command."""


class InputChanged(UnreadableInput):
    """An input that changed while replog read it (a live broker appended, truncated or rolled it), so
    what was read of it no longer matches the file: a command that must copy from it stops."""


class OutsideInputs(UnreadableInput):
    """An input reached through a symlink that leads out of the inputs' trees: not read (a segment
    linked to `/etc/shadow` must not be parsed and shown) unless the user asks (`--follow-symlinks`)."""


class FormatError(ReplogError):
    """Bytes that do not follow the declared layout.

    Carries the finding code and the byte position so callers can turn it into
    a `Finding` without parsing the message.
    """

    def __init__(self, code: str, message: str, position: int | None = None,
                 offset: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.position = position
        self.offset = offset


class UnsafeOutput(ReplogError):
    """An output location that would overwrite or sit inside evidence."""


class UnwritableOutput(ReplogError):
    """An output the system refuses to take: no space left, no permission, a read-only file system.

    An ordinary condition of the machine, not a bug: reported in one line naming the path (exit 2)."""


class InUse(ReplogError):
    """A directory another process is working on (another replog run, or a running broker): refused at once,
    never waited for."""
