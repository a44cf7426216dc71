"""Partition writer: rolled segments with rebuilt indexes that read back consistently."""
from __future__ import annotations

from pathlib import Path

from replog.formats.kafka import batch as v2
from replog.formats.kafka import checkpoint, offset_index, time_index, txn_index
from replog.formats.kafka.producer_snapshot import parse_producer_snapshot
from replog.formats.kafka.segment import SegmentWalk
from replog.recovery.kafka.logdir import summarize_partition
from replog.recovery.kafka.writer import write_partition
from tests.formats.kafka.segments import TS, data_batch, marker


def test_rolls_segments_and_indexes_point_at_batches(tmp_path: Path) -> None:
    batches = [data_batch(i * 10, 10, epoch=i // 20) for i in range(60)]
    written = write_partition(tmp_path / "t-0", batches, segment_bytes=5_000, interval=1024)
    assert len(written.segment_bases) > 2 and written.log_end_offset == 600
    assert [tuple(e) for e in written.epochs.entries] == [(0, 0), (1, 200), (2, 400)]
    for base in written.segment_bases:
        log = (tmp_path / "t-0" / f"{base:020d}.log").read_bytes()
        positions = {b.position: b for b in SegmentWalk(log, "x", base).batches()}
        idx = offset_index.read_offset_index((tmp_path / "t-0" / f"{base:020d}.index").read_bytes(), base)
        assert idx.entries and idx.findings == []
        for e in idx.entries:
            assert positions[e.position].last_offset == e.offset
        tidx = time_index.read_time_index((tmp_path / "t-0" / f"{base:020d}.timeindex").read_bytes(), base)
        assert tidx.entries[-1].timestamp == max(b.max_timestamp for b in positions.values())
    cp = checkpoint.parse_leader_epoch_checkpoint((tmp_path / "t-0" / "leader-epoch-checkpoint").read_bytes())
    assert [tuple(e) for e in cp] == [(0, 0), (1, 200), (2, 400)]
    summary = summarize_partition(tmp_path / "t-0")
    assert summary.log_end_offset == 600 and summary.all_findings() == []


def txn_batch(offset: int, n: int, pid: int) -> bytes:
    recs = [v2.Record(offset + i, TS + offset + i, None, b"t") for i in range(n)]
    return v2.build_batch(recs, base_offset=offset, producer_id=pid, producer_epoch=0, base_sequence=offset,
                          transactional=True)


def test_aborted_transactions_land_in_the_txnindex(tmp_path: Path) -> None:
    batches = [data_batch(0, 3), txn_batch(3, 2, pid=7), txn_batch(5, 2, pid=8),
               marker(7, commit=False, pid=7), txn_batch(8, 2, pid=8), marker(10, commit=True, pid=8),
               txn_batch(11, 1, pid=9), marker(12, commit=False, pid=9)]
    written = write_partition(tmp_path / "p-0", batches)
    assert written.log_end_offset == 13
    read = txn_index.read_txn_index((tmp_path / "p-0" / "00000000000000000000.txnindex").read_bytes(), 0)
    # pid 7 aborted while pid 8's transaction (from 5) was open: LSO 5; pid 9 aborted alone: LSO 13
    assert [tuple(e)[:4] for e in read.entries] == [(7, 3, 7, 5), (9, 11, 12, 13)]


def test_producer_snapshot_at_log_end(tmp_path: Path) -> None:
    written = write_partition(tmp_path / "p-0", [data_batch(0, 3, pid=42), data_batch(3, 4, pid=42)])
    snap = parse_producer_snapshot((tmp_path / "p-0" / f"{written.log_end_offset:020d}.snapshot").read_bytes())
    [entry] = snap.entries
    assert (entry.producer_id, entry.last_offset, entry.last_sequence) == (42, 6, 3)
