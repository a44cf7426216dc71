"""No command writes inside (or around) any resolved input: symlinked partition dirs, log dirs with only
`meta.properties`, RocketMQ stores, a fleet scan read by `fleet report`.

The layout of the issue: `in/A/t-0 -> ../../elsewhere/t-0` (A's partition lives on another disk) and
`in/B`, a broker log dir holding `meta.properties` and no offset checkpoint. Before, `recover` checked
only A's log dir (not the resolved partition dir) and did not count B's dir as a log dir, and
`replay --html` of RocketMQ stores and `fleet report --html` had no check at all. Every refusal exits 2
and leaves every byte under the test's root as it was.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replog.formats.kafka import names
from replog.toolkit.cli import app
from tests.recovery.rocketmq.stores import build, spec
from tests.reliability.procs import REPLOG, run
from tests.reliability.trees import sha256_tree, unclean_pair

runner = CliRunner()


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(root, A's partition dir as named, B's partition dir); see the module docstring."""
    a, b = unclean_pair(tmp_path / "in")
    (tmp_path / "elsewhere").mkdir()
    shutil.move(a, tmp_path / "elsewhere" / "t-0")
    a.symlink_to(Path("..") / ".." / "elsewhere" / "t-0", target_is_directory=True)
    (b.parent / names.REPLICATION_OFFSET_CHECKPOINT).unlink()
    (b.parent / names.META_PROPERTIES).write_bytes(b"version=0\nbroker.id=2\ncluster.id=c\n")
    return tmp_path, a, b


def refused(args: list[str], root: Path, subprocess: bool = False) -> str:
    """Run `args`; it must exit 2 with an overlap message and change nothing under `root`."""
    before = sha256_tree(root)
    if subprocess:
        r = run(args)
        code, text = r.code, r.stderr
    else:
        res = runner.invoke(app, args)
        code, text = res.exit_code, res.output
    assert code == 2, f"{args[0]} exited {code}, not 2 (refused):\n{text}"
    assert "the input" in text, f"{args[0]}'s refusal does not name the input:\n{text}"
    assert sha256_tree(root) == before, f"{args[0]} wrote before refusing"
    return text


@pytest.mark.skipif(not REPLOG.exists(), reason="console script replog not installed")
def test_recover_refuses_the_resolved_partition_dir_and_a_meta_properties_log_dir(
        layout: tuple[Path, Path, Path]) -> None:
    root, a, b = layout
    refused(["recover", str(a), "--out", str(root / "elsewhere" / "t-0" / "out")], root, subprocess=True)
    refused(["recover", str(b), "--out", str(b.parent / "recovered")], root, subprocess=True)


def test_every_kafka_writer_refuses_evidence_reached_through_a_symlink(layout: tuple[Path, Path, Path]) -> None:
    root, a, b = layout
    inside = root / "elsewhere" / "t-0"
    pair = [f"A={a}", f"B={b}", "--leader", "B"]
    refused(["repair", *pair, "--out", str(inside / "repaired")], root)
    refused(["repair", *pair, "--out", str(b.parent / "repaired")], root)
    refused(["replay", *pair, "--html", str(inside / "replay.html")], root)
    refused(["replay", *pair, "--export-lost", str(inside / "lost")], root)
    refused(["doctor", str(a.parent), "--manifest", str(inside / "manifest.json")], root)   # found by walking A
    refused(["doctor", str(b), "--manifest", str(b.parent / "manifest.json")], root)


def test_fleet_scan_and_report_refuse_their_inputs(layout: tuple[Path, Path, Path]) -> None:
    pytest.importorskip("pyspark")
    root, _, _ = layout
    refused(["fleet", "scan", str(root / "in"), "--out", str(root / "elsewhere" / "t-0" / "scan")], root)
    scan = root / "scan"
    scan.mkdir()
    refused(["fleet", "report", str(scan), "--html", str(scan / "report.html")], root)


def test_rocketmq_writers_refuse_their_stores(tmp_path: Path) -> None:
    m = build(tmp_path / "m", [spec(i) for i in range(12)]).root
    s = build(tmp_path / "s", [spec(i) for i in range(8)]).root
    refused(["replay", f"master={m}", f"slave={s}", "--html", str(m / "replay.html")], tmp_path)
    refused(["repair", f"master={m}", f"slave={s}", "--out", str(s / "repaired")], tmp_path)
    refused(["recover", str(m), "--out", str(m / "recovered")], tmp_path)
