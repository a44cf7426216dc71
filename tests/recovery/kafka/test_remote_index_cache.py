"""Tiered storage's `remote-log-index-cache/` under `doctor`: names as `RemoteIndexCache` writes them, each cached
index checked as the ordinary index it is, with the remote segment's start offset as its base. The index bytes are
packed here with `struct`, independently of replog's index writers."""
from __future__ import annotations

import hashlib
import struct
from pathlib import Path

from replog.formats.kafka import names
from replog.recovery.doctor import diagnose
from tests.recovery.kafka.log_dirs import build_log_dir

SEGMENT_ID = "x3Yq0nmnRMuCwP_k2-Ab9w"     # a Uuid.toString(): 22 chars of URL-safe base64, `_` and `-` included
START = 120


def offset_entries(*pairs: tuple[int, int]) -> bytes:
    return b"".join(struct.pack(">ii", rel, pos) for rel, pos in pairs)     # OffsetIndex: int32 rel, int32 pos


def time_entries(*pairs: tuple[int, int]) -> bytes:
    return b"".join(struct.pack(">qi", ts, rel) for ts, rel in pairs)       # TimeIndex: int64 ts, int32 rel


def txn_entry(pid: int, first: int, last: int, lso: int) -> bytes:
    return struct.pack(">hqqqq", 0, pid, first, last, lso)                  # AbortedTxn v0: 34 bytes


def cache_file(root: Path, kind: str, data: bytes, *, start: int = START, suffix: str = "") -> Path:
    path = root / names.REMOTE_INDEX_CACHE_DIR / f"{start}_{SEGMENT_ID}.{kind}{suffix}"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(data)
    return path


def test_names_as_the_cache_writes_them() -> None:
    got = names.parse_remote_index_file_name(f"45_{SEGMENT_ID}.timeindex.deleted")
    assert got == names.RemoteIndexName(45, SEGMENT_ID, "timeindex", "deleted"), "a cached index being removed"
    assert names.parse_remote_index_file_name(f"0_{SEGMENT_ID}.txnindex.tmp") == \
        names.RemoteIndexName(0, SEGMENT_ID, "txnindex", "tmp"), "a cached index being fetched"
    for bad in ("0_abc.index", f"{SEGMENT_ID}.index", f"-1_{SEGMENT_ID}.index", f"0_{SEGMENT_ID}.log",
                f"0_{SEGMENT_ID}.index.swap", f"{2**63}_{SEGMENT_ID}.index"):
        assert names.parse_remote_index_file_name(bad) is None, f"{bad}: not a name RemoteIndexCache writes"


def test_a_valid_cached_triple_is_read_and_quiet(tmp_path: Path) -> None:
    build_log_dir(tmp_path)
    files = [cache_file(tmp_path, "index", offset_entries((4, 0), (9, 4096))),
             cache_file(tmp_path, "timeindex", time_entries((1000, 4), (1500, 9))),
             cache_file(tmp_path, "txnindex", txn_entry(7, START, START + 3, START))]
    report = diagnose([tmp_path])
    listed = {i["path"]: i["sha256"] for i in report.inputs}
    for path in files:
        assert listed.get(str(path)) == hashlib.sha256(path.read_bytes()).hexdigest(), f"{path.name}: manifest"
    assert [f.to_dict() for f in report.findings if f.path.startswith(str(files[0].parent))] == [], "findings"


def test_cached_index_defects_are_located(tmp_path: Path) -> None:
    """A cached offset index going back at slot 2, a time index with a partial entry, a transaction index whose
    last offset is below the segment's start: each named with its file and byte position, as the index checks of
    a partition would; a `.deleted` one is hashed, not checked; a foreign name is reported once."""
    build_log_dir(tmp_path)
    offsets = cache_file(tmp_path, "index", offset_entries((4, 0), (9, 4096), (6, 8192)))
    times = cache_file(tmp_path, "timeindex", time_entries((1000, 4)) + b"\x00")
    txns = cache_file(tmp_path, "txnindex", txn_entry(7, 3, START - 1, 3))
    deleted = cache_file(tmp_path, "index", offset_entries((5, 0), (1, 1)), start=7, suffix=".deleted")
    foreign = tmp_path / names.REMOTE_INDEX_CACHE_DIR / "notes.txt"
    foreign.write_bytes(b"x")
    report = diagnose([tmp_path])
    got = sorted((Path(f.path).name, f.code, f.position) for f in report.findings
                 if Path(f.path).parent.name == names.REMOTE_INDEX_CACHE_DIR)
    assert got == sorted([(offsets.name, "KAFKA_INDEX_NOT_MONOTONIC", 16),
                          (times.name, "KAFKA_INDEX_SIZE_NOT_MULTIPLE", 12),
                          (txns.name, "KAFKA_TXNINDEX_INVALID", 0),
                          (foreign.name, "UNKNOWN_FILE", None)]), "cache findings"
    listed = {i["path"] for i in report.inputs}
    assert {str(deleted), str(foreign)} <= listed, "the .deleted and the foreign file in the manifest"
    bad = next(f for f in report.findings if f.path == str(offsets))
    assert bad.offset == START + 6, "the offset is the start offset in the name plus the relative one"
