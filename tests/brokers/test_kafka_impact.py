"""`replog impact` against real clients: consumer groups commit on the old leader's tail (with and without a
committed leader epoch), the old leader crashes and loses that tail, and each group's consumer starts again; what
it read next, and what the idempotent producer's next batch became, must be what `replog impact` said from the
copy taken before.

The reference client is Java's consumer (kafka-console-consumer of the lab's version): it validates a committed
position that carries a leader epoch against the leader (KIP-320, `SubscriptionState.maybeCompleteValidation`)
and logs the truncation it detects, or logs the out-of-range fetch and the reset. kafka-python 3.0.12 is the client
that commits (its own consumed position carries the epoch of the last record read) and is run again too, but it is
held against replog only for groups committed without an epoch: when it resumes from a commit it seeks to the bare
offset and drops the committed epoch (`ConsumerCoordinator.refresh_committed_offsets_if_needed_async`), so it
never validates and misses the truncation that the Java consumer detects.

Premise (stated to replog with --running): the copy is taken with b3 and b4 frozen and b2 down; b2 restarts from
its own disk, b3 and b4 go on.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.brokers import broker_view as view
from tests.brokers.kafka_lab import ClusterSpec, running_cluster
from tests.brokers.scenarios_clients import (
    COORDINATOR,
    ClientsOutcome,
    Committed,
    ProducerNext,
    Resumed,
    clients_around_unclean_election,
)
from tests.brokers.test_kafka_replay import cases, controller_args, premise_args, replica_args, replog_json

pytestmark = pytest.mark.brokers

CLASSIFICATIONS = {"unaffected", "consumed_lost", "will_detect_truncation", "will_reset"}


def impact_cases(*ci: str) -> list[Any]:
    """Every lab version at its own protocol (those named run in `make test`); the pre-KIP-101 IBPs write
    message format v1, which has neither an idempotent producer nor leader epochs in batches."""
    return [c for c in cases(*ci) if "ibp" not in c.id]


def run(spec: ClusterSpec, tmp_path: Path, producer_from_start: bool = False) -> ClientsOutcome:
    (tmp_path / "cluster").mkdir()
    with running_cluster(spec, tmp_path / "cluster") as cluster:
        return clients_around_unclean_election(cluster, tmp_path, producer_from_start=producer_from_start)


def predicted_impact(spec: ClusterSpec, got: ClientsOutcome) -> dict[str, Any]:
    outcome = got.outcome
    return replog_json("impact", *replica_args(outcome.copy, outcome), *controller_args(outcome),
                       "--protocol", spec.protocol, "--offsets", str(outcome.copy / f"b{COORDINATOR}"),
                       *premise_args(outcome))


# ----- consumer groups

def check_commit(predicted: dict[str, Any], committed: Committed) -> None:
    group = predicted["group"]
    assert predicted["committed_offset"] == committed.offset, f"{group}: committed offset (coordinator's answer)"
    assert predicted["committed_leader_epoch"] == committed.leader_epoch, \
        f"{group}: committed leader epoch (coordinator's answer)"


def check_lost(predicted: dict[str, Any], committed: Committed, final: dict[int, bytes]) -> None:
    """The records the group's consumer read that the partition no longer holds (by offset and value)."""
    group = predicted["group"]
    lost = [offset for offset, value in committed.read if final.get(offset) != value]
    assert predicted["records_consumed_lost"] == len(lost), f"{group}: records it read that are lost"
    assert predicted["first_lost_offset"] == (lost[0] if lost else None), f"{group}: first lost offset it read"
    assert predicted["last_lost_offset"] == (lost[-1] if lost else None), f"{group}: last lost offset it read"


