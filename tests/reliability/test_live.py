"""A live broker: one process appends to (and truncates) the active segment while another
walks and summarises the partition again and again; and one that cuts a 24 MiB active
segment back and writes it out again while every read command reads it.

The readers run in processes of their own so that a SIGBUS (a page of a mapped file
cut away by a truncation) shows up as a signal exit code instead of killing
the test session. A reader must never crash, must report only findings
(torn tail, zero tail, trailing bytes...) on the active segment, and must
never report anything on the sealed segments.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.recovery.kafka.replicas import replica_dir
from tests.reliability.children import run
from tests.reliability.live_partition import BIG_ACTIVE, big_active_partition

REPO = Path(__file__).resolve().parents[2]
SECONDS = 3.0
ACTIVE_CODES = {"KAFKA_TORN_TAIL", "KAFKA_TRAILING_BYTES", "KAFKA_ZERO_TAIL", "KAFKA_BATCH_LENGTH_TOO_SMALL",
                "KAFKA_BATCH_LENGTH_IMPOSSIBLE", "KAFKA_BATCH_CRC_MISMATCH", "KAFKA_SEGMENT_EMPTY",
                "KAFKA_BATCH_BAD_MAGIC", "INPUT_CHANGED", "KAFKA_OFFSETS_NOT_INCREASING", "KAFKA_OFFSET_GAP"}


def _spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "tests.reliability.live_partition", *args], cwd=REPO,
                            env=dict(os.environ, PYTHONPATH=str(REPO)), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_scan_while_a_writer_appends_and_truncates(tmp_path: Path) -> None:
    pdir = replica_dir(tmp_path, "live", [(o, 0) for o in range(30)], hw=30, segment_bytes=600)
    assert len(list(pdir.glob("*.log"))) >= 3
    writer = _spawn("write", str(pdir), str(SECONDS), "1")
    reader = _spawn("read", str(pdir), str(SECONDS))
    out, err = reader.communicate(timeout=120)
    writer.communicate(timeout=120)
    assert writer.returncode == 0
    assert reader.returncode == 0, f"reader died with {reader.returncode} (negative: a signal, -7 is SIGBUS)\n{err}"
    res = json.loads(out)
    assert res["rounds"] > 5
    assert res["sealed_findings"] == []
    assert set(res["active_codes"]) <= ACTIVE_CODES, res["active_codes"]


def test_every_read_command_survives_a_24_mib_active_segment_cut_back_under_it(tmp_path: Path) -> None:
    """A broker truncating and re-appending its 24 MiB active segment while ls, dump, doctor, recover and
    replay read it. Each ends by itself within seconds, with a result or one clear line (exit 2: the input
    changed under recover or replay), never a signal (-7 is SIGBUS: a mapped page cut away), a traceback
    or an internal error. The active segment is read with pread, never mapped."""
    pdir = big_active_partition(tmp_path)
    copy = tmp_path / "copy" / "t-0"
    shutil.copytree(pdir, copy)
    active = sorted(pdir.glob("*.log"))[-1]
    assert active.stat().st_size >= BIG_ACTIVE
    writer = subprocess.Popen([sys.executable, "-m", "tests.reliability.live_partition", "churn", str(active), "120",
                               "1"], cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)), stdout=subprocess.PIPE,
                              text=True)
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
        for command in (["ls", pdir, "--format", "json"], ["dump", active, "--deep", "--format", "jsonl"],
                        ["doctor", pdir, "--format", "json"],
                        ["recover", pdir, "--out", tmp_path / "out", "--format", "json"],
                        ["replay", f"live={pdir}", f"copy={copy}", "--format", "json"]):
            res = run(*command, tmp=tmp_path / "runs", timeout=120)
            assert res.clean(), (command[0], res.returncode, res.stderr[-2000:])
            assert res.returncode != 2 or command[0] in ("recover", "replay"), (command[0], res.stderr)
            assert res.seconds < 60, (command[0], res.seconds)
    finally:
        writer.kill()
        writer.wait()
