"""`repair --in-place` killed before its first swap, in a real process: the next run resumes by itself.

`run(..., kill_after=N)` (`killed_replog`, a `fileio.write_hook`) kills the process like `kill -9` in its (N+1)th
atomic write: 0 is while the journal is first written (nothing but its temporary file exists), 1 once the
backup is copied (the journal still says `backing-up`), 2 while the first staging dir beside a live
partition is being written. Before, the next run refused the backup dir ("not empty"), or restored the
replicas and asked for a new backup dir; now the same command, run again, finishes the repair.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from replog.formats.kafka import names
from tests.reliability.procs import REPLOG, in_place, run
from tests.reliability.trees import sha256_tree, unclean_pair

pytestmark = pytest.mark.skipif(not REPLOG.exists(), reason="console script replog not installed")


def tree(root: Path) -> dict[str, str]:
    """The log dirs' files, but the `.lock` a killed run leaves behind (as a killed broker does: harmless)."""
    return {k: v for k, v in sha256_tree(root).items() if Path(k).name != names.LOCK_FILE}


def test_a_repair_killed_before_its_first_swap_is_finished_by_the_next_run(
        tmp_path: Path, in_place_trees: tuple[dict[str, str], dict[str, str]]) -> None:
    """Killed at 0, run again and killed at 1, again and killed at 2: each run starts over from what the one
    before left; the last, uninterrupted, repairs."""
    original, repaired = in_place_trees     # no `.lock`: an uninterrupted run removes the one it created
    root = tmp_path / "victim"
    unclean_pair(root / "in")
    for kill_after in (0, 1, 2):
        killed = run(in_place(root / "in", root / "backup"), kill_after=kill_after)
        assert killed.code == 137, killed.stderr
        assert {k: v for k, v in tree(root / "in").items() if ".replog-staging" not in k} == original, \
            f"a replica changed before the first swap (killed at {kill_after})"
    again = run(in_place(root / "in", root / "backup"))
    assert again.succeeded, again.stderr
    assert tree(root / "in") == repaired
