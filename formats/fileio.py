"""Reading evidence read-only and writing outputs atomically.

Inputs are mapped read-only (`ACCESS_READ`), so no code path can modify them;
outputs go to a temporary name, are fsynced, renamed over the target, and the
directory is fsynced, the same procedure the brokers use for checkpoints.
"""
from __future__ import annotations

import contextlib
import errno
import mmap
import os
import secrets
import stat
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from enum import StrEnum
from pathlib import Path
from typing import BinaryIO, NamedTuple, TypeVar

from replog.formats.errors import NotRegularFile, OutsideInputs, UnreadableInput, UnwritableOutput, VanishedInput
from replog.formats.fileview import FileMap, PreadRegion, data_extents, readable, region_of

T = TypeVar("T")

EMPTY = memoryview(b"")


# Files up to this size are read (pread) instead of mapped. A mapped page that a
# concurrent truncation cuts away raises SIGBUS and kills the process (a live
# broker truncating its active segment); a read just comes back short. Larger
# files stay mapped so memory stays flat: that residual risk is documented.
READ_INSTEAD_OF_MAP = 16 << 20


class EntryType(StrEnum):
    """What a directory entry is, in words a finding can use ("... is a FIFO")."""

    REGULAR = "regular file"
    DIRECTORY = "directory"
    FIFO = "FIFO"
    CHARACTER_DEVICE = "character device"
    BLOCK_DEVICE = "block device"
    SOCKET = "socket"
    SYMLINK_LOOP = "symlink loop"
    DANGLING_SYMLINK = "dangling symlink"
    MISSING = "missing entry"
    INACCESSIBLE = "entry that cannot be examined (permission denied or I/O error)"
    OTHER = "special file"


_MODE_TYPES = ((stat.S_ISREG, EntryType.REGULAR), (stat.S_ISDIR, EntryType.DIRECTORY),
               (stat.S_ISFIFO, EntryType.FIFO), (stat.S_ISCHR, EntryType.CHARACTER_DEVICE),
               (stat.S_ISBLK, EntryType.BLOCK_DEVICE), (stat.S_ISSOCK, EntryType.SOCKET))


def type_of_mode(mode: int) -> EntryType:
    """The entry type an `st_mode` says."""
    return next((kind for test, kind in _MODE_TYPES if test(mode)), EntryType.OTHER)


def entry_type(path: str | os.PathLike[str]) -> EntryType:
    """What `path` is, following symlinks, found by `stat` alone: never opens it, never raises.

    Discovery and inventories classify entries with this instead of `Path.is_file`/`is_dir`,
    which raise on a permission error and cannot tell a FIFO from a directory.
    """
    return entry_stat(path)[0]


def entry_stat(path: str | os.PathLike[str]) -> tuple[EntryType, os.stat_result | None]:
    """`entry_type` and the `stat` it was found by (None when there is none)."""
    try:
        st = os.stat(path)
    except OSError as e:
        if e.errno == errno.ELOOP:
            return EntryType.SYMLINK_LOOP, None
        if e.errno in (errno.ENOENT, errno.ENOTDIR):
            return (EntryType.DANGLING_SYMLINK if os.path.lexists(path) else EntryType.MISSING), None
        return EntryType.INACCESSIBLE, None
    return type_of_mode(st.st_mode), st


def is_regular(path: str | os.PathLike[str]) -> bool:
    """`Path.is_file` that never raises: a regular file (through symlinks), nothing else."""
    return entry_type(path) is EntryType.REGULAR


