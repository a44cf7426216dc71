"""What a fleet scan reads: log dirs and RocketMQ stores found in paths, globs, URIs and an inventory."""
from __future__ import annotations

import glob
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

import pyarrow as pa

from replog.formats.discovery import DirKind, find_roots
from replog.formats.errors import UnreadableInput
from replog.formats.fileio import read_small
from replog.formats.shape import Field, Shape
from replog.spark import cache, remote, schemas
from replog.spark.identity import read_identity
from replog.spark.schemas import LogDirRow
from replog.spark.units import Unit, log_dir_units, remote_log_dir_units, store_unit


@dataclass(frozen=True)
class LogDir:
    """A Kafka log dir or a RocketMQ store (`kind` "rocketmq"); `fs` a pyarrow filesystem when remote.

    Identified by (cluster, node, path): `cluster` is the key replica sets are formed within (the
    cluster id its files give, or the group standing in for it: `spark.identity`)."""

    broker: str
    path: str
    kind: str = "kafka"
    fs: Any = field(default=None, compare=False, repr=False)
    cluster: str = ""
    cluster_id: str | None = None
    node_id: int | None = None
    role: str | None = None
    flags: tuple[str, ...] = ()

    def to_dict(self) -> LogDirRow:
        """Its row of the `log_dirs` table (`LOG_DIR` writes exactly the row's columns)."""
        return cast(LogDirRow, LOG_DIR.dump(self))

    def units(self, split_bytes: int | None, index: cache.Index | None = None) -> list[Unit]:
        """Its units; `index` (a previous scan's cache) lets a local log dir's units reuse what is unchanged."""
        if self.kind == "rocketmq":
            return [store_unit(self.broker, self.path, self.fs, cluster=self.cluster)]
        if self.fs is not None:
            return remote_log_dir_units(self.broker, self.fs, self.path, split_bytes, cluster=self.cluster)
        return log_dir_units(self.broker, self.path, split_bytes, cluster=self.cluster, index=index)


    def tail_units(self) -> list[Unit]:
        """A tail scan's units: the root's, and one `tail` unit per partition dir (never split)."""
        return [u if u.kind == "log_dir" else replace(u, kind="tail")
                for u in log_dir_units(self.broker, self.path, None, cluster=self.cluster)]


LOG_DIR = Shape("cluster", "cluster_id", "broker", "node_id", "role", "kind", "path",
                Field("remote", lambda d: d.fs is not None), Field("flags", lambda d: list(d.flags)))


def log_dirs_table(log_dirs: Sequence[LogDir]) -> pa.Table:
    """The `log_dirs` table: who each scanned dir is and where it is."""
    return pa.Table.from_pylist([d.to_dict() for d in log_dirs], schema=schemas.LOG_DIRS)


# -- discovery ------------------------------------------------------------------------


def read_inventory(path: str | os.PathLike[str]) -> list[tuple[str, str, int]]:
    """Lines `broker=path` with their line numbers (blank lines and `#` comments ignored)."""
    out = []
    for n, line in enumerate(read_small(path).decode("utf-8", "replace").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        broker, sep, target = line.partition("=")
        if not sep or not broker.strip() or not target.strip():
            raise UnreadableInput(f"{path}:{n}: expected `broker=path`, got {line[:80]!r}")
        out.append((broker.strip(), target.strip(), n))
    return out


def discover(paths: Sequence[str | os.PathLike[str]], inventory: str | os.PathLike[str] | None = None,
             filesystem: Any = None) -> tuple[list[LogDir], list[str]]:
    """Log dirs and stores to scan from paths (log dir, store, folder of them, glob, URI) and an inventory.

    A URI (`file://`, `hdfs://`, `s3://`) is listed through its pyarrow filesystem;
    `filesystem` reads every path through that filesystem instead (tests, custom stores).
    A dir without a cluster id is grouped by the inventory line that named it, else by its folder.
    """
    found: dict[tuple[str, str], LogDir] = {}
    skipped: list[str] = []
    named: list[tuple[str | None, str, str | None]] = [(None, str(p), None) for p in paths]
    if inventory:
        named += [(b, target, f"inventory {inventory}:{n}") for b, target, n in read_inventory(inventory)]
    for broker, raw, line in named:
        if filesystem is not None or remote.is_uri(raw):
            fs, base = (filesystem, raw) if filesystem is not None else remote.from_uri(raw)
            for kind, path in _remote_roots(fs, base, skipped):
                parent = path.rstrip("/").rsplit("/", 1)[0] if "/" in path.rstrip("/") else ""
                found.setdefault(("remote", f"{id(fs)}:{path}"),
                                 _log_dir(broker, path, kind, remote.base_name(path), line or f"folder {parent}", fs))
            continue
        matches = sorted(glob.glob(raw)) if glob.has_magic(raw) else [raw]
        if not matches:
            raise UnreadableInput(f"{raw}: no such path")
        for m in matches:
            for kind, d in _roots_at(Path(m), skipped):
                found.setdefault(("local", str(d.resolve())),
                                 _log_dir(broker, str(d), kind, d.name, line or f"folder {d.resolve().parent}"))
    if not found:
        raise UnreadableInput("no Kafka log dir or RocketMQ store found under " + ", ".join(r for _, r, _ in named))
    return sorted(found.values(), key=lambda d: (d.cluster, d.broker, d.path)), skipped


def _log_dir(broker: str | None, path: str, kind: str, folder: str, group: str, fs: Any = None) -> LogDir:
    """A found dir with its identity read (`spark.identity`); `group` stands in for a missing cluster id."""
    ident = read_identity(kind, path, fs)
    return LogDir(broker or ident.default_broker(kind, folder), path, kind, fs, ident.cluster(group),
                  ident.cluster_id, ident.node_id, ident.role, ident.flags)


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