def check_resume(predicted: dict[str, Any], java: Resumed, log_start: int) -> None:
    """Where the Java consumer resumed, and what it said, against the classification (auto.offset.reset=earliest:
    a reset goes to the log start)."""
    group, kind = predicted["group"], predicted["classification"]
    detected = [e for e in java.events if "Truncation detected" in e]
    out_of_range = [e for e in java.events if "out of range" in e]
    assert kind in CLASSIFICATIONS, f"{group}: unknown classification {kind}"
    assert bool(detected) == (kind == "will_detect_truncation"), f"{group}: {kind}, the consumer logged {java.events}"
    assert bool(out_of_range) == (kind == "will_reset"), f"{group}: {kind}, the consumer logged {java.events}"
    expected = log_start if kind == "will_reset" else predicted["resumes_at"]
    assert java.first_offset == expected, f"{group}: {kind}, the consumer's first record {java.first_offset}"


def check_skipped(predicted: dict[str, Any], java: Resumed, final: dict[int, bytes]) -> None:
    """Records of the new history between the first lost offset and where the consumer resumed: it never reads
    them (the count for a reset is the `latest` policy's, not checked here: the consumer resets to earliest)."""
    if predicted["classification"] not in ("consumed_lost", "will_detect_truncation"):
        return
    first, resumed = predicted["first_lost_offset"], java.first_offset
    assert resumed is not None, f"{predicted['group']}: the consumer read nothing"
    skipped = sum(1 for offset in final if first <= offset < resumed)
    assert predicted["records_skipped"] == skipped, f"{predicted['group']}: records of the new history it skips"


def check_group(predicted: dict[str, Any], got: ClientsOutcome, final: dict[int, bytes], log_start: int) -> None:
    group = predicted["group"]
    check_commit(predicted, got.committed[group])
    check_lost(predicted, got.committed[group], final)
    check_resume(predicted, got.resumed_java[group], log_start)
    check_skipped(predicted, got.resumed_java[group], final)
    if predicted["committed_leader_epoch"] is None:
        assert got.resumed[group].first_offset == got.resumed_java[group].first_offset, \
            f"{group}: kafka-python resumed elsewhere than the Java consumer"


# ----- the idempotent producer

def check_producer(spec: ClusterSpec, got: ClientsOutcome, predicted: list[dict[str, Any]],
                   final: dict[int, bytes]) -> None:
    """Its lost batches as kafka-dump-log shows them on b2's copy, the new leader's state for it on b3's copy,
    and its next batch as the new leader answered it (appended: offset, producer epoch and sequence on b3 at the
    end; refused: the error the client got)."""
    outcome = got.outcome
    copied_b2, copied_b3 = view.segments(outcome.copy / "b2" / "t-0"), view.segments(outcome.copy / "b3" / "t-0")
    ended = view.segments(outcome.final / "b3" / "t-0")
    dumped = view.producer_batches(spec.version, copied_b2 + copied_b3 + ended)
    offsets = {offset for offset, _ in got.produced}
    lost = [b for f in copied_b2 for b in dumped[f] if b.base_offset in offsets]
    assert len(predicted) == 1, f"producers with lost writes: {predicted}"
    p = predicted[0]
    assert (p["producer_id"], p["producer_epoch"]) == (lost[0].producer_id, lost[0].producer_epoch), "producer"
    assert p["records_lost"] == sum(1 for o, v in got.produced if final.get(o) != v), "records lost"
    assert (p["first_sequence"], p["last_sequence"]) == (lost[0].base_sequence, lost[-1].last_sequence), \
        "lost sequence range"
    known = [b for f in copied_b3 for b in dumped[f] if b.producer_id == p["producer_id"]]
    assert p["leader_last_sequence"] == (known[-1].last_sequence if known else None), "the new leader's last sequence"
    check_acknowledged(p, outcome.copy / "b2", min(offsets))
    check_next_batch(p, got.producer_next[0], [b for f in ended for b in dumped[f]], outcome.outputs["b3"])


OUT_OF_ORDER = re.compile(r"Out of order sequence number for producer (\d+) at offset \d+ in partition t-0: "
                          r"(-?\d+) \(incoming seq\. number\), (-?\d+) \(current end sequence number\)")


