"""Partition writer: rolled segments with rebuilt indexes that read back consistently."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given

from replog.formats.kafka import batch as v2
from replog.formats.kafka import checkpoint, offset_index, time_index, txn_index
from replog.formats.kafka.producer_snapshot import parse_producer_snapshot
from replog.formats.kafka.segment import SegmentWalk
from replog.recovery.kafka.logdir import summarize_partition
from replog.recovery.kafka.writer import roll_segments, write_partition
from tests.formats.kafka.segments import TS, data_batch, marker
from tests.recovery.kafka.reference_writer import reference_write_partition
from tests.recovery.kafka.writer_cases import FEW, OPTIONS, options, partitions, scratch, tree


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


@FEW
@given(partitions(), OPTIONS)
def test_written_from_bytes_byte_identical(batches: list[bytes], drawn: dict) -> None:
    """`write_partition` is the streaming writer fed a temporary file of the batches: the reference's files."""
    with scratch() as root:
        try:
            expected = reference_write_partition(root / "ref", batches, **options(drawn))
        except ValueError as e:
            with pytest.raises(ValueError) as got:
                write_partition(root / "new", batches, **options(drawn))
            assert str(got.value) == str(e)
            assert list((root / "new").iterdir()) == []
            return
        written = write_partition(root / "new", batches, **options(drawn))
        assert tree(root / "new") == tree(root / "ref")
        assert (written.segment_bases, written.log_end_offset, written.files, written.epochs.entries) == (
            expected.segment_bases, expected.log_end_offset, expected.files, expected.epochs.entries)


def test_roll_rule_columns_equal_roll_segments() -> None:
    """`roll_segments` (bytes) and `roll_rows` (columns) roll at the same batches, with the same bases."""
    import numpy as np

    from replog.formats.kafka.blocks import BatchBlock
    from replog.recovery.kafka.segment_writer import roll_rows
    batches = [data_batch(o, 1 + o % 3) for o in range(0, 300, 3)] + [data_batch(2**31 + 400, 2)]
    block = BatchBlock.from_infos(list(SegmentWalk(b"".join(batches), "x").batches()))
    for segment_bytes, start in ((1, 0), (500, 5), (2000, 0), (1 << 30, 0)):
        expected = roll_segments(batches, segment_bytes, start)
        rolls, bases = np.empty((2, len(block)), dtype=np.int64)
        n = roll_rows(block.size, block.base_offset, block.last_offset, np.zeros(3, dtype=np.int64), segment_bytes,
                      start, rolls, bases)
        assert bases[:n].tolist() == [base for base, _ in expected]
        sizes = [len(data) for _, data in expected]
        assert (np.add.reduceat(block.size, rolls[:n]) if n else []).tolist() == sizes


def test_an_item_that_is_not_one_batch_is_refused(tmp_path: Path) -> None:
    one = v2.build_batch([v2.Record(0, TS, None, b"x")], base_offset=0)
    two = v2.build_batch([v2.Record(1, TS, None, b"x")], base_offset=1)
    with pytest.raises(ValueError, match="item 1 is not one record batch"):
        write_partition(tmp_path / "p-0", [one, one + two])
    with pytest.raises(ValueError, match="item 0"):
        write_partition(tmp_path / "q-0", [b"\0" * 5])
