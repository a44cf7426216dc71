"""The sample RocketMQ stores: the planted damage and divergence are really there."""
from __future__ import annotations

from pathlib import Path

from replog.recovery.rocketmq.doctor import diagnose_store
from replog.recovery.rocketmq.ha import replay_paths
from replog.samples.rocketmq_fleet import MASTER_TAIL, SLAVE_TAIL, generate_rocketmq_samples


def test_damaged_store_has_exactly_the_planted_defects(tmp_path: Path) -> None:
    planted = generate_rocketmq_samples(tmp_path / "rocketmq")
    findings, _ = diagnose_store(tmp_path / "rocketmq" / "damaged")
    found = {(f.code, f.offset) for f in findings if f.severity.value != "info"}
    assert found == {(d["code"], d["offset"]) for d in planted["damage"]}
    for store in ("master", "slave"):
        assert not [f for f in diagnose_store(tmp_path / "rocketmq" / store)[0] if f.severity.value == "error"]


def test_slave_truncates_at_the_planted_consistent_point(tmp_path: Path) -> None:
    planted = generate_rocketmq_samples(tmp_path / "rocketmq")
    div = planted["divergences"][0]
    root = tmp_path / "rocketmq"
    d = replay_paths([f"master={root / 'master'}", f"slave={root / 'slave'}"], protocol="autoswitch").to_dict()
    slave = next(r for r in d["replicas"] if r["name"] == "slave")
    assert slave["truncated_to"] == div["consistent_point"] and slave["lost"]["records"] == SLAVE_TAIL
    master = next(r for r in d["replicas"] if r["name"] == "master")
    assert slave["log_end_offset_after"] == master["log_end_offset_after"]
    assert MASTER_TAIL > 0


def test_impact_finds_the_planted_consumers_and_metadata(tmp_path: Path) -> None:
    from replog.recovery.rocketmq.impact import analyze_rocketmq_impact

    planted = generate_rocketmq_samples(tmp_path / "rocketmq")["divergences"][0]["impact"]
    root = tmp_path / "rocketmq"
    impact = analyze_rocketmq_impact(replay_paths([f"master={root / 'master'}", f"slave={root / 'slave'}"],
                                                  protocol="autoswitch")).to_dict()
    slave = {f"{g['topic']}@{g['group']}/{g['queue_id']}": g["classification"]
             for g in impact["consumer_groups"] if g["store"] == "slave"}
    assert slave == planted["slave_groups"]
    assert impact["summary"]["messages_consumed_lost"] == planted["messages_consumed_lost"]
    found: dict[str, list[str]] = {}
    for d in impact["metadata_differences"]:
        found.setdefault(d["file"], []).append(d["key"])
    assert found == planted["metadata_differences"]
