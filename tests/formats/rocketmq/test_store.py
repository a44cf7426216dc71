from __future__ import annotations

from pathlib import Path

import pytest

from replog.formats.rocketmq.checkpoint import Checkpoint, write_checkpoint
from replog.formats.rocketmq.commitlog import CommitLogWriter
from replog.formats.rocketmq.consumequeue import write_queue
from replog.formats.rocketmq.index_file import build_index
from replog.formats.rocketmq.store import detect_store, is_rocketmq_store, scan_store
from tests.realdata import REALDATA

REAL = REALDATA


def test_detects_written_store(tmp_path: Path) -> None:
    w = CommitLogWriter(1024)
    for _ in range(5):
        w.append(topic="T", body=b"x" * 50)
    w.write_to(tmp_path / "commitlog")
    write_queue(tmp_path, "T", 0, [(0, 100, 0)], file_size=200)
    (tmp_path / "index").mkdir()
    (tmp_path / "index" / "20240101120000000").write_bytes(build_index([], hash_slot_num=2, index_num=3))
    write_checkpoint(tmp_path / "checkpoint", Checkpoint(1, 2, 3))
    (tmp_path / "abort").write_bytes(b"")
    layout = detect_store(tmp_path)
    assert layout is not None and is_rocketmq_store(tmp_path)
    assert [p.name for p in layout.commitlog_files] == ["00000000000000000000"]
    assert list(layout.consume_queues) == [("T", 0)]
    assert [p.name for p in layout.index_files] == ["20240101120000000"]
    assert layout.checkpoint and layout.unclean_shutdown and not layout.dledger


def test_rejects_other_dirs(tmp_path: Path) -> None:
    assert not is_rocketmq_store(tmp_path)
    (tmp_path / "commitlog").mkdir()
    (tmp_path / "commitlog" / "00000000000000000000").write_bytes(b"\0\0\0\x10NOPE" + bytes(10))
    assert not is_rocketmq_store(tmp_path)        # a 20-digit name alone is not enough
    (tmp_path / "checkpoint").write_bytes(bytes(4096))
    assert not is_rocketmq_store(tmp_path)        # a checkpoint alone is not enough
    assert not is_rocketmq_store(tmp_path / "checkpoint")
    (tmp_path / "commitlog" / "dledger-n0").mkdir()
    assert scan_store(tmp_path).dledger


@pytest.mark.realdata
def test_real_stores() -> None:
    root = REAL / "rocketmq-shaoxubao/store"
    if not root.exists():
        pytest.skip("real data absent")
    layout = detect_store(root)  # checkpoint + config, commitlog too large to collect
    assert layout is not None and layout.unclean_shutdown
    assert {p.name for p in layout.config_files} >= {"topics.json", "consumerOffset.json"}
    assert is_rocketmq_store(root / "unit_test_store")
    assert is_rocketmq_store(REAL / "rocketmq-apache-pr-unit-store")


def test_a_checkpoint_beside_an_empty_commitlog_is_a_store(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A freshly started slave: `commitlog/` exists but holds no file yet, the 4 KiB checkpoint is there
    (physicMsgTimestamp, logicsMsgTimestamp, indexMsgTimestamp, masterFlushedOffset, confirmPhyOffset,
    big-endian longs: StoreCheckpoint.flush). It is a store, through both detectors."""
    import struct

    from replog.formats import discovery
    from replog.formats.rocketmq.store import detect_store

    (tmp_path / "commitlog").mkdir()
    (tmp_path / "checkpoint").write_bytes(struct.pack(">5q", 1_700_000_000_000, 0, 0, 0, 0).ljust(4096, b"\0"))
    assert detect_store(tmp_path) is not None
    assert discovery.classify_dir(tmp_path) is discovery.DirKind.ROCKETMQ_STORE
    (tmp_path / "commitlog").rmdir()
    assert detect_store(tmp_path) is None  # a lone checkpoint file says nothing


def test_a_store_whose_only_commitlog_file_is_empty(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A mapped file created and never written (0 bytes, a valid offset name) is a store: RocketMQ 5.1.3+
    deletes it at load (MappedFileQueue.doLoad, "size is 0, auto delete"), older brokers refuse it; doctor
    says both, as a warning, not as an error."""
    from replog.formats import discovery
    from replog.recovery.doctor import diagnose

    (tmp_path / "commitlog").mkdir()
    (tmp_path / "commitlog" / "00000000000000000000").write_bytes(b"")
    assert discovery.classify_dir(tmp_path) is discovery.DirKind.ROCKETMQ_STORE
    report = diagnose([tmp_path])
    codes = [(f.code, f.severity.value) for f in report.findings]
    assert codes == [("ROCKETMQ_FILE_NAME_MISMATCH", "warning")], codes
    assert "5.1.3+ deletes it" in report.findings[0].message


def test_only_the_last_empty_file_is_deleted_at_load(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The broker deletes the last file when empty, and only it: an empty file before it is still the wrong
    size, which every version refuses (an error)."""
    from replog.recovery.doctor import diagnose

    size = 4096
    log = tmp_path / "commitlog"
    log.mkdir()
    (log / f"{0:020d}").write_bytes(bytes(size))
    (log / f"{size:020d}").write_bytes(b"")
    (log / f"{2 * size:020d}").write_bytes(b"")
    found = {(f.path.rsplit("/", 1)[-1], f.severity.value) for f in diagnose([tmp_path]).findings
             if f.code == "ROCKETMQ_FILE_NAME_MISMATCH"}
    assert (f"{2 * size:020d}", "warning") in found, found
    assert (f"{size:020d}", "error") in found, found
