"""Copies of a KRaft metadata log replayed as the controller quorum (KIP-595), on hand-built voter logs."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from replog.recovery.kafka.epoch_cache import EpochCache
from replog.recovery.kafka.protocol import quorum_high_watermark
from replog.recovery.kafka.replay import replay_paths
from replog.recovery.kafka.writer import write_partition
from tests.recovery.kafka.independent_metadata import batch, topic_record, write_meta_properties

TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAA"


def voter(root: Path, name: str, node: int, epochs: list[tuple[int, int, int]], state: dict[str, int] | None,
          voters: tuple[int, ...] = (1, 5, 6)) -> str:
    """A controller's log dir `root/name` holding `__cluster_metadata-0`: for each (epoch, first, last) a run
    of one-record batches (a TopicRecord named t<offset>e<epoch>), and its quorum-state."""
    log_dir = root / name
    write_meta_properties(log_dir, node)
    batches = [batch(o, [topic_record(f"t{o}e{e}", TOPIC_ID)], epoch=e) for e, a, b in epochs for o in range(a, b + 1)]
    d = log_dir / "__cluster_metadata-0"
    write_partition(d, batches, epochs=EpochCache([(e, a) for e, a, _ in epochs]))
    if state is not None:
        body = state | {"votedId": -1, "appliedOffset": 0, "currentVoters": [{"voterId": v} for v in voters],
                        "data_version": 0}
        (d / "quorum-state").write_text(json.dumps(body))
    return f"{name}={d}"


@pytest.fixture
def lost_leader(tmp_path: Path) -> list[str]:
    """c1 led epoch 2 and appended 6..9 that no follower fetched; c5 won epoch 3 at offset 6, c6 follows it."""
    return [voter(tmp_path, "c1", 1, [(1, 0, 4), (2, 5, 9)], {"leaderId": 1, "leaderEpoch": 2}),
            voter(tmp_path, "c5", 5, [(1, 0, 4), (2, 5, 5), (3, 6, 8)], {"leaderId": 5, "leaderEpoch": 3}),
            voter(tmp_path, "c6", 6, [(1, 0, 4), (2, 5, 5), (3, 6, 7)], {"leaderId": 5, "leaderEpoch": 3})]


def test_quorum_replay_truncates_old_leader_at_diverging_epoch(lost_leader: list[str]) -> None:
    result = replay_paths(lost_leader)
    doc = result.to_dict()
    assert doc["leader"] == "c5", f"quorum-state names node 5 leader of epoch 3: {doc['leader_source']}"
    assert doc["leader_source"] == "quorum_state", doc["leader_source"]
    assert doc["leader_epoch"] == 3, doc["leader_epoch"]
    by = {r["name"]: r for r in doc["replicas"]}
    assert by["c1"]["truncated_to"] == 6, f"epoch 2 ends at 6 on the leader: {by['c1']['truncated_to']}"
    assert by["c1"]["lost"]["records"] == 4, f"c1 loses 6..9: {by['c1']['lost']}"
    assert by["c6"]["truncated_to"] is None, f"c6's log is the leader's prefix: {by['c6']['truncated_to']}"
    assert [r["log_end_offset_after"] for r in doc["replicas"]] == [9, 9, 9], "every voter catches up"
    q = doc["quorum"]
    assert q["voters"] == 3, q["voters"]
    assert q["high_watermark_before"] == 8, f"majority of (9, 8, 6) is 8, past epoch start 6: {q}"
    assert q["high_watermark_after"] == 9, q
    assert q["uncommitted_on_leader"] == {"first_offset": 8, "last_offset": 8}, q["uncommitted_on_leader"]
    lost = {v["name"]: v["lost_records"] for v in q["voter_states"]}
    assert lost["c1"]["topics_created"] == ["t6e2", "t7e2", "t8e2", "t9e2"], lost["c1"]
    assert lost["c5"] is None, "the leader loses nothing"


def test_no_commit_before_a_record_of_the_leaders_epoch(tmp_path: Path) -> None:
    """c5 is elected in epoch 3 but its log holds nothing of epoch 3 yet: nothing commits until its
    start-of-epoch record is held by a majority; then every record of its log does."""
    specs = [voter(tmp_path, "c1", 1, [(1, 0, 4), (2, 5, 9)], {"leaderId": 1, "leaderEpoch": 2}),
             voter(tmp_path, "c5", 5, [(1, 0, 4), (2, 5, 6)], {"leaderId": 5, "leaderEpoch": 3}),
             voter(tmp_path, "c6", 6, [(1, 0, 4), (2, 5, 5)], {"leaderId": 5, "leaderEpoch": 3})]
    q = replay_paths(specs).to_dict()["quorum"]
    assert q["start_of_epoch_pending"] is True, q
    assert q["epoch_start_offset"] == 7, q
    assert q["high_watermark_before"] is None, f"no record of epoch 3 on a majority: {q}"
    assert q["high_watermark_after"] == 7, q
    assert q["uncommitted_on_leader"] is None, "the leader holds nothing past its epoch start"


def test_without_quorum_state_the_most_up_to_date_log_wins(tmp_path: Path) -> None:
    specs = [voter(tmp_path, "c1", 1, [(1, 0, 4), (2, 5, 6)], None),
             voter(tmp_path, "c5", 5, [(1, 0, 4), (2, 5, 9)], None),
             voter(tmp_path, "c6", 6, [(1, 0, 4)], None)]
    doc = replay_paths(specs).to_dict()
    assert doc["leader"] == "c5", doc["leader_election"]
    assert doc["leader_source"] == "vote", doc["leader_source"]
    assert doc["leader_epoch"] == 3, "a new election, one above every epoch seen"


def test_user_leader_a_majority_would_vote_for_is_clean(lost_leader: list[str]) -> None:
    """c6 (last epoch 3, end 8) is at least as up to date as c1 (epoch 2): two of three vote for it; c5
    loses offset 8, which was above the commit point."""
    doc = replay_paths(lost_leader, leader="c6").to_dict()
    assert doc["leader_election"]["unclean"] is False, doc["leader_election"]
    assert doc["leader_epoch"] == 4, "a new election, one above every epoch seen"
    by = {r["name"]: r for r in doc["replicas"]}
    assert by["c5"]["lost"]["records"] == 1, f"c5 loses offset 8, which c6 never held: {by['c5']['lost']}"


def test_user_leader_a_majority_would_not_vote_for_is_unclean(lost_leader: list[str]) -> None:
    """c1's last epoch (2) is older than both others' (3): no majority votes for it."""
    doc = replay_paths(lost_leader, leader="c1").to_dict()
    assert doc["leader_election"]["unclean"] is True, doc["leader_election"]
    by = {r["name"]: r for r in doc["replicas"]}
    assert by["c5"]["lost"]["records"] == 3, f"c5 loses 6..8, committed ones among them: {by['c5']['lost']}"


def test_partition_replay_keeps_no_quorum(tmp_path: Path) -> None:
    from tests.recovery.kafka.replicas import replica_dir
    a = replica_dir(tmp_path, "b1", [(0, 1), (1, 1)], hw=2)
    b = replica_dir(tmp_path, "b2", [(0, 1)], hw=1)
    assert replay_paths([str(a), str(b)]).to_dict()["quorum"] is None, "a partition's replay has no quorum"


@pytest.mark.parametrize(("ends", "voters", "start", "expected"), [
    ([9, 8, 6], 3, 6, 8), ([9, 8, 6], 3, 8, None), ([9], 3, 0, None), ([9, 9], 3, 0, 9),
    ([5, 4, 3, 2, 1], 5, 0, 3), ([5, 4], 5, 0, None),
])
def test_quorum_high_watermark(ends: list[int], voters: int, start: int, expected: int | None) -> None:
    assert quorum_high_watermark(ends, voters, start) == expected, (ends, voters, start)


def test_repair_of_a_quorum_is_refused(lost_leader: list[str], tmp_path: Path) -> None:
    from replog.formats.errors import ReplogError
    from replog.recovery.kafka.repair import repair
    with pytest.raises(ReplogError, match="metadata log is not supported"):
        repair(replay_paths(lost_leader), tmp_path / "out")
    assert not (tmp_path / "out").exists(), "nothing is written"


def test_snapshots_and_a_damaged_quorum_state(lost_leader: list[str]) -> None:
    """The newest complete KRaft snapshot of each voter is named; a quorum-state that is no JSON is a finding on
    that voter, which then counts as recording no election (the leader still comes from the others')."""
    c6 = Path(lost_leader[2].split("=", 1)[1])
    (c6 / "00000000000000000005-0000000002.checkpoint").write_bytes(b"")
    (c6 / "00000000000000000007-0000000003.checkpoint.part").write_bytes(b"")
    c1 = Path(lost_leader[0].split("=", 1)[1])
    (c1 / "quorum-state").write_text("{not json")
    doc = replay_paths(lost_leader).to_dict()
    states = {v["name"]: v for v in doc["quorum"]["voter_states"]}
    assert states["c6"]["latest_snapshot"] == {"end_offset": 5, "epoch": 2}, "a .part snapshot is not complete"
    assert states["c1"]["quorum_state"] is None, states["c1"]
    codes = [f["code"] for f in next(r for r in doc["replicas"] if r["name"] == "c1")["findings"]]
    assert "KAFKA_QUORUM_STATE_INVALID" in codes, codes
    assert doc["leader"] == "c5", "the others' quorum-state still names node 5"
