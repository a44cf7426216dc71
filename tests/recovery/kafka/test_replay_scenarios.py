"""The replays issue 4 requires, on replicas written to disk by our writers (docs/reference/kafka.md §13)."""
from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from replog.recovery.kafka.replay import replay_paths, run_replay
from replog.recovery.kafka.replica import batch_rows, load_replica, replica_from_batches
from tests.recovery.kafka.replicas import replica_dir


def by_name(result, name):  # noqa: ANN001, ANN201 - test helper
    return next(r for r in result.to_dict()["replicas"] if r["name"] == name)


def offsets_epochs(result, name):  # noqa: ANN001, ANN201
    final = next(r.final for r in result.replicas if r.replica.name == name)
    return [(b.base_offset, b.partition_leader_epoch) for b in batch_rows(final.log)]


def test_kip101_hw_truncation_loss(tmp_path: Path) -> None:
    a = replica_dir(tmp_path, "A", [(0, 0), (1, 0)], hw=2)
    b = replica_dir(tmp_path, "B", [(0, 0), (1, 0)], hw=1)
    epoch = replay_paths([f"A={a}", f"B={b}"], leader="A", protocol="epoch")
    rb = by_name(epoch, "B")
    assert rb["truncated_to"] in (None, 2) and rb["lost"]["records"] == 0 and rb["log_end_offset_after"] == 2
    hw = replay_paths([f"A={a}", f"B={b}"], leader="A", protocol="hw")
    rb = by_name(hw, "B")
    assert rb["truncated_to"] == 1 and rb["log_end_offset_after"] == 2 and rb["lost"]["records"] == 0
    appends = [e for e in hw.transcript.events if e["kind"] == "append" and e["replica"] == "B"]
    assert appends[0]["first_offset"] == 1


def test_kip101_divergence(tmp_path: Path) -> None:
    a = replica_dir(tmp_path, "A", [(0, 0), (1, 0)], hw=2)
    b = replica_dir(tmp_path, "B", [(0, 0), (1, 1)], hw=1)
    epoch = replay_paths([f"A={a}", f"B={b}"], leader="B")
    ra = by_name(epoch, "A")
    assert ra["truncated_to"] == 1 and ra["lost"]["records"] == 1 and ra["lost"]["first_offset"] == 1
    assert offsets_epochs(epoch, "A") == [(0, 0), (1, 1)] and ra["diverged_at"] == 1
    hw = replay_paths([f"A={a}", f"B={b}"], leader="B", protocol="hw")
    ra = by_name(hw, "A")
    assert ra["lost"]["records"] == 0 and offsets_epochs(hw, "A") == [(0, 0), (1, 0)]
    assert ra["diverged_at"] == 1  # the silent divergence the HW protocol leaves behind


def test_kip279_iterative_truncation(tmp_path: Path) -> None:
    a = replica_dir(tmp_path, "A", [(0, 1), (1, 1), (2, 3)], hw=1, epochs=[(1, 0), (3, 2)])
    b = replica_dir(tmp_path, "B", [(0, 1), (1, 2), (2, 2)], hw=1, epochs=[(1, 0), (2, 1)])
    result = replay_paths([f"A={a}", f"B={b}"], leader="A")
    rb = by_name(result, "B")
    assert rb["truncated_to"] == 1
    assert offsets_epochs(result, "B") == offsets_epochs(result, "A") == [(0, 1), (1, 1), (2, 3)]


def test_unclean_election(tmp_path: Path) -> None:
    a = replica_dir(tmp_path, "A", [(o, 0) for o in range(10)] + [(o, 1) for o in range(10, 15)], hw=10)
    b = replica_dir(tmp_path, "B", [(o, 0) for o in range(10)] + [(10, 2), (11, 2)], hw=10,
                    epochs=[(0, 0), (2, 10)])
    result = replay_paths([f"A={a}", f"B={b}"], leader="B")
    ra = by_name(result, "A")
    assert ra["truncated_to"] == 10 and ra["lost"]["records"] == 5
    assert (ra["lost"]["first_offset"], ra["lost"]["last_offset"]) == (10, 14)
    assert ra["fetched"]["records"] == 2 and ra["log_end_offset_after"] == 12
    assert ra["lost"]["key_sample"] == ["k10", "k11", "k12", "k13", "k14"]


def test_follower_behind_leader_log_start(tmp_path: Path) -> None:
    a = replica_dir(tmp_path, "A", [(o, 0) for o in range(20, 30)], hw=30, log_start=20)
    b = replica_dir(tmp_path, "B", [(o, 0) for o in range(0, 5)], hw=5)
    result = replay_paths([f"A={a}", f"B={b}"], leader="A")
    rb = by_name(result, "B")
    assert rb["truncated_to"] == 20 and rb["log_end_offset_after"] == 30
    assert any(e["kind"] == "truncate_fully" for e in result.transcript.events)


