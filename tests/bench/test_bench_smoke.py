"""`python -m bench --quick --format json` runs and reports every contender (no timing checks)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.bench
ROOT = Path(__file__).resolve().parents[2]


def test_quick_bench_json() -> None:
    out = subprocess.run([sys.executable, "-m", "bench", "--quick", "--format", "json", "--size", "0.1"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert {"machine", "inputs", "results", "ratios", "peak_rss_mib", "first_call_s",
            "scan_peak_rss_mib"} <= set(report)
    assert set(report["inputs"]) == {"large", "tiny", "lz4", "zstd", "snappy", "gzip"}
    rows = {(r["task"], r["input"], r["impl"]): r for r in report["results"]}
    for name in report["inputs"]:
        for task in ("walk", "decode"):
            mine = rows[(task, name, "replog")]
            assert "error" not in mine and mine["mb_s"] > 0 and mine["records_s"] > 0
            assert set(report["ratios"][task][name]) >= {"aiokafka", "kafka-python"}
    assert rows[("walk", "large", "ceiling-crc32c")]["mb_s"] > 0
    goals = report["goals"]
    assert "spark" not in goals  # only with --spark
    for name in ("doctor", "replay"):
        g = goals[name]
        assert g["seconds"] > 0 and g["walk_seconds"] > 0 and g["ratio"] > 0 and isinstance(g["met"], bool)
    assert goals["replay"]["leader"] == "broker-1" and goals["replay"]["lost_records"] > 0
