"""A producer entry met with another producer epoch forgets its batches (`ProducerStateEntry.
maybeUpdateProducerEpoch`): transactions v2 (KIP-890) write each marker with the epoch + 1, so after a committed
transaction the broker's snapshot holds the producer at the new epoch with no sequence; transactions v1 keep
the epoch and the sequence. Batches and markers are kafka-python's (`internal_records`), the snapshot read back
by replog's parser from the file `recover` wrote."""
from __future__ import annotations

from pathlib import Path

import pytest

from replog.formats.kafka.producer_snapshot import parse_producer_snapshot
from replog.recovery.kafka.recover import recover_partition
from tests.recovery.kafka.internal_records import COMMIT, batch, marker, partition_dir

PID = 7


def recovered_entry(tmp_path: Path, marker_epoch: int) -> tuple[int, int, int]:
    """(producer epoch, last sequence, last offset) of PID in the snapshot of the recovered partition."""
    batches = [batch(0, 3, pid=PID, producer_epoch=4, seq=0, transactional=True),
               batch(3, 2, pid=PID, producer_epoch=4, seq=3, transactional=True),
               marker(5, PID, COMMIT, producer_epoch=marker_epoch)]
    pdir = partition_dir(tmp_path / "in", "t-0", batches, [(0, 0)])
    recover_partition(pdir, tmp_path / "out")
    snapshots = sorted((tmp_path / "out" / "t-0").glob("*.snapshot"))
    assert snapshots, "recover wrote no producer snapshot"
    entries = parse_producer_snapshot(snapshots[-1].read_bytes()).entries
    entry = next(e for e in entries if e.producer_id == PID)
    return entry.producer_epoch, entry.last_sequence, entry.last_offset


@pytest.mark.parametrize(("marker_epoch", "expected"), [
    pytest.param(5, (5, -1, -1), id="v2-marker-bumps-the-epoch"),
    pytest.param(4, (4, 4, 4), id="v1-marker-keeps-the-epoch"),
])
def test_a_marker_of_another_epoch_forgets_the_sequence(tmp_path: Path, marker_epoch: int,
                                                        expected: tuple[int, int, int]) -> None:
    epoch, sequence, last_offset = recovered_entry(tmp_path, marker_epoch)
    assert epoch == expected[0], "producer epoch"
    assert sequence == expected[1], "last sequence"
    assert last_offset == expected[2], "last data offset"
