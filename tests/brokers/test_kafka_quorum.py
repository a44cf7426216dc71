"""replay of the KRaft metadata log's own replicas (issue 28 item 6) against a real three-voter quorum: the voter
that led, appended records no follower fetched and died, then rejoined under a new leader. The controllers are the
oracle: the new leader's epoch and epochStartOffset (its own transition line), the old leader's "Truncated to offset"
line, `kafka-metadata-quorum describe --status` high watermarks, the topics the cluster has, and kafka-dump-log
--cluster-metadata-decoder of the logs before and after.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.brokers import broker_view as view
from tests.brokers.scenarios_quorum import (
    LATER_TOPIC,
    LOST_TOPIC,
    METADATA,
    QuorumOutcome,
    quorum_spec,
    uncommitted_metadata,
)
from tests.brokers.test_kafka_replay import FULL, replog_json

pytestmark = pytest.mark.brokers

QUORUM_VERSIONS = {"4.4.0": (), "3.9.1": (FULL,)}   # 4.4.0 in `make test`, 3.9.1 with REPLOG_LAB=all


def quorum_cases() -> list[Any]:
    return [pytest.param(v, id=f"{v}-3-voters", marks=marks) for v, marks in QUORUM_VERSIONS.items()]


def mentions(version: str, log_dir: Path, text: str) -> bool:
    """kafka-dump-log --cluster-metadata-decoder of the metadata log's segments mentions `text`."""
    dumped = view.dump_lines(version, view.segments(log_dir), ["--cluster-metadata-decoder"])
    return any(text in line for lines in dumped.values() for line in lines)


@pytest.mark.parametrize("version", quorum_cases())
def test_an_uncommitted_leader_tail_is_truncated_when_it_rejoins(version: str, tmp_path: Path) -> None:
    (tmp_path / "cluster").mkdir()
    out: QuorumOutcome = uncommitted_metadata(quorum_spec(version), tmp_path / "cluster")
    old, new = f"c{out.old_leader}", f"c{out.new_leader}"
    assert mentions(version, out.copy / old / METADATA, LOST_TOPIC), \
        "premise: the old leader appended the lost topic's records (kafka-dump-log of its copy)"
    specs = [f"c{n}={out.copy / f'c{n}' / METADATA}" for n in sorted(out.final_dirs)]
    predicted = replog_json("replay", *specs)
    assert predicted["leader"] == new, f"the quorum's leader: {predicted['leader_election']}"
    assert predicted["leader_source"] == "quorum_state", predicted["leader_source"]
    assert predicted["leader_epoch"] == out.new_epoch, "the new leader's epoch (describe --status)"
    quorum = predicted["quorum"]
    assert quorum["epoch_start_offset"] == out.epoch_start, "epochStartOffset of the new leader's transition line"
    by = {r["name"]: r for r in predicted["replicas"]}
    assert out.truncated_to, f"premise: {old} logged a truncation on rejoining"
    assert by[old]["truncated_to"] == out.truncated_to[0], \
        f"{old} truncates where its epoch ends on {new}: broker {out.truncated_to}, replay {by[old]['truncated_to']}"
    lost = {v["name"]: v["lost_records"] for v in quorum["voter_states"]}
    assert lost[old] is not None and LOST_TOPIC in lost[old]["topics_created"], f"{old} loses the topic: {lost[old]}"
    for name, r in by.items():
        if name != old:
            assert r["truncated_to"] is None and lost[name] is None, f"{name} holds a prefix of the leader's log"
    assert LOST_TOPIC not in out.topics and LATER_TOPIC in out.topics, f"the cluster's topics: {out.topics}"
    assert not mentions(version, out.final_dirs[out.old_leader], LOST_TOPIC), \
        f"{old}'s log after rejoining no longer holds the lost topic (kafka-dump-log)"
    before, after = int(out.status_before["HighWatermark"]), int(out.status_after["HighWatermark"])
    assert quorum["high_watermark_before"] is not None and before <= quorum["high_watermark_before"], \
        f"the leader's high watermark before the copy ({before}) is at most the copies' commit point {quorum}"
    assert quorum["high_watermark_after"] is not None and quorum["high_watermark_after"] <= after, \
        f"once every voter fetched, the commit point ({quorum['high_watermark_after']}) is reached ({after})"
