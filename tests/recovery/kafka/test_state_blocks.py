"""StateChecker.feed_block against feed, the per-batch reference: same aborts, same state, same findings."""
from __future__ import annotations

import random
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replog.formats.kafka import control
from replog.formats.kafka.batch import INT32_MAX
from replog.formats.kafka.blocks import BatchBlock
from replog.formats.kafka.checkpoint import EpochEntry
from replog.formats.kafka.producer_snapshot import ProducerSnapshotEntry
from replog.formats.kafka.segment import BatchInfo
from replog.recovery.kafka.checks_state import MAX_EPOCH_FINDINGS, StateChecker

PATH = "/d/t-0/00000000000000000000.log"
Row = tuple[BatchInfo, tuple[int, int] | None]


def batch(position: int, base: int, delta: int, epoch: int, pid: int, producer_epoch: int, sequence: int,
          transactional: bool, is_control: bool, magic: int = 2, timestamp: int = 0) -> BatchInfo:
    return BatchInfo(position=position, size=70, magic=magic, base_offset=base, last_offset=base + delta,
                     count=delta + 1, partition_leader_epoch=epoch, crc=0, crc_valid=True,
                     attributes=(16 if transactional else 0) | (32 if is_control else 0), codec=0,
                     timestamp_type=0, first_timestamp=timestamp, max_timestamp=timestamp + delta,
                     producer_id=pid, producer_epoch=producer_epoch, base_sequence=sequence,
                     is_transactional=transactional, is_control=is_control, has_delete_horizon=False)


# strategies built once (building them per draw costs more than the test)
PIDS = st.lists(st.sampled_from([-1, 0, 1, 7, 1 << 40]), min_size=1, max_size=4, unique=True)
KINDS = ["data", "data", "data", "txn", "marker", "control", "legacy"]
ROW = st.tuples(st.sampled_from(KINDS),
                st.sampled_from([0, 1, 1, 1, 2, -3]),  # an occasional step back: last offsets not monotonic
                st.sampled_from([0, 0, 0, 1, 2, -1, -2]),  # epoch steps
                st.integers(0, 3),  # index into the producer ids
                st.integers(0, 2), st.integers(0, 4),
                st.sampled_from([-1, 0, 5, INT32_MAX - 2, INT32_MAX, INT32_MAX - 4]), st.integers(0, 1000))
LEGACY_MAGIC = st.sampled_from([0, 1])
SNAPSHOT_SEQUENCE = st.sampled_from([-1, 4, INT32_MAX])
MARKER = st.tuples(st.sampled_from([control.ABORT, control.COMMIT]), st.integers(0, 9))


@st.composite
def logs(draw: Any) -> tuple[list[Row], dict[str, Any], list[int], list[bool]]:
    pids = draw(PIDS)
    n = draw(st.integers(0, 120))
    rows: list[Row] = []
    offset, position, epoch = draw(st.integers(0, 50)), 0, draw(st.integers(-1, 3))
    for _ in range(n):
        kind, step, epoch_step, pid, producer_epoch, delta, sequence, timestamp = draw(ROW)
        offset = max(0, offset + step)
        epoch = max(-1, epoch + epoch_step)
        pid = pids[pid % len(pids)]
        marker = None
        if kind == "legacy":
            b = batch(position, offset, delta, -1, -1, -1, -1, False, False, magic=draw(LEGACY_MAGIC),
                      timestamp=timestamp)
        elif kind in ("marker", "control"):
            # markers carry no sequence (-1) in practice; a sequence on one must be ignored
            b = batch(position, offset, 0, epoch, pid, producer_epoch, sequence, True, True, timestamp=timestamp)
            if kind == "marker" and pid >= 0:
                marker = draw(MARKER)
        else:
            b = batch(position, offset, delta, epoch, pid, producer_epoch, sequence, kind == "txn", False,
                      timestamp=timestamp)
        rows.append((b, marker))
        offset, position = b.last_offset + 1, position + 70
    epochs = sorted({b.partition_leader_epoch for b, _ in rows if b.partition_leader_epoch >= 0} | {0})
    checkpoint: list[EpochEntry] | None = None
    how = draw(st.sampled_from(["none", "empty", "agree", "random"]))
    if how == "empty":
        checkpoint = []
    elif how == "agree":  # the first offset of every epoch: agrees except where epochs fall back
        firsts: dict[int, int] = {}
        for b, _ in rows:
            if b.magic == 2 and b.partition_leader_epoch >= 0:
                firsts.setdefault(b.partition_leader_epoch, b.base_offset)
        checkpoint = [EpochEntry(e, o) for e, o in sorted(firsts.items())]
    elif how == "random":
        checkpoint = [EpochEntry(draw(st.sampled_from(epochs)), draw(st.integers(0, offset + 2)))
                      for _ in range(draw(st.integers(0, 4)))]
    snapshots = {}
    for k in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, offset + 3))
        entries = [ProducerSnapshotEntry(p, draw(st.integers(0, 2)), draw(SNAPSHOT_SEQUENCE),
                                         draw(st.integers(0, offset + 3)), 0, 0, -1, -1)
                   for p in pids if p >= 0 and draw(st.booleans())]
        snapshots[at] = (f"/d/t-0/{k}.snapshot", entries)
    config = {"epoch_entries": checkpoint, "epoch_path": "/d/t-0/leader-epoch-checkpoint",
              "epoch_positions": list(range(4, 4 + 8 * len(checkpoint or []), 8)),
              "log_start_offset": draw(st.integers(0, 60)), "snapshots": snapshots}
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=8)))
    by_block = draw(st.lists(st.booleans(), min_size=len(cuts) + 1, max_size=len(cuts) + 1))
    return rows, config, cuts, by_block


