"""Measured children: their own peak RSS, and a cap past which they are killed (not the machine)."""
from __future__ import annotations

import sys

import pytest

from bench import children

pytestmark = pytest.mark.bench
HOLD = "import sys, time; b = bytearray(int(sys.argv[1]) << 20); b[::4096] = b'x' * len(b[::4096]); time.sleep(0.5)"


def test_peak_rss_is_the_child_s_own() -> None:
    small = children.run_child([sys.executable, "-c", HOLD, "1"])
    big = children.run_child([sys.executable, "-c", HOLD, "150"])
    assert small.ok and big.ok and small.killed_over_mib is None
    assert big.peak_rss_mib - small.peak_rss_mib > 140
    assert big.cpu_seconds >= 0 and big.seconds >= 0.5


def test_a_child_past_the_cap_is_killed() -> None:
    run = children.run_child([sys.executable, "-c", HOLD + "; time.sleep(30)", "300"], cap_mib=100)
    assert run.killed_over_mib == 100 and not run.ok and run.seconds < 25
    if children.GNU_TIME.exists():
        assert run.peak_rss_mib > 100  # the killed command's own peak, as GNU time saw it
    assert run.to_dict()["killed_over_mib"] == 100


def test_a_python_child_reports_its_json() -> None:
    run = children.python_run("import json, sys; print('noise'); print(json.dumps({'n': int(sys.argv[1])}))", ["7"])
    assert run.ok and run.result == {"n": 7}
