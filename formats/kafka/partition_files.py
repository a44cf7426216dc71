"""What a partition dir holds, sorted by the broker's naming rules (kafka.md §7.3, §10.2).

One listing for every command: `ls`, `doctor`, replica loading, `recover` and
fleet units all ask this module which files are live segments, which are
indexes or snapshots, and which are left-overs the broker deletes or swaps in
at startup (`LogLoader`). Only names are read here; what a command does with
each group (a finding, a walk, a swap) is its own business.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from replog.formats.fileio import EntryType, entry_type, unreadable
from replog.formats.kafka import names
from replog.formats.kafka.names import SegmentFileName

KNOWN_PARTITION_FILES = frozenset({names.LEADER_EPOCH_CHECKPOINT, names.PARTITION_METADATA, names.QUORUM_STATE})


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
    kind = entry_type(path)
    if kind is not EntryType.REGULAR:
        out.not_files.append((path, kind))
        return
    seg = names.parse_segment_file_name(name)
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


def live_segment_bases(file_names: list[str] | set[str] | dict[str, int]) -> list[int]:
    """Base offsets of the live `.log` segments among bare file names (a remote listing), sorted."""
    bases = []
    for n in file_names:
        seg = names.parse_segment_file_name(n)
        if seg is not None and seg.kind == "log" and not seg.transient:
            bases.append(seg.base_offset)
    return sorted(bases)
