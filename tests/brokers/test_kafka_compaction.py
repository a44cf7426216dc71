"""replay of compacted topics whose replicas were cleaned at different points, against the real brokers.

The brokers are the oracle: what each truncated (its log lines), where its log ends, which records it holds
afterwards and what a consumer of the compacted topic ends with (kafka-dump-log `--deep-iteration
--print-data-log`). Below the cleaner points the replicas' batch lists legitimately differ (the cleaner rewrote
and dropped batches), so records, not batches, are compared there.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.brokers import broker_view as view
from tests.brokers.kafka_lab import ClusterSpec
from tests.brokers.scenarios import TOPIC, Outcome
from tests.brokers.scenarios_compaction import (
    CLEANER_CHECKPOINT,
    DumpedRecord,
    cleaned_apart_then_all_crash,
    cleaned_then_unclean_election,
    compaction_spec,
    dumped_records,
    latest_values,
    new_leader_cleans_past_the_divergence,
)
from tests.brokers.test_kafka_replay import (
    VERSIONS,
    cases,
    controller_args,
    premise_args,
    replica_args,
    replog_json,
    run_scenario,
)

pytestmark = pytest.mark.brokers
# ZooKeeper mode under an old IBP writes message format v1 (no leader epochs in batches): not this case.
OLD_IBP = tuple(label for label, spec in VERSIONS.items() if spec.ibp is not None)


def lost_records(copy: list[DumpedRecord], final: list[DumpedRecord], truncated_to: int | None) -> list[int]:
    """Offsets of records the replica held in the copy at or above where the broker truncated it, and no longer
    holds (same offset, key and value) at the end: what the truncation lost. Records below the truncation
    point may be gone too, but by the cleaner's hand (a later record of their key), which loses nothing."""
    if truncated_to is None:
        return []
    kept = set(final)
    return [r.offset for r in copy if r.offset >= truncated_to and r not in kept]


def batch_keys(batches: list[view.DumpedBatch], end: int) -> list[tuple[int, int, int]]:
    return [(b.base_offset, b.last_offset, b.crc) for b in batches if b.base_offset < end]


def compare_compacted(spec: ClusterSpec, outcome: Outcome, loses: bool) -> dict[str, Any]:
    """replay of the copy against what the brokers did after it; returns replay's JSON."""
    predicted = replog_json("replay", *replica_args(outcome.copy, outcome), *controller_args(outcome),
                            "--protocol", spec.protocol, *premise_args(outcome))
    assert sorted(predicted["premise"]["running"]) == sorted(outcome.running), "the premise replog states"
    assert predicted["leader"] == f"b{outcome.leader}", "leader"
    copy = dumped_records(spec.version, outcome.replicas(outcome.copy))
    final = dumped_records(spec.version, outcome.replicas(outcome.final))
    copy_batches = view.replica_batches(spec.version, outcome.replicas(outcome.copy))
    final_batches = view.replica_batches(spec.version, outcome.replicas(outcome.final))
    leader = predicted["leader"]
    for replica in predicted["replicas"]:
        name = replica["name"]
        truncated = view.truncations(outcome.outputs[name], TOPIC)
        truncated_to = min(truncated) if truncated else None
        assert replica["truncated_to"] == truncated_to, f"{name}: truncation point"
        assert replica["log_end_offset_after"] == view.log_end(final_batches[name]), f"{name}: log end offset"
        lost = lost_records(copy[name], final[name], truncated_to)
        assert replica["lost"]["records"] == len(lost), f"{name}: lost records"
        assert replica["lost"]["first_offset"] == (min(lost) if lost else None), f"{name}: first lost offset"
        # the logs part where the broker truncated a replica below its own log end, nowhere else
        end = view.log_end(copy_batches[name])
        parted = truncated_to if truncated_to is not None and truncated_to < end else None
        assert replica["diverged_at"] == parted, f"{name}: diverged_at (the broker truncated to {truncated_to})"
        assert replica["cleaner_offset"] == view.checkpoint(outcome.copy / name, CLEANER_CHECKPOINT, TOPIC), \
            f"{name}: cleaner offset"
        codes = {f["code"] for f in replica["findings"]}
        assert "KAFKA_EPOCH_CHECKPOINT_MISMATCH" not in codes, f"{name}: false epoch checkpoint finding"
        if name != leader and parted is None:
            common = min(end, view.log_end(copy_batches[leader]))
            differs = batch_keys(copy_batches[name], common) != batch_keys(copy_batches[leader], common)
            assert (replica["compaction_difference"] is not None) == differs, \
                f"{name}: compaction difference (kafka-dump-log: batches below {common} differ: {differs})"
    consumer_view = latest_values(final[leader])
    assert len(consumer_view) > 1, f"kafka-dump-log's records not read: latest values {consumer_view}"
    for name, records in final.items():
        assert latest_values(records) == consumer_view, f"{name}: latest values differ from the leader's at the end"
    assert any(r["lost"]["records"] for r in predicted["replicas"]) == loses, "records lost by the scenario"
    return predicted


