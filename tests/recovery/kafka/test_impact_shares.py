"""Share groups (KIP-932) in `impact`: the share coordinator's state replayed from `__share_group_state`, and
what a truncation does to a group whose start offset or acknowledged records it touches (hand-built logs)."""
from __future__ import annotations

from pathlib import Path

from replog.formats.fileio import atomic_write
from replog.formats.kafka import batch as v2
from replog.formats.kafka import checkpoint
from replog.recovery.kafka.impact import read_impact
from replog.recovery.kafka.replay import replay_paths
from replog.recovery.kafka.share_state import StateBatch, combine, read_share_states
from replog.recovery.kafka.writer import write_partition
from tests.brokers.share_state_records import SNAPSHOT, UPDATE, key, snapshot_value_44, update_value_44
from tests.brokers.share_state_records import StateBatch as Packed
from tests.recovery.kafka.replicas import TS, batch

TOPIC_ID = "q1W2e3R4t5Y6u7I8o9P0aA"


def replica(root: Path, name: str, last: int, hw: int, epoch: int) -> str:
    """`root/name/t-0` with one-record batches 0..last (epoch 0 up to 4, then `epoch`), topic id TOPIC_ID."""
    log_dir = root / name
    batches = [batch(o, 0 if o < 5 else epoch, name) for o in range(last + 1)]
    write_partition(log_dir / "t-0", batches, topic_id=TOPIC_ID)
    atomic_write(log_dir / "replication-offset-checkpoint", checkpoint.build_offset_checkpoint({("t", 0): hw}))
    return f"{name}={log_dir / 't-0'}"


def share_log(log_dir: Path, records: list[tuple[bytes, bytes | None]]) -> None:
    """`log_dir/__share_group_state-0` holding (key, value) records, one batch each."""
    data = [v2.build_batch([v2.Record(i, TS + i, k, v)], base_offset=i) for i, (k, v) in enumerate(records)]
    write_partition(log_dir / "__share_group_state-0", data)


def snapshot(group: str, start: int, batches: list[Packed]) -> tuple[bytes, bytes]:
    return key(SNAPSHOT, group, TOPIC_ID, 0), snapshot_value_44(0, 0, 1, start, TS, TS, batches)


def update(group: str, start: int, batches: list[Packed]) -> tuple[bytes, bytes]:
    return key(UPDATE, group, TOPIC_ID, 0), update_value_44(0, 1, start, batches)


def test_updates_merge_into_the_snapshot(tmp_path: Path) -> None:
    share_log(tmp_path, [snapshot("g", 0, []), update("g", 3, [(3, 6, 2, 1)]),
                         update("g", -1, [(5, 5, 0, 2)])])
    states = read_share_states([tmp_path]).for_partition(TOPIC_ID, 0)
    assert [s.group for s in states] == ["g"], states
    assert states[0].start_offset == 3, "an update's -1 start offset keeps the current one"
    assert states[0].batches == [StateBatch(3, 4, 2, 1), StateBatch(5, 5, 0, 2), StateBatch(6, 6, 2, 1)], \
        f"newer batches override older ones offset by offset: {states[0].batches}"


def test_combine_drops_offsets_below_the_start() -> None:
    assert combine([StateBatch(0, 9, 2, 1)], [], 4) == [StateBatch(4, 9, 2, 1)], "nothing below the start offset"


def test_a_truncation_below_the_start_offset_skips_new_records(tmp_path: Path) -> None:
    """b2 led and the group acknowledged 0..9 (start offset 10); b1 (log end 5) is elected uncleanly: b2 loses
    5..9, which the group had finished with, and records written next at 5..9 are never delivered to it. Group h
    (start 3, 3..6 acknowledged: next fetch 7) loses 5..6 and skips 5..6; group k (start 2, nothing acknowledged)
    loses nothing it finished."""
    specs = [replica(tmp_path, "b1", 4, 5, 1), replica(tmp_path, "b2", 9, 10, 1)]
    share_log(tmp_path / "b1", [snapshot("g", 10, []), snapshot("h", 3, [(3, 6, 2, 1)]), snapshot("k", 2, [])])
    result = replay_paths(specs, leader="b1")
    doc = read_impact(result).to_dict()
    by = {g["group"]: g for g in doc["share_groups"]}
    assert sorted(by) == ["g", "h", "k"], by
    g = by["g"]
    assert g["classification"] == "start_beyond_log_end", g
    assert g["never_delivered"] == {"first_offset": 5, "last_offset": 9}, g["never_delivered"]
    assert g["finished_records_lost"]["records"] == 5, g["finished_records_lost"]
    assert by["h"]["classification"] == "start_beyond_log_end", by["h"]
    assert by["h"]["never_delivered"] == {"first_offset": 5, "last_offset": 6}, by["h"]["never_delivered"]
    assert by["h"]["finished_records_lost"]["records"] == 2, by["h"]["finished_records_lost"]
    assert by["k"]["classification"] == "unaffected", by["k"]
    assert doc["summary"]["share_groups_affected"] == 2, doc["summary"]
    assert doc["share_state_sources"], "where the share state was read"


def test_acknowledged_records_lost_below_a_log_end_still_within_reach(tmp_path: Path) -> None:
    """Group m acknowledged 0..6 (start 7) on b2, whose log ends at 10; b3 (log end 8, epoch-1 tail 5..7 of its own)
    leads: 5..6 are lost although finished, and the next fetch (7) is within the new log."""
    specs = [replica(tmp_path, "b3", 7, 5, 2), replica(tmp_path, "b2", 9, 10, 1)]
    share_log(tmp_path / "b2", [snapshot("m", 7, [])])
    g = read_impact(replay_paths(specs, leader="b3")).to_dict()["share_groups"][0]
    assert g["classification"] == "finished_records_lost", g
    assert g["finished_records_lost"]["records"] == 2, g["finished_records_lost"]


def test_no_share_state_no_share_groups(tmp_path: Path) -> None:
    specs = [replica(tmp_path, "b1", 4, 5, 1), replica(tmp_path, "b2", 9, 10, 1)]
    doc = read_impact(replay_paths(specs, leader="b1")).to_dict()
    assert doc["share_groups"] == [] and doc["share_state_sources"] == [], "no __share_group_state, no share groups"


def test_acknowledged_batches_past_a_lagging_start_offset_count_as_finished(tmp_path: Path) -> None:
    """The persisted start offset lags (10) behind an acknowledged batch 10..19, as a real 4.4.0 coordinator
    held it: the share partition's next fetch is 20, past the new log end 5."""
    specs = [replica(tmp_path, "b1", 4, 5, 1), replica(tmp_path, "b2", 19, 20, 1)]
    share_log(tmp_path / "b1", [snapshot("g", 10, [(10, 19, 2, 1)])])
    g = read_impact(replay_paths(specs, leader="b1")).to_dict()["share_groups"][0]
    assert g["next_fetch_offset"] == 20, g
    assert g["classification"] == "start_beyond_log_end", g
    assert g["never_delivered"] == {"first_offset": 5, "last_offset": 19}, g["never_delivered"]
    assert g["finished_records_lost"]["records"] == 15, f"5..19 finished and lost: {g['finished_records_lost']}"
