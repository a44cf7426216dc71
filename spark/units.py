"""Units of a fleet scan: what one executor task scans, planned on the driver.

A unit is a partition dir (or a log dir's root files, or a RocketMQ store) of
one broker, small enough to ship as JSON. A partition dir larger than
`split_bytes` becomes one light `partition` unit and `segments` units, groups
of consecutive segments (`spark.tasks` says what each does). The root
checkpoints are read once per log dir here and each unit carries its
partition's entries. With a previous scan's cache (`spark.cache`), a partition
unit also carries the recorded walks of its sealed segments whose file metadata
still match; it is weighed, and split, by the bytes left to read.
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, TypedDict, cast

from replog.formats.discovery import is_partition_dir
from replog.formats.kafka import names
from replog.formats.kafka.partition_files import live_segment_bases
from replog.recovery.kafka.logdir import (
    BrokerCheckpoints,
    read_broker_checkpoints,
)
from replog.spark import cache, remote

SPLIT_BYTES = 256 << 20     # a partition dir above this becomes several units


class UnitDoc(TypedDict):
    """A `Unit` as the JSON shipped to the executors (`Unit.to_dict`), made a `Unit` again there (`from_dict`:
    mypy holds these members to the dataclass's fields)."""
    kind: str
    broker: str
    log_dir: str
    path: str
    offsets: dict[str, int | None]
    positions: dict[str, int | None]
    size: int
    split: bool
    segments: list[int] | None
    fs: str | None
    cluster: str
    covered: list[int] | None
    reuse: list[cache.IndexEntry] | None


@dataclass(frozen=True)
class Unit:
    """One task's input, small enough to ship as JSON.

    `offsets` holds this partition's entries of the root checkpoints read once
    on the driver: a key per checkpoint file present, its value None when the
    file does not list the partition.
    """

    kind: str                  # "partition" | "segments" | "log_dir" | "store"
    broker: str
    log_dir: str
    path: str
    offsets: dict[str, int | None] = field(default_factory=dict)
    positions: dict[str, int | None] = field(default_factory=dict)  # of those entries in their files
    size: int = 0              # bytes on disk, to balance tasks
    split: bool = False        # a light partition unit: its segments units do the heavy work
    segments: list[int] | None = None   # a segments unit's base offsets
    fs: str | None = None      # packed pyarrow filesystem holding `path` (None: a local path)
    cluster: str = ""          # replica sets form within one cluster (`spark.identity`)
    covered: list[int] | None = None     # a light unit's segments whose records its segments units decode
    reuse: list[cache.IndexEntry] | None = None   # recorded walks of sealed segments that look unchanged

    def to_dict(self) -> UnitDoc:
        return cast(UnitDoc, asdict(self))

    @classmethod
    def from_dict(cls, d: UnitDoc) -> Unit:
        return cls(**d)


def log_dir_units(broker: str, log_dir: str, split_bytes: int | None = SPLIT_BYTES, *, cluster: str = "",
                  index: cache.Index | None = None) -> list[Unit]:
    """The units of one log dir: one per partition dir (as `ls`/`doctor` list them, split when
    larger than `split_bytes`; None: never), one for the root. `index`: a previous scan's cache."""
    root = Path(log_dir)
    cps = read_broker_checkpoints(root)
    units = [Unit("log_dir", broker, str(root), str(root), cluster=cluster)]
    for name in sorted(os.listdir(root)):
        p = root / name
        if is_partition_dir(p):
            stats = file_stats(p)
            reuse = cache.candidates(index, str(p), sealed_stats(stats)) if index else []
            units += partition_units(Unit("partition", broker, str(root), str(p), *_offsets_of(cps, name),
                                          cluster=cluster),
                                     {n: st[0] for n, st in stats.items()}, split_bytes, reuse)
    return units


def remote_log_dir_units(broker: str, filesystem: Any, log_dir: str,
                         split_bytes: int | None = SPLIT_BYTES, *, cluster: str = "") -> list[Unit]:
    """`log_dir_units` of a log dir behind a pyarrow filesystem: listed remotely, root checkpoints
    streamed to a scratch dir and read with the local reader."""
    packed = remote.pack(filesystem)
    infos = remote.listing(filesystem, log_dir)
    with remote.scratch() as tmp:
        remote.mirror(filesystem, log_dir, tmp, only=set(names.ROOT_OFFSET_CHECKPOINTS))
        cps = read_broker_checkpoints(tmp)
    units = [Unit("log_dir", broker, log_dir, log_dir, fs=packed, cluster=cluster)]
    for info in infos:
        listing = remote.listing(filesystem, info.path)
        if info.type.name != "Directory" or not remote.is_partition_dir(filesystem, info.path, listing):
            continue
        sizes = {i.base_name: i.size or 0 for i in listing if i.type.name == "File"}
        units += partition_units(Unit("partition", broker, log_dir, info.path,
                                      *_offsets_of(cps, info.base_name), fs=packed, cluster=cluster),
                                 sizes, split_bytes)
    return units


def _offsets_of(cps: BrokerCheckpoints, name: str) -> tuple[dict[str, int | None], dict[str, int | None]]:
    parsed = names.parse_partition_dir(name)
    tp = (parsed.topic, parsed.partition) if parsed else ("", -1)
    offsets = {attr: getattr(cps, attr).get(tp) for attr in names.ROOT_OFFSET_CHECKPOINTS.values()
               if getattr(cps, attr) is not None}
    return offsets, {attr: cps.line_positions.get(attr, {}).get(tp) for attr in offsets}


def partition_units(unit: Unit, sizes: dict[str, int], split_bytes: int | None,
                    reuse: list[cache.IndexEntry] | None = None) -> list[Unit]:
    """One unit, or a light unit plus groups of consecutive segments of about `split_bytes` each, counting
    only the segments to read (`reuse`: recorded walks of the others, which the light unit replays)."""
    reuse = reuse or []
    reused = {e["base_offset"] for e in reuse}
    logs = [(base, sizes[names.segment_file_name(base, "log")]) for base in live_segment_bases(sizes)]
    to_read = sum(sizes.values()) - sum(size for base, size in logs if base in reused)
    unit = replace(unit, size=to_read, reuse=reuse or None)
    if split_bytes is None or to_read <= split_bytes:
        return [unit]
    groups: list[list[int]] = [[]]
    acc = 0
    for base, size in logs:
        if base in reused:
            continue
        if groups[-1] and acc + size > split_bytes:
            groups.append([])
            acc = 0
        groups[-1].append(base)
        acc += size
    groups = [g for g in groups if g]
    light = replace(unit, split=True, covered=[b for g in groups for b in g])  # walks all it reads: weigh fully
    by_base = dict(logs)
    return [light] + [replace(unit, kind="segments", segments=g, size=sum(by_base[b] for b in g), reuse=None)
                      for g in groups]


def file_stats(p: Path) -> dict[str, cache.Stat]:
    """Size, mtime and inode of every file in a partition dir (what a cached walk is matched on)."""
    try:
        return {e.name: cache.file_stat(e.stat()) for e in os.scandir(p) if e.is_file()}
    except OSError:
        return {}


def sealed_stats(stats: dict[str, cache.Stat]) -> dict[int, cache.Stat]:
    """The sealed segments' file metadata by base offset: every live `.log` but the last (the active one)."""
    bases = live_segment_bases(list(stats))
    return {base: stats[names.segment_file_name(base, "log")] for base in bases[:-1]}


def store_unit(broker: str, path: str, filesystem: Any = None, *, cluster: str = "") -> Unit:
    """A RocketMQ store: one unit (its checks need the whole commitlog in order)."""
    if filesystem is not None:
        return Unit("store", broker, path, path, size=remote.tree_bytes(filesystem, path),
                    fs=remote.pack(filesystem), cluster=cluster)
    size = sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())
    return Unit("store", broker, path, path, size=size, cluster=cluster)


def checkpoints_for(unit: Unit) -> BrokerCheckpoints:
    """The broker checkpoints as `summarize_partition` would have read them, for this partition."""
    parsed = names.parse_partition_dir(Path(unit.path).name)
    tp = (parsed.topic, parsed.partition) if parsed else ("", -1)
    cps = BrokerCheckpoints()
    for attr, v in unit.offsets.items():
        setattr(cps, attr, {} if v is None else {tp: v})
    cps.line_positions = {attr: {tp: v} for attr, v in unit.positions.items() if v is not None}
    return cps

