"""Replay against the brokers' own behaviour, on replicas written by kafka-python (issue cases)."""
from __future__ import annotations

import json
from pathlib import Path

from replog.recovery.kafka.replay import replay_paths
from tests.recovery.kafka.independent import write_replica


def test_the_new_leader_starts_a_new_epoch(tmp_path: Path) -> None:
    """`Partition.makeLeader` caches (new epoch, log end) on the leader. b1's epoch 2 is above b0's
    latest, so b0's answer for epoch 2 is (1, 4): Kafka truncates b1 to 4, not to its HW 0."""
    b0 = write_replica(tmp_path, "b0", [(0, 0, 1), (1, 3, 1)], [(1, 0)], 0)
    b1 = write_replica(tmp_path, "b1", [(0, 0, 1), (1, 3, 1), (4, 5, 1), (6, 7, 1), (8, 8, 2)], [(1, 0), (2, 8)], 0)
    result = replay_paths([f"b0={b0}", f"b1={b1}"], leader="b0")
    d = {r["name"]: r for r in result.to_dict()["replicas"]}
    assert d["b1"]["truncated_to"] == 4 and d["b1"]["log_end_offset_after"] == 4
    assert d["b0"]["epochs_after"] == [[1, 0], [3, 4]]      # epoch 2 existed: the election made 3
    leader = next(e for e in result.transcript.events if e["kind"] == "leader")
    assert leader["leader_epoch"] == 3


def test_lost_offsets_are_the_lowest_and_highest_lost(tmp_path: Path) -> None:
    """KIP-279: the follower went through two epochs the leader never saw; two truncation rounds
    remove its tail in two pieces, out of offset order. It loses offsets 2..5, all of them."""
    lead = write_replica(tmp_path, "a", [(0, 0, 0), (1, 1, 0), (2, 2, 3)], [(0, 0), (3, 2)], 0, tag=b"a")
    foll = write_replica(tmp_path, "b", [(0, 0, 0), (1, 1, 0), (2, 3, 1), (4, 5, 2)], [(0, 0), (1, 2), (2, 4)], 0,
                         tag=b"b")
    result = replay_paths([f"a={lead}", f"b={foll}"], leader="a")
    lost = next(r for r in result.to_dict()["replicas"] if r["name"] == "b")["lost"]
    assert (lost["first_offset"], lost["last_offset"], lost["records"]) == (2, 5, 4)


def replicas_by_name(result) -> dict:  # type: ignore[no-untyped-def]
    return {r["name"]: r for r in result.to_dict()["replicas"]}


def test_a_truncation_inside_a_batch_leaves_a_hole(tmp_path: Path) -> None:
    """`LocalLog.truncateTo(3)`: the follower's batch 1..5 holds offset 3, so it goes whole, but the log end is
    set to 3 and the fetch starts there: offsets 1..2 are gone from the follower for good (the leader's
    batch at 3 starts exactly there, so the append succeeds and nobody notices)."""
    lead = write_replica(tmp_path, "a", [(0, 0, 1), (1, 2, 1), (3, 5, 2)], [(1, 0), (2, 3)], 0, tag=b"a")
    foll = write_replica(tmp_path, "b", [(0, 0, 1), (1, 5, 1)], [(1, 0)], 0, tag=b"b")
    b = replicas_by_name(replay_paths([f"a={lead}", f"b={foll}"], leader="a"))["b"]
    assert b["truncated_to"] == 3 and b["log_end_offset_after"] == 6
    assert b["holes"] == [{"first_offset": 1, "last_offset": 2}]
    assert b["failed"] is None
    assert (b["lost"]["first_offset"], b["lost"]["last_offset"], b["lost"]["records"]) == (1, 5, 5)


def test_a_fetch_inside_a_leader_batch_fails_the_follower(tmp_path: Path) -> None:
    """The follower ends at 3 inside the leader's batch 1..4 (same epoch, other batching): the leader sends
    that batch, its base 1 is below the log end, `UnifiedLog.append` throws UnexpectedAppendOffsetException
    and the fetcher marks the partition failed. The follower keeps its log; it leaves the ISR, so the
    leader's high watermark moves on without it."""
    lead = write_replica(tmp_path, "a", [(0, 0, 1), (1, 4, 1)], [(1, 0)], 0, tag=b"a")
    foll = write_replica(tmp_path, "b", [(0, 0, 1), (1, 2, 1)], [(1, 0)], 0, tag=b"b")
    result = replay_paths([f"a={lead}", f"b={foll}"], leader="a")
    d = replicas_by_name(result)
    b = d["b"]
    assert b["failed"] is not None and b["failed"]["error"] == "UNEXPECTED_APPEND_OFFSET"
    assert b["failed"]["offset"] == 3
    assert b["log_end_offset_after"] == 3 and b["truncated_to"] is None and b["holes"] == []
    assert d["a"]["high_watermark_after"] == 5
    kinds = [(e["kind"], e["replica"]) for e in result.transcript.events]
    assert ("failed", "b") in kinds and ("isr_shrink", "b") in kinds
    fetches = [e for e in result.transcript.events if e["kind"] == "request" and e.get("api") == "Fetch"]
    assert len(fetches) == 1  # none after the failure


