"""`replog fleet scan`'s new options refused before any Spark starts: a real process each, exit 2, one line."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.spark.fleet_builder import build_divergent_fleet

REPLOG = Path(sys.executable).parent / "replog"


def _scan(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(REPLOG), "fleet", "scan", *args], capture_output=True, text=True, timeout=60)


def test_usage_errors_before_spark(tmp_path: Path) -> None:
    build_divergent_fleet(tmp_path / "fleet")
    out, fleet = str(tmp_path / "out"), str(tmp_path / "fleet")
    cases = {
        "give at least one PATH": _scan("--out", out),
        "expected KEY=VALUE": _scan(fleet, "--out", out, "--conf", "spark.executor.memory"),
        "do not go together": _scan(fleet, "--out", out, "--since", fleet, "--tail"),
        "not the output of `replog fleet scan`": _scan(fleet, "--out", out, "--since", fleet),
    }
    (tmp_path / "scan" / "_replog_fleet_scan.json").parent.mkdir()
    (tmp_path / "scan" / "_replog_fleet_scan.json").write_text("{}")
    cases["is also --out"] = _scan(fleet, "--out", str(tmp_path / "scan"), "--since", str(tmp_path / "scan"))
    for needle, run in cases.items():
        assert run.returncode == 2 and needle in " ".join(run.stderr.split()), (needle, run.stderr)
        assert run.stdout == ""
    assert not (tmp_path / "out").exists()
