"""`python -m bench.writer` on a small partition: it runs, reports every contender, the logs it writes
are the input's (no timing checks)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.bench
ROOT = Path(__file__).resolve().parents[2]


def test_writer_bench_json(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "bench.writer", "--gib", "0.02", "--dir", str(tmp_path / "b"),
                          "--recover"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["bytes"] > 20_000_000 and report["batches"] > 200_000
    for name in ("cp", "cp_sync", "write_partition_runs", "recover"):
        assert report[name]["seconds"] > 0
    writer = report["write_partition_runs"]
    assert writer["logs_identical_to_input"] and writer["peak_rss_mib"] > 0 and writer["vs_cp"] > 0
    assert report["recover"]["verified"] and report["recover"]["log_end_offset"] == report["batches"]
    assert not (tmp_path / "b").exists()
