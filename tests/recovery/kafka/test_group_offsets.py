"""Committed offsets as the group coordinator loads them, against independent encoders and real files."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replog.formats.kafka.internal.consumer_offsets import (
    decode_key,
    decode_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
)
from replog.recovery.kafka.group_offsets import read_group_offsets
from tests.realdata import real_files
from tests.recovery.kafka.internal_records import (
    ABORT,
    TS,
    batch,
    high_watermarks,
    marker,
    offset_commit_key,
    offset_commit_value,
    partition_dir,
    read_offset_commit,
)


def _real_records(log: Path):
    """(is control or transactional, key, value) of every record of a segment, read by kafka-python."""
    records = pytest.importorskip("kafka.record")
    mem = records.MemoryRecords(log.read_bytes())
    while True:
        try:
            b = mem.next_batch()
        except Exception:  # noqa: BLE001 - a torn tail ends a real segment
            return
        if b is None:
            return
        special = getattr(b, "is_control_batch", False) or getattr(b, "is_transactional", False)
        for r in b:
            yield special, r.key, r.value


def test_independent_encoders_give_the_bytes_of_real_offset_commits() -> None:
    checked = 0
    for log in real_files("**/__consumer_offsets-*/*.log"):
        for special, key, value in _real_records(log):
            parsed = None if special or key is None else read_offset_commit(key, value)
            if parsed is None:
                continue
            (group, topic, partition), v = parsed
            assert offset_commit_key(group, topic, partition) == key
            if v is not None and v["version"] in (1, 3):
                assert offset_commit_value(v["offset"], v["timestamp"], v["leader_epoch"], v["metadata"],
                                           version=v["version"], expire=v.get("expire", -1)) == value
                checked += 1
    assert checked > 1000


def test_latest_commits_of_real_log_dirs_equal_an_independent_replay() -> None:
    log_dirs = sorted({p.parent for p in real_files("**/__consumer_offsets-*") if p.is_dir()})
    compared = 0
    for log_dir in log_dirs:
        expected: dict[tuple[str, str, int], tuple[int, int, int]] = {}
        for pdir in sorted(log_dir.glob("__consumer_offsets-*")):
            for log in sorted(pdir.glob("*.log")):
                for special, key, value in _real_records(log):
                    parsed = None if special or key is None else read_offset_commit(key, value)
                    if parsed is None:
                        continue
                    k, v = parsed
                    if v is None:
                        expected.pop(k, None)
                    else:
                        expected[k] = (v["offset"], v["leader_epoch"], v["timestamp"])
        got = read_group_offsets([log_dir]).commits
        assert {k: (c.offset, c.leader_epoch, c.commit_timestamp) for k, c in got.items()} == expected, log_dir
        compared += len(expected)
    assert compared > 20 and len(log_dirs) > 5


def _commit(base: int, group: str, offset: int, *, topic: str = "t", partition: int = 0, epoch: int = -1,
            pid: int = -1, tombstone: bool = False) -> bytes:
    value = None if tombstone else offset_commit_value(offset, TS + base, epoch)
    return batch(base, [(offset_commit_key(group, topic, partition), value)], pid=pid,
                 producer_epoch=0 if pid >= 0 else -1, transactional=pid >= 0)


def test_transactional_commits_tombstones_and_the_coordinators_copy(tmp_path: Path) -> None:
    log = [_commit(0, "g1", 5), _commit(1, "g2", 7), _commit(2, "gone", 3),
           _commit(3, "g1", 40, pid=900),              # aborted below: g1 stays at 5
           _commit(4, "g3", 30, pid=901),              # committed below
           _commit(5, "gone", 0, tombstone=True),
           marker(6, 900, ABORT), marker(7, 901),
           _commit(8, "g2", 9, epoch=4),
           _commit(9, "g2", 50, pid=902),              # no marker yet: pending
           _commit(10, "g4", 11, partition=1),
           _commit(11, "g5", 20, pid=903), _commit(12, "g5", 25), marker(13, 903)]   # the later plain commit wins
    a, b = tmp_path / "a", tmp_path / "b"
    partition_dir(a, "__consumer_offsets-0", log, [(0, 0)])
    partition_dir(b, "__consumer_offsets-0", log[:3], [(0, 0)])   # a copy that lags: not the coordinator's
    for d in (a, b):
        high_watermarks(d, {"__consumer_offsets-0": 0})
    found = read_group_offsets([b, a])
    assert found.sources == [str(a / "__consumer_offsets-0")]
    got = {c.group: (c.offset, c.leader_epoch) for c in found.for_partition("t", 0)}
    assert got == {"g1": (5, -1), "g2": (9, 4), "g3": (30, -1), "g5": (25, -1)}
    assert [c.group for c in found.for_partition("t", 1)] == ["g4"]
    only = read_group_offsets([a], [("t", 1)])
    assert set(only.commits) == {("g4", "t", 1)}


@settings(max_examples=60, deadline=None)
@given(group=st.text(min_size=1, max_size=20), topic=st.text(min_size=1, max_size=20),
       partition=st.integers(0, 2**31 - 1), offset=st.integers(-1, 2**62), epoch=st.integers(-1, 2**31 - 1),
       ts=st.integers(0, 2**62), metadata=st.text(max_size=10))
def test_offset_commit_codec_matches_the_independent_layout(group: str, topic: str, partition: int, offset: int,
                                                            epoch: int, ts: int, metadata: str) -> None:
    key = offset_commit_key(group, topic, partition)
    value = offset_commit_value(offset, ts, epoch, metadata)
    assert encode_offset_commit_key(group, topic, partition) == key
    assert encode_offset_commit_value(offset, metadata, ts, leader_epoch=epoch) == value
    assert decode_key(key)["data"] == {"group": group, "topic": topic, "partition": partition}
    data = decode_value(1, value)["data"]
    assert (data["offset"], data["leaderEpoch"], data["metadata"], data["commitTimestamp"]) == (offset, epoch,
                                                                                               metadata, ts)
