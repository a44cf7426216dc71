"""`python -m bench` runs and reports every contender and every goal on tiny inputs (no timing checks)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.bench
ROOT = Path(__file__).resolve().parents[2]


def bench(*args: str) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "bench", "--format", "json", *args],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    report: dict[str, Any] = json.loads(out.stdout)
    return report


def test_quick_bench_json() -> None:
    report = bench("--quick", "--no-goals", "--size", "0.1")
    assert {"machine", "inputs", "results", "ratios", "peak_rss_mib", "first_call_s",
            "scan_peak_rss_mib"} <= set(report)
    assert "goals" not in report
    assert set(report["inputs"]) == {"large", "tiny", "lz4", "zstd", "snappy", "gzip"}
    rows = {(r["task"], r["input"], r["impl"]): r for r in report["results"]}
    for name in report["inputs"]:
        for task in ("walk", "decode"):
            mine = rows[(task, name, "replog")]
            assert "error" not in mine and mine["mb_s"] > 0 and mine["records_s"] > 0
            assert set(report["ratios"][task][name]) >= {"aiokafka", "kafka-python"}
    assert rows[("walk", "large", "ceiling-crc32c")]["mb_s"] > 0


def test_goals_on_tiny_inputs_kept_and_reused(tmp_path: Path) -> None:
    report = bench("--goals", "--goal-size", "1", "--goal-small", "0.25", "--inputs", str(tmp_path))
    assert "results" not in report and "spark" not in report["goals"]
    goals = report["goals"]
    assert goals["inputs"]["size_bytes"] == 1 << 20 and goals["startup_seconds"] > 0
    assert all(seconds > 0 for seconds in goals["inputs"]["build_seconds"].values())
    for shape in ("large", "tiny"):
        g = goals["doctor"][shape]
        assert g["errors"] == 0 and g["bytes"] >= 1 << 20
        assert g["aiokafka_seconds"] > 0 and g["doctor_seconds"] > 0 and g["command"]["returncode"] == 0
        assert g["ratio"] > 0 and isinstance(g["met"], bool)
        assert g["command_ratio"] is None or g["command_ratio"] > 0
    rss = {(r["command"], r["bytes"]): r for r in goals["rss"]}
    commands = {"ls", "doctor", "recover", "dump --deep", "replay", "repair"}
    assert set(rss) == {(c, size) for c in commands for size in (1 << 20, 1 << 18)}
    for row in rss.values():
        assert row["returncode"] in (0, 1) and row["peak_rss_mib"] > 0 and row["seconds"] > 0, row
    replay = goals["replay"]
    assert replay["leader"] == "broker-1" and replay["lost_records"] > 0 and replay["ratio"] > 0
    repair = goals["repair"]
    assert repair["cp_seconds"] > 0 and repair["cp_sync_seconds"] > 0 and repair["ratio"] > 0
    assert repair["command"]["returncode"] in (0, 1)
    assert not (tmp_path / ".scratch").exists()  # command outputs and copies are removed
    from bench import goals as module
    _, built = module.prepare(tmp_path, 1 << 20, 1 << 18)
    assert set(built.values()) == {0.0}  # built once, reused
