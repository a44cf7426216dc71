"""replay against real clusters where min.insync.replicas and eligible leader replicas decide: the high watermark that
stops under min ISR (brokers 3.7+), the clean election of an ELR member, and the ELR member that shut down uncleanly
and is not elected (4.4, ELR on). The brokers are the oracle: leader, truncations, log ends, high watermarks (their
checkpoints after a clean stop, the admin API) and lost offsets, read with their own tools (`compare`).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.brokers import broker_view as view
from tests.brokers.scenarios import TOPIC
from tests.brokers.scenarios_isr import (
    ACKED,
    elr_member_elected,
    hw_stops_under_min_isr,
    last_known_leader,
    leaderless_in_elr,
    unclean_shutdown_leaves_elr,
)
from tests.brokers.test_kafka_replay import VERSIONS, cases, compare, run_scenario

pytestmark = pytest.mark.brokers

OLD_IBP = ("3.9.1-zk-ibp-0.11.0-IV1", "3.9.1-zk-ibp-0.10.2")
NOT_ELR_ON = tuple(label for label in VERSIONS if label != "4.4.0-elr-on")


def profile_value(predicted: dict[str, Any], key: str) -> tuple[str, str]:
    setting = predicted["profile"]["settings"][key]
    return setting["value"], setting["source"]


@pytest.mark.parametrize("spec", cases("4.4.0-elr-on", without=OLD_IBP))
def test_the_high_watermark_stops_under_min_isr(spec: Any, tmp_path: Path) -> None:
    """ISR [2, 3] below min.insync.replicas 3 after acks=1 writes: the broker's high watermark stays at the last
    offset every replica had (its checkpoint in the copy already says so), and replay, reading min.insync.replicas
    from the metadata log (ZooKeeper mode: stated with --min-insync-replicas, ZooKeeper's topic config being out of
    replog's reach), keeps it there after b3 fetches the tail. ZooKeeper-mode brokers share the rule (Partition)."""
    outcome = run_scenario(spec, tmp_path, hw_stops_under_min_isr)
    copied = view.checkpoint(outcome.copy / "b2", "replication-offset-checkpoint", TOPIC)
    assert copied == ACKED, "the leader's checkpointed high watermark in the copy (strict min ISR, 3.7+)"
    assert outcome.high_watermark == ACKED, "the leader's high watermark at the end (admin API)"
    zk = spec.mode == "zk"
    predicted = compare(spec, outcome, tmp_path, loses=False, extra=("--min-insync-replicas", "3") if zk else ())
    assert profile_value(predicted, "min.insync.replicas") == ("3", "option" if zk else "metadata"), \
        "min ISR read from the log, or stated"
    assert any(e["kind"] == "hw_hold" for e in predicted["events"]), "replay holds the high watermark"


# In `make test` again: `fenced` now waits for b2's fence and the partition change (no leader, ISR empty, b2 in an
# ELR of two) in the controller's metadata log (the real kafka-dump-log), not only for its "Fencing broker 2" line,
# which comes first (a copy taken ~10 ms after the line still showed b2 leading, 3 of 3 tries).
@pytest.mark.parametrize("spec", cases("4.4.0-elr-on", without=NOT_ELR_ON))
def test_an_elr_member_is_elected_after_the_leader_dies(spec: Any, tmp_path: Path) -> None:
    """ISR empty, ELR [2, 4] once the leader b2 crashed (b3 left an ISR still at min ISR; or ELR [2, 3], the other
    way round); b3 and b4 resume, b2 restarts without a clean-shutdown marker and leaves the ELR, and the other ELR
    member is elected cleanly; b2 truncates its acks=1 tail, which was never committed."""
    outcome = run_scenario(spec, tmp_path, elr_member_elected)
    predicted = compare(spec, outcome, tmp_path)
    assert predicted["leader_epoch"] == outcome.leader_epoch, "leader epoch"
    assert predicted["leader_election"]["unclean"] is False, "a clean election from the ELR"
    assert profile_value(predicted, "eligible.leader.replicas") == ("true", "metadata"), "ELR read from the log"
    b2 = next(r for r in predicted["replicas"] if r["name"] == "b2")
    assert b2["lost"]["acknowledged"] is False, "b2's lost tail lies above the high watermark"


# Not in `make test`: the follower b2 that rejoins with nothing to fetch can keep a stale high watermark (7, not 10)
# until the next write; the scenario's wait for its checkpoint then times out (2 of 3 runs on a loaded machine).
@pytest.mark.parametrize("spec", cases(without=NOT_ELR_ON))
def test_an_elr_member_that_shut_down_uncleanly_is_not_elected(spec: Any, tmp_path: Path) -> None:
    """ELR [2, 4], every broker down, b2 crashed and b4 stopped cleanly: all restart, b2 leaves the ELR as it
    registers (no .kafka_cleanshutdown), and b4 is elected; b2, first in the assignment, would have been otherwise."""
    outcome = run_scenario(spec, tmp_path, unclean_shutdown_leaves_elr)
    predicted = compare(spec, outcome, tmp_path)
    assert predicted["leader_epoch"] == outcome.leader_epoch, "leader epoch"
    assert "unclean shutdown" in predicted["leader_election"]["explanation"], "the explanation names the rule"


@pytest.mark.parametrize("spec", cases(without=NOT_ELR_ON))
def test_the_last_known_leader_is_elected_once_the_elr_empties(spec: Any, tmp_path: Path) -> None:
    """Every replica crashed (ELR [2, 4], last known leader 2): all restart without clean-shutdown markers, leave the
    ELR as they register, and the controller elects b2 as the last known leader, an unclean election (its log line)."""
    outcome = run_scenario(spec, tmp_path, last_known_leader)
    predicted = compare(spec, outcome, tmp_path, loses=False)
    assert predicted["leader_epoch"] == outcome.leader_epoch, "leader epoch"
    assert "partition 0 to 2 using an unclean election" in outcome.outputs["c1"], "the controller's unclean election"
    assert predicted["leader_election"]["unclean"] is True, "replay: an unclean election"
    assert "lastKnownElr" in predicted["leader_election"]["explanation"], "replay: by the last known leader"


# The records kafka-dump-log 4.4 prints with --cluster-metadata-decoder (`dumped` gives them its line shape): broker
# 2 registers, is unfenced, leads alone with ELR [4], then is fenced, the partition change before its record.
TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
METADATA: list[tuple[str, dict[str, Any]]] = [
    ("REGISTER_BROKER_RECORD", {"brokerId": 2, "brokerEpoch": 10, "fenced": True}),
    ("BROKER_REGISTRATION_CHANGE_RECORD", {"brokerId": 2, "brokerEpoch": 10, "fenced": -1}),
    ("TOPIC_RECORD", {"name": "t", "topicId": TOPIC_ID}),
    ("PARTITION_RECORD", {"partitionId": 0, "topicId": TOPIC_ID, "replicas": [2, 3, 4], "isr": [2, 3, 4],
                          "leader": 2, "leaderEpoch": 0, "partitionEpoch": 0}),
    ("PARTITION_CHANGE_RECORD", {"partitionId": 0, "topicId": TOPIC_ID, "isr": [2], "eligibleLeaderReplicas": [4],
                                 "lastKnownElr": []}),
    ("PARTITION_CHANGE_RECORD", {"partitionId": 0, "topicId": TOPIC_ID, "isr": [], "leader": -1,
                                 "eligibleLeaderReplicas": [4, 2], "lastKnownElr": [2]}),
    ("BROKER_REGISTRATION_CHANGE_RECORD", {"brokerId": 2, "brokerEpoch": 10, "fenced": 1}),
]


def dumped(records: list[tuple[str, dict[str, Any]]], first: int = 10) -> list[str]:
    """A batch header, then one `| offset:` line per record, as kafka-dump-log prints them."""
    header = f"baseOffset: {first} lastOffset: {first + len(records) - 1} count: {len(records)} baseSequence: -1"
    return [header, *(f"| offset: {first + i} CreateTime: 1 keySize: -1 valueSize: 9 sequence: -1 headerKeys: [] "
                      f"payload: {json.dumps({'type': kind, 'version': 0, 'data': data}, separators=(',', ':'))}"
                      for i, (kind, data) in enumerate(records))]


def test_the_fence_and_the_partition_change_read_from_dumped_metadata_lines() -> None:
    """`fenced`'s reading of kafka-dump-log's lines: before the fence's two records b2 is unfenced and leads (what a
    copy taken right after the controller's log line showed), after them it is fenced and in the ELR."""
    records = [r for r in map(view._metadata_record, dumped(METADATA)) if r is not None]
    assert [r.offset for r in records] == list(range(10, 17)), "one record per `| offset:` line, headers skipped"
    before, after = records[:-2], records
    assert view.broker_fenced(before, 2) is False, "b2 unfenced by its registration change"
    assert view.metadata_partition(before, "t") == {"leader": 2, "isr": [2], "elr": [4], "last_known_elr": []}, \
        "the change record's fields replace the partition record's, the leader it leaves out unchanged"
    assert not leaderless_in_elr(view.metadata_partition(before, "t"), 2, 2), "b2 still leads before the fence"
    assert view.broker_fenced(after, 2) is True, "b2 fenced by the last record about it"
    assert view.broker_fenced(after, 3) is False, "a broker never registered is not fenced"
    assert leaderless_in_elr(view.metadata_partition(after, "t"), 2, 2), "no leader, ISR empty, ELR [4, 2]"
    assert not leaderless_in_elr(view.metadata_partition(after, "t"), 2, 3), "an ELR of 2, not 3"
    assert view.metadata_partition(after, "other") is None, "a topic not in the log"
