"""Fixtures shared by the reliability tests."""
from __future__ import annotations

import pytest

from tests.reliability.procs import REPLOG, in_place, run
from tests.reliability.trees import sha256_tree, unclean_pair


@pytest.fixture(scope="session")
def in_place_trees(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], dict[str, str]]:
    """`unclean_pair`'s log dirs untouched, and after one uninterrupted `repair --in-place` (a real process)."""
    if not REPLOG.exists():
        pytest.skip("console script replog not installed")
    root = tmp_path_factory.mktemp("reference")
    unclean_pair(root / "in")
    original = sha256_tree(root / "in")
    done = run(in_place(root / "in", root / "backup"))
    assert done.succeeded, done.stderr
    return original, sha256_tree(root / "in")
