"""Replay against a model of Kafka's follower protocol written here from the broker's source, on random
replication histories written to disk by kafka-python (none of replog's writers or replay code is used).

The model works on plain lists: a replica is its batches (base, last, epoch), its leader-epoch cache
[(epoch, start)], its log end and high watermark. Its rules, with the source each follows:
- `LeaderEpochFileCache.endOffsetFor` (storage/.../epoch/LeaderEpochFileCache.java): the OffsetsForLeaderEpoch answer;
- `AbstractFetcherThread.getOffsetTruncationState` (core/.../server/AbstractFetcherThread.scala): the
  truncation point and whether another round is needed (KIP-279);
- `UnifiedLog.truncateTo` / `LocalLog.truncateTo` / `LogSegment.truncateTo`: batches from the first one
  whose last offset reaches the target are dropped, the log end becomes the target;
- `UnifiedLog.append` (follower, `validateAndAssignOffsets = false`): a first batch starting below the
  log end throws `UnexpectedAppendOffsetException`, and `AbstractFetcherThread` marks the partition failed;
- `Partition.makeLeader` -> `maybeAssignEpochStartOffset`: the new leader caches (new epoch, its log end);
- `Partition.maybeIncrementLeaderHW`: the leader's HW is the smallest log end of the replicas still fetching.

Histories come from a small simulated cluster: a leader appends batches, followers replicate, brokers
crash and lose an unflushed tail, leaders change (cleanly or not). The final disks are written, replay
runs on them, and every replica's outcome must be the model's.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from replog.recovery.kafka.replay import replay_paths
from replog.recovery.kafka.replica import batch_rows
from tests.recovery.kafka.independent import write_replica

Batch = tuple[int, int, int]  # base offset, last offset, leader epoch


@dataclass
class Model:
    batches: list[Batch] = field(default_factory=list)
    epochs: list[tuple[int, int]] = field(default_factory=list)
    end: int = 0          # log end offset (past the last batch after a truncation inside a batch)
    hw: int = 0
    failed: bool = False
    truncated_to: int | None = None

    def latest(self) -> int | None:
        return self.epochs[-1][0] if self.epochs else None

    def assign(self, epoch: int, start: int) -> None:
        if self.epochs and self.epochs[-1][0] == epoch and start >= self.epochs[-1][1]:
            return
        while self.epochs and (self.epochs[-1][0] >= epoch or self.epochs[-1][1] >= start):
            self.epochs.pop()
        self.epochs.append((epoch, start))

    def end_offset_for(self, requested: int) -> tuple[int, int]:
        if requested == -1 or not self.epochs:
            return -1, -1
        if requested == self.epochs[-1][0]:
            return requested, self.end
        higher = next((e for e in self.epochs if e[0] > requested), None)
        if higher is None:
            return -1, -1
        floor = [e for e in self.epochs if e[0] <= requested]
        return (floor[-1][0] if floor else requested), higher[1]

    def truncate(self, target: int) -> None:
        if target >= self.end:
            self.epochs = [e for e in self.epochs if e[1] < self.end]
            return
        if self.batches and target < self.batches[0][0]:  # truncateFullyAndStartAt: the cache is cleared
            self.epochs = []
        self.batches = [b for b in self.batches if b[1] < target]
        self.end = target
        self.epochs = [e for e in self.epochs if e[1] < target]
        self.hw = min(self.hw, target)
        self.truncated_to = target if self.truncated_to is None else min(self.truncated_to, target)

    def append(self, batches: list[Batch]) -> None:
        for b in batches:
            self.batches.append(b)
            self.assign(b[2], b[0])
            self.end = b[1] + 1


def truncate_by_epochs(leader: Model, f: Model) -> None:
    """The Truncating state: OffsetsForLeaderEpoch rounds until the point is final."""
    while True:
        requested = f.latest()
        if requested is None:
            f.truncate(f.hw)
            return
        e_l, o_l = leader.end_offset_for(requested)
        if o_l == -1:
            f.truncate(f.hw)
            return
        e_f, o_f = f.end_offset_for(e_l)
        if (e_f, o_f) == (-1, -1):
            f.truncate(min(o_l, f.end))
            return
        if e_f != e_l:
            f.truncate(min(o_f, f.end))
            continue
        f.truncate(min(o_f, o_l, f.end))
        return


def fetch(leader: Model, f: Model) -> None:
    if f.failed:
        return
    if f.end > leader.end:  # OFFSET_OUT_OF_RANGE: the leader is shorter
        f.truncate(leader.end)
    new = [b for b in leader.batches if b[1] >= f.end]
    if new and new[0][0] < f.end:
        if f.end != 0:  # not an empty log (log start 0 throughout here)
            f.failed = True
            return
        f.truncate(new[0][0])
    f.append(new)
    f.hw = min(leader.hw, f.end)


def model_replay(leader: Model, followers: list[Model]) -> None:
    known = [r.latest() for r in [leader, *followers] if r.latest() is not None]
    if known:
        leader.assign(max(known) + 1, leader.end)  # type: ignore[type-var]
    for f in followers:
        truncate_by_epochs(leader, f) if f.epochs and leader.epochs else f.truncate(f.hw)
        fetch(leader, f)
    live = [f.end for f in followers if not f.failed]
    leader.hw = max(leader.hw, min([leader.end, *live]))
    for f in followers:
        fetch(leader, f)


def simulate(rng: random.Random, brokers: int = 3, steps: int = 14) -> list[Model]:
    """A replication history: the final state of each broker's disk."""
    reps = [Model() for _ in range(brokers)]
    leader, epoch = 0, 1
    reps[0].assign(epoch, 0)
    for _ in range(steps):
        op = rng.random()
        lead = reps[leader]
        if op < 0.45:
            n = rng.randint(1, 3)
            lead.append([(lead.end, lead.end + n - 1, epoch)])
        elif op < 0.7:
            f = reps[rng.choice([k for k in range(brokers) if k != leader])]
            if f.epochs and lead.epochs:
                truncate_by_epochs(lead, f)
            fetch(lead, f)
            f.failed = False
            f.truncated_to = None
            lead.hw = max(lead.hw, min(lead.end, f.end))
            f.hw = min(lead.hw, f.end)
        elif op < 0.85:  # a crash loses an unflushed tail at a batch boundary
            r = reps[rng.randrange(brokers)]
            if r.batches:
                keep = rng.randint(max(0, len(r.batches) - 2), len(r.batches))
                cut = r.batches[keep][0] if keep < len(r.batches) else r.end
                r.truncate(cut)
                r.truncated_to = None
        else:  # a new leader, any broker (an unclean election is allowed)
            leader = rng.randrange(brokers)
            epoch += 1
            reps[leader].assign(epoch, reps[leader].end)
    return reps


