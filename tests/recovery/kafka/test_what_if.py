"""`replay --what-if` on hand-built replicas: every leader replayed, its impact read, the choices ranked.

The story: broker 2 led alone at the end and holds 0..19 (high watermark 20: a producer was told 15..19
were written); broker 3 stopped at 15, broker 4 at 10. Producer 100 (idempotent) wrote 15..19 alone. Group
"reader" committed 18 (no leader epoch), group "early" 8. The controller's record (ZooKeeper's partition
state, or a KRaft-shaped record) leaves broker 2 as the only ISR member: waiting for it loses nothing; broker 3
loses 15..19 (5 acknowledged records); broker 4 loses 10..19 (10, b3's copy of 10..14 counted once).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from replog.recovery.kafka.replay import load_inputs
from replog.recovery.kafka.what_if import CLEAN, UNCLEAN, WAIT, cluster_mode, what_if, what_if_paths
from replog.recovery.kafka.what_if_commands import UNKNOWN, ZOOKEEPER
from tests.recovery.kafka.internal_records import (
    TS,
    batch,
    high_watermarks,
    offset_commit_key,
    offset_commit_value,
    partition_dir,
)

LOG = [batch(i, 1) for i in range(15)] + [batch(15, 5, pid=100, producer_epoch=0, seq=0)]
ENDS = {2: (16, 20), 3: (15, 15), 4: (10, 10)}      # broker -> (batches kept, high watermark)


def build(root: Path) -> dict[str, Path]:
    """root/broker-N/t-0 for N = 2, 3, 4 (names give the broker ids), offsets beside broker 2."""
    out = {}
    for b, (n, hw) in ENDS.items():
        out[f"broker-{b}"] = partition_dir(root / f"broker-{b}", "t-0", LOG[:n], [(0, 0)])
        high_watermarks(root / f"broker-{b}", {"t-0": hw})
    commits = [batch(0, [(offset_commit_key("reader", "t", 0), offset_commit_value(18, TS + 30))]),
               batch(1, [(offset_commit_key("early", "t", 0), offset_commit_value(8, TS + 31))])]
    partition_dir(root / "broker-2", "__consumer_offsets-0", commits, [(0, 0)])
    return out


def state(root: Path, leader: int = -1, isr: list[int] | None = None) -> Path:
    path = root / "state.json"
    path.write_text(json.dumps({"controller_epoch": 1, "leader": leader, "leader_epoch": 1,
                                "isr": [2] if isr is None else isr}))
    return path


def specs(parts: dict[str, Path]) -> list[str]:
    return [f"{name}={path}" for name, path in parts.items()]


def test_ranks_the_controllers_choice_first_and_counts_each_lost_record_once(tmp_path: Path) -> None:
    parts = build(tmp_path)
    got = what_if_paths(specs(parts), partition_state=str(state(tmp_path)))
    order = [(c.leader, c.how) for c in got.choices]
    assert order == [("broker-2", WAIT), ("broker-3", UNCLEAN), ("broker-4", UNCLEAN)], "ranking"
    best, b3, b4 = got.choices
    assert (best.loss.records, best.loss.acknowledged) == (0, 0), "waiting for broker 2 loses nothing"
    assert (b3.loss.records, b3.loss.acknowledged, b3.loss.first_offset, b3.loss.last_offset) == (5, 5, 15, 19), \
        "broker 3 loses broker 2's tail"
    assert (b4.loss.records, b4.loss.acknowledged) == (10, 10), "broker 4 loses 10..19, b3's 10..14 counted once"
    assert [c.rank for c in got.choices] == [1, 2, 3], "ranks"
    assert b3.result.leader.explanation.startswith("broker-3 made leader by the operator (what-if)"), \
        b3.result.leader.explanation
    assert not got.loses_or_fails, "the best choice loses nothing: exit 0"


def test_impact_per_choice(tmp_path: Path) -> None:
    got = what_if_paths(specs(build(tmp_path)), partition_state=str(state(tmp_path)))
    by = {c.leader: c.to_dict() for c in got.choices}
    reader = {c: next(g for g in by[c]["consumer_groups"]["detail"] if g["group"] == "reader") for c in by}
    assert reader["broker-2"]["classification"] == "unaffected", "reader behind broker 2"
    assert (reader["broker-3"]["classification"], reader["broker-3"]["records_consumed_lost"]) == ("will_reset", 3), \
        "reader read 15..17, broker 3's log ends at 15"
    assert by["broker-4"]["consumer_groups"]["records_consumed_lost"] == 8, "reader read 10..17 that broker 4 lacks"
    assert by["broker-3"]["producers"] == [{"producer_id": 100, "records_lost": 5}], "producer 100's writes"
    assert by["broker-2"]["producers_with_lost_writes"] == 0, "nothing lost behind broker 2"


def test_zookeeper_commands_from_the_partition_state(tmp_path: Path) -> None:
    got = what_if_paths(specs(build(tmp_path)), partition_state=str(state(tmp_path)))
    rec = got.to_dict()["recommended"]
    assert (rec["mode"], rec["leader"], rec["command"]) == (ZOOKEEPER, "broker-2", "start broker 2 (broker-2) first"), \
        "recommended"
    assert "ZooKeeper-mode controller" in " ".join(rec["steps"]), rec["steps"]
    assert "broker-3 loses 5 acknowledged" not in rec["why"] and "acknowledged records lost 0 against 5" in rec["why"]


def test_unclean_command_names_the_tool_topic_and_partition(tmp_path: Path) -> None:
    """Broker 2's copy gone: only unclean choices are left, and the best says how to make it so."""
    parts = build(tmp_path)
    del parts["broker-2"]
    got = what_if_paths(specs(parts), partition_state=str(state(tmp_path)), offsets=[tmp_path / "broker-2"])
    assert got.notes and "no input replica is on broker 2" in got.notes[0], got.notes
    rec = got.recommendation
    assert (rec.leader, rec.how) == ("broker-3", CLEAN), "broker 3 reaches the highest high watermark given"
    assert rec.command == ("kafka-leader-election.sh --bootstrap-server <broker 3's listener> --election-type unclean "
                           "--topic t --partition 0"), rec.command
    assert any("keep broker 4 (broker-4) stopped" in s for s in rec.steps), rec.steps
    assert any("/brokers/topics/t/partitions/0/state" in s for s in rec.steps), "ZooKeeper: the partition state"


