"""Names of replicas and brokers, for every system: what a user types and what replog derives.

A replica's name becomes a directory under `--out` (repair, export), so a name
is one plain path component. The default name of a Kafka log dir is the one
rule shared by `replay`, `repair` and `fleet scan`: `broker-<node.id>` from
its meta.properties, else the folder's own name made safe. `replica_names`
checks the names of one replay: unique, never renamed behind the user's back.
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path

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


def replica_names(named: Sequence[tuple[str | None, str]], default: Callable[[Path], str]) -> list[tuple[str, str]]:
    """(NAME, PATH) of every replica given as `[NAME=]PATH`, each NAME unique, or a `ReplogError`.

    The same replica twice, or one NAME for two replicas, is a mistake on the
    command line, never something to rename silently: a replay of a replica
    against itself proves nothing, and a renamed replica writes its repair
    under a directory the user did not choose. Derived names that collide
    (two log dirs with one broker id, two stores in folders of one name) are
    told apart by the nearest folder where their paths differ.
    """
    _refuse_same_path(named)
    explicit = [name for name, _ in named if name is not None]
    twice = sorted({n for n in explicit if explicit.count(n) > 1})
    if twice:
        raise ReplogError(f"replica NAME {', '.join(twice)} given to more than one replica: each NAME must be unique")
    names = [name if name is not None else default(Path(path)) for name, path in named]
    for name in set(names):
        derived = [i for i, (given, _) in enumerate(named) if given is None and names[i] == name]
        if len(derived) > 1 or (derived and name in explicit):
            paths = [Path(named[i][1]) for i in derived]
            for i, folder in zip(derived, _distinct_folders(paths, [Path(p) for _, p in named]), strict=True):
                names[i] = check_name(f"{name}.{folder}"[:100]) if folder else name
    clash = sorted({n for n in names if names.count(n) > 1})
    if clash:
        raise ReplogError(f"replicas {', '.join(clash)} cannot be told apart by their paths: give each a NAME=PATH")
    return [(name, path) for name, (_, path) in zip(names, named, strict=True)]


def _refuse_same_path(named: Sequence[tuple[str | None, str]]) -> None:
    """One directory given twice (by any spelling: relative, symlinked) is a usage error."""
    seen: dict[Path, str] = {}
    for _, path in named:
        real = Path(path).resolve()
        if real in seen:
            raise ReplogError(f"{path} and {seen[real]} are the same replica ({real}): give each replica once")
        seen[real] = path


def _distinct_folders(paths: Sequence[Path], among: Sequence[Path]) -> list[str]:
    """For paths that must be told apart: the nearest folder name, going up, that differs for each of
    them and from the same level of every other replica's path (`among`).

    `/evidence/mon/kafka-logs/orders-2` and `/evidence/tue/kafka-logs/orders-2`
    give `mon` and `tue`: the partition folder and `kafka-logs` are the same
    for both, so they tell nothing apart.
    """
    def level(p: Path, depth: int) -> str:
        parts = p.resolve().parts[::-1]
        return _UNSAFE.sub("_", parts[depth]).strip(".") if depth < len(parts) - 1 else ""

    others = [p for p in among if p not in paths]
    for depth in range(max(len(p.resolve().parts) for p in paths) - 1):
        mine = [level(p, depth) for p in paths]
        theirs = {level(p, depth) for p in others}
        if all(mine) and len(set(mine)) == len(mine) and not theirs & set(mine):
            return mine
    return [""] * len(paths)
