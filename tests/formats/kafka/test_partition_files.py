"""One listing of a partition dir for every command: each name lands in the group the broker's rules give it."""
from __future__ import annotations

from pathlib import Path

from replog.formats.kafka.partition_files import list_partition_files, live_segment_bases

LIVE = ["00000000000000000000.log", "00000000000000000100.log", "00000000000000000100.index",
        "00000000000000000100.timeindex", "00000000000000000100.txnindex", "00000000000000000100.snapshot"]
TRANSIENT = ["00000000000000000050.log.deleted", "00000000000000000050.index.cleaned", "00000000000000000200.log.swap"]
OTHER = {"bad_segment_names": ["123.log"], "tmp_files": ["leader-epoch-checkpoint.tmp"],
         "known_files": ["leader-epoch-checkpoint", "partition.metadata"],
         "kraft_snapshots": ["00000000000000000010-0000000001.checkpoint"], "unknown_files": ["notes.txt"]}


def _make(tmp_path: Path) -> Path:
    pdir = tmp_path / "orders-0"
    pdir.mkdir()
    for name in LIVE + TRANSIENT + [n for names in OTHER.values() for n in names]:
        (pdir / name).write_bytes(b"")
    (pdir / "00000000000000000300.log").mkdir()  # a directory is never a segment
    return pdir


def test_every_entry_is_sorted_into_its_group(tmp_path: Path) -> None:
    files = list_partition_files(_make(tmp_path))
    assert list(files.logs) == [0, 100]
    assert sorted(files.indexes) == [(100, "index"), (100, "timeindex"), (100, "txnindex")]
    assert list(files.snapshots) == [100]
    assert [(p.name, s.transient) for p, s in files.transient] == [
        ("00000000000000000050.index.cleaned", "cleaned"), ("00000000000000000050.log.deleted", "deleted"),
        ("00000000000000000200.log.swap", "swap")]
    for group, expected in OTHER.items():
        assert sorted(p.name for p in getattr(files, group)) == sorted(expected), group
    assert [(p.name, kind.value) for p, kind in files.not_files] == [("00000000000000000300.log", "directory")]


def test_live_segment_bases_from_a_remote_listing() -> None:
    sizes = {n: 1 for n in LIVE + TRANSIENT + ["123.log"]}
    assert live_segment_bases(sizes) == [0, 100]