def test_an_empty_follower_restarts_at_the_straddling_batch(tmp_path: Path) -> None:
    """`Partition.doAppendRecordsToFollowerOrFutureReplica`: an empty log (log end = log start = 2, as after
    DeleteRecords on the leader) handed the leader's batch 1..4 restarts at 1 and appends it."""
    lead = write_replica(tmp_path, "a", [(1, 4, 1)], [(1, 1)], 0, tag=b"a")
    (lead.parent / "log-start-offset-checkpoint").write_text("0\n1\nt 0 2\n")
    foll = tmp_path / "b" / "t-0"
    foll.mkdir(parents=True)
    (foll / "00000000000000000002.log").write_bytes(b"")
    (foll.parent / "log-start-offset-checkpoint").write_text("0\n1\nt 0 2\n")
    b = replicas_by_name(replay_paths([f"a={lead}", f"b={foll}"], leader="a"))["b"]
    assert b["failed"] is None and b["log_end_offset_after"] == 5
    assert b["fetched"]["records"] == 4


def test_a_contradicted_epoch_entry_is_shown_used_and_never_copied(tmp_path: Path) -> None:
    """b's checkpoint says epoch 2 starts at 2, its batches start epoch 2 at 4. The broker trusts the
    checkpoint (so does the replay: b asks for epoch 2 and truncates to the leader's end of it), the
    replay reports the entry, and repair writes the checkpoint the batches give."""
    from replog.formats.kafka.checkpoint import parse_leader_epoch_checkpoint
    from replog.recovery.kafka.repair import repair

    lead = write_replica(tmp_path, "a", [(0, 1, 1), (2, 3, 1), (4, 5, 2)], [(1, 0), (2, 4)], 6, tag=b"a")
    foll = write_replica(tmp_path, "b", [(0, 1, 1), (2, 3, 1), (4, 5, 2)], [(1, 0), (2, 2)], 0, tag=b"a")
    result = replay_paths([f"a={lead}", f"b={foll}"], leader="a")
    b = replicas_by_name(result)["b"]
    found = [f for f in b["findings"] if f["code"] == "KAFKA_EPOCH_CHECKPOINT_MISMATCH"]
    assert len(found) == 1 and found[0]["offset"] == 2 and "start epoch 2 at 4" in found[0]["message"]
    repaired = repair(result, tmp_path / "out")
    assert all(r.identical_to_leader for r in repaired)
    written = tmp_path / "out" / "b" / "t-0" / "leader-epoch-checkpoint"
    entries = [tuple(e) for e in parse_leader_epoch_checkpoint(written.read_bytes())]
    assert entries[:2] == [(1, 0), (2, 4)]


def test_a_replica_that_would_fail_makes_replay_exit_1(tmp_path: Path) -> None:
    """The contract: exit 1 when a replica would fail, even when it loses nothing."""
    from tests.toolkit.test_cli import run_replog

    lead = write_replica(tmp_path, "a", [(0, 0, 1), (1, 4, 1)], [(1, 0)], 0, tag=b"a")
    foll = write_replica(tmp_path, "b", [(0, 0, 1), (1, 2, 1)], [(1, 0)], 0, tag=b"b")
    proc = run_replog("replay", f"a={lead}", f"b={foll}", "--leader", "a", "--format", "json")
    b = next(r for r in json.loads(proc.stdout)["replicas"] if r["name"] == "b")
    assert b["failed"] is not None and b["lost"]["records"] == 0
    assert proc.returncode == 1, proc.stderr


def test_two_truncation_rounds_export_their_losses_in_offset_order(tmp_path: Path) -> None:
    """KIP-279: b asks for epoch 2, the leader answers epoch 1 ending at 5, which b never had: b truncates to
    4 (the end of its epoch 0) and asks again, then to 2. The rounds remove 4..7 before 2..3; what b loses is
    2..7, and the exported segment holds it in offset order, named by offset 2."""
    from replog.formats.kafka.segment import SegmentWalk
    from replog.toolkit.export_lost import export_lost

    lead = write_replica(tmp_path, "a", [(0, 1, 0), (2, 4, 1), (5, 6, 3)], [(0, 0), (1, 2), (3, 5)], 0, tag=b"a")
    foll = write_replica(tmp_path, "b", [(0, 1, 0), (2, 3, 0), (4, 7, 2)], [(0, 0), (2, 4)], 0, tag=b"b")
    result = replay_paths([f"a={lead}", f"b={foll}"], leader="a")
    truncations = [e["offset"] for e in result.transcript.events if e["kind"] == "truncate"]
    assert truncations == [4, 2]
    lost = replicas_by_name(result)["b"]["lost"]
    assert (lost["first_offset"], lost["last_offset"], lost["records"]) == (2, 7, 6)
    export_lost(result, tmp_path / "lost")
    segment = tmp_path / "lost" / "b" / "00000000000000000002.log"
    batches = list(SegmentWalk(segment.read_bytes(), str(segment), 2).batches())
    assert [(b.base_offset, b.last_offset) for b in batches] == [(2, 3), (4, 7)]
