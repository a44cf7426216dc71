"""Units of a fleet scan: what one executor task scans, planned on the driver.

A unit is a partition dir (or a log dir's root files, or a RocketMQ store) of
one broker, small enough to ship as JSON. A partition dir larger than
`split_bytes` becomes one light `partition` unit and `segments` units, groups
of consecutive segments (`spark.tasks` says what each does). The root
checkpoints are read once per log dir here and each unit carries its
partition's entries.
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from replog.formats.discovery import is_partition_dir
from replog.formats.kafka import names
from replog.formats.kafka.partition_files import live_segment_bases
from replog.recovery.kafka.logdir import (
    BrokerCheckpoints,
    read_broker_checkpoints,
)
from replog.spark import remote

SPLIT_BYTES = 256 << 20     # a partition dir above this becomes several units


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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Unit:
        return cls(**d)


def log_dir_units(broker: str, log_dir: str, split_bytes: int | None = SPLIT_BYTES) -> list[Unit]:
    """The units of one log dir: one per partition dir (as `ls`/`doctor` list them, split when
    larger than `split_bytes`; None: never), one for the root."""
    root = Path(log_dir)
    cps = read_broker_checkpoints(root)
    units = [Unit("log_dir", broker, str(root), str(root))]
    for name in sorted(os.listdir(root)):
        p = root / name
        if is_partition_dir(p):
            units += partition_units(Unit("partition", broker, str(root), str(p), *_offsets_of(cps, name)),
                                     _file_sizes(p), split_bytes)
    return units


def remote_log_dir_units(broker: str, filesystem: Any, log_dir: str,
                         split_bytes: int | None = SPLIT_BYTES) -> list[Unit]:
    """`log_dir_units` of a log dir behind a pyarrow filesystem: listed remotely, root checkpoints
    streamed to a scratch dir and read with the local reader."""
    packed = remote.pack(filesystem)
    infos = remote.listing(filesystem, log_dir)
    with remote.scratch() as tmp:
        remote.mirror(filesystem, log_dir, tmp, only=set(names.ROOT_OFFSET_CHECKPOINTS))
        cps = read_broker_checkpoints(tmp)
    units = [Unit("log_dir", broker, log_dir, log_dir, fs=packed)]
    for info in infos:
        listing = remote.listing(filesystem, info.path)
        if info.type.name != "Directory" or not remote.is_partition_dir(filesystem, info.path, listing):
            continue
        sizes = {i.base_name: i.size or 0 for i in listing if i.type.name == "File"}
        units += partition_units(Unit("partition", broker, log_dir, info.path,
                                      *_offsets_of(cps, info.base_name), fs=packed), sizes, split_bytes)
    return units


def _offsets_of(cps: BrokerCheckpoints, name: str) -> tuple[dict[str, int | None], dict[str, int | None]]:
    parsed = names.parse_partition_dir(name)
    tp = (parsed.topic, parsed.partition) if parsed else ("", -1)
    offsets = {attr: getattr(cps, attr).get(tp) for attr in names.ROOT_OFFSET_CHECKPOINTS.values()
               if getattr(cps, attr) is not None}
    return offsets, {attr: cps.line_positions.get(attr, {}).get(tp) for attr in offsets}


def partition_units(unit: Unit, sizes: dict[str, int], split_bytes: int | None) -> list[Unit]:
    """One unit, or a light unit plus groups of consecutive segments of about `split_bytes` each."""
    total = sum(sizes.values())
    unit = replace(unit, size=total)
    if split_bytes is None or total <= split_bytes:
        return [unit]
    logs = [(base, sizes[names.segment_file_name(base, "log")]) for base in live_segment_bases(sizes)]
    groups: list[list[int]] = [[]]
    acc = 0
    for base, size in logs:
        if groups[-1] and acc + size > split_bytes:
            groups.append([])
            acc = 0
        groups[-1].append(base)
        acc += size
    light = replace(unit, split=True)   # still walks every segment's framing: weigh it fully
    by_base = dict(logs)
    return [light] + [replace(unit, kind="segments", segments=g, size=sum(by_base[b] for b in g))
                      for g in groups if g]


def _file_sizes(p: Path) -> dict[str, int]:
    try:
        return {e.name: e.stat().st_size for e in os.scandir(p) if e.is_file()}
    except OSError:
        return {}


def store_unit(broker: str, path: str, filesystem: Any = None) -> Unit:
    """A RocketMQ store: one unit (its checks need the whole commitlog in order)."""
    if filesystem is not None:
        return Unit("store", broker, path, path, size=remote.tree_bytes(filesystem, path),
                    fs=remote.pack(filesystem))
    size = sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())
    return Unit("store", broker, path, path, size=size)


def checkpoints_for(unit: Unit) -> BrokerCheckpoints:
    """The broker checkpoints as `summarize_partition` would have read them, for this partition."""
    parsed = names.parse_partition_dir(Path(unit.path).name)
    tp = (parsed.topic, parsed.partition) if parsed else ("", -1)
    offsets: dict[str, Any] = {attr: ({} if v is None else {tp: v}) for attr, v in unit.offsets.items()}
    cps = BrokerCheckpoints(**offsets)
    cps.line_positions = {attr: {tp: v} for attr, v in unit.positions.items() if v is not None}
    return cps