def write(root: Path, reps: list[Model]) -> list[str]:
    specs = []
    for k, r in enumerate(reps):
        name = f"b{k}"
        pdir = write_replica(root, name, r.batches, r.epochs, r.hw, tag=name.encode())
        specs.append(f"{name}={pdir}")
    return specs


@pytest.mark.parametrize("seed", range(120))
def test_replay_agrees_with_the_model(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    reps = simulate(rng)
    if sum(1 for r in reps if r.batches) < 1:
        pytest.skip("an empty history")
    for r in reps:  # what a restart keeps: the log end is the last batch's, the HW at most that
        r.end = r.batches[-1][1] + 1 if r.batches else 0
        r.hw = min(r.hw, r.end)
        r.epochs = [e for e in r.epochs if e[1] < r.end] if r.batches else []
    result = replay_paths(write(tmp_path, reps))
    lead = int(result.leader.name[1:])
    leader = reps[lead]
    followers = [r for k, r in enumerate(reps) if k != lead]
    model_replay(leader, followers)
    for k, r in enumerate(reps):
        got = next(x for x in result.replicas if x.replica.name == f"b{k}")
        d = got.to_dict()
        ours = [(b.base_offset, b.last_offset, b.partition_leader_epoch) for b in batch_rows(got.final.log)]
        assert ours == r.batches, f"b{k}: batches after the replay"
        assert d["log_end_offset_after"] == r.end, f"b{k}: log end"
        assert (d["failed"] is not None) == r.failed, f"b{k}: failed"
        assert d["high_watermark_after"] == r.hw, f"b{k}: high watermark"
        if k != lead:
            assert d["truncated_to"] == r.truncated_to, f"b{k}: truncated to"