def run_both(rows: list[Row], config: dict[str, Any], cuts: list[int], by_block: list[bool],
             leo: int | None = None) -> tuple[StateChecker, StateChecker]:
    """One checker fed per batch; one fed block by block (or per batch where `by_block` says no)."""
    ref = StateChecker(**config)
    ref_aborts = [ref.feed(b, PATH, m) for b, m in rows]
    new = StateChecker(**config)
    new_aborts: list[Any] = []
    bounds = [0, *cuts, len(rows)]
    for (lo, hi), blockwise in zip(zip(bounds, bounds[1:], strict=False), by_block, strict=True):
        part = rows[lo:hi]
        if blockwise:
            # the block is a view into a buffer the walk reuses: scribble over it after the call
            block = BatchBlock.from_infos([b for b, _ in part])
            markers = {i: m for i, (b, m) in enumerate(part) if b.is_control}
            new_aborts += new.feed_block(block, PATH, markers)
            block.cols[:] = -7
        else:
            new_aborts += [a for b, m in part if (a := new.feed(b, PATH, m)) is not None]
    assert new_aborts == [a for a in ref_aborts if a is not None]
    assert_same(ref, new)
    if leo is None:
        leo = max((b.last_offset + 1 for b, _ in rows), default=0)
    assert [f.to_dict() for f in new.finish(leo)] == [f.to_dict() for f in ref.finish(leo)]
    assert_same(ref, new)
    return ref, new


def assert_same(ref: StateChecker, new: StateChecker) -> None:
    assert new.producers.snapshot_entries() == ref.producers.snapshot_entries()
    assert list(new.producers.producers) == list(ref.producers.producers)  # insertion order too
    assert list(new.producers.ongoing.items()) == list(ref.producers.ongoing.items())
    assert new._captured == ref._captured
    assert new._pending == ref._pending
    assert (new._latest_epoch, new._mismatch_epoch, new._epoch_findings, new._first_offset, new._saw_epochs) == \
           (ref._latest_epoch, ref._mismatch_epoch, ref._epoch_findings, ref._first_offset, ref._saw_epochs)
    assert [f.to_dict() for f in new.findings] == [f.to_dict() for f in ref.findings]
    for p, e in ref.producers.producers.items():  # the entries hold Python ints, not numpy scalars
        assert all(type(v) is int for v in vars(new.producers.producers[p]).values()), (p, e)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(logs())
def test_feed_block_is_feed(case: tuple[list[Row], dict[str, Any], list[int], list[bool]]) -> None:
    run_both(*case)


