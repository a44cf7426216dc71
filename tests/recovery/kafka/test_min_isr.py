"""The rules the cluster profile changes, on hand-built replicas and metadata logs: the high watermark held while
the ISR is below min.insync.replicas (Partition.maybeIncrementLeaderHW, 3.7+), ClearElrRecord, the ELR member that
restarts after an unclean shutdown, the last known leader, unclean elections by config."""
from __future__ import annotations

from pathlib import Path

import pytest

from replog.formats.errors import ReplogError
from replog.recovery.kafka.controller import Returning, read_metadata_log, recorded_leader
from replog.recovery.kafka.protocol import replay
from replog.recovery.kafka.replay import replay_paths
from replog.recovery.kafka.replica import replica_from_batches
from tests.recovery.kafka import independent_metadata as md
from tests.recovery.kafka.independent import write_replica

TID = "B3_HiNPgSQ6oxG9ZZ6ED5A"
ELR_ON = md.feature_level("eligible.leader.replicas.version", 1)


def test_the_high_watermark_holds_below_min_isr() -> None:
    """Leader at 15 with HW 10, one follower at 10: min ISR 3 with an ISR of 2 holds the HW at 10 (and the
    follower's with it); min ISR 2 lets it advance to 15."""
    def run(min_isr: int) -> tuple[int, int, list[str]]:
        lead = replica_from_batches("a", [(0, 9, 0), (10, 14, 0)], high_watermark=10)
        follower = replica_from_batches("b", [(0, 9, 0)], high_watermark=10)
        log, _ = replay(lead, [follower], leader_epoch=0, new_epoch=False, min_isr=min_isr)
        return lead.high_watermark, follower.high_watermark, [e["kind"] for e in log.events]

    held = run(3)
    assert held[:2] == (10, 10), "high watermarks held below min ISR"
    assert "hw_hold" in held[2], "the transcript says why"
    assert run(2)[:2] == (15, 15), "at min ISR the high watermark advances"


def test_min_isr_is_capped_at_the_assignment_only(tmp_path: Path) -> None:
    """Two of three replicas given. min ISR 3 stated, no record: the ISR of 2 holds the high watermark at 10.
    The record's assignment [1, 2, 3] keeps 3; an assignment of [1, 2] caps it at 2 (Partition.effectiveMinIsr)."""
    reps = logs(tmp_path)
    specs = [str(reps[1]), str(reps[2])]
    held = replay_paths(specs, assumed={"min.insync.replicas": "3"}).to_dict()
    assert [r["high_watermark_after"] for r in held["replicas"]] == [10, 10], "held: no assignment to cap it"
    created = [md.topic_record("t", TID), md.partition_record(TID, 0, [1, 2], [1, 2], leader=1, leader_epoch=0),
               md.config(2, "t", "min.insync.replicas", "3")]
    meta = md.write_metadata_log(tmp_path / "m", created)
    capped = replay_paths(specs, metadata=str(meta)).to_dict()
    assert [r["high_watermark_after"] for r in capped["replicas"]] == [15, 15], "capped at the replication factor"


def logs(tmp_path: Path, *, marker: set[int] = frozenset()) -> dict[int, Path]:  # type: ignore[assignment]
    """t-0 on brokers 1-3: broker 1 took 10..14 alone in epoch 0 (HW 10), brokers 2 and 3 hold 0..9; `marker`: the
    brokers whose log dir holds `.kafka_cleanshutdown`."""
    out = {}
    for b, last in ((1, 14), (2, 9), (3, 9)):
        batches = [(0, 9, 0)] + ([(10, 14, 0)] if last == 14 else [])
        out[b] = write_replica(tmp_path, f"d{b}", batches, [(0, 0)], 10, tag=b"%d" % b)
        md.write_meta_properties(out[b].parent, b)
        if b in marker:
            (out[b].parent / ".kafka_cleanshutdown").write_text('{"version":0,"brokerEpoch":7}')
    return out


def leaderless(*extra: bytes, elr: list[int], last_known: list[int] | None = None) -> list[bytes]:
    """Created on [1, 2, 3] with leader 1; ISR shrinks to [1] (ELR [2, 3] or as given); broker 1 is fenced:
    no leader in epoch 1, ISR empty, the ELR given."""
    return [md.topic_record("t", TID), md.partition_record(TID, 0, [1, 2, 3], [1, 2, 3], leader=1, leader_epoch=0),
            md.config(2, "t", "min.insync.replicas", "2"), *extra,
            md.partition_change(TID, 0, isr=[1], elr=[2, 3]),
            md.partition_change(TID, 0, leader=-1, isr=[], elr=elr, last_known_elr=last_known or [1])]


