"""Snapshots of directory trees for the reliability tests (helpers, not tests)."""
from __future__ import annotations

import hashlib
from pathlib import Path


def sha256_tree(root: Path, exclude: Path | None = None) -> dict[str, str]:
    """relative path -> SHA-256 of every file under `root` (dirs too, as "dir"), minus `exclude`'s subtree."""
    out: dict[str, str] = {}
    for p in sorted(root.rglob("*")):
        if exclude is not None and (p == exclude or exclude in p.parents):
            continue
        out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
    return out


def changes(before: dict[str, str], after: dict[str, str]) -> dict[str, tuple[str | None, str | None]]:
    """Paths that appeared, vanished or changed between two snapshots."""
    keys = before.keys() | after.keys()
    return {k: (before.get(k), after.get(k)) for k in sorted(keys) if before.get(k) != after.get(k)}


def unclean_pair(root: Path) -> tuple[Path, Path]:
    """Two replicas of t-0 under root/A and root/B that diverge after offset 6 (B has the newer epoch)."""
    from tests.recovery.kafka.replicas import replica_dir
    a = replica_dir(root, "A", [(o, 0) for o in range(6)] + [(o, 1) for o in range(6, 9)], hw=6, segment_bytes=400)
    b = replica_dir(root, "B", [(o, 0) for o in range(6)] + [(6, 2), (7, 2)], hw=6, epochs=[(0, 0), (2, 6)],
                    segment_bytes=400)
    return a, b
