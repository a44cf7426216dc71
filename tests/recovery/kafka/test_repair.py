"""Repair: written replicas reload identical to the leader; repairing twice changes nothing."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from replog.formats.errors import UnsafeOutput
from replog.recovery.doctor import diagnose
from replog.recovery.kafka.repair import repair
from replog.recovery.kafka.replay import replay_paths
from replog.recovery.kafka.replica import batch_rows, load_replica
from replog.toolkit.export_lost import export_lost
from tests.recovery.kafka.replicas import replica_dir


def unclean_pair(tmp_path: Path) -> tuple[Path, Path]:
    a = replica_dir(tmp_path / "in", "A", [(o, 0) for o in range(10)] + [(o, 1) for o in range(10, 15)], hw=10,
                    segment_bytes=400)
    b = replica_dir(tmp_path / "in", "B", [(o, 0) for o in range(10)] + [(10, 2), (11, 2)], hw=10,
                    epochs=[(0, 0), (2, 10)], segment_bytes=400)
    return a, b


def digests(root: Path) -> dict[Path, str]:
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in root.rglob("*") if p.is_file()}


def test_repair_writes_replicas_identical_to_the_leader(tmp_path: Path) -> None:
    a, b = unclean_pair(tmp_path)
    before = digests(tmp_path / "in")
    result = replay_paths([f"A={a}", f"B={b}"], leader="B")
    report = repair(result, tmp_path / "out")
    assert all(r.identical_to_leader and not r.problems for r in report)
    assert digests(tmp_path / "in") == before
    ra, rb = load_replica(tmp_path / "out" / "A" / "t-0"), load_replica(tmp_path / "out" / "B" / "t-0")
    assert [(x.base_offset, x.crc) for x in batch_rows(ra.log)] == [(x.base_offset, x.crc) for x in batch_rows(rb.log)]
    assert ra.log_end_offset == 12 and [tuple(e) for e in ra.epochs.entries] == [(0, 0), (2, 10)]
    assert (tmp_path / "out" / ".replog-complete").exists()
    for name in "AB":  # what a broker would start from: doctor finds no error in it
        assert not [f for f in diagnose([tmp_path / "out" / name]).findings if f.severity.value == "error"]
    again = replay_paths([f"A={tmp_path / 'out' / 'A' / 't-0'}", f"B={tmp_path / 'out' / 'B' / 't-0'}"], leader="B")
    assert all(r.outcome is None or (not r.outcome.removed and not r.outcome.fetched) for r in again.replicas)


def test_repair_refuses_unsafe_outputs(tmp_path: Path) -> None:
    a, b = unclean_pair(tmp_path)
    result = replay_paths([f"A={a}", f"B={b}"], leader="B")
    with pytest.raises(UnsafeOutput):
        repair(result, a / "inside")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "precious.txt").write_text("x")
    with pytest.raises(UnsafeOutput):
        repair(result, tmp_path / "busy")
    with pytest.raises(UnsafeOutput):
        repair(result, tmp_path / "busy", force=True)  # not a replog output: never deleted
    repair(result, tmp_path / "out")
    repair(result, tmp_path / "out", force=True)


def test_export_lost_saves_exactly_the_lost_records(tmp_path: Path) -> None:
    a, b = unclean_pair(tmp_path)
    result = replay_paths([f"A={a}", f"B={b}"], leader="B")
    files = export_lost(result, tmp_path / "lost")
    assert [Path(f).name for f in files] == ["00000000000000000010.log", "lost.jsonl"]
    records = [json.loads(line) for line in (tmp_path / "lost" / "A" / "lost.jsonl").read_text().splitlines()]
    assert [r["offset"] for r in records] == list(range(10, 15))
    assert bytes.fromhex(records[0]["value"]) == b"o10e1"