def replay_on(tmp_path: Path, values: list[bytes], *, marker: set[int] = frozenset(),  # type: ignore[assignment]
              running: tuple[str, ...] = ()) -> dict:  # type: ignore[type-arg]
    reps = logs(tmp_path, marker=marker)
    meta = md.write_metadata_log(tmp_path / "d1", values, per_batch=2)
    return replay_paths([str(p) for p in reps.values()], metadata=str(meta), running=running).to_dict()


def test_an_elr_member_restarting_after_an_unclean_shutdown_leaves_the_elr(tmp_path: Path) -> None:
    """ELR [1, 2], broker 1 (first in the assignment) without a clean-shutdown marker: it leaves the ELR as it
    registers, broker 2 is elected and broker 1 truncates its tail (before this rule: broker 1, nothing lost)."""
    d = replay_on(tmp_path, leaderless(ELR_ON, elr=[1, 2]), marker={2, 3})
    assert (d["leader"], d["leader_epoch"], d["leader_election"]["unclean"]) == ("broker-2", 2, False), "leader"
    assert "unclean shutdown" in d["leader_election"]["explanation"], "the explanation names the rule"
    first = next(r for r in d["replicas"] if r["name"] == "broker-1")
    assert (first["truncated_to"], first["lost"]["records"]) == (10, 5), "broker 1 truncates its tail"


def test_a_clean_or_running_or_elr_off_member_stays(tmp_path: Path) -> None:
    """The same record: with the marker, with its broker kept running, or with ELR off, broker 1 is elected."""
    assert replay_on(tmp_path / "a", leaderless(ELR_ON, elr=[1, 2]), marker={1, 2, 3})["leader"] == "broker-1", \
        "a clean shutdown keeps it in the ELR"
    assert replay_on(tmp_path / "b", leaderless(ELR_ON, elr=[1, 2]), running=("broker-1",))["leader"] == "broker-1", \
        "a broker that keeps running does not register again"
    assert replay_on(tmp_path / "c", leaderless(elr=[1, 2]))["leader"] == "broker-1", \
        "ELR off: the controller removes it from the ISR only"


def test_clear_elr_record_empties_elr_and_last_known_elr(tmp_path: Path) -> None:
    """ClearElrRecord("") after the partition went leaderless: no ELR, no last known leader, so the next election
    needs an unclean one (before: the stale ELR's broker 2 was taken)."""
    values = leaderless(ELR_ON, elr=[2, 3]) + [md.clear_elr("")]
    meta = md.write_metadata_log(tmp_path, values)
    record = read_metadata_log(meta, "t", 0)
    assert (record.current.elr, record.current.last_known_elr, record.current.record) == ((), (), "ClearElrRecord"), \
        "registration after the clear"
    assert record.current.leader_epoch == 1, "a clear is no election"
    with pytest.raises(ReplogError, match="no ISR or ELR member"):
        recorded_leader(record, Returning(elr_enabled=True))
    other = read_metadata_log(md.write_metadata_log(tmp_path / "x", leaderless(ELR_ON, elr=[2, 3]) + [
        md.clear_elr("other")]), "t", 0)
    assert other.current.elr == (2, 3), "a clear of another topic leaves this one"


def test_the_last_known_leader_is_elected_uncleanly(tmp_path: Path) -> None:
    """ISR and ELR empty, lastKnownElr [1]: with ELR on the controller elects broker 1 (unclean, RECOVERING) once
    it returns; with ELR off there is no such step (a usage error)."""
    meta = md.write_metadata_log(tmp_path, leaderless(ELR_ON, elr=[], last_known=[1]))
    record = read_metadata_log(meta, "t", 0)
    got = recorded_leader(record, Returning(elr_enabled=True, brokers=(1, 2, 3)))
    assert (got.broker, got.leader_epoch, got.unclean) == (1, 2, True), "last known leader"
    assert "lastKnownElr" in got.explanation, "the explanation names the step"
    with pytest.raises(ReplogError, match="ELR off"):
        recorded_leader(record, Returning(elr_enabled=False, brokers=(1, 2, 3)))
    gone = recorded_leader(record, Returning(unclean_shutdown=frozenset({1}), elr_enabled=True, brokers=(1, 2, 3)))
    assert gone.broker == 1, "an unclean shutdown does not touch lastKnownElr"


def test_unclean_elections_by_config(tmp_path: Path) -> None:
    """Nothing left and unclean.leader.election.enable on (the cluster default in the log): the first assignment
    replica that returns, uncleanly."""
    values = leaderless(md.config(4, "", "unclean.leader.election.enable", "true"), elr=[], last_known=[1, 2])
    d = replay_on(tmp_path, values)
    assert (d["leader"], d["leader_election"]["unclean"]) == ("broker-1", True), "unclean election by config"
