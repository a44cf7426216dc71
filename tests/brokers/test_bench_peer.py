"""`make bench`'s real peers: replog dump and the real kafka-dump-log run on the same segments as whole processes,
and replog recover against a real broker's startup recovery of the same damaged partition (smoke runs on small
inputs: both sides finish and did the same work; no timing is asserted)."""
from __future__ import annotations

from pathlib import Path

import pytest

from bench import broker_recover, brokers

pytestmark = [pytest.mark.brokers, pytest.mark.bench]


def test_dump_peer_runs_both_tools_on_every_case(tmp_path: Path) -> None:
    found = brokers.measure(tmp_path, 64 << 10, repeat=1, deep_size=16 << 10, deep_rate_size=16 << 10)
    assert [row["case"].split(": ")[1] for row in found["cases"][:4]] == [c[0] for c in brokers.CASES], "cases"
    for row in found["cases"]:
        assert row["replog_seconds"] > 0, f"{row['case']}: replog not timed"
        assert row["kafka_dump_log_seconds"] > 0, f"{row['case']}: kafka-dump-log not timed"
    assert [row["replog_seconds"] > 0 and "mb_per_s" in row for row in found["deep_rate"]] == [True, True], (
        "--deep MB/s not measured")
    assert all(seconds > 0 for seconds in found["fixed"].values()), f"a fixed cost not timed: {found['fixed']}"
    peer = (tmp_path / "peer.out").read_text().splitlines()
    ours = (tmp_path / "replog.out").read_text().splitlines()
    assert sum(line.startswith("| offset:") for line in peer) > 0, "kafka-dump-log printed no record of the last case"
    assert len(ours) > 0, "replog printed nothing for the last case"


def test_recover_peer_times_the_broker_and_replog_on_the_same_recovery(tmp_path: Path) -> None:
    found = broker_recover.measure(tmp_path, 4 << 20, repeat=1)
    assert found["broker_seconds"] > 0, "the broker's startup recovery was not timed"
    assert found["replog_seconds"] > 0, "replog recover was not timed"
    assert found["log_end_offset"] > 0, "the broker kept nothing: the torn partition tests nothing"
    assert found["bytes"] >= 4 << 20, "the damaged partition is smaller than asked"