def test_mode_without_a_controller_record(tmp_path: Path) -> None:
    got = what_if_paths(specs(build(tmp_path)))
    assert got.mode == UNKNOWN, "no record: the mode is unknown"
    assert (got.recommended.leader, got.recommended.how) == ("broker-2", CLEAN), "the election rule's clean choice"
    assert "give --metadata for KRaft or --partition-state" in " ".join(got.recommendation.steps), \
        "the steps say the mode is not in the inputs"
    assert cluster_mode(None) == UNKNOWN, "mode word"


def test_same_usage_errors_as_replay(tmp_path: Path) -> None:
    from replog.formats.errors import ReplogError
    parts = build(tmp_path)
    with pytest.raises(ReplogError, match="at least two replicas"):
        what_if_paths(specs(parts)[:1])
    with pytest.raises(ReplogError, match="--running"):
        what_if(load_inputs(specs(parts)), running=["nobody"])


def test_commands_follow_the_mode(tmp_path: Path) -> None:
    """The same choices, told for each mode: KRaft's note names the RECOVERING leader, ZooKeeper's the znode."""
    from replog.recovery.kafka.what_if_commands import KRAFT, recommend
    got = what_if_paths(specs(build(tmp_path)), partition_state=str(state(tmp_path)))
    b4 = next(c for c in got.choices if c.leader == "broker-4")
    rest = [c for c in got.choices if c is not b4]
    kraft = recommend(b4, rest, KRAFT, "t", 0)
    assert kraft.command.startswith("kafka-leader-election.sh --bootstrap-server <broker 4's listener>"), kraft.command
    assert any("KRaft controller" in s and "RECOVERING" in s for s in kraft.steps), kraft.steps
    assert not any("/brokers/topics" in s for s in kraft.steps), "no znode in KRaft mode"
    zk = recommend(b4, rest, ZOOKEEPER, "t", 0)
    assert any("/brokers/topics/t/partitions/0/state" in s for s in zk.steps), zk.steps
    assert "against the next best, broker-2" in kraft.why, kraft.why
