"""A fleet scan's replica sets and replay elect the same leader from the same replicas (one rule)."""
from __future__ import annotations

from pathlib import Path

from replog.recovery.kafka.replay import replay_paths
from replog.spark.replica_sets import assemble_replica_set
from tests.recovery.kafka.independent import write_replica


def test_fleet_and_replay_elect_the_same_leader(tmp_path: Path) -> None:
    """`a` has the newest epoch but stops below the high watermark `b` recorded, so `a` is no clean
    candidate: both elect `b` (the old fleet rule, newest epoch first, took `a`)."""
    a = write_replica(tmp_path, "a", [(0, 3, 1), (4, 7, 3)], [(1, 0), (3, 4)], 0, tag=b"a")
    b = write_replica(tmp_path, "b", [(0, 3, 1), (4, 11, 2)], [(1, 0), (2, 4)], 10, tag=b"b")
    result = replay_paths([f"a={a}", f"b={b}"])
    facts = [{"broker": r.replica.name, "log_end_offset": r.replica.log_end_offset,
              "high_watermark": r.replica.high_watermark, "latest_epoch": r.replica.epochs.latest_epoch,
              "divergent_offset": 4, "records_from_d": 4, "committed_from_d": 0}
             for r in result.replicas]
    row = assemble_replica_set("t", 0, facts)
    assert result.leader.name == "b"
    assert row["kept"] == ["b"] and row["diverged"] == ["a"]
