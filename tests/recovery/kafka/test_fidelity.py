"""Replay against the brokers' own behaviour, on replicas written by kafka-python (issue cases)."""
from __future__ import annotations

from pathlib import Path

from replog.recovery.kafka.replay import replay_paths
from tests.recovery.kafka.independent import write_replica


def test_the_new_leader_starts_a_new_epoch(tmp_path: Path) -> None:
    """`Partition.makeLeader` caches (new epoch, log end) on the leader. b1's epoch 2 is above b0's
    latest, so b0's answer for epoch 2 is (1, 4): Kafka truncates b1 to 4, not to its HW 0."""
    b0 = write_replica(tmp_path, "b0", [(0, 0, 1), (1, 3, 1)], [(1, 0)], 0)
    b1 = write_replica(tmp_path, "b1", [(0, 0, 1), (1, 3, 1), (4, 5, 1), (6, 7, 1), (8, 8, 2)], [(1, 0), (2, 8)], 0)
    result = replay_paths([f"b0={b0}", f"b1={b1}"], leader="b0")
    d = {r["name"]: r for r in result.to_dict()["replicas"]}
    assert d["b1"]["truncated_to"] == 4 and d["b1"]["log_end_offset_after"] == 4
    assert d["b0"]["epochs_after"] == [[1, 0], [3, 4]]      # epoch 2 existed: the election made 3
    leader = next(e for e in result.transcript.events if e["kind"] == "leader")
    assert leader["leader_epoch"] == 3


def test_lost_offsets_are_the_lowest_and_highest_lost(tmp_path: Path) -> None:
    """KIP-279: the follower went through two epochs the leader never saw; two truncation rounds
    remove its tail in two pieces, out of offset order. It loses offsets 2..5, all of them."""
    lead = write_replica(tmp_path, "a", [(0, 0, 0), (1, 1, 0), (2, 2, 3)], [(0, 0), (3, 2)], 0, tag=b"a")
    foll = write_replica(tmp_path, "b", [(0, 0, 0), (1, 1, 0), (2, 3, 1), (4, 5, 2)], [(0, 0), (1, 2), (2, 4)], 0,
                         tag=b"b")
    result = replay_paths([f"a={lead}", f"b={foll}"], leader="a")
    lost = next(r for r in result.to_dict()["replicas"] if r["name"] == "b")["lost"]
    assert (lost["first_offset"], lost["last_offset"], lost["records"]) == (2, 5, 4)
