"""A full disk, a read-only file system, a directory without write permission: an ordinary error naming
the path (exit 2), and nothing left behind: no `*.replog-tmp`, no unmarked partial output.

The file systems are real: a tmpfs mounted for the test (skipped where mounting is not permitted), filled
but for a few pages; the same tmpfs read-only; and, since root ignores permissions, a replog process
without CAP_DAC_OVERRIDE (`setpriv`) facing a directory of mode 0555 (skipped without `setpriv`).
Before, all three were reported as `internal error ... please report it`, and a full disk left the
temporary files and the half-written output directory in place.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replog.toolkit.cli import app
from tests.recovery.rocketmq.stores import build, spec
from tests.reliability.procs import REPLOG, Run, in_place, run
from tests.reliability.trees import sha256_tree, unclean_pair

FREE = 16 << 10    # left free on the full disk: four tmpfs pages, fewer than any output below needs
FILLER = "filler"
pytestmark = pytest.mark.skipif(not REPLOG.exists(), reason="console script replog not installed")


def mount_tmpfs(where: Path, *options: str) -> None:
    where.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join(["size=256k", *options]), "tmpfs", str(where)],
                         capture_output=True, text=True)
    if res.returncode:
        pytest.skip(f"cannot mount a tmpfs here ({res.stderr.strip() or res.returncode}): needs root")


def fill(disk: Path, leave: int) -> None:
    """Grow the filler file until at most `leave` bytes are free."""
    with open(disk / FILLER, "ab") as f:
        try:
            while shutil.disk_usage(disk).free > leave:
                f.write(bytes(max(4096, shutil.disk_usage(disk).free - leave)))
                f.flush()
        except OSError:
            pass   # full


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs holding one file that leaves `FREE` bytes."""
    disk = tmp_path / "disk"
    mount_tmpfs(disk)
    try:
        fill(disk, FREE)
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    disk = tmp_path / "ro"
    mount_tmpfs(disk, "ro")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def assert_ordinary_error(code: int, text: str, reason: str, under: Path) -> None:
    assert code == 2, text
    assert "internal error" not in text and "Traceback" not in text, text
    assert reason in text and str(under) in text, text


def invoke(args: list[str]) -> Run:
    res = CliRunner().invoke(app, args)
    return Run(res.exit_code, res.output, res.output)


def test_a_full_disk_is_reported_and_cleaned_up(tmp_path: Path, full_disk: Path) -> None:
    a, b = unclean_pair(tmp_path / "in")
    store = build(tmp_path / "store", [spec(i) for i in range(12)]).root
    inputs = sha256_tree(tmp_path / "in")
    commands = [  # real processes for the Kafka writers (they fail part way); the rest in this process, for speed
        (run, ["recover", str(a), "--out", str(full_disk / "recovered")]),
        (run, ["repair", f"A={a}", f"B={b}", "--leader", "B", "--out", str(full_disk / "repaired")]),
        (invoke, ["recover", str(store), "--out", str(full_disk / "store")]),
        (invoke, ["doctor", str(a), "--manifest", str(full_disk / "manifest.json")]),   # small: the disk is filled
    ]
    for how, args in commands:
        if args[0] == "doctor":
            fill(full_disk, 0)
        r = how(args)
        assert_ordinary_error(r.code, r.stderr, "No space left on device", full_disk)
        assert sorted(p.name for p in full_disk.iterdir()) == [FILLER], f"{args[0]} left files behind"
    assert sha256_tree(tmp_path / "in") == inputs


def test_an_in_place_repair_that_fills_a_disk_changes_nothing(tmp_path: Path, full_disk: Path) -> None:
    """The backup on a full disk; then the replicas' own disk full while their repaired copies are staged."""
    unclean_pair(tmp_path / "in")
    before = sha256_tree(tmp_path / "in")
    r = invoke(in_place(tmp_path / "in", full_disk / "backup"))
    assert_ordinary_error(r.code, r.stderr, "No space left on device", full_disk)
    assert sorted(p.name for p in full_disk.iterdir()) == [FILLER] and sha256_tree(tmp_path / "in") == before

    shutil.rmtree(tmp_path / "in")
    (full_disk / FILLER).unlink()
    unclean_pair(full_disk / "in")
    fill(full_disk, FREE)
    before = sha256_tree(full_disk / "in")
    r = invoke(in_place(full_disk / "in", tmp_path / "backup"))
    assert_ordinary_error(r.code, r.stderr, "No space left on device", full_disk)
    assert ".replog-staging" in r.stderr, r.stderr    # it failed writing a repaired copy
    assert sha256_tree(full_disk / "in") == before, "staging dirs or changes left in the log dirs"
    assert not (tmp_path / "backup").exists()


def test_a_read_only_file_system_is_reported(tmp_path: Path, read_only: Path) -> None:
    a, b = unclean_pair(tmp_path / "in")
    r = run(["recover", str(a), "--out", str(read_only / "recovered")])
    assert_ordinary_error(r.code, r.stderr, "Read-only file system", read_only)
    before = sha256_tree(tmp_path / "in")
    r = invoke(in_place(tmp_path / "in", read_only / "backup"))
    assert_ordinary_error(r.code, r.stderr, "Read-only file system", read_only)
    assert sha256_tree(tmp_path / "in") == before


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv to run replog without CAP_DAC_OVERRIDE")
def test_a_directory_without_write_permission_is_reported(tmp_path: Path) -> None:
    a, _ = unclean_pair(tmp_path / "in")
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    locked.chmod(0o555)
    cmd = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--", str(REPLOG),
           "recover", str(a), "--out", str(locked / "recovered")]
    if os.geteuid() != 0:
        cmd = cmd[3:]   # an ordinary user is subject to permissions anyway
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if "setpriv" in res.stderr and res.returncode != 2:
        pytest.skip(f"setpriv cannot drop the capability here: {res.stderr.strip()}")
    assert_ordinary_error(res.returncode, res.stderr, "Permission denied", locked)
    assert list(locked.iterdir()) == []
