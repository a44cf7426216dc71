"""Names of replicas and brokers, for every system: what a user types and what replog derives.

A replica's name becomes a directory under `--out` (repair, export), so a name
is one plain path component. The default name of a Kafka log dir is the one
rule shared by `replay`, `repair` and `fleet scan`: `broker-<node.id>` from
its meta.properties, else the folder's own name made safe.
"""
from __future__ import annotations

import os
import re

from replog.formats.errors import ReplogError

_NAME = re.compile(r"[A-Za-z0-9._-]{1,100}")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def check_name(name: str) -> str:
    """Replica names become directory names under --out: one plain path component only."""
    if not _NAME.fullmatch(name) or name in (".", ".."):
        raise ReplogError(f"replica name {name!r} must be 1-100 of A-Z a-z 0-9 . _ - (and not . or ..)")
    return name


def parse_named(spec: str) -> tuple[str | None, str]:
    """`NAME=PATH` or `PATH`; a NAME is checked to be safe as a directory name."""
    if "=" in spec and not os.path.exists(spec):
        name, path = spec.split("=", 1)
        return check_name(name), path
    return None, spec


def broker_name(node_id: int | None, folder: str) -> str:
    """`broker-<node.id>` when the log dir's meta.properties names its node, else the folder's name made safe."""
    if node_id is not None:
        return f"broker-{node_id}"
    return _UNSAFE.sub("_", folder).strip(".")[:100] or "broker"
