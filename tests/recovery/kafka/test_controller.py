"""Replay behind the controller's own record of elections: a KRaft metadata log written from the schemas
(tests/recovery/kafka/independent_metadata.py), the real brokers' metadata logs, ZooKeeper partition state."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from replog.formats.errors import ReplogError
from replog.formats.kafka.internal.metadata import decode_metadata_record
from replog.recovery.kafka.controller import merge_change, read_metadata_log
from replog.recovery.kafka.replay import replay_paths
from tests.realdata import REALDATA
from tests.recovery.kafka import independent_metadata as md
from tests.recovery.kafka.independent import write_replica

TID = "B3_HiNPgSQ6oxG9ZZ6ED5A"


def brokers(tmp_path: Path) -> dict[int, Path]:
    """Replicas of t-0 on brokers 1-3 (meta.properties node.id). Broker 1 led epochs 0 and 1 and holds
    the most (HW 6); broker 3 fell behind at 4 and was elected uncleanly in epoch 2, writing 4."""
    logs = {1: ([(0, 1, 0), (2, 3, 0), (4, 7, 1)], [(0, 0), (1, 4)], 6),
            2: ([(0, 1, 0), (2, 3, 0), (4, 5, 1)], [(0, 0), (1, 4)], 4),
            3: ([(0, 1, 0), (2, 3, 0), (4, 4, 2)], [(0, 0), (2, 4)], 4)}
    out = {}
    for b, (batches, epochs, hw) in logs.items():
        out[b] = write_replica(tmp_path, f"d{b}", batches, epochs, hw, tag=b"%d" % b)
        md.write_meta_properties(out[b].parent, b)
    return out


def history() -> list[bytes]:
    """Created with leader 1 (epoch 0); ISR shrinks to 1,2 (no election); leader 1 again in epoch 1 after
    broker 3 left; an aborted transaction that would elect 2; broker 3 elected uncleanly (epoch 2)."""
    return [md.topic_record("t", TID),
            md.partition_record(TID, 0, [1, 2, 3], [1, 2, 3], leader=1, leader_epoch=0),
            md.partition_change(TID, 0, isr=[1, 2]),
            md.partition_change(TID, 0, leader=1, isr=[1]),
            md.begin_transaction(), md.partition_change(TID, 0, leader=2), md.abort_transaction(),
            md.partition_change(TID, 0, leader=3, isr=[3], recovery=1)]


def test_the_schema_encoder_agrees_with_the_decoder() -> None:
    """The test's own encoder and replog's decoder read the schemas the same way (else nothing below counts)."""
    got = decode_metadata_record(md.partition_change(TID, 0, leader=3, isr=[3], recovery=1))
    assert got["type"] == "PartitionChangeRecord" and got["data"]["leader"] == 3
    assert got["data"]["isr"] == [3] and got["data"]["leaderRecoveryState"] == 1 and got["data"]["topicId"] == TID


def test_replay_follows_the_controllers_unclean_election(tmp_path: Path) -> None:
    """From disk alone broker 1 wins (highest HW, longest log). The controller elected broker 3 in epoch 2,
    uncleanly (outside the ISR, RECOVERING): the replay follows broker 3 in epoch 2 (no epoch 3 is made
    up), broker 1 loses 4..7, and the record's elections are listed with the unclean one marked."""
    reps = brokers(tmp_path)
    meta = md.write_metadata_log(tmp_path / "d1", history(), per_batch=2)
    specs = [str(p) for p in reps.values()]
    assert replay_paths(specs).leader.name == "broker-1"
    d = replay_paths(specs, metadata=str(meta)).to_dict()
    assert (d["leader"], d["leader_source"], d["leader_epoch"]) == ("broker-3", "metadata", 2)
    assert d["leader_election"]["unclean"] is True
    assert [(e["offset"], e["leader"], e["leader_epoch"], e["isr"], e["unclean"]) for e in d["elections"]] == [
        (1, 1, 0, [1, 2, 3], False), (2, 1, 0, [1, 2], False), (3, 1, 1, [1], False), (7, 3, 2, [3], True)]
    assert d["elections"][-1]["leader_replica"] == "broker-3"
    r = {x["name"]: x for x in d["replicas"]}
    assert r["broker-3"]["epochs_after"] == [[0, 0], [2, 4]]
    assert r["broker-1"]["truncated_to"] == 4 and r["broker-1"]["lost"]["records"] == 4
    assert r["broker-2"]["truncated_to"] == 4


def test_election_rules_of_the_change_records() -> None:
    """PartitionRegistration.merge and the builder's election: -2 keeps leader and epoch, any other value
    bumps the epoch; a leader from the ELR (ISR empty) is clean, one outside ISR and ELR is not."""
    from replog.recovery.kafka.controller import from_partition_record

    base = from_partition_record({"leader": 1, "leaderEpoch": 4, "isr": [1], "replicas": [1, 2, 3],
                                  "eligibleLeaderReplicas": [2]}, 0, "PartitionRecord")
    same = merge_change(base, {"isr": [1, 3]}, 1)
    assert (same.leader, same.leader_epoch, same.elected, same.isr) == (1, 4, False, (1, 3))
    offline = merge_change(base, {"leader": -1, "isr": []}, 2)
    assert (offline.leader, offline.leader_epoch, offline.unclean) == (-1, 5, False)
    from_elr = merge_change(offline, {"leader": 2, "isr": [2]}, 3)
    assert (from_elr.leader_epoch, from_elr.unclean) == (6, False)
    outside = merge_change(offline, {"leader": 3, "isr": [3]}, 3)
    assert outside.unclean