def cleaned_apart(predicted: dict[str, Any]) -> None:
    """The scenario's own premise: b2 cleaned, b4 never, and the cleaned replicas' batches differ from b4's."""
    points = {r["name"]: r["cleaner_offset"] for r in predicted["replicas"]}
    assert points["b4"] is None, f"b4's cleaner is off, yet it has a cleaner point: {points}"
    assert points["b2"] is not None and points["b2"] > 0, f"b2 never cleaned: {points}"


@pytest.mark.parametrize("spec", cases("4.4.0-elr-off", without=OLD_IBP))
def test_replicas_cleaned_apart_then_all_crash(spec: ClusterSpec, tmp_path: Path) -> None:
    """Replicas cleaned at different points (b3 frozen while b2 cleaned on, b4's cleaner off) all crash and
    restart: nobody truncates, nothing is lost; replay reports a compaction difference, not a divergence."""
    spec = compaction_spec(spec)
    predicted = compare_compacted(spec, run_scenario(spec, tmp_path, cleaned_apart_then_all_crash), loses=False)
    cleaned_apart(predicted)
    points = {r["name"]: r["cleaner_offset"] for r in predicted["replicas"]}
    assert points["b3"] is not None and points["b3"] < points["b2"], f"b3's cleaner point not behind b2's: {points}"


@pytest.mark.parametrize("spec", cases("3.9.1-kraft", without=OLD_IBP))
def test_cleaned_replicas_then_an_unclean_election(spec: ClusterSpec, tmp_path: Path) -> None:
    """Cleaned replicas (b4 never cleaned) and an unclean election above the cleaner points: the old leader
    truncates records it alone held; replay finds that divergence and only that one."""
    spec = compaction_spec(spec)
    predicted = compare_compacted(spec, run_scenario(spec, tmp_path, cleaned_then_unclean_election), loses=True)
    cleaned_apart(predicted)


@pytest.mark.parametrize("spec", cases(without=OLD_IBP))
def test_a_new_leader_cleans_past_the_old_leaders_divergence(spec: ClusterSpec, tmp_path: Path) -> None:
    """The new leader's cleaner removed its own records at the offsets where the old leader diverged: the
    old leader still truncates there and replay still finds the divergence there (by the epochs)."""
    spec = compaction_spec(spec)
    predicted = compare_compacted(spec, run_scenario(spec, tmp_path, new_leader_cleans_past_the_divergence),
                                  loses=True)
    cleaned_apart(predicted)
    points = {r["name"]: r["cleaner_offset"] for r in predicted["replicas"]}
    b2 = next(r for r in predicted["replicas"] if r["name"] == "b2")
    assert points["b3"] is not None and b2["diverged_at"] < points["b3"], \
        f"the divergence is not below the new leader's cleaner point (the case under test): {points}"