def test_leader_shorter_without_epochs(tmp_path: Path) -> None:
    from replog.formats.kafka.legacy import build_message
    lead = [build_message(o, b"k", f"v{o}".encode(), magic=1, timestamp=1000 + o) for o in range(3)]
    foll = [build_message(o, b"k", f"v{o}".encode(), magic=1, timestamp=1000 + o) for o in range(6)]
    a = replica_dir(tmp_path, "A", lead, hw=3)
    b = replica_dir(tmp_path, "B", foll, hw=6)
    result = replay_paths([f"A={a}", f"B={b}"], leader="A")
    rb = by_name(result, "B")
    assert rb["truncated_to"] == 3 and rb["lost"]["records"] == 3 and rb["log_end_offset_after"] == 3
    assert result.leader.unclean


def test_default_leader_is_explained(tmp_path: Path) -> None:
    a = replica_dir(tmp_path, "A", [(0, 0), (1, 0), (2, 1)], hw=2)
    b = replica_dir(tmp_path, "B", [(0, 0), (1, 0)], hw=2)
    result = replay_paths([f"A={a}", f"B={b}"])
    assert result.leader.name == "A" and not result.leader.unclean and "epoch 1" in result.leader.explanation


def test_inputs_are_only_read(tmp_path: Path) -> None:
    import hashlib
    a = replica_dir(tmp_path, "A", [(0, 0), (1, 0)], hw=2)
    b = replica_dir(tmp_path, "B", [(0, 0), (1, 1)], hw=1)
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in tmp_path.rglob("*") if p.is_file()}
    replay_paths([f"A={a}", f"B={b}"], leader="B")
    assert before == {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in tmp_path.rglob("*") if p.is_file()}


histories = st.lists(st.tuples(st.integers(0, 3), st.integers(1, 3)), min_size=0, max_size=6)


def build(history: list[tuple[int, int]], base_epoch: int) -> list[tuple[int, int, int]]:
    """Batches from (epoch bump, length) steps; epochs only grow along a log."""
    out, offset, epoch = [], 0, base_epoch
    for bump, n in history:
        epoch += bump
        out.append((offset, offset + n - 1, epoch))
        offset += n
    return out


@settings(max_examples=200, deadline=None)
@given(histories, histories, histories, st.integers(0, 2))
def test_after_replay_every_follower_is_a_prefix_of_the_leader(h1, h2, h3, leader_index) -> None:  # noqa: ANN001
    shared = build(h1, 0)
    end = shared[-1][1] + 1 if shared else 0
    epoch = shared[-1][2] if shared else 0
    tails = []
    for h, salt in ((h2, 1), (h3, 2)):
        # distinct leaders never share an epoch: one tail takes odd epochs, the other even ones
        tail = [(b + end, last + end, epoch + salt + 2 * e) for b, last, e in build(h, 0)]
        tails.append(tail)
    reps = [replica_from_batches("A", shared + tails[0]), replica_from_batches("B", shared + tails[1]),
            replica_from_batches("C", shared)]
    result = run_replay(reps, leader="ABC"[leader_index])
    lead = next(r.final for r in result.replicas if r.replica.name == "ABC"[leader_index])
    for r in result.replicas:
        fb = [(b.base_offset, b.last_offset, b.crc) for b in batch_rows(r.final.log)]
        lb = [(b.base_offset, b.last_offset, b.crc) for b in batch_rows(lead.log)]
        assert fb == lb[:len(fb)]
        assert len(fb) == len(lb)  # the final fetch round brings every follower to the leader's end
    again = run_replay([r.final for r in result.replicas], leader="ABC"[leader_index])
    assert all(not r.lost and (r.outcome is None or not r.outcome.removed) for r in again.replicas)


def test_load_replica_uses_broker_name_and_checkpoints(tmp_path: Path) -> None:
    a = replica_dir(tmp_path, "A", [(0, 0), (1, 0), (2, 0)], hw=2)
    rep = load_replica(a)
    assert rep.name == "A" and rep.high_watermark == 2 and rep.log_end_offset == 3


@settings(max_examples=150, deadline=None)
@given(histories, histories, histories, st.integers(0, 2))
def test_both_truncation_paths_agree(h1, h2, h3, leader_index) -> None:  # noqa: ANN001
    """OffsetsForLeaderEpoch round trips and Fetch/DivergingEpoch (KIP-595) end at the same offset
    whenever the leader's epoch is the highest, as it is after any real election."""
    shared = build(h1, 0)
    end = shared[-1][1] + 1 if shared else 0
    epoch = shared[-1][2] if shared else 0
    tails = [[(b + end, last + end, epoch + salt + 2 * e) for b, last, e in build(h, 0)]
             for h, salt in ((h2, 1), (h3, 2))]
    reps = [replica_from_batches("A", shared + tails[0]), replica_from_batches("B", shared + tails[1]),
            replica_from_batches("C", shared)]
    leader = reps[leader_index]
    result = run_replay(reps, leader=leader.name)
    # well-formed: a leader's epoch is at least every follower's (a new leader takes a higher epoch)
    fine = {r.name for r in reps if (r.epochs.latest_epoch or -1) <= (leader.epochs.latest_epoch or -1)}
    checks = [e for e in result.transcript.events if e["kind"] == "cross_check" and e["replica"] in fine]
    assert all(e["agree"] for e in checks), checks
