"""The sample fleet end to end: doctor finds every planted defect, replay every planted divergence."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from replog.recovery.doctor import diagnose
from replog.recovery.kafka.replay import replay_paths
from replog.samples.kafka_fleet import generate_kafka_fleet


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("fleet") / "kafka"
    generate_kafka_fleet(root, seed=11)
    return root, json.loads((root / "PLANTED.json").read_text())


def test_doctor_reports_every_planted_defect_where_it_was_planted(fleet: tuple[Path, dict]) -> None:
    root, planted = fleet
    report = diagnose([root / b for b in planted["brokers"]])
    found = {(f.code, str(Path(f.path).relative_to(root)), f.position) for f in report.findings}
    found_loose = {(f.code, str(Path(f.path).relative_to(root))) for f in report.findings}
    for d in planted["damage"]:
        if d["position"] is not None and d["code"] != "KAFKA_INDEX_ZERO_TAIL":
            assert (d["code"], d["file"], d["position"]) in found, d
        else:
            assert (d["code"], d["file"]) in found_loose, d


def test_replay_finds_the_planted_divergence(fleet: tuple[Path, dict]) -> None:
    root, planted = fleet
    for div in planted["divergences"]:
        specs = [f"{b}={root / b / div['dir']}" for b in planted["brokers"]]
        result = replay_paths(specs).to_dict()
        assert result["leader"] == div["leader"]
        by_name = {r["name"]: r for r in result["replicas"]}
        for name in div["diverged_replicas"]:
            assert by_name[name]["diverged_at"] == div["first_divergent_offset"]
            assert by_name[name]["truncated_to"] == div["truncation_offset"]
            assert by_name[name]["lost"]["records"] == div["records_at_risk"]
        for name in div["lagging_replicas"]:
            assert by_name[name]["diverged_at"] is None and by_name[name]["lost"]["records"] == 0
            assert by_name[name]["log_end_offset_after"] == by_name[div["leader"]]["log_end_offset_after"]


def test_impact_finds_what_the_divergence_did_to_groups_producers_and_transactions(fleet: tuple[Path, dict]) -> None:
    from replog.recovery.kafka.impact import read_impact

    root, planted = fleet
    div = next(v for v in planted["divergences"] if v["kind"] == "divergence")
    impact = read_impact(replay_paths([f"{b}={root / b / div['dir']}" for b in planted["brokers"]])).to_dict()
    assert {g["group"]: g["classification"] for g in impact["consumer_groups"]} == div["impact"]["groups"]
    assert [{"producer_id": t["producer_id"], "first_offset": t["first_offset"]}
            for t in impact["transactions"] if t["state"] == "hanging"] == div["impact"]["hanging_transactions"]
    assert sorted({p["producer_id"] for p in impact["producers"]}) == div["impact"]["producers_with_lost_writes"]
