"""Names read from files are never trusted as paths: nothing is written outside `--out`.

A topic `../../x` in a broker checkpoint, a partition dir named `..-0`, and a
replica NAME holding a slash must not make recover, repair or replay's
export of lost records write anywhere but under the output directory.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from replog.formats.kafka import names
from replog.toolkit.cli import app
from tests.recovery.kafka.replicas import replica_dir
from tests.reliability.trees import changes, sha256_tree, unclean_pair

runner = CliRunner()
HOSTILE_CHECKPOINT = b"0\n3\n../../x 0 5\n../../../../tmp/evil 1 7\nt 0 %d\n"


def poison_checkpoints(log_dir: Path, hw: int) -> None:
    """Every broker checkpoint also names topics that are paths climbing out of the log dir."""
    for name in (names.REPLICATION_OFFSET_CHECKPOINT, names.RECOVERY_POINT_OFFSET_CHECKPOINT,
                 names.LOG_START_OFFSET_CHECKPOINT):
        (log_dir / name).write_bytes(HOSTILE_CHECKPOINT % (0 if "start" in name else hw))


def assert_only_under_out(root: Path, out: Path, before: dict[str, str]) -> None:
    """Every path that changed anywhere under `root` lies inside `out`."""
    stray = {k: v for k, v in changes(before, sha256_tree(root)).items()
             if not (root / k == out or out in (root / k).parents
                     or (v == (None, "dir") and root / k in out.parents))}  # out's parents may be created
    assert stray == {}, f"written outside --out: {stray}"


def test_recover_ignores_path_topics_in_checkpoints(tmp_path: Path) -> None:
    pdir = replica_dir(tmp_path / "deep" / "er" / "in", "A", [(o, 0) for o in range(6)], hw=6)
    poison_checkpoints(pdir.parent, 6)
    out = tmp_path / "deep" / "er" / "out"
    before = sha256_tree(tmp_path)
    res = runner.invoke(app, ["recover", str(pdir), "--out", str(out), "--format", "json"])
    assert res.exit_code in (0, 1), res.output
    assert_only_under_out(tmp_path, out, before)
    assert (out / "t-0").is_dir()


def test_recover_a_partition_dir_named_dotdot(tmp_path: Path) -> None:
    src = replica_dir(tmp_path / "in", "A", [(o, 0) for o in range(3)], hw=3)
    weird = src.parent / "..-0"
    src.rename(weird)
    (src.parent / names.REPLICATION_OFFSET_CHECKPOINT).write_bytes(b"0\n1\n.. 0 3\n")
    out = tmp_path / "sub" / "out"
    before = sha256_tree(tmp_path)
    res = runner.invoke(app, ["recover", str(weird), "--out", str(out), "--format", "json"])
    assert res.exit_code in (0, 1, 2), res.output
    assert_only_under_out(tmp_path, out, before)


def test_repair_and_export_ignore_path_topics_in_checkpoints(tmp_path: Path) -> None:
    a, b = unclean_pair(tmp_path / "deep" / "in")
    for p in (a, b):
        poison_checkpoints(p.parent, 6)
    out, lost = tmp_path / "deep" / "out", tmp_path / "deep" / "lost"
    before = sha256_tree(tmp_path)
    res = runner.invoke(app, ["repair", f"A={a}", f"B={b}", "--out", str(out), "--leader", "B", "--format", "json"])
    assert res.exit_code in (0, 1), res.output
    assert_only_under_out(tmp_path, out, before)
    before = sha256_tree(tmp_path)
    res = runner.invoke(app, ["replay", f"A={a}", f"B={b}", "--leader", "B", "--export-lost", str(lost),
                              "--format", "json"])
    assert res.exit_code == 1, res.output  # A loses records: exit 1 by the contract
    assert_only_under_out(tmp_path, lost, before)
    assert list((lost / "A").glob("*.log"))


@pytest.mark.parametrize("name", ["../escaped", "a/../../escaped", "<absolute>", ".."])
def test_repair_replica_names_cannot_climb_out_of_out(tmp_path: Path, name: str) -> None:
    a, b = unclean_pair(tmp_path / "deep" / "in")
    out = tmp_path / "deep" / "out"
    name = str(tmp_path / "abs-escape") if name == "<absolute>" else name  # still inside tmp_path if it escapes
    before = sha256_tree(tmp_path)
    res = runner.invoke(app, ["repair", f"{name}={a}", f"B={b}", "--out", str(out), "--leader", "B",
                              "--format", "json"])
    assert_only_under_out(tmp_path, out, before)
    assert res.exit_code in (0, 1, 2)


def test_repair_default_name_of_a_dotdot_relative_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`replog repair ../t-0 ...` run from inside a log dir: the derived NAME is `..` (Path.parent.name)."""
    a, b = unclean_pair(tmp_path / "deep" / "in")
    (a.parent / "sub").mkdir()
    monkeypatch.chdir(a.parent / "sub")
    out = tmp_path / "deep" / "out"
    before = sha256_tree(tmp_path)
    runner.invoke(app, ["repair", "../t-0", f"B={b}", "--out", str(out), "--leader", "B", "--format", "json"])
    assert_only_under_out(tmp_path, out, before)
