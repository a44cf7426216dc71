"""In-place repair: backup first, atomic swaps, and restore after an interruption."""
from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from replog.formats.errors import ReplogError, UnsafeOutput
from replog.recovery.kafka import inplace
from replog.recovery.kafka.inplace import repair_in_place, restore
from replog.recovery.kafka.replay import replay_paths
from replog.recovery.kafka.replica import load_replica
from tests.recovery.kafka.replicas import replica_dir


def digests(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def pair(tmp_path: Path) -> tuple[Path, Path]:
    a = replica_dir(tmp_path / "in", "A", [(o, 0) for o in range(10)] + [(o, 1) for o in range(10, 15)], hw=10)
    b = replica_dir(tmp_path / "in", "B", [(o, 0) for o in range(10)] + [(10, 2), (11, 2)], hw=10,
                    epochs=[(0, 0), (2, 10)])
    return a, b


def test_in_place_repair_swaps_and_keeps_a_backup(tmp_path: Path) -> None:
    a, b = pair(tmp_path)
    original = digests(tmp_path / "in")
    report = repair_in_place(replay_paths([f"A={a}", f"B={b}"], leader="B"), tmp_path / "backup")
    assert all(r.identical_to_leader for r in report)
    assert load_replica(a, "A").log_end_offset == 12 and not list(a.parent.glob("*.replog-staging"))
    assert digests(tmp_path / "backup" / "A" / "t-0") == {k.split("/", 2)[2]: v for k, v in original.items()
                                                           if k.startswith("A/t-0/")}
    restore(tmp_path / "backup")  # an operator can always go back
    assert digests(tmp_path / "in") == original


def test_interrupted_repair_is_restored_on_the_next_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = pair(tmp_path)
    original = digests(tmp_path / "in")
    calls = []
    real = inplace.exchange

    def dying_exchange(x: Path, y: Path) -> None:
        calls.append(x)
        real(x, y)
        if len(calls) == 1:
            raise KeyboardInterrupt("killed after the first swap")

    monkeypatch.setattr(inplace, "exchange", dying_exchange)
    with pytest.raises(KeyboardInterrupt):
        repair_in_place(replay_paths([f"A={a}", f"B={b}"], leader="B"), tmp_path / "backup")
    monkeypatch.setattr(inplace, "exchange", real)
    with pytest.raises(ReplogError, match="restored"):
        repair_in_place(replay_paths([f"A={a}", f"B={b}"], leader="B"), tmp_path / "backup")
    assert digests(tmp_path / "in") == original


def test_backup_must_be_outside_the_log_dir(tmp_path: Path) -> None:
    a, b = pair(tmp_path)
    with pytest.raises(UnsafeOutput):
        repair_in_place(replay_paths([f"A={a}", f"B={b}"], leader="B"), a.parent / "bk")
