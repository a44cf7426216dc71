"""`--running` and the stated premise through a real `replog` process (issue 26).

The replicas are written without replog's writers: batches by kafka-python's builder
(`tests.recovery.kafka.independent.kp_batch`), checkpoints as the broker's text.
"""
from __future__ import annotations

import json
from pathlib import Path

from tests.recovery.kafka.independent import kp_batch
from tests.toolkit.test_cli import run_replog

WIDE = {"COLUMNS": "400"}   # a rich console in a pipe: one sentence stays on one line


def write(root: Path, broker: str, batches: list[bytes], hw: int) -> Path:
    """`root/broker/t-0`: one segment of `batches`, an epoch checkpoint (epoch 0 from 0) and the log dir's
    high watermark checkpoint."""
    part = root / broker / "t-0"
    part.mkdir(parents=True)
    (part / "00000000000000000000.log").write_bytes(b"".join(batches))
    (part / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
    (root / broker / "replication-offset-checkpoint").write_text(f"0\n1\nt 0 {hw}\n")
    return part


def pair(tmp_path: Path) -> list[str]:
    """Leader A: 0..9 in epoch 0, HW 10. Follower B: 0..4 as A, then 5..9 of its own, HW 5."""
    a = write(tmp_path, "A", [kp_batch(0, 4, 0), kp_batch(5, 9, 0)], hw=10)
    b = write(tmp_path, "B", [kp_batch(0, 4, 0), kp_batch(5, 9, 0, tag=b"-b")], hw=5)
    return [f"A={a}", f"B={b}"]


def replica(doc: dict, name: str) -> dict:
    return next(r for r in doc["replicas"] if r["name"] == name)


def test_hw_protocol_running_follower_keeps_its_tail(tmp_path: Path) -> None:
    specs = pair(tmp_path)
    kept = run_replog("replay", *specs, "--leader", "A", "--protocol", "hw", "--running", "B", "--format", "json")
    assert kept.returncode == 0, kept.stderr   # nobody loses a record
    doc = json.loads(kept.stdout)
    b = replica(doc, "B")
    assert b["truncated_to"] is None and b["lost"]["records"] == 0 and b["diverged_at"] == 5
    assert doc["premise"]["running"] == ["A", "B"] and doc["premise"]["implied"] == ["A"]
    assert doc["premise"]["restarted"] == []
    assert doc["premise"]["source"] == "option" and b["fetcher_restarts"] is False
    restarted = run_replog("replay", *specs, "--leader", "A", "--protocol", "hw", "--format", "json")
    assert restarted.returncode == 1, restarted.stderr
    doc = json.loads(restarted.stdout)
    b = replica(doc, "B")
    assert b["truncated_to"] == 5 and b["lost"]["records"] == 5
    assert doc["premise"]["source"] == "assumed" and doc["premise"]["running"] == []


def test_premise_and_lagging_checkpoints_in_the_table(tmp_path: Path) -> None:
    specs = pair(tmp_path)
    table = run_replog("replay", *specs, "--leader", "A", "--protocol", "hw", "--format", "table", env=WIDE)
    assert "premise: every replica restarts from its copy on disk" in table.stdout
    assert "no .kafka_cleanshutdown marker" in table.stdout and "high_watermark" in table.stdout
    table = run_replog("replay", *specs, "--leader", "A", "--protocol", "hw", "--running", "B", "--format",
                       "table", env=WIDE)
    assert table.returncode == 0, table.stderr
    line = next(x for x in table.stdout.splitlines() if x.startswith("premise:"))
    assert "A keeps running and keeps leading" in line and "B keeps running" in line


def test_running_an_unknown_replica_is_a_usage_error(tmp_path: Path) -> None:
    proc = run_replog("replay", *pair(tmp_path), "--running", "C", "--format", "json")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().count("\n") == 0 and "--running 'C' is not one of A, B" in proc.stderr


def test_impact_repair_and_page_state_the_premise(tmp_path: Path) -> None:
    specs = pair(tmp_path)
    impact = run_replog("impact", *specs, "--leader", "A", "--protocol", "hw", "--running", "B", "--format", "json")
    assert impact.returncode == 0, impact.stderr
    assert json.loads(impact.stdout)["premise"]["running"] == ["A", "B"]
    out, page = tmp_path / "repaired", tmp_path / "replay.html"
    repair = run_replog("repair", *specs, "--leader", "A", "--protocol", "hw", "--running", "B", "--out", str(out),
                        "--html", str(page), "--format", "json")
    doc = json.loads(repair.stdout)
    assert doc["premise"]["running"] == ["A", "B"] and replica(doc, "B")["truncated_to"] is None
    html = page.read_text()
    assert "B keeps running" in html and "its fetcher keeps running" in html


def test_running_is_for_kafka_replicas_that_are_not_repaired_in_place(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from replog.toolkit.cli import app
    from tests.recovery.rocketmq.stores import build, spec

    runner = CliRunner()
    specs = pair(tmp_path)
    res = runner.invoke(app, ["repair", *specs, "--in-place", "--backup", str(tmp_path / "bk"), "--running", "B"])
    assert res.exit_code == 2 and "--in-place" in res.output and "--running" in res.output
    assert not (tmp_path / "bk").exists()
    m, s = build(tmp_path / "m", [spec(i) for i in range(5)]), build(tmp_path / "s", [spec(i) for i in range(3)])
    res = runner.invoke(app, ["replay", f"master={m.root}", f"slave={s.root}", "--running", "slave"])
    assert res.exit_code == 2 and "--running" in res.output and "Kafka" in res.output
