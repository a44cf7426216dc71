"""Stores for tests: the sample builders (format writers only) plus a tree digest."""
from __future__ import annotations

import hashlib
from pathlib import Path

from replog.samples.rocketmq_stores import (  # noqa: F401
    CQ_FILE_SIZE,
    FILE_SIZE,
    INDEX_NUM,
    SLOTS,
    T0,
    Built,
    Written,
    append,
    build,
    finish,
    spec,
)


def tree_digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}
