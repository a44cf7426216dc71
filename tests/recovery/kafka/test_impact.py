"""`impact` on replicas written by kafka-python: every classification of groups, producers and transactions.

The story (offsets): both replicas share 0..52 in epoch 0, where producer 100 (idempotent) wrote twice,
producer 201 opened a transaction at 40 and producer 200 one at 50. The old leader O went on in
epoch 0: producer 200's COMMIT at 53, producer 100's sequences 20..24 at 54..58, producer 150's
0..4 at 59..63, 16 plain records at 64..79. The new leader L wrote in epoch 1 from 53: producer 150's
same batch (a retry that reached it) at 53..57 and producer 202's transaction at 58..59. L wins (its
epoch is newer and it reaches the highest high watermark); O truncates to 53 and loses 54..79.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from replog.recovery.kafka.impact import analyze_impact, impact_of_replay, read_impact
from replog.recovery.kafka.replay import replay_paths
from tests.recovery.kafka.internal_records import (
    TS,
    batch,
    high_watermarks,
    marker,
    offset_commit_key,
    offset_commit_value,
    partition_dir,
    txn_key,
    txn_value,
)

NEW = TS + 100_000   # when the new leader's history begins


def _idem(base: int, n: int, pid: int, seq: int, epoch: int = 0, ts: int | None = None) -> bytes:
    return batch(base, n, epoch=epoch, pid=pid, producer_epoch=0, seq=seq, ts=ts)


def _txn(base: int, n: int, pid: int, epoch: int = 0, ts: int | None = None) -> bytes:
    return batch(base, n, epoch=epoch, pid=pid, producer_epoch=0, seq=0, transactional=True, ts=ts)


COMMON = [_idem(0, 10, 100, 0), batch(10, 10), _idem(20, 10, 100, 10), batch(30, 10), _txn(40, 3, 201),
          batch(43, 7), _txn(50, 3, 200)]
OLD = COMMON + [marker(53, 200), _idem(54, 5, 100, 20), _idem(59, 5, 150, 0), batch(64, 16)]
NEW_LOG = COMMON + [_idem(53, 5, 150, 0, epoch=1, ts=NEW), _txn(58, 2, 202, epoch=1, ts=NEW + 10)]

GROUPS = {  # group: (committed offset, leader epoch, commit time) -> expected classification
    "behind": ((30, -1, TS + 31), "unaffected"),
    "lost": ((57, -1, TS + 58), "consumed_lost"),
    "detect": ((70, 0, TS + 71), "will_detect_truncation"),
    "reset": ((75, -1, TS + 76), "will_reset"),
    "read-new": ((59, -1, NEW + 20), "unaffected"),
    "new-epoch": ((58, 1, TS + 59), "unaffected"),
    "unknown-epoch": ((55, 7, TS + 56), "will_reset"),   # L knows no epoch 7: validation resets by policy
}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_impact_fleet(tmp_path_factory.mktemp("impact"))


def build_impact_fleet(root: Path) -> Path:
    """root/O/t-0 and root/L/t-0 (the two replicas), root/coordinator (__consumer_offsets-0 and
    __transaction_state-0 with every group and transactional id of the story)."""
    partition_dir(root / "O", "t-0", OLD, [(0, 0)])
    partition_dir(root / "L", "t-0", NEW_LOG, [(0, 0), (1, 53)])
    commits = [batch(i, [(offset_commit_key(g, "t", 0), offset_commit_value(c, ts, e))], ts=ts)
               for i, (g, ((c, e, ts), _)) in enumerate(GROUPS.items())]
    commits.append(batch(len(commits), [(offset_commit_key("other", "t", 1), offset_commit_value(60, TS))]))
    offsets = root / "coordinator"
    partition_dir(offsets, "__consumer_offsets-0", commits, [(0, 0)])
    partition_dir(offsets, "__transaction_state-0", [
        batch(0, [(txn_key("tx-200"), txn_value(200, "CompleteCommit", {}, TS + 60))]),
        batch(1, [(txn_key("tx-201"), txn_value(201, "Ongoing", {"t": [0]}, TS + 40))]),
        batch(2, [(txn_key("tx-202"), txn_value(202, "CompleteCommit", {}, NEW + 30))]),
        batch(3, [(txn_key("tx-gone"), txn_value(203, "Ongoing", {"t": [0]}, TS))]),
        batch(4, [(txn_key("tx-gone"), None)])], [(0, 0)])
    high_watermarks(root / "O", {"t-0": 53})
    high_watermarks(root / "L", {"t-0": 60})
    high_watermarks(offsets, {"__consumer_offsets-0": len(commits), "__transaction_state-0": 5})
    return root


@pytest.fixture(scope="module")
def impact(fleet: Path) -> dict:
    result = replay_paths([f"O={fleet / 'O' / 't-0'}", f"L={fleet / 'L' / 't-0'}"])
    assert result.leader.name == "L"
    return read_impact(result, [fleet / "coordinator"]).to_dict()


def test_groups_are_classified_by_the_consumers_rules(impact: dict) -> None:
    groups = {g["group"]: g for g in impact["consumer_groups"]}
    assert {g: row["classification"] for g, row in groups.items()} == {g: c for g, (_, c) in GROUPS.items()}
    assert impact["log_end_offset_after"] == 60 and impact["leader"] == "L"
    lost = groups["lost"]   # read 54..56 of O (53 was a marker), goes on at 57 past L's 53..56
    assert (lost["records_consumed_lost"], lost["first_lost_offset"], lost["last_lost_offset"]) == (3, 54, 56)
    assert (lost["first_lost_timestamp"], lost["last_lost_timestamp"]) == (TS + 54, TS + 56)
    assert lost["read_from"] == "O" and lost["resumes_at"] == 57 and lost["records_skipped"] == 4
    detect = groups["detect"]   # L answers epoch 0 ends at 53
    assert (detect["resumes_at"], detect["records_consumed_lost"], detect["committed_leader_epoch"]) == (53, 16, 0)
    assert "reads the 7 records now at 53..59" in detect["explanation"], "L's records from 53 to its end 60"
    reset = groups["reset"]     # 75 is past L's end 60: auto.offset.reset, and L's 53..59 are never read with latest
    assert reset["resumes_at"] is None and reset["records_consumed_lost"] == 21 and reset["records_skipped"] == 7
    for name in ("behind", "read-new", "new-epoch"):
        assert groups[name]["records_consumed_lost"] == 0 and groups[name]["resumes_at"] == GROUPS[name][0][0]
    assert groups["unknown-epoch"]["resumes_at"] is None and "knows no end" in groups["unknown-epoch"]["explanation"]
    assert impact["summary"]["groups_affected"] == 4 and impact["summary"]["records_consumed_lost"] == 21


def test_producers_get_the_brokers_sequence_verdicts(impact: dict) -> None:
    producers = {p["producer_id"]: p for p in impact["producers"]}
    assert set(producers) == {100, 150}
    p100 = producers[100]   # L's last sequence is 19: 25 is out of order, a retry of 20 fits
    assert (p100["first_sequence"], p100["last_sequence"], p100["records_lost"]) == (20, 24, 5)
    assert (p100["leader_last_sequence"], p100["next_append"], p100["retry"]) == (19, "out_of_order_sequence",
                                                                                 "accepted")
    assert not p100["acknowledged"]   # above O's high watermark 53
    p150 = producers[150]   # L holds the same batch: a retry is a duplicate, the next batch follows on
    assert (p150["retry"], p150["next_append"], p150["leader_last_sequence"]) == ("duplicate", "accepted", 4)


def test_transactions_open_and_hanging(impact: dict) -> None:
    txns = {t["producer_id"]: t for t in impact["transactions"]}
    assert {p: t["state"] for p, t in txns.items()} == {201: "open", 200: "hanging", 202: "hanging"}
    assert "COMMIT marker at offset 53 was lost" in txns[200]["cause"]
    assert "CompleteCommit" in txns[202]["cause"] and txns[202]["coordinator"]["transactional_id"] == "tx-202"
    assert txns[201]["first_offset"] == 40 and impact["last_stable_offset_after"] == 40
    before = {b["replica"]: b for b in impact["transactions_before"]}
    assert [t["producer_id"] for t in before["O"]["open"]] == [201]
    assert [t["producer_id"] for t in before["L"]["open"]] == [201, 200, 202]
    assert impact["summary"]["hanging_transactions"] == 2


def test_replay_adds_impact_only_when_consumer_offsets_are_found(fleet: Path) -> None:
    result = replay_paths([f"O={fleet / 'O' / 't-0'}", f"L={fleet / 'L' / 't-0'}"])
    assert impact_of_replay(result) is None
    assert impact_of_replay(result, [fleet / "coordinator"]) is not None
    bare = analyze_impact(result)   # no internal topics at all: producers and transactions still
    assert bare.groups == [] and {w.producer_id for w in bare.producers} == {100, 150}
    assert {t.producer_id: t.state for t in bare.transactions} == {201: "open", 200: "hanging", 202: "open"}