def test_a_leader_on_no_given_broker_is_a_usage_error(tmp_path: Path) -> None:
    """The record names broker 3; only brokers 1 and 2 are given: exit 2 with what is missing, no guess."""
    from tests.toolkit.test_cli import run_replog

    reps = brokers(tmp_path)
    meta = md.write_metadata_log(tmp_path / "d1", history())
    proc = run_replog("replay", str(reps[1]), str(reps[2]), str(meta), "--format", "json")
    assert proc.returncode == 2, proc.stdout
    assert "broker 3" in proc.stderr and "no input replica" in proc.stderr


def test_a_record_older_than_the_replicas_is_refused(tmp_path: Path) -> None:
    """Broker 3 holds epoch 2, the record ends in epoch 1: a lagging copy of the metadata log."""
    reps = brokers(tmp_path)
    meta = md.write_metadata_log(tmp_path / "d1", history()[:4])
    with pytest.raises(ReplogError, match="older than the replicas"):
        replay_paths([str(p) for p in reps.values()], metadata=str(meta))


def test_cli_metadata_and_partition_state(tmp_path: Path) -> None:
    """Through the CLI: `--metadata DIR` (a log dir holding the metadata log) on replay and repair, and
    ZooKeeper's partition state JSON with `--partition-state`."""
    from tests.toolkit.test_cli import run_replog

    reps = brokers(tmp_path)
    md.write_metadata_log(tmp_path / "d1", history())
    specs = [str(p) for p in reps.values()]
    proc = run_replog("replay", *specs, "--metadata", str(tmp_path / "d1"), "--format", "json")
    d = json.loads(proc.stdout)
    assert (d["leader"], d["leader_source"], len(d["elections"])) == ("broker-3", "metadata", 4), proc.stderr
    table = run_replog("replay", *specs, "--metadata", str(tmp_path / "d1"), "--format", "table").stdout
    assert "Controller's record" in table and "UNCLEAN" in table and "broker-3@4" in table
    state = tmp_path / "state.json"
    state.write_text('{"controller_epoch":3,"leader":2,"version":1,"leader_epoch":2,"isr":[2]}')
    proc = run_replog("repair", *specs, "--partition-state", str(state), "--out", str(tmp_path / "out"),
                      "--format", "json")
    d = json.loads(proc.stdout)
    assert (d["leader"], d["leader_source"], d["leader_epoch"]) == ("broker-2", "partition_state", 2), proc.stderr
    assert d["elections"] == [{"offset": None, "record": "partition_state", "leader": 2, "leader_epoch": 2,
                               "isr": [2], "elr": [], "unclean": False, "leader_replica": "broker-2"}]
    state.write_text('{"leader": "two"}')
    bad = run_replog("replay", *specs, "--partition-state", str(state))
    assert bad.returncode == 2 and "partition state" in bad.stderr


def test_real_metadata_log_elects_the_returning_broker(tmp_path: Path) -> None:
    """niloufar-ldi-kraft (a real single-node KRaft broker): TestTopicPatient-0 was created with leader 1 in
    epoch 0 (offset 2214) and left without a leader in epoch 1 at shutdown (offset 4875). When broker 1
    returns, the controller elects it from the ISR in epoch 2: the replay follows it there."""
    niloufar = REALDATA / "niloufar-ldi-kraft"
    if not (niloufar / "__cluster_metadata-0").is_dir():
        pytest.skip("no real data")
    record = read_metadata_log(niloufar, "TestTopicPatient", 0)
    assert [(e.offset, e.leader, e.leader_epoch, e.isr) for e in record.history] == [
        (2214, 1, 0, (1,)), (4875, -1, 1, (1,))]
    assert record.topic_id == TID
    other = write_replica(tmp_path, "d2", [(0, 0, 0)], [(0, 0)], 0, topic="TestTopicPatient")
    md.write_meta_properties(other.parent, 2)
    d = replay_paths([str(niloufar / "TestTopicPatient-0"), str(other),
                      str(niloufar / "__cluster_metadata-0")]).to_dict()
    assert (d["leader"], d["leader_source"], d["leader_epoch"]) == ("broker-1", "metadata", 2)
    leader = next(r for r in d["replicas"] if r["name"] == "broker-1")
    assert leader["epochs_after"] == [[0, 0], [2, 3]]


def test_the_newest_snapshot_then_the_log_after_it(tmp_path: Path) -> None:
    """A broker loads its newest complete snapshot, then the log from the snapshot's end offset: an older
    snapshot and the log's records below that end are not applied again."""
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    old = [md.topic_record("t", TID), md.partition_record(TID, 0, [1, 2], [1, 2], leader=2, leader_epoch=3)]
    new = [md.topic_record("t", TID), md.partition_record(TID, 0, [1, 2], [1], leader=1, leader_epoch=7)]
    (d / "00000000000000000002-0000000001.checkpoint").write_bytes(md.batch(0, old))
    (d / "00000000000000000005-0000000002.checkpoint").write_bytes(md.batch(0, new))
    log = [md.partition_change(TID, 0, leader=2) for _ in range(5)] + [md.partition_change(TID, 0, leader=2)]
    (d / "00000000000000000000.log").write_bytes(md.batch(0, log))
    record = read_metadata_log(d, "t", 0)
    assert [(e.offset, e.record, e.leader, e.leader_epoch, e.unclean) for e in record.history] == [
        (None, "snapshot", 1, 7, False), (5, "PartitionChangeRecord", 2, 8, True)]
