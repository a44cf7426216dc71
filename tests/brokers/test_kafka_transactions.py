"""Transactions whose markers (or whole transactions) a truncation takes away, against real brokers and Kafka's own
Java producer: replog's `replay`, `repair` and `impact` of the copy taken mid-scenario against what the brokers did
after it (truncation, lost offsets, the producer snapshot each broker wrote at its clean stop, what a
read_committed consumer reads, and how the leader answered the producer's next transaction).

Transactions v1 on 3.9.1; on 4.x the cluster's `transaction.version` (read from the metadata log with kafka-dump-log)
says which the client negotiated: at 2 (KIP-890) every marker carries the producer epoch + 1, and the broker then
forgets the producer's sequences (`ProducerStateEntry.maybeUpdateProducerEpoch`).
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.brokers import broker_view as view
from tests.brokers.kafka_lab import ClusterSpec, running_cluster
from tests.brokers.scenarios import TOPIC, Outcome
from tests.brokers.scenarios_txn import (
    TXN_TOPIC,
    RepairProof,
    TxnOutcome,
    marker_lost,
    repaired_then_next_write,
    transaction_lost,
)
from tests.brokers.test_kafka_replay import (
    VERSIONS,
    controller_args,
    lost_offsets,
    premise_args,
    replica_args,
    replog_json,
)

pytestmark = pytest.mark.brokers
FULL = pytest.mark.brokers_full

# transactions v2 where the cluster was formatted with it: a 4.x cluster formatted at its own latest metadata version
EXPECTED_TV = {"3.9.1": None, "4.0.2": 2, "4.4.0": 2}


def txn_cases(*labels: str, ci: str = "") -> list[Any]:
    return [pytest.param(VERSIONS[label], id=label, marks=() if label == ci else FULL) for label in labels]


def predicted(command: str, spec: ClusterSpec, outcome: Outcome, *extra: str) -> dict[str, Any]:
    return replog_json(command, *replica_args(outcome.copy, outcome), *controller_args(outcome),
                       "--protocol", spec.protocol, *premise_args(outcome), *extra)


def predicted_impact(spec: ClusterSpec, outcome: Outcome) -> dict[str, Any]:
    """impact with the coordinator's log dir (b2's copy holds `__transaction_state-0`) as --offsets."""
    assert (outcome.copy / "b2" / f"{TXN_TOPIC}-0").is_dir(), "the coordinator's log is not in b2's copy"
    return predicted("impact", spec, outcome, "--offsets", str(outcome.copy / "b2"))


def check_tv(spec: ClusterSpec, got: TxnOutcome) -> None:
    if spec.mode == "kraft":
        assert got.transaction_version == EXPECTED_TV[spec.version] or (
            got.transaction_version in (None, 0) and EXPECTED_TV[spec.version] is None), \
            f"transaction.version in the metadata log: {got.transaction_version}"


def compare_replay(spec: ClusterSpec, outcome: Outcome, tmp_path: Path, written_after: bool) -> dict[str, Any]:
    """replay and repair of the copy against the brokers: each replica's truncation point (its log lines), the
    offsets it lost (kafka-dump-log of the copy and of the end), and the repaired batches (kafka-dump-log) against
    the broker's. `written_after`: the cluster wrote more after the copy (a coordinator's marker, the producer's
    next transaction): the end is then compared below the copy's leader log end only, high watermarks not at all."""
    plan = predicted("replay", spec, outcome)
    assert plan["leader"] == f"b{outcome.leader}", "leader"
    repaired = tmp_path / "repaired"
    predicted("repair", spec, outcome, "--out", str(repaired))
    copy = view.replica_batches(spec.version, outcome.replicas(outcome.copy))
    final = view.replica_batches(spec.version, outcome.replicas(outcome.final))
    written = view.replica_batches(spec.version, outcome.replicas(repaired))
    leader_end = view.log_end(copy[plan["leader"]])
    for replica in plan["replicas"]:
        name = replica["name"]
        truncated = view.truncations(outcome.outputs[name], TOPIC)
        assert replica["truncated_to"] == (min(truncated) if truncated else None), f"{name}: truncation point"
        lost = lost_offsets(copy[name], final[name])
        assert replica["lost"]["records"] == len(lost), f"{name}: lost records (the marker among them)"
        assert replica["lost"]["first_offset"] == (lost[0] if lost else None), f"{name}: first lost offset"
        assert replica["lost"]["last_offset"] == (lost[-1] if lost else None), f"{name}: last lost offset"
        ended = [b for b in final[name] if b.base_offset < leader_end] if written_after else final[name]
        assert written[name] == ended, f"{name}: repaired batches (kafka-dump-log) differ from the broker's"
        if not written_after:
            assert replica["log_end_offset_after"] == view.log_end(final[name]), f"{name}: log end offset"
            assert replica["high_watermark_after"] == view.checkpoint(
                outcome.final / name, "replication-offset-checkpoint", TOPIC), f"{name}: high watermark"
            check_snapshot(spec, name, repaired / name / f"{TOPIC}-0", outcome.final / name / f"{TOPIC}-0")
    return plan


