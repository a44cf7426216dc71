"""The lab's real corpus (`lab_corpus`: files real 4.4.0 and 3.9.1 brokers wrote and stopped cleanly on) read by
replog: every broker's log dir is healthy by the broker's own account (it started, served and stopped cleanly on
it), so `doctor` must find no error and no warning there, and `ls` must list every partition with the log end
that the broker's clean stop wrote as its recovery point."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.brokers import broker_view as view
from tests.brokers import lab_corpus
from tests.toolkit.test_cli import run_replog

pytestmark = pytest.mark.brokers


def broker_dirs(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.name.startswith("b") and (p / "meta.properties").is_file())


@pytest.mark.parametrize("label", sorted(lab_corpus.LABELS))
def test_doctor_finds_nothing_wrong_in_what_real_brokers_wrote(label: str) -> None:
    root = lab_corpus.ensure(label)
    dirs = broker_dirs(root)
    assert len(dirs) == 3, f"{label}: the corpus holds {len(dirs)} broker log dirs"
    done = run_replog("doctor", *map(str, dirs), "--format", "json")
    assert done.returncode == 0, f"{label}: doctor exited {done.returncode}:\n{done.stdout[-3000:]}{done.stderr}"
    report = json.loads(done.stdout)
    bad = [f for f in report["findings"] if f["severity"] in ("error", "warning")]
    assert not bad, f"{label}: doctor flags healthy broker data: {bad[:5]}"


@pytest.mark.parametrize("label", sorted(lab_corpus.LABELS))
def test_ls_sees_every_partition_at_the_log_end_the_broker_checkpointed(label: str) -> None:
    root = lab_corpus.ensure(label)
    for log_dir in broker_dirs(root):
        done = run_replog("ls", str(log_dir), "--format", "json")
        assert done.returncode == 0, f"{log_dir.name}: ls exited {done.returncode}:\n{done.stderr}"
        listed = {f"{p['topic']}-{p['partition']}": p for p in json.loads(done.stdout)}
        for pdir in lab_corpus.partition_dirs(root / log_dir.name):
            if pdir.name.startswith("__cluster_metadata"):
                continue
            topic, _, number = pdir.name.rpartition("-")
            assert pdir.name in listed, f"{log_dir.name}: ls does not list {pdir.name}"
            recovery_point = view.checkpoint(log_dir, "recovery-point-offset-checkpoint", topic, int(number))
            assert listed[pdir.name]["log_end_offset"] == recovery_point, \
                f"{log_dir.name}/{pdir.name}: log end against the clean stop's recovery point"