def random_log(seed: int, n: int, producers: int) -> tuple[list[Row], dict[str, Any]]:
    """Long logs: many producers, all transactional behaviours, epochs that fall often (past the cap)."""
    rng = random.Random(seed)
    pids = [-1] + [rng.randrange(1 << 50) for _ in range(producers)]
    rows: list[Row] = []
    offset, epoch = 0, 0
    for i in range(n):
        pid = rng.choice(pids)
        epoch = max(-1, epoch + rng.choice([0] * 20 + [1, -1]))
        r = rng.random()
        if r < 0.08 and pid >= 0:
            b = batch(i * 70, offset, 0, epoch, pid, rng.randrange(3), -1, True, True, timestamp=i)
            m = (rng.choice([control.ABORT, control.COMMIT]), rng.randrange(5)) if rng.random() < 0.9 else None
        else:
            b = batch(i * 70, offset, rng.randrange(3), epoch, pid, rng.randrange(3),
                      rng.choice([-1, rng.randrange(INT32_MAX - 3, INT32_MAX + 1), rng.randrange(1000)]),
                      r < 0.4, False, timestamp=i)
            m = None
        rows.append((b, m))
        offset = b.last_offset + 1 - (3 if rng.random() < 0.01 else 0)
    firsts: dict[int, int] = {}
    for b, _ in rows:
        if b.partition_leader_epoch >= 0:
            firsts.setdefault(b.partition_leader_epoch, b.base_offset)
    checkpoint = [EpochEntry(e, o) for e, o in sorted(firsts.items()) if rng.random() < 0.8]
    snapshots = {rng.randrange(offset + 5): (f"/s/{k}.snapshot", []) for k in range(5)}
    return rows, {"epoch_entries": checkpoint, "epoch_path": "/e", "epoch_positions": [],
                  "log_start_offset": rng.randrange(50), "snapshots": snapshots}


def test_long_logs_many_producers() -> None:
    for seed, producers in [(1, 1), (2, 10), (3, 300), (4, 3000)]:
        rows, config = random_log(seed, 6000, producers)
        rng = random.Random(seed)
        cuts = sorted(rng.sample(range(len(rows)), 12))
        ref, _ = run_both(rows, config, cuts, [True] * 13)
        assert ref._epoch_findings > MAX_EPOCH_FINDINGS  # the cap is exercised
        assert sum(1 for b, m in rows if m and m[0] == control.ABORT) > 0


def test_one_block_holds_the_whole_log() -> None:
    rows, config = random_log(5, 20000, 50)
    ref, new = run_both(rows, config, [], [True])  # run_both compares everything the two checkers hold
    assert new.producers.snapshot_entries() == ref.producers.snapshot_entries()


def test_more_producers_than_16_bits() -> None:
    """66 000 transactional producers in one block, numbered closely (offsets from the smallest id) or
    sparsely (ranks): each opens a transaction, most end it, some open another."""
    rng = random.Random(6)
    for spread in (1, 1 << 30):
        ids = [j * spread for j in range(66000)]
        ended = rng.sample(ids, 40000)
        # few ABORTs: the reference takes the minimum over every open transaction for each
        steps = [(p, None) for p in ids] + [(p, (control.ABORT if rng.random() < 0.005 else control.COMMIT, 1))
                                            for p in ended]
        steps += [(p, None) for p in rng.sample(ids, 20000)]
        rows: list[Row] = [(batch(i * 70, i, 0, 0, p, 0, i % 9, True, m is not None), m)
                           for i, (p, m) in enumerate(steps)]
        ref, new = run_both(rows, {"epoch_entries": None, "epoch_path": "/e", "epoch_positions": [],
                                   "log_start_offset": 0, "snapshots": {}}, [], [True])
        assert len(new.producers.producers) == len(ids) and new.producers.ongoing == ref.producers.ongoing


def test_markers_may_be_absent_or_none() -> None:
    a = batch(0, 0, 1, 0, 5, 0, 0, True, False)
    m = batch(70, 2, 0, 0, 5, 0, -1, True, True)
    for markers in (None, {}, {1: None}):
        ref, new = StateChecker(None, "/e", [], 0), StateChecker(None, "/e", [], 0)
        ref.feed(a, PATH, None)
        ref.feed(m, PATH, None)
        assert new.feed_block(BatchBlock.from_infos([a, m]), PATH, markers) == []
        assert new.producers.snapshot_entries() == ref.producers.snapshot_entries()
        assert new.producers.ongoing == ref.producers.ongoing == {5: 0}


def test_abort_entries_carry_the_last_stable_offset() -> None:
    rows = [batch(0, 10, 1, 0, 1, 0, 0, True, False), batch(70, 12, 0, 0, 2, 0, 0, True, False),
            batch(140, 13, 0, 0, 1, 0, -1, True, True), batch(210, 14, 0, 0, 2, 0, -1, True, True)]
    block = BatchBlock.from_infos(rows)
    new = StateChecker(None, "/e", [], 0)
    aborts = new.feed_block(block, PATH, {2: (control.ABORT, 3), 3: (control.ABORT, 4)})
    assert [tuple(a)[:4] for a in aborts] == [(1, 10, 13, 12), (2, 12, 14, 15)]
    assert np.array_equal(block.base_offset, [10, 12, 13, 14])  # the block is not modified