def check_snapshot(spec: ClusterSpec, name: str, ours_dir: Path, broker_dir: Path) -> None:
    """The producer snapshot at the log end: replog's repair against the broker's own at its clean stop, both
    printed by kafka-dump-log."""
    broker, ours = sorted(broker_dir.glob("*.snapshot")), sorted(ours_dir.glob("*.snapshot"))
    assert broker, f"{name}: the broker wrote no producer snapshot at its clean stop"
    assert ours and ours[-1].name == broker[-1].name, f"{name}: the last snapshot's name (the log end offset)"
    dumped = view.dump_entries(spec.version, [broker[-1], ours[-1]])
    assert dumped[ours[-1]] == dumped[broker[-1]], f"{name}: producer entries as kafka-dump-log prints them"
    assert dumped[broker[-1]], f"{name}: the broker's snapshot holds no producer: the scenario tests nothing"


def control_offsets(version: str, partition: Path) -> list[int]:
    """Offsets of the transaction markers in a partition dir, as kafka-dump-log prints its batches."""
    lines = view.dump_lines(version, view.segments(partition))
    return [int(f["baseOffset"]) for rows in lines.values() for f in map(dict, map(view.FIELD.findall, rows))
            if f.get("isControl") == "true"]


def check_marker_premise(spec: ClusterSpec, got: TxnOutcome) -> int:
    """The premise of the marker scenarios, read from the copy: T1's marker on b2 alone. Its offset."""
    marker = got.transactions["T1"][1] + 1
    copy = got.outcome.copy
    assert marker in control_offsets(spec.version, copy / "b2" / f"{TOPIC}-0"), "T1's marker is not on b2"
    for name in ("b3", "b4"):
        assert marker not in control_offsets(spec.version, copy / name / f"{TOPIC}-0"), f"T1's marker reached {name}"
    return marker


def run(spec: ClusterSpec, tmp_path: Path, scenario: Any, **kw: Any) -> TxnOutcome:
    (tmp_path / "cluster").mkdir()
    with running_cluster(spec, tmp_path / "cluster") as cluster:
        got: TxnOutcome = scenario(cluster, tmp_path, **kw)
    check_tv(spec, got)
    return got


def marker_lost_replayed(spec: ClusterSpec, tmp_path: Path, complete: bool) -> tuple[TxnOutcome, dict[str, Any]]:
    """`marker_lost` run with the coordinator having completed the transaction or not, its premise checked, replay
    compared with the brokers (b2 writes again after the election only when the coordinator sends the marker
    again); the run and replog's impact."""
    got = run(spec, tmp_path, marker_lost, complete=complete)
    check_marker_premise(spec, got)
    compare_replay(spec, got.outcome, tmp_path, written_after=not complete)
    return got, predicted_impact(spec, got.outcome)


def values_of(prefix: str) -> list[bytes]:
    return [f"{prefix}-{i}".encode() for i in range(5)]


@pytest.mark.parametrize("spec", txn_cases("4.4.0-elr-on", "3.9.1-zk", "4.0.2-kraft", "3.9.1-kraft",
                                           ci="4.4.0-elr-on"))
