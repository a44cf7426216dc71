"""Exclusive locks: two writers of one place (two replog runs, or replog and a running broker) never meet.

Both kinds are tried without waiting: a second run is refused at once (`InUse`), saying what holds what.

- `broker_lock(log_dir)`: the lock a Kafka broker holds on its log dir's `.lock` for as long as it runs
  (core/src/main/scala/kafka/log/LogManager.scala `lockLogDirs`, through
  server-common/src/main/java/org/apache/kafka/server/util/FileLock.java: the file is created when missing,
  opened read-write and locked with `FileChannel.tryLock()`, which the JDK implements on Linux as a POSIX record
  lock, `fcntl(F_SETLK)`, over the whole file). replog takes the same lock the same way (`lockf`), so a broker
  and replog exclude each other, as do two replog runs; a `flock` on the same file is taken as well, which a
  process locking with `flock` instead would hold.
- `claim(directory)`: a lock beside a directory replog writes (an output, a backup): `flock` on
  `.NAME.replog-lock` next to it, for the whole run. Beside it, not on it: an output built aside and renamed
  into place is a new inode, and the lock must stay the same while that happens.

A POSIX lock belongs to the process and is dropped when *any* descriptor of its file in the process is closed.
So each lock is taken once per process (`_held`, counted: a nested `with` on a lock already held is a no-op),
and nothing else opens a `.lock` while one is held (`fileio.locked_by_another_process` runs in `doctor` only).
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from replog.formats.errors import InUse
from replog.formats.fileio import writing

BROKER_LOCK = ".lock"   # LogManager.LockFileName
_BUSY = (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK)
_TRIES = 8              # a lock file removed by its previous holder between our open and our lock: open again


@dataclass
class _Held:
    fd: int
    remove: bool        # unlink the file on release (ours: a claim file, or a `.lock` this run created)
    count: int = 1


_held: dict[str, _Held] = {}


@contextlib.contextmanager
def claim(directory: str | os.PathLike[str], what: str = "output") -> Iterator[None]:
    """Hold `directory` for writing against every other replog process; `what` names it in the refusal."""
    d = Path(directory).absolute()
    lock = d.parent / f".{d.name}.replog-lock"

    def busy() -> str:
        holder = _holder(lock)
        return (f"{what} {d} is being written by another replog process{holder}: wait for it to finish, "
                "or choose another")

    with _hold(lock, posix=False, owned=True, busy=busy):
        yield


@contextlib.contextmanager
def broker_lock(log_dir: str | os.PathLike[str]) -> Iterator[None]:
    """Hold a Kafka log dir as its broker does (`.lock`); refused while a broker or another replog holds it."""
    d = Path(log_dir)

    def busy() -> str:
        return (f"{d / BROKER_LOCK} is locked by another process (a running Kafka broker, or another "
                "replog repair --in-place on this log dir): stop it first")

    with _hold(d / BROKER_LOCK, posix=True, owned=False, busy=busy):
        yield


@contextlib.contextmanager
def _hold(path: Path, *, posix: bool, owned: bool, busy: Callable[[], str]) -> Iterator[None]:
    key = os.path.realpath(path)
    held = _held.get(key)
    if held is not None:
        held.count += 1
    else:
        held = _held[key] = _acquire(path, posix, owned, busy)
    try:
        yield
    finally:
        held.count -= 1
        if not held.count:
            del _held[key]
            _release(path, held)


def _acquire(path: Path, posix: bool, owned: bool, busy: Callable[[], str]) -> _Held:
    """Open (creating) and lock `path`; the file locked must still be the one at `path`: its previous holder
    may have removed it between our open and our lock (`_release`), and then the new one is locked instead."""
    flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | (os.O_NOFOLLOW if owned else 0)
    for _ in range(_TRIES):
        existed = os.path.lexists(path)
        with writing(path):
            fd = os.open(path, flags, 0o644)
        try:
            locked = _lock(fd, path, posix)
            if locked and _same_file(fd, path):
                if owned:
                    _note_holder(fd)
                return _Held(fd, remove=owned or not existed)
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
        if not locked:
            break
    raise InUse(busy())


def _lock(fd: int, path: Path, posix: bool) -> bool:
    """Exclusive locks on `fd` without waiting; False when another process holds one."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if posix:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno in _BUSY:   # lockf says EACCES or EAGAIN, flock EWOULDBLOCK
            return False
        with writing(path):    # no locks on this file system (ENOLCK): said in one line
            raise
    return True


def _same_file(fd: int, path: Path) -> bool:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    here = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (here.st_dev, here.st_ino)


def _note_holder(fd: int) -> None:
    """Our pid in our claim file, for the message a second run prints."""
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)


def _holder(lock: Path) -> str:
    try:
        pid = lock.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return ""
    return f" (pid {pid})" if pid.isdigit() else ""


def _release(path: Path, held: _Held) -> None:
    """Unlink (while still holding the lock, so no one locks a name about to vanish), then close: unlocked."""
    try:
        if held.remove:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
    finally:
        os.close(held.fd)
