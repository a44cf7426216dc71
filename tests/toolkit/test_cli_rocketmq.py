"""`replog ls|replay|repair` on RocketMQ stores through typer's runner: JSON shapes and exit codes."""
from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from replog.toolkit.cli import app
from tests.recovery.rocketmq.stores import build, spec, tree_digest

runner = CliRunner()
REPLICA_FIELDS = {"name", "path", "log_end_offset_before", "high_watermark_before", "truncated_to",
                  "log_end_offset_after", "high_watermark_after", "diverged_at", "lost"}
LOST_FIELDS = {"records", "first_offset", "last_offset", "bytes"}


def stores(tmp_path: Path, slave_n: int, master_n: int = 30) -> tuple[Path, Path]:
    m = build(tmp_path / "m", [spec(i) for i in range(master_n)])
    s = build(tmp_path / "s", [spec(i) for i in range(slave_n)])
    return m.root, s.root


def test_ls_store_json_and_jsonl(tmp_path: Path) -> None:
    m, _ = stores(tmp_path, 0, 12)
    res = runner.invoke(app, ["ls", str(m), "--format", "json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert d["store"]["messages"] == 12 and d["store"]["min_offset"] == 0
    rows = {(r["topic"], r["queue_id"]): r for r in d["queues"]}
    assert set(rows) == {("orders", 0), ("orders", 1)}
    assert rows[("orders", 0)]["messages"] == 6 and rows[("orders", 0)]["max_queue_offset"] == 5
    assert rows[("orders", 0)]["cq_max_offset"] == 6
    lines = [json.loads(x) for x in runner.invoke(app, ["ls", str(m), "--format", "jsonl"]).output.splitlines()]
    assert [x["kind"] for x in lines] == ["queue", "queue", "store"]
    assert runner.invoke(app, ["ls", str(m), "--format", "table"]).exit_code == 0


def test_replay_json_shape_and_exit_codes(tmp_path: Path) -> None:
    m, s = stores(tmp_path, 10)
    before = tree_digest(tmp_path)
    res = runner.invoke(app, ["replay", f"master={m}", f"slave={s}", "--format", "json",
                              "--html", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert d["system"] == "rocketmq" and d["protocol"] == "classic" and d["leader"] == "master"
    for r in d["replicas"]:
        assert REPLICA_FIELDS <= r.keys() and LOST_FIELDS <= r["lost"].keys()
    assert all({"step", "kind", "replica"} <= e.keys() for e in d["events"])
    assert (tmp_path / "r.html").read_text().startswith("<!doctype html>")
    (tmp_path / "r.html").unlink()
    assert tree_digest(tmp_path) == before
    ahead = runner.invoke(app, ["replay", f"master={s}", f"slave={m}", "--format", "json"])
    assert ahead.exit_code == 1
    assert json.loads(ahead.output)["replicas"][1]["stall"]["cause"] == "slave_ahead"
    table = runner.invoke(app, ["replay", f"master={m}", f"slave={s}", "--protocol", "autoswitch",
                                "--format", "table"])
    assert table.exit_code == 0 and "Transcript" in table.output


def test_repair_writes_verified_stores(tmp_path: Path) -> None:
    m, s = stores(tmp_path, 10)
    out = tmp_path / "out"
    res = runner.invoke(app, ["repair", f"master={m}", f"slave={s}", "--out", str(out), "--format", "json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert d["output"] == str(out) and {r["name"] for r in d["repaired"]} == {"master", "slave"}
    assert all(r["identical_to_master"] and not r["problems"] for r in d["repaired"])
    again = runner.invoke(app, ["repair", f"master={m}", f"slave={s}", "--out", str(out), "--format", "json"])
    assert again.exit_code == 2                       # non-empty output without --force
    forced = runner.invoke(app, ["repair", f"master={m}", f"slave={s}", "--out", str(out), "--force",
                                 "--format", "json"])
    assert forced.exit_code == 0
    inside = runner.invoke(app, ["repair", f"master={m}", f"slave={s}", "--out", str(m / "x")])
    assert inside.exit_code == 2


def test_bad_protocol_is_a_usage_error(tmp_path: Path) -> None:
    m, s = stores(tmp_path, 5)
    res = runner.invoke(app, ["replay", f"master={m}", f"slave={s}", "--protocol", "hw"])
    assert res.exit_code == 2 and "Traceback" not in res.output