def open_regular(path: str | os.PathLike[str]) -> int:
    """Open an input read-only; the one place replog opens a file for reading.

    Only regular files are read: a FIFO would block a reader forever, `/dev/zero`
    or `/dev/urandom` linked as a segment would pass for an empty (or endless) one.
    The entry is checked before opening (a device is never opened at all); the open
    itself is non-blocking (a FIFO created in between opens at once) and the
    descriptor is checked again with `fstat`. Raises `NotRegularFile` naming what
    the entry is, or `UnreadableInput` when it cannot be opened.
    """
    kind = entry_type(path)
    if kind not in (EntryType.REGULAR, EntryType.MISSING, EntryType.INACCESSIBLE):
        raise NotRegularFile(os.fspath(path), kind.value)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as e:
        raise unreadable(e, path, "open") from None
    try:
        mode = os.fstat(fd).st_mode
    except OSError as e:
        os.close(fd)
        raise UnreadableInput(f"cannot examine {os.fspath(path)}: {e.strerror}") from None
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotRegularFile(os.fspath(path), type_of_mode(mode).value)
    try:
        _check_confined(path, fd)
    except OutsideInputs:
        os.close(fd)
        raise
    return fd


class ReadPolicy(NamedTuple):
    """Where inputs may be read: under `roots` (real paths), or anywhere a symlink leads with
    `follow_symlinks` (and anywhere at all without roots: a library caller that did not say).

    A command builds its policy from its inputs and `--follow-symlinks` (`confined`) and adopts it for
    its own run; the file opens below it ask `read_policy()`. The policy lives in a context variable,
    not in the process: a command runs in a context of its own (`toolkit.cli_help.ReplogGroup`), so
    it ends with the command; a thread pool that reads inputs is made with `reading_pool`, whose
    threads start with the policy of the code that made it; a Spark task applies the policy it is
    handed (`applied`). Two commands in one process (tests, a library caller) never see each other's.
    """

    roots: tuple[str, ...] = ()
    follow_symlinks: bool = True

    @classmethod
    def confined(cls, roots: Iterable[str | os.PathLike[str]], *, follow_symlinks: bool) -> ReadPolicy:
        """Reads confined to `roots` (their real paths), unless `follow_symlinks`."""
        return cls(tuple(os.path.realpath(r) for r in roots), follow_symlinks)

    def adopt(self) -> None:
        """This policy for the rest of the current context (a command's own: it ends with the command)."""
        _POLICY.set(self)

    @contextlib.contextmanager
    def applied(self) -> Iterator[ReadPolicy]:
        """This policy inside the `with` block, the one before restored after it (a Spark task: its
        Python worker outlives one scan)."""
        token = _POLICY.set(self)
        try:
            yield self
        finally:
            _POLICY.reset(token)


UNCONFINED = ReadPolicy()   # a library caller that did not say: reads anywhere
_POLICY: ContextVar[ReadPolicy] = ContextVar("replog_read_policy", default=UNCONFINED)


def read_policy() -> ReadPolicy:
    """The `ReadPolicy` of the running command (the default, reading anywhere, outside one)."""
    return _POLICY.get()


def reading_pool(max_workers: int, thread_name_prefix: str) -> ThreadPoolExecutor:
    """A thread pool whose threads read under the policy of the code that makes it: a new thread
    starts in an empty context, where it would read anywhere."""
    return ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix=thread_name_prefix,
                              initializer=_POLICY.set, initargs=(read_policy(),))


def _check_confined(path: str | os.PathLike[str], fd: int) -> None:
    """Raise `OutsideInputs` when the file open on `fd` was reached through a symlink and lies outside
    every root. Where it lies is asked of the open descriptor (`/proc/self/fd`), so a link swapped
    between the check and the open cannot lead elsewhere."""
    policy = _POLICY.get()
    if policy.follow_symlinks or not policy.roots:
        return
    try:
        real = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        real = os.path.realpath(path)
    if real == os.path.abspath(path) or any(real == r or real.startswith(r.rstrip(os.sep) + os.sep)
                                           for r in policy.roots):
        return
    raise OutsideInputs(f"{os.fspath(path)} leads to {real}, outside the inputs: not read "
                        "(--follow-symlinks reads it)")