def check_next_batch(p: dict[str, Any], sent: ProducerNext, ended: list[view.ProducerBatch], leader_log: str) -> None:
    """replog's verdict on the producer's next batch against the leader's answer to the real one (a refusal in
    the leader's own words: `ProducerAppendInfo.checkSequence`, logged by ReplicaManager)."""
    if sent.offset is None:
        assert sent.error is not None and "OutOfOrderSequenceNumber" in sent.error, f"next batch: {sent.error}"
        assert p["next_append"] == "out_of_order_sequence", \
            f"next batch: replog says {p['next_append']}, the leader answered {sent.error}"
        said = OUT_OF_ORDER.search(leader_log)
        assert said is not None, "b3 never logged the out-of-order sequence"
        assert [int(x) for x in said.groups()] == \
            [p["producer_id"], p["last_sequence"] + 1, p["leader_last_sequence"]], f"b3 said: {said.group(0)}"
        return
    assert p["next_append"] == "accepted", f"next batch: replog says {p['next_append']}, the leader accepted it"
    taken = next(b for b in ended if b.base_offset == sent.offset)
    assert (taken.producer_id, taken.producer_epoch, taken.base_sequence) == \
        (p["producer_id"], p["producer_epoch"], p["last_sequence"] + 1), "the next batch as the leader appended it"


def check_acknowledged(p: dict[str, Any], log_dir: Path, first_lost: int) -> None:
    """The producer had every lost write acknowledged (acks=all, b2 alone in the ISR: `send().get()` returned its
    offset), but a copy only knows the high watermark from b2's checkpoint, written every second: replog's
    `acknowledged` must follow that checkpoint, which may lag what the producer was told."""
    high_watermark = view.checkpoint(log_dir, "replication-offset-checkpoint", "t")
    assert p["acknowledged"] == (high_watermark is not None and high_watermark > first_lost), \
        f"acknowledged, against b2's checkpointed high watermark {high_watermark}"


def compare(spec: ClusterSpec, got: ClientsOutcome) -> None:
    """Every group and the producer, replog's impact of the copy against what the clients met."""
    assert got.offsets_replicas == [COORDINATOR], f"__consumer_offsets-0 placed on {got.offsets_replicas}"
    predicted = predicted_impact(spec, got)
    assert sorted(predicted["premise"]["running"]) == sorted(got.outcome.running), "the premise replog states"
    assert predicted["leader"] == f"b{got.outcome.leader}", "the leader consumers meet"
    final = dict(got.outcome.consumed)
    groups = {g["group"]: g for g in predicted["consumer_groups"]}
    assert sorted(groups) == sorted(got.committed), "groups replog found in __consumer_offsets"
    for group in groups.values():
        check_group(group, got, final, predicted["log_start_offset_after"])
    assert {g["classification"] for g in groups.values()} == CLASSIFICATIONS, "the scenario meets every rule"
    check_producer(spec, got, predicted["producers"], final)


@pytest.mark.parametrize("spec", impact_cases("4.4.0-elr-on"))
def test_impact_against_real_consumers_and_producer(spec: ClusterSpec, tmp_path: Path) -> None:
    """Scenario U with six groups (committed at 8, 12 and 15, each with and without an epoch) and an idempotent
    producer whose only writes are lost: replog's classification, lost records, resume offset and skipped records
    per group, and its producer entry (the new leader, knowing nothing of it, accepts its next sequence)."""
    compare(spec, run(spec, tmp_path))


@pytest.mark.parametrize("spec", impact_cases())
def test_impact_when_the_new_leader_knows_the_producer(spec: ClusterSpec, tmp_path: Path) -> None:
    """The same with the idempotent producer writing A-0..9 too: the new leader holds its sequences up to 9 and
    refuses its next batch (sequence 15) with OUT_OF_ORDER_SEQUENCE_NUMBER, as replog must say."""
    compare(spec, run(spec, tmp_path, producer_from_start=True))
