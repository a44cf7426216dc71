"""What a fleet scan reads: log dirs and RocketMQ stores found in paths, globs, URIs and an inventory."""

import glob
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from replog.formats.discovery import DirKind, find_roots
from replog.formats.errors import FormatError, UnreadableInput
from replog.formats.fileio import read_small
from replog.formats.kafka import names
from replog.formats.kafka.meta_properties import parse_meta_properties
from replog.formats.shape import Field, Shape
from replog.recovery.kafka.logdir import node_id
from replog.recovery.naming import broker_name
from replog.spark import remote
from replog.spark.units import Unit, log_dir_units, remote_log_dir_units, store_unit


@dataclass(frozen=True)
class LogDir:
    """A Kafka log dir or a RocketMQ store (`kind` "rocketmq"); `fs` a pyarrow filesystem when remote."""

    broker: str
    path: str
    kind: str = "kafka"
    fs: Any = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return LOG_DIR.dump(self)

    def units(self, split_bytes: int | None) -> list[Unit]:
        if self.kind == "rocketmq":
            return [store_unit(self.broker, self.path, self.fs)]
        if self.fs is not None:
            return remote_log_dir_units(self.broker, self.fs, self.path, split_bytes)
        return log_dir_units(self.broker, self.path, split_bytes)


LOG_DIR = Shape("broker", "path", "kind", Field("remote", lambda d: d.fs is not None))

# -- discovery ------------------------------------------------------------------------


def read_inventory(path: str | os.PathLike[str]) -> list[tuple[str, str]]:
    """Lines `broker=path` (blank lines and `#` comments ignored)."""
    out = []
    for n, line in enumerate(read_small(path).decode("utf-8", "replace").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        broker, sep, target = line.partition("=")
        if not sep or not broker.strip() or not target.strip():
            raise UnreadableInput(f"{path}:{n}: expected `broker=path`, got {line[:80]!r}")
        out.append((broker.strip(), target.strip()))
    return out


def discover(paths: Sequence[str | os.PathLike[str]], inventory: str | os.PathLike[str] | None = None,
             filesystem: Any = None) -> tuple[list[LogDir], list[str]]:
    """Log dirs and stores to scan from paths (log dir, store, folder of them, glob, URI) and an inventory.

    A URI (`file://`, `hdfs://`, `s3://`) is listed through its pyarrow filesystem;
    `filesystem` reads every path through that filesystem instead (tests, custom stores).
    """
    found: dict[tuple[str, str], LogDir] = {}
    skipped: list[str] = []
    named = [(None, str(p)) for p in paths] + (read_inventory(inventory) if inventory else [])
    for broker, raw in named:
        if filesystem is not None or remote.is_uri(raw):
            fs, base = (filesystem, raw) if filesystem is not None else remote.from_uri(raw)
            for kind, path in _remote_roots(fs, base, skipped):
                found.setdefault(("remote", f"{id(fs)}:{path}"),
                                 LogDir(broker or _remote_broker_name(fs, path, kind), path, kind, fs))
            continue
        matches = sorted(glob.glob(raw)) if glob.has_magic(raw) else [raw]
        if not matches:
            raise UnreadableInput(f"{raw}: no such path")
        for m in matches:
            for kind, d in _roots_at(Path(m), skipped):
                found.setdefault(("local", str(d.resolve())),
                                 LogDir(broker or (broker_name(node_id(d), d.name) if kind == "kafka" else d.name),
                                        str(d), kind))
    if not found:
        raise UnreadableInput("no Kafka log dir or RocketMQ store found under " + ", ".join(r for _, r in named))
    return sorted(found.values(), key=lambda d: (d.broker, d.path)), skipped


_KINDS = {DirKind.KAFKA_LOG_DIR: "kafka", DirKind.ROCKETMQ_STORE: "rocketmq",
          DirKind.KAFKA_PARTITION_DIR: "partition"}


def _roots_at(p: Path, skipped: list[str]) -> list[tuple[str, Path]]:
    if not p.is_dir():
        raise UnreadableInput(f"{p}: not a directory")
    return _keep_roots([(_KINDS[k], r) for k, r in find_roots(p) if k in _KINDS], str(p), skipped)


def _remote_roots(fs: Any, base: str, skipped: list[str]) -> list[tuple[str, str]]:
    if not remote.is_dir(fs, base):
        raise UnreadableInput(f"{base}: not a directory")
    return _keep_roots(remote.find_roots(fs, base), base, skipped)


def _keep_roots(roots: list[tuple[str, Any]], given: str, skipped: list[str]) -> list[tuple[str, Any]]:
    """Log dirs and stores; a partition dir given alone is refused, one found loose is skipped."""
    out = []
    for kind, root in roots:
        if kind != "partition":
            out.append((kind, root))
        elif str(root).rstrip("/") == given.rstrip("/"):
            parent = root.parent if isinstance(root, Path) else root.rstrip("/").rsplit("/", 1)[0]
            raise UnreadableInput(f"{root}: a partition dir; give its broker log dir {parent}")
        else:
            skipped.append(f"{root}: a partition dir outside a broker log dir")
    if not out and not skipped:
        raise UnreadableInput(f"{given}: neither a Kafka log dir, a RocketMQ store, nor a folder of them")
    return out


def _remote_broker_name(fs: Any, path: str, kind: str) -> str:
    if kind != "kafka":
        return remote.base_name(path)
    try:
        node = parse_meta_properties(remote.read_small(fs, remote.join(path, names.META_PROPERTIES), 1 << 20)).node_id
    except (FormatError, UnreadableInput):
        node = None
    return broker_name(node, remote.base_name(path))


