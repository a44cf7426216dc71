"""The replay's premise (issue 26): which replicas restart from their copies and which keep running.

A follower truncates only when a fetcher starts for the partition: at its broker's start, or when a new
leader epoch reaches it. One whose broker kept running under an unchanged leader keeps fetching from its
log end, so the high-watermark protocol leaves its divergent tail in place. Inputs are written to disk
with replog's writers (`replicas.replica_dir`).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from replog.formats.errors import ReplogError
from replog.formats.kafka import names
from replog.recovery.kafka.replay import replay_paths, run_replay
from replog.recovery.kafka.replica import batch_rows, replica_from_batches
from tests.recovery.kafka.replicas import batch, replica_dir


def by_name(doc: dict, name: str) -> dict:
    return next(r for r in doc["replicas"] if r["name"] == name)


def diverged_pair(tmp_path: Path, follower_epoch: int = 0) -> list[str]:
    """Leader A holds 0..9 in epoch 0, HW 10. Follower B holds 0..4 as A does, then 5..9 of its own
    (another producer's records: different CRCs), in `follower_epoch`, HW 5."""
    a = replica_dir(tmp_path, "A", [(o, 0) for o in range(10)], hw=10)
    own = [batch(o, follower_epoch, tag="-b") for o in range(5, 10)]
    b = replica_dir(tmp_path, "B", [batch(o, 0) for o in range(5)] + own, hw=5,
                    epochs=[(0, 0)] + ([(follower_epoch, 5)] if follower_epoch else []))
    return [f"A={a}", f"B={b}"]


def test_hw_protocol_restarted_follower_truncates_to_its_high_watermark(tmp_path: Path) -> None:
    doc = replay_paths(diverged_pair(tmp_path), leader="A", protocol="hw").to_dict()
    b = by_name(doc, "B")
    assert b["truncated_to"] == 5 and b["lost"]["records"] == 5 and b["fetched"]["records"] == 5
    assert doc["premise"]["source"] == "assumed"
    assert doc["premise"]["restarted"] == ["A", "B"] and doc["premise"]["running"] == []
    assert b["running"] is False and b["fetcher_restarts"] is True


def test_hw_protocol_running_follower_keeps_its_divergent_tail(tmp_path: Path) -> None:
    result = replay_paths(diverged_pair(tmp_path), leader="A", protocol="hw", running=["B"])
    doc = result.to_dict()
    b = by_name(doc, "B")
    assert b["truncated_to"] is None and b["lost"]["records"] == 0 and b["fetched"]["records"] == 0
    assert b["diverged_at"] == 5 and b["log_end_offset_after"] == 10
    final = next(r.final for r in result.replicas if r.replica.name == "B")
    own = {ref.crc for ref in batch_rows(next(r.replica for r in result.replicas if r.replica.name == "B").log)}
    assert {ref.crc for ref in batch_rows(final.log)} == own   # every batch of its own still there
    assert not [e for e in doc["events"] if e["kind"] == "truncate" and e["replica"] == "B"]
    premise = doc["premise"]
    assert (premise["source"], premise["restarted"], premise["running"]) == ("option", [], ["A", "B"])
    assert premise["implied"] == ["A"]   # B's leader is unchanged: A's broker did not restart either
    assert b["running"] is True and b["fetcher_restarts"] is False
    assert "B keeps running" in doc["premise"]["sentence"]


def test_running_follower_whose_leader_changed_truncates(tmp_path: Path) -> None:
    """B's own records carry epoch 0 but A led epoch 1 from offset 5: a new leader epoch reached B, so
    its fetcher restarted and truncated, on both protocols."""
    a = replica_dir(tmp_path, "A", [(o, 0) for o in range(5)] + [(o, 1) for o in range(5, 10)], hw=10)
    b = replica_dir(tmp_path, "B", [(o, 0) for o in range(5)] + [batch(o, 0, tag="-b") for o in range(5, 10)],
                    hw=5)
    specs = [f"A={a}", f"B={b}"]
    for protocol in ("hw", "epoch"):
        doc = replay_paths(specs, leader="A", protocol=protocol, running=["B"]).to_dict()
        rb = by_name(doc, "B")
        assert rb["truncated_to"] == 5 and rb["lost"]["records"] == 5, protocol
        assert rb["running"] is True and rb["fetcher_restarts"] is True
        assert doc["premise"]["restarted"] == ["A"] and doc["premise"]["implied"] == []
        why = next(f for f in doc["premise"]["followers"] if f["name"] == "B")["why"]
        assert "epoch 0" in why and "epoch 1" in why


def test_running_follower_ahead_of_an_unchanged_leader_meets_the_fetchers_own_checks(tmp_path: Path) -> None:
    """Same epoch, follower longer: no truncation step, yet its first fetch is past the leader's end.
    HW protocol: OFFSET_OUT_OF_RANGE, truncate to the leader's end. Epoch protocol: the Fetch carries
    LastFetchedEpoch and the leader answers with a diverging epoch; same offset."""
    a = replica_dir(tmp_path, "A", [(o, 0) for o in range(10)], hw=10)
    b = replica_dir(tmp_path, "B", [(o, 0) for o in range(13)], hw=10)
    hw = replay_paths([f"A={a}", f"B={b}"], leader="A", protocol="hw", running=["B"])
    rb = by_name(hw.to_dict(), "B")
    assert rb["truncated_to"] == 10 and rb["lost"]["records"] == 3
    assert any(e.get("error") == "OFFSET_OUT_OF_RANGE" for e in hw.transcript.events)
    ep = replay_paths([f"A={a}", f"B={b}"], leader="A", protocol="epoch", running=["B"])
    assert by_name(ep.to_dict(), "B")["truncated_to"] == 10
    assert any(e.get("diverging_epoch") == 0 for e in ep.transcript.events)
    assert not any(e.get("api") == "OffsetsForLeaderEpoch" for e in ep.transcript.events)


def test_unchanged_leader_keeps_its_epoch(tmp_path: Path) -> None:
    """Every replica restarting means a new election (epoch 1); a follower that kept running under an
    unchanged leader means there was none: the leader keeps serving epoch 0."""
    a = replica_dir(tmp_path, "A", [(o, 0) for o in range(10)], hw=10)
    b = replica_dir(tmp_path, "B", [(o, 0) for o in range(8)], hw=8)
    restart = replay_paths([f"A={a}", f"B={b}"], leader="A")
    kept = replay_paths([f"A={a}", f"B={b}"], leader="A", running=["B"])
    lead = [e for e in restart.transcript.events if e["kind"] == "leader"][0]
    assert lead["leader_epoch"] == 1
    assert [e for e in kept.transcript.events if e["kind"] == "leader"][0]["leader_epoch"] == 0
    assert by_name(kept.to_dict(), "B")["fetched"]["records"] == 2


def test_controller_record_decides_whether_the_leader_changed(tmp_path: Path) -> None:
    """With ZooKeeper's partition state: broker 1 leads in epoch 1, which its copy holds (no election since
    the copies) -> the running follower on broker 2 keeps its tail although its own latest epoch is 0
    (no batch of epoch 1 reached it: on disk alone that reads as a leader change).
    A record in epoch 2 (an election after the copies) restarts its fetcher."""
    a = replica_dir(tmp_path, "A", [(o, 0) for o in range(5)] + [(5, 1), (6, 1)], hw=5)
    b = replica_dir(tmp_path, "B", [(o, 0) for o in range(5)] + [batch(o, 0, tag="-b") for o in (5, 6)], hw=5)
    specs = [f"broker-1={a}", f"broker-2={b}"]
    for epoch, restarts in ((1, False), (2, True)):
        state = tmp_path / f"state-{epoch}.json"
        state.write_text(json.dumps({"controller_epoch": 1, "leader": 1, "leader_epoch": epoch, "isr": [1, 2]}))
        doc = replay_paths(specs, protocol="hw", running=["broker-2"], partition_state=str(state)).to_dict()
        rb = by_name(doc, "broker-2")
        assert doc["premise"]["source"] == "controller"
        assert rb["fetcher_restarts"] is restarts
        assert (rb["truncated_to"] == 5) is restarts and (rb["lost"]["records"] == 2) is restarts


def test_running_names_an_unknown_replica(tmp_path: Path) -> None:
    with pytest.raises(ReplogError, match="--running 'C' is not one of A, B"):
        replay_paths(diverged_pair(tmp_path), leader="A", running=["C"])


def test_running_leader_is_stated(tmp_path: Path) -> None:
    doc = replay_paths(diverged_pair(tmp_path), leader="A", protocol="hw", running=["A"]).to_dict()
    assert doc["premise"]["running"] == ["A"] and doc["premise"]["restarted"] == ["B"]
    assert by_name(doc, "B")["truncated_to"] == 5   # B restarts: its fetcher truncates to its HW


def test_checkpoints_that_may_lag(tmp_path: Path) -> None:
    """No .kafka_cleanshutdown marker: the high watermark, recovery point and (when it decides) log start
    offset come from checkpoints the running broker writes every 5 s / 60 s / 60 s. A clean stop wrote
    them fresh, so with the marker none is listed."""
    a = replica_dir(tmp_path, "A", [(o, 0) for o in range(10, 20)], hw=20, log_start=12)
    b = replica_dir(tmp_path, "B", [(o, 0) for o in range(10, 20)], hw=20)
    (b.parent / names.CLEAN_SHUTDOWN).write_bytes(b"")
    doc = replay_paths([f"A={a}", f"B={b}"], leader="A").to_dict()
    ra, rb = by_name(doc, "A"), by_name(doc, "B")
    assert ra["clean_shutdown"] is False and rb["clean_shutdown"] is True
    assert set(ra["from_checkpoints"]) == {"high_watermark", "recovery_point", "log_start_offset"}
    assert rb["from_checkpoints"] == []


def test_log_start_from_segments_is_not_a_checkpoint_figure(tmp_path: Path) -> None:
    a = replica_dir(tmp_path, "A", [(o, 0) for o in range(10, 20)], hw=20)
    b = replica_dir(tmp_path, "B", [(o, 0) for o in range(10, 20)], hw=20)
    doc = replay_paths([f"A={a}", f"B={b}"], leader="A").to_dict()
    assert set(by_name(doc, "A")["from_checkpoints"]) == {"high_watermark", "recovery_point"}


def test_in_memory_replicas_state_the_assumed_premise() -> None:
    lead = replica_from_batches("a", [(0, 9, 1)], high_watermark=10)
    old = replica_from_batches("b", [(0, 4, 1), (5, 9, 1)], high_watermark=5)
    doc = run_replay([lead, old], running=["b"]).to_dict()
    assert doc["premise"]["running"] == ["a", "b"] and by_name(doc, "b")["fetcher_restarts"] is False
    assert run_replay([lead, old]).to_dict()["premise"]["sentence"].startswith(
        "premise: every replica restarts from its copy on disk")
