"""`replog doctor` and `replog recover` through the CLI: exit codes and JSON shapes."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from replog.toolkit.cli import app
from tests.recovery.kafka.log_dirs import batches_of, build_log_dir, flip, seg_path, tree_hashes

runner = CliRunner()
REPLOG = Path(sys.executable).parent / "replog"


def test_doctor_json_shape_and_exit_codes(tmp_path: Path) -> None:
    pdir, bases = build_log_dir(tmp_path / "in")
    res = runner.invoke(app, ["doctor", str(tmp_path / "in"), "--format", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert set(doc) == {"inputs", "findings", "summary"}
    assert doc["summary"] == {"errors": 0, "warnings": 0, "infos": 0}
    assert all(set(i) == {"path", "size", "sha256"} for i in doc["inputs"])
    log = seg_path(pdir, bases[0])
    target = batches_of(log, 0)[1]
    flip(log, target.position + 70)
    res = runner.invoke(app, ["doctor", str(pdir), "--format", "json"])
    assert res.exit_code == 1
    [f] = json.loads(res.stdout)["findings"]
    assert set(f) == {"code", "severity", "path", "position", "offset", "message"}
    assert (f["code"], f["position"], f["offset"]) == ("KAFKA_BATCH_CRC_MISMATCH", target.position, target.base_offset)
    assert runner.invoke(app, ["doctor", str(tmp_path / "missing")]).exit_code == 2
    table = runner.invoke(app, ["doctor", str(pdir), "--format", "table"])
    assert table.exit_code == 1 and "KAFKA_BATCH_CRC_MISMATCH" in table.stdout


def test_doctor_manifest(tmp_path: Path) -> None:
    build_log_dir(tmp_path / "in")
    before = tree_hashes(tmp_path / "in")
    manifest = tmp_path / "evidence.json"
    res = runner.invoke(app, ["doctor", str(tmp_path / "in"), "--manifest", str(manifest), "-f", "json"])
    assert res.exit_code == 0
    doc = json.loads(manifest.read_text())
    assert {"tool", "version", "created_utc", "command_line", "inputs"} <= set(doc)
    assert {Path(i["path"]).relative_to(tmp_path / "in").as_posix(): i["sha256"] for i in doc["inputs"]}.items() \
        <= before.items()
    assert tree_hashes(tmp_path / "in") == before
    inside = runner.invoke(app, ["doctor", str(tmp_path / "in"), "--manifest", str(tmp_path / "in" / "m.json")])
    assert inside.exit_code == 2 and not (tmp_path / "in" / "m.json").exists()


def test_recover_json_and_refusals(tmp_path: Path) -> None:
    pdir, bases = build_log_dir(tmp_path / "in")
    log = seg_path(pdir, bases[1])
    target = batches_of(log, bases[1])[2]
    flip(log, target.position + 70)
    res = runner.invoke(app, ["recover", str(pdir), "--out", str(tmp_path / "out"), "--format", "json"])
    assert res.exit_code == 1, res.output  # it reports the CRC mismatch it met: an error finding
    doc = json.loads(res.stdout)
    assert {"output", "truncated_to", "valid_bytes", "salvaged", "findings", "dropped"} <= set(doc)
    assert (doc["truncated_to"], doc["valid_bytes"]) == (target.base_offset, target.position)
    assert runner.invoke(app, ["recover", str(pdir), "--out", str(tmp_path / "out")]).exit_code == 2
    res = runner.invoke(app, ["recover", str(pdir), "--out", str(tmp_path / "out"), "--salvage", "--force",
                              "-f", "json"])
    assert res.exit_code == 1
    assert json.loads(res.stdout)["salvaged"][0]["first_offset"] == target.next_offset
    assert runner.invoke(app, ["recover", str(pdir), "--out", str(pdir / "x")]).exit_code == 2


def test_console_script_subprocess(tmp_path: Path) -> None:
    pdir, bases = build_log_dir(tmp_path / "in")
    flip(seg_path(pdir, bases[0]), 70)
    proc = subprocess.run([str(REPLOG), "doctor", str(tmp_path / "in"), "--format", "json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout)["summary"]["errors"] == 1
    proc = subprocess.run([str(REPLOG), "recover", str(pdir), "--out", str(tmp_path / "out"), "-f", "json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr  # the damage it met is an error finding; the output is clean
    assert json.loads(proc.stdout)["truncated_to"] == 0
    proc = subprocess.run([str(REPLOG), "doctor", str(tmp_path / "out"), "-f", "json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout
