"""Tiered storage (KIP-405) on hand-built log dirs: the log start kept below the local one when the topic has remote
storage (LogLoader), read from the metadata log in the log dir or stated; ls, doctor, replay (the leader's
OFFSET_MOVED_TO_TIERED_STORAGE answer) and repair."""
from __future__ import annotations

from pathlib import Path

import pytest

from replog.formats.discovery import roots_under
from replog.formats.fileio import atomic_write
from replog.formats.kafka import checkpoint, names
from replog.recovery.doctor import diagnose
from replog.recovery.kafka.epoch_cache import EpochCache
from replog.recovery.kafka.logdir import summarize_roots
from replog.recovery.kafka.profile import REMOTE, ClusterProfile, stated
from replog.recovery.kafka.protocol import FollowerOutcome, fetch
from replog.recovery.kafka.repair import repair
from replog.recovery.kafka.replay import replay_paths
from replog.recovery.kafka.replica import load_replica, replica_from_batches
from replog.recovery.kafka.tiered import log_starts, tier_summaries, tiered_replicas
from replog.recovery.transcript import Transcript
from tests.recovery.kafka import independent_metadata as md
from tests.recovery.kafka.replicas import replica_dir

TOPIC_RESOURCE = 2
LOG_START, LOCAL_START = 5, 20


def tiered_dir(root: Path, name: str, first: int = LOCAL_START, last: int = 29, log_start: int = LOG_START,
               remote: str | None = None, epoch: int = 1) -> Path:
    """A log dir `root/name` whose `t-0` holds offsets first..last (of `epoch`) in segments from `first`, epoch 0
    from offset 0 below them (the remote part's) in its checkpoint, its log-start-offset-checkpoint saying
    `log_start`; `remote`: remote.storage.enable in a metadata log beside."""
    part = replica_dir(root, name, [(o, epoch) for o in range(first, last + 1)], hw=last + 1, log_start=first)
    atomic_write(part / names.LEADER_EPOCH_CHECKPOINT, checkpoint.build_leader_epoch_checkpoint(
        EpochCache([(0, 0), (epoch, first)] if epoch else [(0, 0)]).entries))
    atomic_write(root / name / names.LOG_START_OFFSET_CHECKPOINT,
                 checkpoint.build_offset_checkpoint({("t", 0): log_start}))
    if remote is not None:
        md.write_metadata_log(root / name, [md.config(TOPIC_RESOURCE, "t", REMOTE, remote)])
    return part


@pytest.mark.parametrize("checkpointed, first, remote, expected", [
    (5, 20, True, (5, 20)), (5, 20, False, (20, 20)), (None, 20, True, (0, 20)), (30, 20, True, (30, 30)),
    (30, 20, False, (30, 30)), (5, None, True, (5, 5)),
])
def test_log_starts_as_log_loader_sets_them(checkpointed: int | None, first: int | None, remote: bool,
                                            expected: tuple[int, int]) -> None:
    assert log_starts(checkpointed, first, remote) == expected


@pytest.mark.parametrize("remote, option, expected, source", [
    ("true", None, (LOG_START, LOCAL_START), "metadata"), ("false", None, (LOCAL_START, LOCAL_START), "metadata"),
    (None, True, (LOG_START, LOCAL_START), "option"), (None, None, (LOCAL_START, LOCAL_START), "default"),
])
def test_ls_keeps_the_checkpointed_log_start_with_remote_storage(tmp_path: Path, remote: str | None,
                                                                  option: bool | None, expected: tuple[int, int],
                                                                  source: str) -> None:
    tiered_dir(tmp_path, "b1", remote=remote)
    parts, _ = summarize_roots(roots_under(tmp_path / "b1"))
    tier_summaries(parts, stated(remote_storage=option))
    part = next(p for p in parts if p.topic == "t")
    assert (part.log_start_offset, part.local_start) == expected, "log start, local log start"
    assert part.remote_storage.source == source, "where remote.storage.enable came from"


@pytest.mark.parametrize("remote, codes", [
    ("true", ["KAFKA_REMOTE_LOG_RANGE"]), (None, ["KAFKA_LOG_START_BELOW_LOCAL"]), ("false", []),
])
def test_doctor_names_the_range_below_the_local_log_start(tmp_path: Path, remote: str | None,
                                                          codes: list[str]) -> None:
    tiered_dir(tmp_path, "b1", remote=remote)
    found = diagnose([tmp_path / "b1"]).findings
    got = [f for f in found if f.code in ("KAFKA_REMOTE_LOG_RANGE", "KAFKA_LOG_START_BELOW_LOCAL")]
    assert [f.code for f in got] == codes, "the tiered-storage finding"
    for f in got:
        assert (f.details["log_start_offset"], f.details["local_log_start_offset"]) == (LOG_START, LOCAL_START), \
            "the range it names"


def test_a_fetch_below_the_leaders_local_log_start_builds_from_remote_storage() -> None:
    """A follower whose log ends below the leader's log start: OFFSET_OUT_OF_RANGE restarts it at the log start,
    which is below the local one: OFFSET_MOVED_TO_TIERED_STORAGE restarts it at the local log start."""
    leader = replica_from_batches("l", [(20, 24, 1), (25, 29, 2)], high_watermark=30, log_start_offset=LOG_START,
                                  epochs=[(0, 0), (1, 12), (2, 25)])
    leader.local_log_start_offset = LOCAL_START
    follower = replica_from_batches("f", [(0, 2, 0)], high_watermark=3)
    outcome, log = FollowerOutcome("f"), Transcript()
    fetch(leader, follower, outcome, log)
    errors = [e.get("error") for e in log.events if e.get("error")]
    assert errors == ["OFFSET_OUT_OF_RANGE", "OFFSET_MOVED_TO_TIERED_STORAGE"], "the leader's answers"
    assert (follower.log_start_offset, follower.local_start) == (LOG_START, LOCAL_START), "follower's starts"
    assert follower.log_end_offset == 30 and outcome.fetched.first_offset == 20, "fetched from the local log start"
    assert [tuple(e) for e in follower.epochs.entries] == [(0, 0), (1, 12), (2, 25)], "epochs from remote + fetch"


def test_a_follower_without_remote_storage_on_the_leader_fetches_as_before() -> None:
    leader = replica_from_batches("l", [(20, 29, 1)], high_watermark=30, log_start_offset=LOCAL_START)
    follower = replica_from_batches("f", [(0, 2, 0)], high_watermark=3)
    outcome, log = FollowerOutcome("f"), Transcript()
    fetch(leader, follower, outcome, log)
    assert [e.get("error") for e in log.events if e.get("error")] == ["OFFSET_OUT_OF_RANGE"], "answers"
    assert follower.local_log_start_offset is None and follower.log_start_offset == LOCAL_START, "restarted there"


def remote_pair(tmp_path: Path) -> tuple[Path, Path]:
    """Leader b1: offsets 20..29 local, log start 5; follower b2 stopped at offset 10 (0..9, log start 0)."""
    b1 = tiered_dir(tmp_path / "in", "b1")
    b2 = tiered_dir(tmp_path / "in", "b2", first=0, last=9, log_start=0, epoch=0)
    return b1, b2


@pytest.mark.parametrize("remote, lost, start_after", [(True, 0, LOG_START), (False, 10, LOCAL_START)])
def test_replay_holds_records_in_remote_storage_as_not_lost(tmp_path: Path, remote: bool, lost: int,
                                                            start_after: int) -> None:
    b1, b2 = remote_pair(tmp_path)
    result = replay_paths([f"b1={b1}", f"b2={b2}"], leader="b1", assumed=stated(remote_storage=remote))
    follower = next(r for r in result.replicas if r.replica.name == "b2")
    assert follower.lost_summary.records == lost, "records lost by the follower"
    assert follower.final.log_start_offset == start_after, "its log start after"
    assert follower.final.local_start == LOCAL_START, "its local log start after"
    assert result.profile is not None and result.profile.setting("t", REMOTE).source == "option", "stated"


def test_repair_never_raises_the_log_start_of_a_tiered_partition(tmp_path: Path) -> None:
    b1, b2 = remote_pair(tmp_path)
    result = replay_paths([f"b1={b1}", f"b2={b2}"], leader="b1", assumed=stated(remote_storage=True))
    report = repair(result, tmp_path / "out")
    assert all(not r.problems for r in report), "repair verifies"
    for name in ("b1", "b2"):
        out = tmp_path / "out" / name
        assert checkpoint.parse_offset_checkpoint((out / names.LOG_START_OFFSET_CHECKPOINT).read_bytes()) == \
            {("t", 0): LOG_START}, f"{name}: the log start written"
        epochs = checkpoint.parse_leader_epoch_checkpoint((out / "t-0" / names.LEADER_EPOCH_CHECKPOINT).read_bytes())
        assert [tuple(e) for e in epochs][:2] == [(0, LOG_START), (1, LOCAL_START)], \
            f"{name}: the epochs of the remote part stay (the broker deletes remote segments outside them)"
        bases = sorted(int(p.name.split(".")[0]) for p in (out / "t-0").glob("*.log"))
        assert bases[0] == LOCAL_START, f"{name}: the first segment starts at the local log start"
        again = tiered_replicas([load_replica(out / "t-0")], ClusterProfile(assumed=stated(remote_storage=True)))[0]
        assert (again.log_start_offset, again.local_start, again.log_end_offset) == (LOG_START, LOCAL_START, 30), \
            f"{name}: as a broker with remote storage loads it"


def test_doctor_names_offsets_below_the_local_start_that_no_remote_segment_holds(tmp_path: Path) -> None:
    """The log dir's `__remote_log_metadata` names remote segments 5..12 (copy finished) and 13..16 (deletion
    started) of t-0: offsets 13..19 below the local log start 20 are in no usable remote segment."""
    from replog.formats.kafka import batch as v2
    from replog.formats.kafka.partition_metadata import PartitionMetadata, build_partition_metadata
    from replog.recovery.kafka.writer import write_partition
    from tests.brokers import remote_log_metadata_records as rlmm
    part = tiered_dir(tmp_path, "b1", remote="true")
    topic_id = "q1ReQqTpRxWGx3_gK4yH2A"
    atomic_write(part / names.PARTITION_METADATA, build_partition_metadata(PartitionMetadata(0, topic_id)))
    tp = rlmm.TopicIdPartition("t", topic_id, 0)
    ids = ("Bd2Kr7cXSQWvCm8eWJ7K3A", "AAAAAAAAAAAAAAAAAAAAAQ")
    values = [rlmm.segment_metadata(tp, ids[0], rlmm.Segment(5, 12, 1, 5, 6, {0: 5}, 100, None, 0)),
              rlmm.segment_update(tp, ids[0], 1, 7, None, 1),
              rlmm.segment_metadata(tp, ids[1], rlmm.Segment(13, 16, 1, 5, 6, {0: 13}, 100, None, 0)),
              rlmm.segment_update(tp, ids[1], 1, 8, None, 1), rlmm.segment_update(tp, ids[1], 1, 9, None, 2)]
    records = [v2.Record(i, 1, None, v) for i, v in enumerate(values)]
    write_partition(tmp_path / "b1" / "__remote_log_metadata-0", [v2.build_batch(records, base_offset=0)])
    found = diagnose([tmp_path / "b1"]).findings
    gaps = [(f.offset, f.message) for f in found if f.code == "KAFKA_REMOTE_LOG_GAP"]
    assert [g[0] for g in gaps] == [13], "where the uncovered offsets start"
    assert "offsets 13..19" in gaps[0][1], "the uncovered range"


def test_the_cli_options_state_remote_storage(tmp_path: Path) -> None:
    """`ls --remote-storage` and `replay --remote-storage`, where no metadata log says."""
    import json

    from tests.toolkit.test_cli import run_replog
    b1, b2 = remote_pair(tmp_path)
    done = run_replog("ls", str(b1.parent), "--remote-storage", "--format", "json")
    row = next(r for r in json.loads(done.stdout) if r["topic"] == "t")
    assert (row["log_start_offset"], row["local_log_start_offset"]) == (LOG_START, LOCAL_START), "ls"
    assert row["remote_storage"]["source"] == "option", "ls says the value was stated"
    done = run_replog("replay", f"b1={b1}", f"b2={b2}", "--leader", "b1", "--remote-storage", "--format", "json")
    out = json.loads(done.stdout)
    assert out["profile"]["settings"][REMOTE]["source"] == "option", "replay says the value was stated"
    assert [r["lost"]["records"] for r in out["replicas"]] == [0, 0], "nothing lost"