def unreadable(err: OSError, path: str | os.PathLike[str], doing: str) -> UnreadableInput:
    """The error for an `OSError` met while `doing` something to an input: `VanishedInput` when it is
    gone (no such file, or a directory on its path gone), else `UnreadableInput` with the reason."""
    if err.errno in (errno.ENOENT, errno.ENOTDIR):
        return VanishedInput(f"{os.fspath(path)} vanished before replog could {doing} it (renamed or deleted "
                             "meanwhile: a live broker?)")
    return UnreadableInput(f"cannot {doing} {os.fspath(path)}: {err.strerror}")


def file_size(path: str | os.PathLike[str]) -> int:
    """The size of an input (following symlinks); `UnreadableInput`/`VanishedInput` instead of `OSError`."""
    try:
        return os.stat(path).st_size
    except OSError as e:
        raise unreadable(e, path, "examine") from None


@contextlib.contextmanager
def mapped(path: str | os.PathLike[str], *, live: bool = False, windows: bool = False) -> Iterator[memoryview]:
    """A read-only view of a whole file (empty for empty files), addressed by file position.

    Files of at most `READ_INSTEAD_OF_MAP` bytes are read into memory (pread: SIGBUS-safe). Larger
    ones are mapped: memory stays flat whatever the size, pages are read on demand. A `live` file (one
    the broker may be writing: an active segment, or a file that changed since it was listed) is never
    mapped (a truncation under a map is a SIGBUS): it is read with pread into private memory laid out
    like the file (`fileview.PreadRegion`), all of it at once, or with `windows` as a walk asks for it
    (`fileview.readable`), released behind it (`release_pages`). Only regular files are opened
    (`open_regular`); a file that cannot be mapped (an address-space limit) is `UnreadableInput`.
    """
    fd = open_regular(path)
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            yield EMPTY
            return
        if size <= READ_INSTEAD_OF_MAP:
            try:
                data = os.pread(fd, size, 0)  # may come back short if the file shrank meanwhile
            except OSError as e:
                raise UnreadableInput(f"cannot read {path}: {e.strerror}") from None
            yield memoryview(data)
            return
        region: mmap.mmap
        if live:
            region = PreadRegion.create(fd, os.fspath(path), size)
            if not windows:
                region.fill(0, size)
            view = memoryview(region).toreadonly()
        else:
            try:
                region = FileMap(fd, size, access=mmap.ACCESS_READ)
            except (OSError, ValueError, OverflowError) as e:
                raise UnreadableInput(f"cannot map {path}: {e}") from None
            region.fd = fd
            view = memoryview(region)
        try:
            yield view
        finally:
            view.release()
            try:
                region.close()
            except BufferError:
                pass  # a caller kept a slice alive; the map is freed with it
    finally:
        os.close(fd)


