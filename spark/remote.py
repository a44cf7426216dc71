"""Log dirs and stores behind a pyarrow filesystem (`file://`, `hdfs://`, `s3://`, or any `pyarrow.fs` object).

The driver lists remote dirs with `get_file_info(FileSelector)` and reads only
small root files; an executor streams a unit's files to a local scratch dir in
bounded ranged reads (`read_at`, `CHUNK` bytes at a time), scans the copy with
the very code a local scan uses, and deletes it. Memory stays flat; disk use is
the unit's own bytes. Nothing here touches a local path except the scratch dir.
"""
from __future__ import annotations

import base64
import contextlib
import os
import pickle
import re
import shutil
import tempfile
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from replog.formats.errors import UnreadableInput
from replog.formats.kafka import names

CHUNK = 8 << 20
SMALL_LIMIT = 64 << 20
_DIGITS20 = re.compile(r"^[0-9]{20}$")
_MANGLED = re.compile(r"^([a-z][a-z0-9+.-]*):/([^/].*)$")

FileInfo = Any   # a pyarrow.fs.FileInfo (pyarrow ships no types: see pyproject's mypy overrides)


def restore_uri(raw: str) -> str:
    """`s3:/b/k` back to `s3://b/k`: a URI that went through `pathlib.Path` lost one slash."""
    m = _MANGLED.match(raw)
    if not m or m.group(1) in ("c", "d") or len(m.group(1)) < 2:
        return raw
    return f"file:///{m.group(2)}" if m.group(1) == "file" else f"{m.group(1)}://{m.group(2)}"


def is_uri(raw: str) -> bool:
    return "://" in restore_uri(raw)


def from_uri(raw: str) -> tuple[Any, str]:
    """(filesystem, path inside it) of a URI; `UnreadableInput` for a scheme pyarrow cannot open."""
    from pyarrow import fs as pafs

    try:
        return pafs.FileSystem.from_uri(restore_uri(raw))
    except (ValueError, OSError, TypeError) as e:   # pyarrow.ArrowInvalid is a ValueError
        raise UnreadableInput(f"{raw}: cannot open this filesystem URI ({e})") from None


def pack(filesystem: Any) -> str:
    """A filesystem as a JSON-safe string for a unit (pyarrow filesystems pickle)."""
    return base64.b64encode(pickle.dumps(filesystem)).decode("ascii")


@lru_cache(maxsize=16)
def unpack(text: str) -> Any:
    return pickle.loads(base64.b64decode(text))  # noqa: S301 - written by our own driver


# -- listing (driver) --------------------------------------------------------------------------


def listing(filesystem: Any, path: str) -> list[Any]:
    """FileInfo of a dir's direct children, sorted by name; [] when it cannot be listed."""
    from pyarrow import fs as pafs

    try:
        infos = filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True, recursive=False))
    except OSError:
        return []
    return sorted(infos, key=lambda i: i.base_name)


def is_dir(filesystem: Any, path: str) -> bool:
    from pyarrow import fs as pafs

    try:
        return filesystem.get_file_info(path).type == pafs.FileType.Directory
    except OSError:
        return False


def _files(infos: list[FileInfo]) -> dict[str, FileInfo]:
    from pyarrow import fs as pafs
    return {i.base_name: i for i in infos if i.type == pafs.FileType.File}


def _dirs(infos: list[FileInfo]) -> dict[str, FileInfo]:
    from pyarrow import fs as pafs
    return {i.base_name: i for i in infos if i.type == pafs.FileType.Directory}


def is_partition_dir(filesystem: Any, path: str, infos: list[Any] | None = None) -> bool:
    """As `formats.discovery.is_partition_dir`, from a listing."""
    if names.parse_partition_dir(base_name(path)) is None:
        return False
    infos = listing(filesystem, path) if infos is None else infos
    return not infos or any(names.parse_segment_file_name(i.base_name)
                            or i.base_name in (names.LEADER_EPOCH_CHECKPOINT, names.PARTITION_METADATA)
                            for i in infos)


