"""`replog impact`, and the impact section of replay and repair, through a real process."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from replog.toolkit.impact_view import print_impact
from tests.recovery.kafka.test_impact import build_impact_fleet
from tests.toolkit.test_cli import run_replog


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_impact_fleet(tmp_path_factory.mktemp("cli-impact"))


def _replicas(fleet: Path) -> list[str]:
    return [f"O={fleet / 'O' / 't-0'}", f"L={fleet / 'L' / 't-0'}"]


def test_impact_json_exits_1_and_its_table_names_every_group(fleet: Path) -> None:
    proc = run_replog("impact", *_replicas(fleet), "--offsets", str(fleet / "coordinator"), "--format", "json")
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert {"topic", "partition", "log_end_offset_after", "consumer_groups", "producers", "transactions"} <= set(doc)
    assert {g["group"]: g["classification"] for g in doc["consumer_groups"]}["detect"] == "will_detect_truncation"
    for g in doc["consumer_groups"]:
        assert {"group", "committed_offset", "committed_leader_epoch", "classification", "records_consumed_lost",
                "first_lost_offset", "last_lost_offset"} <= set(g)
    producer = doc["producers"][0]
    assert {"producer_id", "producer_epoch", "records_lost", "first_sequence", "last_sequence"} <= set(producer)
    assert {"producer_id", "producer_epoch", "first_offset", "state", "cause"} <= set(doc["transactions"][0])
    out = io.StringIO()
    print_impact(doc, Console(file=out, width=120, highlight=False))
    assert all(word in out.getvalue() for word in ("behind", "detect", "reset", "hanging", "OUT_OF_ORDER"))


def test_replay_and_repair_carry_the_impact_when_offsets_are_given(fleet: Path, tmp_path: Path) -> None:
    html = tmp_path / "replay.html"
    proc = run_replog("replay", *_replicas(fleet), "--offsets", str(fleet / "coordinator"), "--html", str(html),
                      "--format", "json")
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout)["impact"]["summary"]["hanging_transactions"] == 2
    page = html.read_text()
    assert "Impact on consumers, producers and transactions" in page and page.rstrip().endswith("</html>")
    repaired = run_replog("repair", *_replicas(fleet), "--offsets", str(fleet / "coordinator"), "--out",
                          str(tmp_path / "out"), "--format", "json")
    assert repaired.returncode == 1 and json.loads(repaired.stdout)["impact"]["leader"] == "L"


def test_offsets_that_are_not_a_directory_exit_2(fleet: Path, tmp_path: Path) -> None:
    proc = run_replog("impact", *_replicas(fleet), "--offsets", str(tmp_path / "missing"), "--format", "json")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and proc.stdout == ""


def test_rocketmq_impact(tmp_path: Path) -> None:
    from replog.samples.rocketmq_fleet import generate_rocketmq_samples

    generate_rocketmq_samples(tmp_path / "rmq")
    proc = run_replog("impact", f"master={tmp_path / 'rmq' / 'master'}", f"slave={tmp_path / 'rmq' / 'slave'}",
                      "--protocol", "autoswitch", "--format", "json")
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["system"] == "rocketmq" and doc["summary"]["groups_affected"] == 2
    assert all({"committed_offset", "max_offset_after"} <= set(g) for g in doc["consumer_groups"])
    replay = run_replog("replay", f"master={tmp_path / 'rmq' / 'master'}", f"slave={tmp_path / 'rmq' / 'slave'}",
                        "--protocol", "autoswitch", "--format", "json")
    assert replay.returncode == 1 and json.loads(replay.stdout)["impact"] == doc  # the stores hold their offsets
    table = run_replog("replay", f"master={tmp_path / 'rmq' / 'master'}", f"slave={tmp_path / 'rmq' / 'slave'}",
                       "--protocol", "autoswitch")
    assert all(g["group"] in table.stdout for g in doc["consumer_groups"] if g["classification"] != "unaffected")
