"""Tiered storage (KIP-405) against real brokers running Kafka's LocalTieredStorage (issue 28 item 3).

The brokers are the oracle: ListOffsets earliest and earliest-local (GetOffsetShell `--time -2` / `-4`), what a
consumer reads from the log start (served from remote storage) and where a group resumes, the truncations the
brokers log, their checkpoints, and the files in the remote storage directory. replog reads the copies, taking
remote.storage.enable from the metadata log a KRaft broker keeps in its log dir (ls, doctor) or the controller's
(`--metadata`: replay, impact, repair).
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from replog.formats.kafka.names import REMOTE_INDEX_CACHE_DIR, parse_remote_index_file_name
from tests.brokers import broker_view as view
from tests.brokers.jars import TIERED_TEST_JAR
from tests.brokers.kafka_lab import ClusterSpec, running_cluster
from tests.brokers.scenarios import TOPIC
from tests.brokers.scenarios_tiered import (
    TieredOutcome,
    follower_behind_local_start,
    remote_segments,
    start_on_repaired,
    tiered_spec,
    tiered_then_stopped,
)
from tests.brokers.test_kafka_replay import VERSIONS, cases, controller_args, replica_args, replog_json

pytestmark = pytest.mark.brokers
# TierStateMachine.buildRemoteLogAuxState's INFO line (core/src/main/java/kafka/server/TierStateMachine.java, 3.9
# and trunk): the follower built its epochs (and producer snapshot) from remote storage up to this offset. It names
# the partition by `Partition.toString` ("Topic: t; Partition: 0; Leader: ...").
TIER_LINE = (r"Updated the epoch cache from remote tier till offset: (\d+) with size: \d+ "
             rf"for Topic: {TOPIC}; Partition: 0;")
# KRaft only (the profile comes from the metadata log), and only versions with a LocalTieredStorage jar.
NOT_TIERED = tuple(label for label, spec in VERSIONS.items()
                   if spec.mode != "kraft" or spec.version not in TIERED_TEST_JAR)


def run_tiered(spec: ClusterSpec, tmp_path: Path, scenario: Any) -> TieredOutcome:
    remote = tmp_path / "remote"
    (tmp_path / "cluster").mkdir()
    with running_cluster(tiered_spec(spec, remote), tmp_path / "cluster") as cluster:
        outcome: TieredOutcome = scenario(cluster, tmp_path, remote)
        return outcome


def ls_row(log_dir: Path) -> dict[str, Any]:
    rows = replog_json("ls", str(log_dir))
    return next(r for r in rows if r["topic"] == TOPIC)


@pytest.mark.parametrize("spec", cases(without=NOT_TIERED))
def test_tiered_log_start_agrees_with_the_brokers(spec: ClusterSpec, tmp_path: Path) -> None:
    """Scenario T-a: the log start (3, DeleteRecords) stays below the local log start (every old segment in
    remote storage only). ls, doctor, replay and impact of the copies against ListOffsets, the consumer and the
    group's resumption."""
    outcome = run_tiered(spec, tmp_path, tiered_then_stopped)
    earliest, local = outcome.offsets["earliest"], outcome.offsets["earliest_local"]
    assert earliest < local, f"the scenario's premise: log start {earliest} below the local one {local}"
    assert outcome.consumed and outcome.consumed[0][0] == earliest, "a consumer reads from the log start (remote)"
    assert outcome.group_first == outcome.committed, "the group resumes at its commit (served from remote)"
    for name in ("b2", "b3", "b4"):
        row = ls_row(outcome.final / name)
        assert row["log_start_offset"] == earliest, f"{name}: ls log start vs ListOffsets earliest"
        assert row["local_log_start_offset"] == local, f"{name}: ls local log start vs ListOffsets earliest-local"
        assert row["remote_storage"]["source"] == "metadata", f"{name}: remote.storage.enable read, not assumed"
    leader = f"b{outcome.leader}"
    found = replog_json("doctor", str(outcome.final / leader))["findings"]
    ranges = [f for f in found if f["code"] == "KAFKA_REMOTE_LOG_RANGE"]
    assert [(f["offset"], f"local log start {local}:" in f["message"]) for f in ranges] == [(earliest, True)], \
        "doctor names the range held in remote storage"
    assert [f["code"] for f in found if f["code"] == "KAFKA_REMOTE_LOG_GAP"] == [], \
        "every offset from the log start is in a remote segment (the consumer read them all)"
    check_remote_index_cache(outcome.final / leader)
    for root in (outcome.copy, outcome.final):
        predicted = replog_json("replay", *replica_args(root, outcome), *controller_args(outcome))
        for r in predicted["replicas"]:
            assert r["lost"]["records"] == 0, f"{r['name']} ({root.name}): remote-held records are not lost"
            assert r["log_start_offset_after"] == earliest, f"{r['name']} ({root.name}): log start after"
            assert r["local_log_start_offset_after"] == local, f"{r['name']} ({root.name}): local log start after"
    impact = replog_json("impact", *replica_args(outcome.final, outcome), *controller_args(outcome))
    group = next(g for g in impact["consumer_groups"] if g["group"] == outcome.group)
    assert group["classification"] == "unaffected", "a group committed on remote data does not reset"
    assert group["resumes_at"] == outcome.group_first, "where the group resumes (the broker's consumer)"


