"""A live broker: one process appends to (and truncates) the active segment while another
walks and summarises the partition again and again.

The reader runs in its own process so that a SIGBUS (a page of a mapped file
cut away by a truncation) shows up as a signal exit code instead of killing
the test session. The reader must never crash, must report only findings
(torn tail, zero tail, trailing bytes...) on the active segment, and must
never report anything on the sealed segments.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.recovery.kafka.replicas import replica_dir

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
