"""The streaming replica log against the list model it replaces: every operation the protocol uses,
on partitions written to disk with many segments and one mark every few batches."""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replog.formats.kafka.batch import BatchInfo
from replog.recovery.kafka import replica_log
from replog.recovery.kafka.divergence import first_difference, lost_batches
from replog.recovery.kafka.protocol import append_offset
from replog.recovery.kafka.replay import first_divergence
from replog.recovery.kafka.replica import Replica, batch_rows, load_replica
from replog.recovery.kafka.replica_log import ReplicaLog
from replog.recovery.kafka.writer import write_partition
from tests.formats.kafka.segments import data_batch

# (gap before the batch, records in it, epoch step)
BATCHES = st.lists(st.tuples(st.sampled_from([0, 0, 0, 1, 5]), st.integers(1, 3), st.sampled_from([0, 0, 0, 1])),
                   min_size=0, max_size=40)


def write(root: Path, name: str, spec: list[tuple[int, int, int]], salt: int = 0) -> Path:
    """A partition of v2 batches following `spec`; `salt` changes the bytes (so the CRCs) of every batch."""
    batches, offset, epoch = [], 0, 0
    for gap, n, step in spec:
        offset, epoch = offset + gap, epoch + step
        batches.append(data_batch(offset, n, epoch=epoch, pid=salt - 1 if salt else -1))
        offset += n
    pdir = root / name / "t-0"
    write_partition(pdir, batches, segment_bytes=400)
    return pdir


def load(pdir: Path, monkeypatch: pytest.MonkeyPatch) -> Replica:
    monkeypatch.setattr(replica_log, "BLOCK_ROWS", 3)
    return load_replica(pdir, pdir.parent.name)


def keys(refs: list[BatchInfo]) -> list[tuple[int, int, int]]:
    return [(b.base_offset, b.last_offset, b.crc) for b in refs]


def list_runs(refs: list[BatchInfo]) -> list[tuple[int, int, int]]:
    """`replay_view.epoch_runs` as it was written over a list of batches."""
    runs: list[list[int]] = []
    for b in refs:
        if runs and runs[-1][2] == b.partition_leader_epoch and runs[-1][1] == b.base_offset:
            runs[-1][1] = b.last_offset + 1
        else:
            runs.append([b.base_offset, b.last_offset + 1, b.partition_leader_epoch])
    return [(a, b, c) for a, b, c in runs]


def check_log(log: ReplicaLog, want: list[BatchInfo]) -> None:
    """The pieces' batches, counts and runs are those of the list."""
    assert keys(batch_rows(log)) == keys(want)
    assert log.batches == len(want) and log.records == sum(b.count for b in want)
    assert log.nbytes == sum(b.size for b in want)
    if want:
        assert (log.first_offset, log.last_offset) == (want[0].base_offset, want[-1].last_offset)
    assert [tuple(r) for r in log.epoch_runs().T.tolist()] == list_runs(want)


def first_reaching(refs: list[BatchInfo], offset: int) -> int:
    return next((i for i, b in enumerate(refs) if b.last_offset >= offset), len(refs))


settings_ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@settings_
@given(spec=BATCHES, offsets=st.lists(st.integers(-2, 120), min_size=1, max_size=4))
def test_cut_and_slice_match_the_list(monkeypatch: pytest.MonkeyPatch, spec, offsets) -> None:  # noqa: ANN001
    with tempfile.TemporaryDirectory() as tmp:
        rep = load(write(Path(tmp), "a", spec), monkeypatch)
        refs = batch_rows(rep.log)
        check_log(rep.log, refs)
        for offset in offsets:
            i = first_reaching(refs, offset)
            check_log(rep.log.from_offset(offset), refs[i:])
            if i < len(refs):  # what a follower's append compares with its log end: the first batch's base
                assert append_offset(rep.log.from_offset(offset)) == refs[i].base_offset
            log = rep.log.copy()
            removed = log.cut_at(offset)
            check_log(log, refs[:i])
            check_log(removed, refs[i:])
            log.extend(removed)
            check_log(log, refs)
        check_log(rep.log.where(lambda b: b.count % 2 == 1), [b for b in refs if b.count % 2 == 1])


@settings_
@given(shared=BATCHES, tail_a=BATCHES, tail_b=BATCHES, same_bytes=st.booleans())
def test_divergence_and_loss_match_the_list(monkeypatch: pytest.MonkeyPatch, shared, tail_a, tail_b,  # noqa: ANN001
                                            same_bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        a = load(write(Path(tmp), "a", shared + tail_a), monkeypatch)
        b = load(write(Path(tmp), "b", shared + tail_b, salt=0 if same_bytes else 1), monkeypatch)
        ra, rb = batch_rows(a.log), batch_rows(b.log)
        want = next((max(min(x.base_offset, y.base_offset), 0) for x, y in zip(ra, rb, strict=False)
                     if (x.base_offset, x.last_offset, x.crc) != (y.base_offset, y.last_offset, y.crc)), None)
        assert first_divergence(a, b) == want
        assert first_difference(a.log, b.log, 0) == want
        tail = rb[first_reaching(rb, min((x.base_offset for x in ra), default=0)):]
        kept = set(keys(tail))
        assert keys(batch_rows(lost_batches(a.log, b.log))) == [k for k in keys(ra) if k not in kept]