def check_remote_index_cache(log_dir: Path) -> None:
    """The leader served the consumer's fetches below its local log start from remote storage, so its
    `RemoteIndexCache` holds the fetched segments' indexes (`remote-log-index-cache/`): every file there is named
    as the cache names it, read by doctor (in its manifest) and found sound, the broker having loaded none of them
    as corrupt. Listed with `os.listdir`, not replog's parser."""
    cache = log_dir / REMOTE_INDEX_CACHE_DIR
    cached = sorted(p.name for p in cache.iterdir()) if cache.is_dir() else []
    assert cached, f"the premise: the leader cached remote indexes in {cache}"
    report = replog_json("doctor", str(log_dir))
    listed = {Path(i["path"]).name for i in report["inputs"] if Path(i["path"]).parent == cache}
    assert listed == set(cached), "every cached remote index is in doctor's manifest"
    assert all(parse_remote_index_file_name(n) is not None for n in cached), f"cache names: {cached}"
    named = [(f["code"], f["path"]) for f in report["findings"] if Path(f["path"]).parent == cache]
    assert named == [], "the indexes the broker cached are sound"


@pytest.mark.parametrize("spec", cases(without=NOT_TIERED))
def test_follower_behind_the_local_log_start_builds_from_remote(spec: ClusterSpec, tmp_path: Path) -> None:
    """Scenario T-b: follower b4, stopped early, rejoins below the leader's local log start; the leader answers
    OFFSET_MOVED_TO_TIERED_STORAGE and b4 builds its state from remote storage. replay of the copy: b4 starts
    at the leader's local log start, keeps the log start, loses nothing; as the brokers did."""
    outcome = run_tiered(spec, tmp_path, follower_behind_local_start)
    predicted = replog_json("replay", *replica_args(outcome.copy, outcome), *controller_args(outcome))
    assert predicted["leader"] == f"b{outcome.leader}", "leader"
    b4 = next(r for r in predicted["replicas"] if r["name"] == "b4")
    final_b4 = outcome.final / "b4"
    start = view.checkpoint(final_b4, "log-start-offset-checkpoint", TOPIC)
    assert b4["log_start_offset_after"] == start, "b4's log start (its checkpoint after the clean stop)"
    logs = sorted((final_b4 / f"{TOPIC}-0").glob("*.log"))
    assert b4["local_log_start_offset_after"] == int(logs[0].name.split(".")[0]), "b4's first local segment"
    assert "OFFSET_MOVED_TO_TIERED_STORAGE" in [e.get("error") for e in predicted["events"]], \
        "replay's transcript names the leader's answer"
    assert b4["lost"]["records"] == 0, "records held in remote storage are not lost"
    assert b4["truncated_to"] == b4["local_log_start_offset_after"], "replay: b4 restarts at the local log start"
    built = [int(m) for m in re.findall(TIER_LINE, outcome.outputs["b4"])]
    assert built == [b4["local_log_start_offset_after"]], "b4 built its state from remote storage up to there"


@pytest.mark.parametrize("spec", cases("3.9.1-kraft", without=NOT_TIERED))
def test_repair_of_a_tiered_partition_keeps_the_remote_segments(spec: ClusterSpec, tmp_path: Path) -> None:
    """Scenario T-c: `repair --in-place` of the final copy of T-a, every node restarted on it with the same
    remote storage. No remote segment is deleted; the log start stays; a consumer still reads from it."""
    remote = tmp_path / "remote"
    (tmp_path / "cluster").mkdir()
    with running_cluster(tiered_spec(spec, remote), tmp_path / "cluster") as cluster:
        first = tiered_then_stopped(cluster, tmp_path / "a", remote)
        repaired = tmp_path / "repaired"
        shutil.copytree(first.final, repaired, symlinks=True)
        replog_json("repair", *replica_args(repaired, first), "--metadata", str(repaired / "c1"), "--in-place",
                    "--backup", str(tmp_path / "backup"))
        after = start_on_repaired(cluster, repaired, tmp_path / "c", remote)
    before = remote_segments(first.remote_after)
    assert before, "the premise: segments in remote storage"
    assert remote_segments(after.remote_after) == before, "remote segments deleted after starting on the repair"
    assert after.offsets["earliest"] == first.offsets["earliest"], "the log start the broker loads from the repair"
    assert after.consumed == first.consumed, "what a consumer reads from the log start, before and after"
