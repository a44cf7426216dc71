"""Rescans reuse the recorded walks of unchanged sealed segments: their tables are a full scan's, after
appends, a changed sealed segment, deleted segments, and with partitions split into segment units."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from replog.formats.kafka import names
from replog.formats.kafka.segment import SegmentWalk
from replog.recovery.kafka.logdir import summarize_partition
from replog.spark import cache
from replog.spark.inputs import discover
from tests.recovery.kafka.log_dirs import (
    batches_of,
    build_log_dir,
    data_batch,
    flip,
    marker,
    seg_path,
    txn_batch,
    undecodable_batch,
)
from tests.spark.taskscan import scan, tables


def _damaged_log_dir(root: Path) -> None:
    """A log dir whose sealed segments hold a flipped CRC, an aborted transaction and a batch whose records
    do not decode (what the walk, the state checks and the record decode each find)."""
    extra = [txn_batch(200, 2, pid=7), marker(202, commit=False, pid=7, epoch=3), undecodable_batch(203)]
    extra += [data_batch(206 + 3 * i, 3, epoch=3) for i in range(30)]
    pdir, bases = build_log_dir(root, extra=extra)
    second = seg_path(pdir, bases[1])
    flip(second, batches_of(second, bases[1])[1].end - 2)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """The sample generator's fleet (transactions, legacy messages, compaction) and a damaged log dir,
    scanned once."""
    from replog.samples.kafka_fleet import generate_kafka_fleet

    root = tmp_path_factory.mktemp("cache")
    generate_kafka_fleet(root / "kafka", seed=7)
    _damaged_log_dir(root / "kafka" / "b9")
    dirs, _ = discover([root / "kafka"])
    return root, scan(dirs, root / "first")


def test_unchanged_fleet_reuses_every_recorded_segment(recorded: tuple[Path, dict], tmp_path: Path) -> None:
    root, first = recorded
    dirs, _ = discover([root / "kafka"])
    again = scan(dirs, tmp_path / "again", since=root / "first")
    assert first["counts"].get("segments_reused", 0) == 0 and first["recorded"] > 10
    assert again["counts"]["segments_reused"] == first["recorded"]
    assert again["counts"]["segments_read"] == first["counts"]["segments_read"] - first["recorded"]
    assert tables(tmp_path / "again") == tables(root / "first")
    found = {r["code"] for r in ds.dataset(str(root / "first" / "findings")).to_table().to_pylist()}
    assert {"KAFKA_BATCH_CRC_MISMATCH", "KAFKA_RECORDS_UNDECODABLE"} <= found   # reused, not read
    assert again["recorded"] == first["recorded"]   # the reused ones indexed again: the new cache is whole


def _set_last_crc(path: Path, entry: dict) -> None:
    """Rewrite the stored CRC of the segment's last batch (v2 header bytes 17..21), size and mtime kept."""
    st = os.stat(path)
    data = bytearray(path.read_bytes())
    pos = entry["last_position"] + 17
    data[pos:pos + 4] = ((int.from_bytes(data[pos:pos + 4], "big") + 1) % 2**32).to_bytes(4, "big")
    with open(path, "r+b") as f:
        f.write(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_rescan_after_changes_equals_a_full_scan(recorded: tuple[Path, dict], tmp_path: Path) -> None:
    root, _ = recorded
    fleet = tmp_path / "kafka"
    shutil.copytree(root / "kafka", fleet)
    first = tmp_path / "first"
    scan(discover([fleet])[0], first)
    index = cache.load_index(first / cache.CACHE_DIR)
    # an append to an active segment
    orders = fleet / "broker-1" / "orders-0"
    leo = summarize_partition(orders).log_end_offset
    with open(sorted(orders.glob("*.log"))[-1], "ab") as f:
        f.write(data_batch(leo, 4))
    # a sealed segment changed in place, its size and mtime kept: only its last batch's CRC tells
    payments = fleet / "broker-2" / "orders-1"
    changed = sorted(payments.glob("*.log"))[1]
    entry = index[str(payments)][names.parse_segment_file_name(changed.name).base_offset]
    _set_last_crc(changed, entry)
    assert not cache.unchanged(entry, changed)
    # retention: the oldest segment of a partition deleted
    oldest = sorted((fleet / "broker-3" / "orders-2").glob("00000000000000000000.*"))
    for f in oldest:
        f.unlink()
    rescan = scan(discover([fleet])[0], tmp_path / "rescan", since=first, split_bytes=1)
    full = scan(discover([fleet])[0], tmp_path / "full", split_bytes=None, record=False)
    assert tables(tmp_path / "rescan") == tables(tmp_path / "full")
    assert rescan["counts"]["segments_reused"] > 10
    assert rescan["counts"]["segments_read"] < full["counts"]["segments_read"] / 2
    again = cache.load_index(tmp_path / "rescan" / cache.CACHE_DIR)[str(payments)][entry["base_offset"]]
    with open(changed, "rb") as f:
        last = SegmentWalk(f.read(), str(changed)).read_at(entry["last_position"], os.path.getsize(changed))
    assert last is not None and again["last_crc"] == last.crc != entry["last_crc"]   # read again, recorded anew
