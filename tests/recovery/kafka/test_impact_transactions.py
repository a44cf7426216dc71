"""`impact`'s verdict on a transactional producer's next batch after a truncation took its last transaction
(records and marker) away, on hand-built replicas: both share producer 300's first transaction (epoch 0, sequences
0..4 at 0..4, COMMIT at 5); the old leader O alone holds its second (5 records at 6..10, COMMIT at 11) and truncates
to 6. Under transactions v1 both markers keep epoch 0 and the producer's next batch continues at sequence 10, out
of order on a leader that ends at 4; under transactions v2 (KIP-890) each marker carries the epoch + 1: the second
transaction ran in epoch 1 from sequence 0, its marker moved the producer to epoch 2, so the next batch starts
epoch 2 at sequence 0, which the leader (epoch 1, no sequence after the first marker) accepts. The real brokers
agree (tests/brokers/test_kafka_transactions.py)."""
from __future__ import annotations

from pathlib import Path

import pytest

from replog.formats.kafka.batch import BatchInfo
from replog.recovery.kafka.impact import analyze_impact, read_impact
from replog.recovery.kafka.producer_state import BatchHistory, forgets
from replog.recovery.kafka.replay import replay_paths
from tests.recovery.kafka.internal_records import TS, batch, high_watermarks, marker, partition_dir, txn_key, txn_value

PID = 300


def _txn(base: int, pid_epoch: int, seq: int, epoch: int = 0) -> bytes:
    return batch(base, 5, epoch=epoch, pid=PID, producer_epoch=pid_epoch, seq=seq, transactional=True)


def _replicas(root: Path, v2: bool) -> dict:
    """O (old leader, epoch 0 only) and L (the new leader, one more batch in epoch 1 from 6)."""
    bump = 1 if v2 else 0
    first = [_txn(0, 0, 0), marker(5, PID, producer_epoch=bump)]
    second = [_txn(6, bump, 0 if v2 else 5), marker(11, PID, producer_epoch=2 * bump)]
    partition_dir(root / "O", "t-0", first + second, [(0, 0)])
    partition_dir(root / "L", "t-0", first + [batch(6, 3, epoch=1)], [(0, 0), (1, 6)])
    high_watermarks(root / "O", {"t-0": 6})
    high_watermarks(root / "L", {"t-0": 9})
    result = replay_paths([f"O={root / 'O' / 't-0'}", f"L={root / 'L' / 't-0'}"])
    assert result.leader.name == "L", "the new leader wins the replay"
    return analyze_impact(result).to_dict()


@pytest.mark.parametrize(("v2", "expected"), [
    (False, (0, 10, 0, 4, "out_of_order_sequence")),
    (True, (2, 0, 1, -1, "accepted")),
])
def test_next_batch_follows_the_epoch_the_lost_marker_gave(tmp_path: Path, v2: bool,
                                                           expected: tuple[int, int, int, int, str]) -> None:
    impact = _replicas(tmp_path, v2)
    assert len(impact["producers"]) == 1, f"producers with lost writes: {impact['producers']}"
    p = impact["producers"][0]
    assert (p["first_offset"], p["last_offset"], p["records_lost"]) == (6, 10, 5), "the second transaction is lost"
    got = (p["next_producer_epoch"], p["next_sequence"], p["leader_producer_epoch"], p["leader_last_sequence"],
           p["next_append"])
    assert got == expected, "(next epoch, next sequence, leader's epoch, leader's last sequence, verdict)"
    assert impact["transactions"] == [], "no transaction is left open: the leader has the first one's marker"


@pytest.mark.parametrize(("state", "expected"), [("PrepareCommit", "open"), ("CompleteCommit", "hanging")])
def test_a_lost_marker_hangs_unless_the_coordinator_still_owes_it(tmp_path: Path, state: str, expected: str) -> None:
    """Producer 300's transaction (0..4) is on both replicas, its COMMIT (5) on O alone, which truncates to 5. The
    coordinator's record decides: PrepareCommit with t-0 means it sends the marker again when it loads the record
    (the transaction is open until then); CompleteCommit means no marker comes again (hanging)."""
    txn = [_txn(0, 0, 0)]
    partition_dir(tmp_path / "O", "t-0", txn + [marker(5, PID)], [(0, 0)])
    partition_dir(tmp_path / "L", "t-0", txn + [batch(5, 3, epoch=1)], [(0, 0), (1, 5)])
    high_watermarks(tmp_path / "O", {"t-0": 5})
    high_watermarks(tmp_path / "L", {"t-0": 8})
    coordinator = tmp_path / "coordinator"
    partition_dir(coordinator, "__transaction_state-0",
                  [batch(0, [(txn_key("tx-300"), txn_value(PID, state, {"t": [0]} if state[0] == "P" else {},
                                                                 TS + 10))])], [(0, 0)])
    high_watermarks(coordinator, {"__transaction_state-0": 1})
    result = replay_paths([f"O={tmp_path / 'O' / 't-0'}", f"L={tmp_path / 'L' / 't-0'}"])
    txns = read_impact(result, [coordinator]).to_dict()["transactions"]
    assert [(t["first_offset"], t["state"]) for t in txns] == [(0, expected)], f"transactions: {txns}"
    assert "COMMIT marker at offset 5 was lost" in txns[0]["cause"], f"the cause names the lost marker: {txns}"


def kept_row(producer_epoch: int, base_sequence: int, base_offset: int, last_offset: int) -> BatchInfo:
    """A producer's batch as `BatchHistory` keeps it (its row view)."""
    return BatchInfo(0, 100, 2, base_offset, last_offset, last_offset - base_offset + 1, 0, 0, True, 0, 0, 0,
                     -1, -1, 7, producer_epoch, base_sequence, False, False, False)


def test_batch_history_forgets_on_another_epoch_markers_included() -> None:
    """The batches kept for duplicate detection follow `ProducerEntry`'s epoch rule (`forgets`): a transactions v2
    marker (epoch + 1) drops them, a marker of the same epoch (v1) keeps them."""
    history = BatchHistory()
    history.add(kept_row(0, 0, 0, 4))
    history.meet(0)
    assert [b.last_sequence for b in history.batches] == [4], "a v1 marker (same epoch) keeps the batches"
    history.meet(1)
    assert list(history.batches) == [], "a v2 marker (epoch + 1) forgets them"
    for i in range(7):
        history.add(kept_row(1, i, 10 + i, 10 + i))
    assert [b.base_sequence for b in history.batches] == [2, 3, 4, 5, 6], "the last five are kept"
    assert forgets(1, 2) and not forgets(2, 2), "the rule itself"
