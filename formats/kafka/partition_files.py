"""What a partition dir holds, sorted by the broker's naming rules (docs/reference/kafka.md §7.3, §10.2).

One listing for every command: `ls`, `doctor`, replica loading, `recover` and
fleet units all ask this module which files are live segments, which are
indexes or snapshots, and which are left-overs the broker deletes or swaps in
at startup (`LogLoader`). Only names are read here; what a command does with
each group (a finding, a walk, a swap) is its own business.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path

from replog.formats.fileio import EntryType, entry_stat, unreadable
from replog.formats.kafka import names
from replog.formats.kafka.names import SegmentFileName

KNOWN_PARTITION_FILES = frozenset({names.LEADER_EPOCH_CHECKPOINT, names.PARTITION_METADATA, names.QUORUM_STATE,
                                   names.REMOTE_LOG_SNAPSHOT})


@dataclass
class PartitionFiles:
    """A partition dir's entries by what the broker would do with them; every map sorted by base offset."""

    path: Path
    logs: dict[int, Path] = field(default_factory=dict)                 # live `.log` segments
    indexes: dict[tuple[int, str], Path] = field(default_factory=dict)  # (base, "index"|"timeindex"|"txnindex")
    snapshots: dict[int, Path] = field(default_factory=dict)            # producer `.snapshot` files
    transient: list[tuple[Path, SegmentFileName]] = field(default_factory=list)  # .deleted/.cleaned/.swap
    kraft_snapshots: list[Path] = field(default_factory=list)
    bad_segment_names: list[Path] = field(default_factory=list)  # segment suffix, prefix not a 20-digit offset
    tmp_files: list[Path] = field(default_factory=list)          # interrupted atomic writes (`*.tmp`)
    known_files: list[Path] = field(default_factory=list)        # leader-epoch-checkpoint, partition.metadata, ...
    unknown_files: list[Path] = field(default_factory=list)
    # entries that are not regular files (directories, FIFOs, devices, sockets, symlink loops, dangling
    # symlinks, entries that cannot be examined), with what each is: never opened, never taken for a segment
    not_files: list[tuple[Path, EntryType]] = field(default_factory=list)
    seen: dict[Path, tuple[int, int]] = field(default_factory=dict)  # segment files: (size, mtime) when listed

    def live(self, path: Path) -> bool:
        """`is_live_segment` of one of its segment files, against its size and mtime when listed."""
        return is_live_segment(path, self.seen.get(path))


def list_partition_files(pdir: str | os.PathLike[str]) -> PartitionFiles:
    """Sort the entries of `pdir` by name (raises `UnreadableInput` when it cannot be listed)."""
    p = Path(pdir)
    out = PartitionFiles(p)
    try:
        entries = sorted(os.listdir(p))
    except OSError as e:
        raise unreadable(e, p, "list") from None
    for name in entries:
        _sort_entry(out, p / name, name)
    return out


def _sort_entry(out: PartitionFiles, path: Path, name: str) -> None:
    kind, st = entry_stat(path)
    if kind is not EntryType.REGULAR or st is None:
        out.not_files.append((path, kind))
        return
    seg = names.parse_segment_file_name(name)
    if seg is not None:
        out.seen[path] = (st.st_size, st.st_mtime_ns)
    if seg is not None and seg.transient:
        out.transient.append((path, seg))
    elif seg is not None and seg.kind == "log":
        out.logs[seg.base_offset] = path
    elif seg is not None and seg.kind == "snapshot":
        out.snapshots[seg.base_offset] = path
    elif seg is not None:
        out.indexes[(seg.base_offset, seg.kind)] = path
    elif names.parse_kraft_snapshot_name(name) is not None:
        out.kraft_snapshots.append(path)
    elif names.is_segment_like(name):
        out.bad_segment_names.append(path)
    elif name.endswith(names.CHECKPOINT_TMP_SUFFIX):
        out.tmp_files.append(path)
    elif name in KNOWN_PARTITION_FILES:
        out.known_files.append(path)
    else:
        out.unknown_files.append(path)


def is_live_segment(path: str | os.PathLike[str], seen: tuple[int, int] | None = None) -> bool:
    """Whether a running broker may be writing the segment file `path` in place, so that it must not be
    mapped (`fileio.mapped(live=True)`): a file of the segment with the highest base offset among the
    `.log` files of its directory, the active segment (the last of `LocalLog.segments`), which the
    broker appends to, truncates (`LocalLog.truncateTo` truncates the active segment in place, after
    renaming the ones above the target away) and trims at roll (its indexes); or one whose (size,
    mtime) is no longer what it was when listed (`seen`). Other segments change only by renames and
    deletions, which an open descriptor survives; `.cleaned`/`.swap`/`.deleted` files are never
    truncated either. (storage/.../log/LocalLog.java, LogSegment.java)"""
    p = Path(path)
    seg = names.parse_segment_file_name(p.name)
    if seg is None or seg.transient:
        return False
    if seen is not None:
        try:
            st = os.stat(p)
        except OSError:
            return True  # gone or unreadable: its reader says so; never map what is moving
        if (st.st_size, st.st_mtime_ns) != seen:
            return True
    try:
        listed = os.stat(p.parent).st_mtime_ns  # a rename or deletion in the directory changes it
    except OSError:
        return True
    return _last_log_base(str(p.parent), listed) in (None, seg.base_offset)


@functools.lru_cache(maxsize=64)
def _last_log_base(directory: str, listed: int) -> int | None:
    """The highest base offset of the live `.log` files in `directory` as of its mtime `listed`."""
    try:
        bases = live_segment_bases(os.listdir(directory))
    except OSError:
        return None
    return bases[-1] if bases else None


def live_segment_bases(file_names: list[str] | set[str] | dict[str, int]) -> list[int]:
    """Base offsets of the live `.log` segments among bare file names (a remote listing), sorted."""
    bases = []
    for n in file_names:
        seg = names.parse_segment_file_name(n)
        if seg is not None and seg.kind == "log" and not seg.transient:
            bases.append(seg.base_offset)
    return sorted(bases)
