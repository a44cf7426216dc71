"""`make bench`'s real peer: replog dump and the real kafka-dump-log run on the same segments as whole processes
(a smoke run on small segments: both finish, both print every batch; no timing is asserted)."""
from __future__ import annotations

from pathlib import Path

import pytest

from bench import brokers

pytestmark = [pytest.mark.brokers, pytest.mark.bench]


def test_dump_peer_runs_both_tools_on_every_case(tmp_path: Path) -> None:
    found = brokers.measure(tmp_path, 64 << 10, repeat=1, deep_size=16 << 10)
    assert [row["case"].split(": ")[1] for row in found["cases"][:4]] == [c[0] for c in brokers.CASES], "cases"
    for row in found["cases"]:
        assert row["replog_seconds"] > 0, f"{row['case']}: replog not timed"
        assert row["kafka_dump_log_seconds"] > 0, f"{row['case']}: kafka-dump-log not timed"
    peer = (tmp_path / "peer.out").read_text().splitlines()
    ours = (tmp_path / "replog.out").read_text().splitlines()
    assert sum(line.startswith("| offset:") for line in peer) > 0, "kafka-dump-log printed no record of the last case"
    assert len(ours) > 0, "replog printed nothing for the last case"