def read_small(path: str | os.PathLike[str], limit: int = 64 << 20) -> bytes:
    """Read a small file (checkpoint, metadata) whole, refusing absurd sizes (regular files only)."""
    fd = open_regular(path)
    try:
        with os.fdopen(fd, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > limit:
                raise UnreadableInput(f"{path}: {size} bytes is too large for this kind of file")
            data = f.read(size + 1)  # sized by the file: read(limit) would allocate 64 MiB per small file
            if len(data) > size:  # it grew since fstat: read on, still bounded by the limit
                data += f.read(limit + 1 - len(data))
            return data
    except OSError as e:
        raise UnreadableInput(f"cannot read {path}: {e.strerror}") from None


def fsync_dir(path: str | os.PathLike[str]) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# Where an atomic write can be made to die, for the crash-safety tests (tests/reliability/test_crash.py): the
# process they start installs a hook here (tests/reliability/killed_replog.py) that dies like `kill -9` in its
# (N+1)th atomic write, after the temporary file is written and before the rename. Nothing in replog sets it.
write_hook: Callable[[], None] | None = None


def crash_point_for_tests() -> None:
    """Where an atomic write may die for the crash tests: the installed `write_hook`, if any."""
    if write_hook is not None:
        write_hook()


# errno values by which the machine refuses a write (or a read) for reasons of its own, not replog's: a full
# disk, a read-only file system, no permission, a name too long, too many open files. Reported as ordinary
# errors naming the path (exit 2), never as internal errors; anything else (EBADF, EINVAL) would be a bug.
SYSTEM_ERRNOS = frozenset({
    errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EFBIG, errno.EIO, errno.ENAMETOOLONG,
    errno.EMFILE, errno.ENFILE, errno.ENOTDIR, errno.EISDIR, errno.EEXIST, errno.ENOENT, errno.ELOOP, errno.EXDEV,
    errno.EBUSY, errno.ETXTBSY, errno.ESTALE, errno.EMLINK, errno.ENOTEMPTY, errno.ENOLCK})


@contextlib.contextmanager
def writing(path: str | os.PathLike[str]) -> Iterator[None]:
    """Turn the machine's refusals while writing `path` (`SYSTEM_ERRNOS`) into `UnwritableOutput` naming it.

    Without it an `ENOSPC` from `os.write` or `fsync` names no file at all; with it the user reads which output
    could not be written and why, in one line."""
    try:
        yield
    except OSError as e:
        if e.errno not in SYSTEM_ERRNOS:
            raise
        # a copy or a rename names its destination second (shutil.copyfile: source, destination)
        where = next((f for f in (e.filename2, e.filename) if f is not None), os.fspath(path))
        raise UnwritableOutput(f"cannot write {os.fsdecode(where)}: {e.strerror}") from None


TEMP_SUFFIX = ".replog-tmp"


def create_unique(target: str | os.PathLike[str]) -> tuple[int, Path]:
    """A new, empty file next to `target` under a name no one else uses (`.NAME.<random>.replog-tmp`), open for
    writing, with the permissions an ordinary `open(..., "wb")` gives (0o666 less the umask; `mkstemp` gives 0o600).

    Unique, so two writers of the same target (two reports to one path) never write into each other's file."""
    target = Path(target)
    while True:
        tmp = target.with_name(f".{target.name}.{secrets.token_hex(6)}{TEMP_SUFFIX}")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666), tmp
        except FileExistsError:  # pragma: no cover - 48 random bits: practically never
            continue


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """A binary file to write `path` through: it is a unique temporary name beside `path` (`create_unique`) until
    the block ends, then it is fsynced, renamed over `path` and the directory fsynced. On any error (a full disk,
    an exception of the caller's) the temporary file is removed and `path` is left as it was."""
    target = Path(path)
    with writing(target):
        fd, tmp = create_unique(target)
        try:
            with os.fdopen(fd, "wb") as f:
                yield f
                f.flush()
                os.fsync(f.fileno())
            crash_point_for_tests()
            os.replace(tmp, target)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        fsync_dir(target.parent)


def atomic_write(path: str | os.PathLike[str], data: bytes) -> None:
    """Write `data` to `path` atomically (`atomic_file`: unique tmp, fsync, rename, dir fsync), then verify."""
    target = Path(path)
    with atomic_file(target) as f:
        f.write(data)
    with writing(target), open(target, "rb") as f:
        if f.read() != data:
            raise UnwritableOutput(f"cannot write {target}: it reads back different from what was written")


def read_with_backup(path: str | os.PathLike[str], parse: Callable[[bytes], T | None],
                     limit: int = 64 << 20) -> tuple[T, Path]:
    """Parse `path`, falling back to `<path>.bak` as RocketMQ's config managers do.

    `parse` returns None for a file that parses but holds nothing usable. The
    main file's error is raised when neither file gives a value.
    """
    from replog.formats.errors import FormatError
    main = Path(path)
    first_error: Exception | None = None
    for candidate in (main, main.with_name(main.name + ".bak")):
        if not candidate.exists():
            continue
        try:
            value = parse(read_small(candidate, limit))
        except (FormatError, UnreadableInput) as e:
            first_error = first_error or e
            continue
        if value is not None:
            return value, candidate
    if first_error:
        raise first_error
    raise UnreadableInput(f"{main}: nothing usable in it (nor in its .bak)")


