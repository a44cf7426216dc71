"""`fileio.write_hook`: where the crash tests make an atomic write die, installed by a test, never by replog."""
from __future__ import annotations

from pathlib import Path

import pytest

from replog.formats import fileio


class Died(Exception):
    """Stands for the `kill -9` the crash tests' hook does (`tests/reliability/killed_replog.py`)."""


def test_no_hook_is_installed_outside_a_test() -> None:
    assert fileio.write_hook is None, "replog must not install a write hook of its own"


def test_a_write_dying_before_its_rename_leaves_the_target_as_it_was(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "out.json"
    target.write_bytes(b"before")

    def die() -> None:
        raise Died
    monkeypatch.setattr(fileio, "write_hook", die)
    with pytest.raises(Died):
        fileio.atomic_write(target, b"after")
    assert target.read_bytes() == b"before", "the target changed although the write died before its rename"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"], "the temporary file was left behind"


def test_the_hook_runs_once_per_atomic_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr(fileio, "write_hook", lambda: calls.append(1))
    fileio.atomic_write(tmp_path / "a", b"1")
    fileio.atomic_write(tmp_path / "b", b"2")
    assert len(calls) == 2, f"the hook ran {len(calls)} times for 2 atomic writes"