def test_a_commit_marker_lost_after_the_coordinator_completed_hangs(spec: ClusterSpec, tmp_path: Path) -> None:
    """The COMMIT marker reached b2 alone, the coordinator completed the transaction, b3 was elected uncleanly: b2
    truncates the marker away and no marker comes again. replog: b2 loses the marker's offset, and impact calls the
    transaction hanging from its first offset, where a read_committed consumer stops."""
    got, impact = marker_lost_replayed(spec, tmp_path, complete=True)
    t1_first, _ = got.transactions["T1"]
    hanging = [t for t in impact["transactions"] if t["state"] == "hanging"]
    assert [t["first_offset"] for t in hanging] == [t1_first], f"hanging transactions: {impact['transactions']}"
    assert got.last_stable_offset == t1_first, "the leader's last stable offset (read_committed ListOffsets)"
    assert [v for _, v in got.committed_read] == values_of("T0"), "what a read_committed consumer reads"
    check_doctor(got.outcome.final / "b2", t1_first)


def check_doctor(log_dir: Path, first: int) -> None:
    """doctor on b2's log dir at the end (the partition, and the coordinator's log saying CompleteCommit): the
    transaction the brokers left open is reported where read_committed consumers stop."""
    found = replog_json("doctor", str(log_dir))["findings"]
    txn = [(f["code"], f["offset"]) for f in found if f["code"].startswith("KAFKA_TXN_")]
    assert txn == [("KAFKA_TXN_MARKER_MISSING", first)], f"doctor's transaction findings: {txn}"


@pytest.mark.parametrize("spec", txn_cases("4.4.0-elr-off", "3.9.1-kraft"))
def test_a_commit_marker_lost_before_the_coordinator_completed_is_sent_again(spec: ClusterSpec,
                                                                            tmp_path: Path) -> None:
    """The COMMIT marker reached b2 alone and b2 crashed at once (the coordinator's record PrepareCommit); b3 or b4
    is elected cleanly; b2 truncates its marker and, coordinator again, sends it to the new leader. replog: b2 loses
    the marker's offset, and impact calls the transaction open (the coordinator owes it its marker)."""
    got, impact = marker_lost_replayed(spec, tmp_path, complete=False)
    t1_first, _ = got.transactions["T1"]
    assert [(t["first_offset"], t["state"]) for t in impact["transactions"]] == [(t1_first, "open")], \
        f"transactions after the replay: {impact['transactions']}"
    assert [v for _, v in got.committed_read] == values_of("T0") + values_of("T1"), \
        "what a read_committed consumer reads once the coordinator sent the marker again"


@pytest.mark.parametrize("spec", txn_cases("4.4.0-elr-on", "3.9.1-kraft", "4.0.2-kraft"))
def test_the_producers_next_transaction_after_its_last_one_was_lost(spec: ClusterSpec, tmp_path: Path) -> None:
    """T1 (records and marker) on b2 alone is lost to the unclean election; the same producer's next transaction
    meets the new leader's state for it. replog's `next_append` for T1's lost writes against the leader's answer:
    transactions v1 continue T1's sequences (out of order on a leader that ends at T0's), transactions v2 start
    the epoch T1's marker gave at sequence 0 (accepted)."""
    got = run(spec, tmp_path, transaction_lost)
    outcome = got.outcome
    compare_replay(spec, outcome, tmp_path, written_after=True)
    impact = predicted_impact(spec, outcome)
    assert len(impact["producers"]) == 1, f"producers with lost writes: {impact['producers']}"
    p = impact["producers"][0]
    t1_first, t1_last = got.transactions["T1"]
    assert (p["first_offset"], p["last_offset"]) == (t1_first, t1_last), "T1's lost records"
    answer = got.next_answer or ""
    said = "accepted" if answer.startswith("ok") else \
        "out_of_order_sequence" if "OutOfOrderSequence" in answer else \
        "fenced" if "ProducerEpoch" in answer or "Fenced" in answer else answer
    assert p["next_append"] == said, f"next transaction: replog says {p['next_append']}, the leader answered {answer}"