RELEASE_STEP = 16 << 20


def release_pages(buf: bytes | memoryview, start: int, end: int) -> None:
    """Drop this process's copy of `buf[start:end]` (page-aligned inward) when `buf` is a whole map or a
    live file's region: RSS stays flat on a long walk. A map's pages fault in again from the page cache
    when read; a region's are read again when asked for (`fileview.readable`). A no-op for anything else
    (bytes, a pread copy, a slice)."""
    region = region_of(buf)
    if region is not None:
        if len(buf) == len(region):
            region.release(start, end)
        return
    obj = getattr(buf, "obj", None)
    if not isinstance(obj, mmap.mmap) or len(buf) != len(obj) or not hasattr(obj, "madvise"):
        return
    page = mmap.PAGESIZE
    lo, hi = -(-start // page) * page, end // page * page
    if hi > lo:
        try:
            obj.madvise(mmap.MADV_DONTNEED, lo, hi - lo)
        except (OSError, ValueError):
            pass  # advice only


def all_zero(buf: bytes | memoryview, start: int, end: int) -> bool:
    """Whether `buf[start:end]` is all zero bytes. The holes of a sparse file are zeros without being
    read; data is checked a window at a time and released behind (a zero-filled tail can be GiBs)."""
    import numpy as np
    for lo, hi in data_extents(buf, start, end):
        for a in range(lo, hi, RELEASE_STEP):
            b = min(hi, a + RELEASE_STEP)
            readable(buf, a, b)
            if np.frombuffer(buf[a:b], dtype=np.uint8).any():
                return False
            release_pages(buf, a, b)
    return True


def locked_by_another_process(path: str | os.PathLike[str]) -> bool:
    """True when another process holds a lock on `path` (a running broker holds its log dir's `.lock`).

    Kafka locks it with `FileChannel.tryLock()` (server-common/.../util/FileLock.java), a POSIX
    (`fcntl`) lock on Linux: asked for here as a shared lock on a read-only descriptor, which changes
    nothing on disk, and let go at once. A `flock` lock (a wrapper script, `flock(1)`, another tool)
    never conflicts with that probe, so `/proc/locks`, which lists every FLOCK, POSIX and OFD lock
    by device and inode, is read too. A file we cannot open is reported as not locked.
    """
    import fcntl
    try:
        fd = open_regular(path)
    except UnreadableInput:
        return False
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.lockf(fd, fcntl.LOCK_UN)
        st = os.fstat(fd)
        return _listed_lock(st.st_dev, st.st_ino)
    finally:
        os.close(fd)


PROC_LOCKS = "/proc/locks"


def _listed_lock(dev: int, ino: int, table: str = PROC_LOCKS) -> bool:
    """True when `table` (`/proc/locks`) lists a lock another process holds on the inode `ino` of
    device `dev`. Its lines read `1: FLOCK ADVISORY WRITE 4242 fd:01:1234567 0 EOF` (device major and
    minor in hex: fs/locks.c `lock_get_status`); a waiter's line has `->` after the number. Absent
    (not Linux) or unreadable: nothing is listed."""
    want = f"{os.major(dev):02x}:{os.minor(dev):02x}:{ino}"
    me = str(os.getpid())
    try:
        with open(table, encoding="ascii", errors="replace") as f:
            lines = f.read(1 << 24).splitlines()
    except OSError:
        return False
    for line in lines:
        fields = line.split()
        if "->" in fields[:2]:
            continue  # a process waiting for the lock, not holding it
        if len(fields) >= 6 and fields[5] == want and fields[4] != me:
            return True
    return False
