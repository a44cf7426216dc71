"""Two replog processes at once on the same replicas or the same output: one works, the other is refused.

Each round builds a fresh pair of small replicas and starts two real processes at the same moment, a few
rounds each (before the locks, two in-place repairs sharing a backup dir interleaved their swaps and
restores, leaving partition dirs with some of their files; two recovers into one DIR both passed the
"empty" check). After every round the replicas are, byte for byte, either untouched or exactly what one
uninterrupted run makes of them: repaired whenever a run said it succeeded.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from replog.recovery.outputs import COMPLETE_MARKER
from tests.reliability.procs import REPLOG, Run, in_place, together
from tests.reliability.trees import sha256_tree, unclean_pair

ROUNDS = int(os.environ.get("REPLOG_TEST_RACE_ROUNDS", "2"))   # one round caught the old race 7 times in 9
REFUSED = ("is being written by another replog process", "is locked by another process", "is not empty")
Trees = tuple[dict[str, str], dict[str, str]]
pytestmark = pytest.mark.skipif(not REPLOG.exists(), reason="console script replog not installed")


def assert_refused_cleanly(r: Run) -> None:
    assert r.code == 2 and "internal error" not in r.stderr, r.stderr
    assert any(reason in r.stderr for reason in REFUSED), r.stderr


def check_round(runs: list[Run], root: Path, trees: Trees, at_most_one: bool) -> None:
    original, repaired = trees
    after = sha256_tree(root)
    assert after in (original, repaired), "replicas left neither untouched nor repaired"
    for r in runs:
        if not r.succeeded:
            assert_refused_cleanly(r)
    winners = [r for r in runs if r.succeeded]
    if winners:
        assert after == repaired, "a run reported success but the replicas are not repaired"
    assert winners, [r.stderr for r in runs]
    if at_most_one:
        assert len(winners) == 1, "two runs both repaired the replicas with one backup dir"


def test_two_in_place_repairs_sharing_a_backup_dir(tmp_path: Path, in_place_trees: Trees) -> None:
    for i in range(ROUNDS):
        root = tmp_path / f"round{i}"
        unclean_pair(root / "in")
        args = in_place(root / "in", root / "backup")
        check_round(together(args, args), root / "in", in_place_trees, at_most_one=True)


def test_two_in_place_repairs_with_their_own_backup_dirs(tmp_path: Path, in_place_trees: Trees) -> None:
    for i in range(ROUNDS):
        root = tmp_path / f"round{i}"
        unclean_pair(root / "in")
        runs = together(in_place(root / "in", root / "backup1"), in_place(root / "in", root / "backup2"))
        check_round(runs, root / "in", in_place_trees, at_most_one=False)


def test_two_recovers_into_one_output(tmp_path: Path) -> None:
    """One writes DIR and verifies it; the other is refused (still writing, or DIR no longer empty)."""
    for i in range(ROUNDS):
        a, _ = unclean_pair(tmp_path / f"round{i}" / "in")
        out = tmp_path / f"round{i}" / "out"
        args = ["recover", str(a), "--out", str(out), "--format", "json"]
        runs = together(args, args)
        winners = [r for r in runs if r.succeeded]
        assert len(winners) == 1, [r.stderr for r in runs]
        assert_refused_cleanly(next(r for r in runs if not r.succeeded))
        assert (out / COMPLETE_MARKER).is_file()
        assert sorted(p.name for p in out.parent.iterdir()) == ["in", "out"], "temporary or lock files left"