def repair_in_place(spec: ClusterSpec, work: Path, trusted: bool) -> Any:
    """The repair the proof restarts on: `repair --in-place` of a copy of the copy; `repair --out` of the copy must
    write the same batches and producer snapshot for b2 (the replica it truncates and refills). `trusted`: b2's log
    dir also gets the clean-shutdown marker, so b2 loads replog's producer snapshot at its log end as it is
    (`LogLoader`: no segment recovery, `UnifiedLog.loadProducerState` from the snapshot); without it b2 recovers
    its active segment and rebuilds the producer state from the batches, deleting the snapshots above (its log
    says "Recovering unflushed segment", "Deleted producer state snapshot")."""
    def repair(copy: Path) -> Path:
        restored = work / "restored"
        shutil.copytree(copy, restored, symlinks=True)
        outcome = Outcome(restored, restored, 3, -1)
        replog_json("repair", *replica_args(restored, outcome), *controller_args(outcome), "--in-place",
                    "--backup", str(work / "backup"))
        out = work / "repaired-out"
        replog_json("repair", *replica_args(copy, Outcome(copy, copy, 3, -1)), *controller_args(outcome),
                    "--out", str(out))
        here, there = restored / "b2" / f"{TOPIC}-0", out / "b2" / f"{TOPIC}-0"
        assert view.replica_batches(spec.version, {"b2": here}) == view.replica_batches(spec.version, {"b2": there}), \
            "b2's batches: repair --in-place and repair --out differ"
        check_snapshot(spec, "b2 (in place vs --out)", here, there)
        if trusted:
            (restored / "b2" / ".kafka_cleanshutdown").write_text("")
        return restored
    return repair


def check_proof(proof: RepairProof) -> None:
    assert all(a.startswith("ok") for a in proof.answers), f"the producer's next write on b2: {proof.answers}"
    for name, lines in proof.refusals.items():
        assert lines == [], f"{name} refused a producer after the restart: {lines[:3]}"
    records = [f"{p}-{i}".encode() for p in ("P0", "P1") for i in range(5)]
    records += proof.plain + [f"P2-{i}".encode() for i in range(5)]
    assert [v for _, v in proof.committed_read] == records, \
        "what a read_committed consumer reads: every committed record, the next write's too"


REPAIR_CASES = [
    pytest.param(VERSIONS["4.4.0-elr-on"], True, True, id="4.4.0-transactions-v2-snapshot-trusted"),
    pytest.param(VERSIONS["4.4.0-elr-on"], False, True, id="4.4.0-idempotent-snapshot-trusted", marks=FULL),
    pytest.param(VERSIONS["4.4.0-elr-on"], True, False, id="4.4.0-transactions-v2-recovered", marks=FULL),
    pytest.param(VERSIONS["4.4.0-elr-on"], False, False, id="4.4.0-idempotent-recovered", marks=FULL),
    pytest.param(VERSIONS["3.9.1-kraft"], True, True, id="3.9.1-transactions-v1-snapshot-trusted", marks=FULL),
    pytest.param(VERSIONS["3.9.1-kraft"], False, True, id="3.9.1-idempotent-snapshot-trusted", marks=FULL),
]


@pytest.mark.parametrize(("spec", "transactional", "trusted"), REPAIR_CASES)
def test_the_same_producer_goes_on_after_a_repair(spec: ClusterSpec, transactional: bool, trusted: bool,
                                                  tmp_path: Path) -> None:
    """Premise: every node restarts from the copy that `repair --in-place` fixed. The producer that wrote before the
    divergence (transactions, or idempotent sends) writes again, to b2, the replica repair truncated and refilled,
    made leader by a preferred election: its write is accepted (no broker logs a sequence or epoch refusal) and a
    read_committed consumer reads every committed record."""
    (tmp_path / "cluster").mkdir()
    with running_cluster(spec, tmp_path / "cluster") as cluster:
        proof = repaired_then_next_write(cluster, tmp_path, transactional, repair_in_place(spec, tmp_path, trusted))
    check_proof(proof)