def classify(filesystem: Any, path: str) -> str | None:
    """"kafka" (log dir), "rocketmq" (store), "partition", or None, as `formats.discovery.classify_dir`."""
    infos = listing(filesystem, path)
    files, dirs = _files(infos), _dirs(infos)
    if "commitlog" in dirs:
        if "checkpoint" in files or any(_DIGITS20.match(i.base_name)
                                        for i in listing(filesystem, dirs["commitlog"].path)):
            return "rocketmq"
    elif "consumequeue" in dirs and "checkpoint" in files:
        return "rocketmq"
    if is_partition_dir(filesystem, path, infos):
        return "partition"
    if any(n in names.OFFSET_CHECKPOINT_NAMES or n == names.META_PROPERTIES for n in files):
        return "kafka"
    if any(is_partition_dir(filesystem, d.path) for d in dirs.values()):
        return "kafka"
    return None


def find_roots(filesystem: Any, path: str, max_depth: int = 3) -> list[tuple[str, str]]:
    """(kind, path) of every log dir, partition dir or store at or below `path`, as `discovery.find_roots`."""
    kind = classify(filesystem, path)
    if kind is not None:
        return [(kind, path)]
    if max_depth == 0:
        return []
    return [root for d in _dirs(listing(filesystem, path)).values()
            for root in find_roots(filesystem, d.path, max_depth - 1)]


def base_name(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def join(path: str, name: str) -> str:
    return f"{path.rstrip('/')}/{name}"


def read_small(filesystem: Any, path: str, limit: int = SMALL_LIMIT) -> bytes:
    """A whole small file; refuses one larger than `limit`."""
    try:
        with filesystem.open_input_file(path) as f:
            size = f.size()
            if size > limit:
                raise UnreadableInput(f"{path}: {size} bytes, more than the {limit} expected")
            return f.read_at(size, 0) if size else b""
    except OSError as e:
        raise UnreadableInput(f"cannot read {path}: {e}") from None


def tree_bytes(filesystem: Any, path: str) -> int:
    from pyarrow import fs as pafs

    try:
        infos = filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True, recursive=True))
    except OSError:
        return 0
    return sum(i.size or 0 for i in infos if i.type == pafs.FileType.File)


# -- staging (executors) -------------------------------------------------------------------------


def fetch(filesystem: Any, path: str, dest: Path, chunk: int = CHUNK) -> None:
    """Copy one remote file to `dest` in ranged reads of at most `chunk` bytes."""
    with filesystem.open_input_file(path) as f, open(dest, "wb") as out:
        size, pos = f.size(), 0
        while pos < size:
            data = f.read_at(min(chunk, size - pos), pos)
            if not data:
                raise UnreadableInput(f"{path}: ended at {pos} of {size} bytes while copying")
            out.write(data)
            pos += len(data)


def mirror(filesystem: Any, path: str, dest: Path, *, recursive: bool = False,
           only: set[str] | None = None, empty_dirs: set[str] | None = None) -> None:
    """Copy a remote dir's files into `dest` (child dirs too when `recursive`).

    `only` limits which file names are copied; `empty_dirs` names child dirs
    created empty (so a listing of the copy shows them).
    """
    from pyarrow import fs as pafs

    dest.mkdir(parents=True, exist_ok=True)
    for info in listing(filesystem, path):
        name = info.base_name
        if name in ("", ".", "..") or "/" in name:
            continue
        if info.type == pafs.FileType.Directory:
            if recursive:
                mirror(filesystem, info.path, dest / name, recursive=True)
            elif empty_dirs is not None and name in empty_dirs:
                (dest / name).mkdir(exist_ok=True)
        elif only is None or name in only:
            fetch(filesystem, info.path, dest / name)


@contextlib.contextmanager
def scratch() -> Iterator[Path]:
    """A private local dir, removed afterwards whatever happens."""
    path = Path(tempfile.mkdtemp(prefix="replog-unit-", dir=os.environ.get("REPLOG_SCRATCH")))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
