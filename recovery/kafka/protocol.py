"""Offline replay of Kafka's follower protocol between on-disk replicas (docs/reference/kafka.md §11-§13).

A deterministic state machine over `Replica` models, no I/O: each follower
first truncates (leader-epoch protocol with the KIP-279 refinement, or the
pre-KIP-101 high-watermark rule), then fetches from the leader, handling
OFFSET_OUT_OF_RANGE both ways; the leader's high watermark then advances to
the smallest log end offset of the replicas, and a last fetch round carries
it to the followers. Every step is an event in the transcript.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from replog.recovery.kafka.replica import Replica
from replog.recovery.kafka.replica_log import ReplicaLog
from replog.recovery.transcript import Transcript

EPOCH, HW = "epoch", "hw"
MAX_ROUNDS = 10_000  # truncation rounds per follower; each strictly lowers the latest epoch
UNEXPECTED_APPEND_OFFSET = "UNEXPECTED_APPEND_OFFSET"


@dataclass
class FollowerOutcome:
    name: str
    truncated_to: int | None = None
    removed: ReplicaLog = field(default_factory=ReplicaLog)   # batches this follower removed, in order
    fetched: ReplicaLog = field(default_factory=ReplicaLog)   # batches copied from the leader
    holes: list[tuple[int, int]] = field(default_factory=list)  # offsets a truncation inside a batch left out
    failed: dict[str, Any] | None = None                      # the fetcher marked the partition failed


def truncation_point(e_leader: int, o_leader: int, follower: Replica, fetch_offset: int) -> tuple[int, bool]:
    """`AbstractFetcherThread.getOffsetTruncationState`: (offset, final)."""
    leo = follower.log_end_offset
    if o_leader == -1:
        return fetch_offset, True
    if e_leader == -1:
        return min(o_leader, leo), True
    e_f, o_f = follower.epochs.end_offset_for(e_leader, leo)
    if (e_f, o_f) == (-1, -1):
        return min(o_leader, leo), True
    if e_f != e_leader:
        return min(o_f, leo), False
    return min(o_f, o_leader, leo), True


def truncate(rep: Replica, offset: int, outcome: FollowerOutcome, log: Transcript, reason: str) -> None:
    """`UnifiedLog.truncateTo`: drop batches holding offsets >= `offset` (§12.7).

    The segment is cut at the first batch whose last offset reaches `offset`, so a batch holding it is
    dropped whole, yet the log end becomes `offset` (`LocalLog.truncateTo` -> `updateLogEndOffset`):
    the offsets of that batch below `offset` are a hole the follower never fetches again."""
    if offset >= rep.log_end_offset:
        rep.epochs.truncate_from_end(rep.log_end_offset)
        return
    if offset < rep.local_start or (rep.log and offset < rep.log.first_offset):
        truncate_fully(rep, offset, outcome, log, reason)
        return
    removed = rep.log.cut_at(offset)
    outcome.removed.extend(removed)
    rep.truncated_end = offset if offset > rep.kept_end else None
    outcome.holes = [(a, min(b, offset - 1)) for a, b in outcome.holes if a < offset]
    outcome.truncated_to = offset if outcome.truncated_to is None else min(outcome.truncated_to, offset)
    rep.epochs.truncate_from_end(offset)
    rep.high_watermark = min(rep.high_watermark, rep.log_end_offset)
    rep.recovery_point = min(rep.recovery_point, rep.log_end_offset)
    log.add("truncate", rep.name, offset=offset, reason=reason, batches_removed=removed.batches,
            records_removed=removed.records, log_end_offset=rep.log_end_offset)
    if removed and removed.first_offset < offset:
        hole = (max(removed.first_offset, rep.kept_end), offset - 1)
        outcome.holes.append(hole)
        log.add("hole", rep.name, first_offset=hole[0], last_offset=hole[1],
                reason=f"the batch holding offset {offset} starts at {removed.first_offset}: Kafka removes it whole "
                       f"but sets the log end to {offset}, so offsets {hole[0]}..{hole[1]} are never fetched again")


def truncate_fully(rep: Replica, start: int, outcome: FollowerOutcome, log: Transcript, reason: str) -> None:
    """`truncateFullyAndStartAt`: every segment goes, the log restarts empty at `start`."""
    outcome.removed.extend(rep.log)
    rep.log = ReplicaLog()
    rep.truncated_end = None
    rep.epochs.clear()
    rep.log_start_offset, rep.local_log_start_offset = start, None
    rep.high_watermark = rep.recovery_point = start
    outcome.holes = []
    outcome.truncated_to = start if outcome.truncated_to is None else min(outcome.truncated_to, start)
    log.add("truncate_fully", rep.name, offset=start, reason=reason, log_end_offset=start)


def truncate_by_epochs(leader: Replica, f: Replica, outcome: FollowerOutcome, log: Transcript) -> None:
    """The OffsetsForLeaderEpoch round trips of the Truncating state (§12.3-§12.4)."""
    for _ in range(MAX_ROUNDS):
        requested = f.epochs.latest_epoch
        if requested is None:
            return truncate_to_hw(f, outcome, log, "follower has no leader epochs")
        log.add("request", f.name, api="OffsetsForLeaderEpoch", leader_epoch=requested)
        e_l, o_l = leader.epochs.end_offset_for(requested, leader.log_end_offset) if leader.has_epochs else (-1, -1)
        log.add("response", leader.name, api="OffsetsForLeaderEpoch", to=f.name, leader_epoch=e_l, end_offset=o_l)
        offset, final = truncation_point(e_l, o_l, f, f.high_watermark)
        truncate(f, offset, outcome, log, f"epoch {e_l} ends at {o_l} on the leader")
        if final:
            return
    raise RuntimeError("epoch truncation did not converge")  # unreachable: each round lowers the epoch


def truncate_to_hw(f: Replica, outcome: FollowerOutcome, log: Transcript, why: str) -> None:
    """`truncateToHighWatermark`: the only rule before KIP-101, and the fallback without epochs."""
    log.add("decide", f.name, rule="truncate to high watermark", why=why, high_watermark=f.high_watermark)
    truncate(f, f.high_watermark, outcome, log, "high watermark")


def fetch(leader: Replica, f: Replica, outcome: FollowerOutcome, log: Transcript) -> None:
    """One fetch from the follower's log end to the leader's (§12.5-§12.8); none once it failed."""
    if outcome.failed is not None:
        return
    offset = f.log_end_offset
    log.add("request", f.name, api="Fetch", fetch_offset=offset, last_fetched_epoch=f.epochs.latest_epoch)
    if offset > leader.log_end_offset or offset < leader.log_start_offset:
        log.add("response", leader.name, api="Fetch", to=f.name, error="OFFSET_OUT_OF_RANGE",
                leader_log_start_offset=leader.log_start_offset, leader_log_end_offset=leader.log_end_offset)
        _out_of_range(leader, f, outcome, log)
        offset = f.log_end_offset
    if leader.log_start_offset <= offset < leader.local_start:
        _from_tiered_storage(leader, f, outcome, log)
        offset = f.log_end_offset
    new = leader.log.from_offset(offset)
    if new and append_offset(new) < offset and not _restart_at_batch(f, new, outcome, log):
        _fail(f, offset, new.first_offset, outcome, log)
        return
    f.log.extend(new)
    if new:
        f.truncated_end = None
    for epoch, first in new.epoch_starts():
        f.epochs.assign(epoch, first)
    outcome.fetched.extend(new)
    f.high_watermark = max(min(leader.high_watermark, f.log_end_offset), f.log_start_offset)
    if leader.log_start_offset > f.log_start_offset and leader.log_start_offset <= f.high_watermark:
        f.log_start_offset = leader.log_start_offset
        f.epochs.truncate_from_start(f.log_start_offset)
    log.add("response", leader.name, api="Fetch", to=f.name, batches=new.batches,
            records=new.records, high_watermark=leader.high_watermark)
    if new:
        log.add("append", f.name, first_offset=new.first_offset, last_offset=new.last_offset,
                batches=new.batches, log_end_offset=f.log_end_offset)
    log.add("hw_update", f.name, high_watermark=f.high_watermark)


def append_offset(batches: ReplicaLog) -> int:
    """`LogAppendInfo.firstOrLastOffsetOfFirstBatch`, which `UnifiedLog.append` compares with the log end:
    the first batch's base offset (magic 2), or its last offset (magic 0/1 carry no first offset)."""
    first = next(batches.blocks())[:1]
    return int(first.base_offset[0]) if int(first.magic[0]) >= 2 else int(first.last_offset[0])


def _restart_at_batch(f: Replica, new: ReplicaLog, outcome: FollowerOutcome, log: Transcript) -> bool:
    """`Partition.doAppendRecordsToFollowerOrFutureReplica`: an empty follower log (log end = log start)
    handed a batch that straddles its log end restarts at the batch's first offset and appends it."""
    if f.log_end_offset != f.local_start:
        return False
    truncate_fully(f, new.first_offset, outcome, log, "the leader's first batch straddles the empty log's start")
    return True


def _fail(f: Replica, offset: int, first: int, outcome: FollowerOutcome, log: Transcript) -> None:
    """`UnexpectedAppendOffsetException` out of `UnifiedLog.append`: `AbstractFetcherThread` marks the
    partition failed and stops fetching it; the follower stays as it is."""
    reason = (f"the leader's batch holding fetch offset {offset} starts at {first}, below the follower's log end: "
              "the append throws UnexpectedAppendOffsetException and the fetcher marks the partition failed")
    outcome.failed = {"error": UNEXPECTED_APPEND_OFFSET, "offset": offset, "reason": reason}
    log.add("failed", f.name, error=UNEXPECTED_APPEND_OFFSET, fetch_offset=offset, first_offset=first, reason=reason)


def _out_of_range(leader: Replica, f: Replica, outcome: FollowerOutcome, log: Transcript) -> None:
    """`handleOutOfRangeError`: leader shorter -> truncate to its end; follower behind its start -> restart."""
    if leader.log_end_offset < f.log_end_offset:
        truncate(f, leader.log_end_offset, outcome, log, "leader's log end offset (OFFSET_OUT_OF_RANGE)")
    elif leader.log_start_offset > f.log_end_offset:
        truncate_fully(f, leader.log_start_offset, outcome, log, "leader's log start offset (OFFSET_OUT_OF_RANGE)")


def _from_tiered_storage(leader: Replica, f: Replica, outcome: FollowerOutcome, log: Transcript) -> None:
    """A fetch at or above the leader's log start but below its local log start (tiered storage, KIP-405).

    The leader answers OFFSET_MOVED_TO_TIERED_STORAGE (apache/kafka core/src/main/scala/kafka/server/
    ReplicaManager.scala `handleOffsetOutOfRangeError`, branch 3.9: a follower's fetch with `logStartOffset <=
    offset < localLogStartOffset`). The follower builds its state from remote storage instead of fetching the
    records (core/src/main/java/kafka/server/TierStateMachine.java `start` -> `buildRemoteLogAuxState`, 3.9; the
    same class on trunk/4.x): it asks the leader's earliest local offset, truncates fully and starts at it
    (`truncateFullyAndStartAt`), takes the leader's log start (`maybeIncrementLogStartOffset`) and local log
    start (`maybeIncrementLocalLogStartOffset`), and restores the leader-epoch entries and the producer
    snapshot that remote storage keeps for the segment ending there. The records below stay in remote
    storage: the follower holds them there, not locally, and loses none of them."""
    start = leader.local_start
    log.add("response", leader.name, api="Fetch", to=f.name, error="OFFSET_MOVED_TO_TIERED_STORAGE",
            leader_log_start_offset=leader.log_start_offset, leader_local_log_start_offset=start)
    kept = outcome.removed.copy()     # the follower's batches all end below `start` (its fetch offset is below
    truncate_fully(f, start, outcome, log, "leader's local log start offset (OFFSET_MOVED_TO_TIERED_STORAGE): "
                                           "the state below it is built from remote storage")
    outcome.removed = kept            # it): the leader's remote storage holds them, none is lost
    f.log_start_offset, f.local_log_start_offset = leader.log_start_offset, start
    for epoch, first in leader.epochs.entries:
        if first < start:
            f.epochs.assign(epoch, first)
    log.add("remote_aux_state", f.name, log_start_offset=f.log_start_offset, local_log_start_offset=start,
            epochs=[list(e) for e in f.epochs.entries])


def advance_leader_hw(leader: Replica, followers: list[Replica], log: Transcript, min_isr: int = 1) -> None:
    """The leader's HW moves to the smallest LEO of the in-sync replicas, never back (§12.9), and not at all
    while the ISR is smaller than the effective `min_isr` (min.insync.replicas, at most the replication
    factor): strict min ISR, KIP-966, brokers 3.7 and later whatever the metadata.version or mode
    (apache/kafka core/src/main/scala/kafka/cluster/Partition.scala `maybeIncrementLeaderHW` returns at once
    when `isUnderMinIsr`, branches 3.7 to 3.9 and trunk; the same check in the 4.0.2 and 4.4.0 jars). The ISR
    here is the leader and the followers that fetch; replicas not given are counted out of it."""
    isr = 1 + len(followers)
    if isr < min_isr:
        log.add("hw_hold", leader.name, high_watermark=leader.high_watermark, isr_size=isr, min_insync_replicas=min_isr,
                rule="the ISR is smaller than min.insync.replicas: the high watermark does not advance "
                     "(Partition.maybeIncrementLeaderHW, Kafka 3.7+)")
        return
    candidate = min([leader.log_end_offset] + [f.log_end_offset for f in followers])
    if candidate > leader.high_watermark:
        leader.high_watermark = candidate
        log.add("hw_update", leader.name, high_watermark=candidate, rule="minimum log end offset of the ISR")


def truncation_on_fetch(leader: Replica, follower: Replica) -> int:
    """Where the KIP-595 path (Fetch with LastFetchedEpoch, DivergingEpoch answers, §12.5)
    leaves the follower's log end; computed on a copy, for cross-checking the
    OffsetsForLeaderEpoch path: for well-formed logs both must agree."""
    f = follower.copy()
    truncate_on_diverging_epoch(leader, f, FollowerOutcome(follower.name), Transcript())
    return f.log_end_offset


def truncate_on_diverging_epoch(leader: Replica, f: Replica, outcome: FollowerOutcome, log: Transcript) -> None:
    """Fetches carrying LastFetchedEpoch (IBP 2.7+, KIP-595) until the leader sees no divergence (§12.5).

    The leader answers a Fetch whose last fetched epoch ends earlier in its own log (or is older) with
    that epoch's end instead of records (`Partition.readRecords`); the follower truncates by
    `getOffsetTruncationState` and stays in the Fetching state, so the next Fetch checks again
    (apache/kafka core/src/main/scala/kafka/server/AbstractFetcherThread.scala `truncateOnFetchResponse`).
    An answer of -1 (the leader cannot place the epoch) is OFFSET_OUT_OF_RANGE, left to `fetch`."""
    for _ in range(MAX_ROUNDS):
        last_epoch = f.epochs.latest_epoch
        if last_epoch is None:
            return
        e_l, o_l = leader.epochs.end_offset_for(last_epoch, leader.log_end_offset)
        if e_l == -1 or o_l == -1 or not (e_l < last_epoch or o_l < f.log_end_offset):
            return
        offset, _final = truncation_point(e_l, o_l, f, f.log_end_offset)
        if offset >= f.log_end_offset:
            return
        log.add("request", f.name, api="Fetch", fetch_offset=f.log_end_offset, last_fetched_epoch=last_epoch)
        log.add("response", leader.name, api="Fetch", to=f.name, diverging_epoch=e_l, end_offset=o_l)
        truncate(f, offset, outcome, log, f"diverging epoch: epoch {e_l} ends at {o_l} on the leader")
    raise RuntimeError("truncation on fetch did not converge")  # unreachable: each round lowers the log end


def keep_fetching(leader: Replica, f: Replica, outcome: FollowerOutcome, log: Transcript, protocol: str) -> None:
    """A follower whose fetcher never restarts (its broker kept running, its leader epoch is unchanged).

    The fetcher keeps the partition's state as it is when the leader epoch is the one it follows
    (apache/kafka core/src/main/scala/kafka/server/AbstractFetcherThread.scala `partitionFetchState`:
    `currentState.currentLeaderEpoch == initialFetchState.currentLeaderEpoch` keeps `currentState`), and
    the broker only restarts fetchers on a new leader epoch (core/src/main/scala/kafka/cluster/Partition.scala
    `makeFollower` returns `isNewLeaderEpoch`; core/src/main/scala/kafka/server/ReplicaManager.scala
    `makeFollowers` (ZooKeeper) and `applyLocalFollowersDelta` (KRaft) add fetchers only then). So there
    is no Truncating state: no `truncateToHighWatermark`, no OffsetsForLeaderEpoch. It fetches from its log
    end; the epoch protocol's Fetch still carries LastFetchedEpoch, whose divergence check may truncate."""
    log.add("decide", f.name, rule="keep fetching from the log end",
            why="its broker keeps running and its leader epoch is unchanged: the fetcher is not restarted, "
                "so there is no truncation step", log_end_offset=f.log_end_offset)
    if protocol == EPOCH and f.has_epochs and leader.has_epochs:
        truncate_on_diverging_epoch(leader, f, outcome, log)


def become_leader(leader: Replica, followers: list[Replica], leader_epoch: int | None = None) -> None:
    """`Partition.makeLeader` -> `maybeAssignEpochStartOffset`: the leader caches (its leader epoch, its
    log end) before it serves a fetch (`LeaderEpochFileCache.assign`: a no-op when the cache already ends
    in that epoch).

    `leader_epoch` is the controller's, from its own record. Without it, from disk alone, the epoch is
    above every epoch any replica has seen (each was a leader epoch the controller handed out), so it
    is the highest of them plus one. Logs without any epoch (message formats 0 and 1 only) keep none."""
    known = [r.epochs.latest_epoch for r in [leader, *followers] if r.epochs.latest_epoch is not None]
    if known:
        leader.epochs.assign(max(known) + 1 if leader_epoch is None else leader_epoch, leader.log_end_offset)


def replay(leader: Replica, followers: list[Replica], protocol: str = EPOCH, leader_epoch: int | None = None,
           *, continuing: frozenset[str] = frozenset(), new_epoch: bool = True,
           min_isr: int = 1) -> tuple[Transcript, dict[str, FollowerOutcome]]:
    """Replay on copies; the inputs stay untouched. Returns the transcript and per-follower outcomes.
    `leader_epoch`: the controller's epoch for the leader, when its record is known. `continuing`: the
    followers whose fetcher keeps running (`keep_fetching`); every other one starts a fetcher, as at its
    broker's start. `new_epoch` False: no election happens, the leader keeps serving its own epoch.
    `min_isr`: the effective min.insync.replicas (`advance_leader_hw`)."""
    log = Transcript()
    outcomes = {f.name: FollowerOutcome(f.name) for f in followers}
    if protocol == EPOCH and (new_epoch or leader_epoch is not None):
        become_leader(leader, followers, leader_epoch)
    log.add("leader", leader.name, leader_epoch=leader.epochs.latest_epoch, log_end_offset=leader.log_end_offset,
            high_watermark=leader.high_watermark)
    for f in followers:
        if f.name in continuing:
            keep_fetching(leader, f, outcomes[f.name], log, protocol)
        else:
            start_fetcher(leader, f, outcomes[f.name], log, protocol)
        fetch(leader, f, outcomes[f.name], log)
    fetching = [f for f in followers if outcomes[f.name].failed is None]
    for f in followers:
        if outcomes[f.name].failed is not None:  # Partition.maybeShrinkIsr: it stopped fetching
            log.add("isr_shrink", f.name, rule="a failed follower leaves the ISR (replica.lag.time.max.ms)")
    advance_leader_hw(leader, fetching, log, min_isr)
    for f in followers:
        fetch(leader, f, outcomes[f.name], log)
    return log, outcomes


def start_fetcher(leader: Replica, f: Replica, outcome: FollowerOutcome, log: Transcript, protocol: str) -> None:
    """The Truncating state a new fetcher starts in (§12.2-§12.4): the high-watermark rule, or the
    OffsetsForLeaderEpoch round trips (cross-checked against the Fetch/DivergingEpoch path)."""
    if protocol == HW:
        truncate_to_hw(f, outcome, log, "pre-KIP-101 fetcher start")
    elif f.has_epochs and leader.has_epochs:
        on_fetch = truncation_on_fetch(leader, f)
        truncate_by_epochs(leader, f, outcome, log)
        log.add("cross_check", f.name, offsets_for_leader_epoch=f.log_end_offset, truncate_on_fetch=on_fetch,
                agree=on_fetch == f.log_end_offset)
    else:
        truncate_to_hw(f, outcome, log, "no leader epochs on " + (f.name if not f.has_epochs else leader.name))


def quorum_high_watermark(ends: list[int], voters: int, epoch_start: int) -> int | None:
    """The KRaft leader's high watermark: the largest offset a majority of the voters hold (the leader
    counts; a voter not given counts as holding nothing), and only once it passes the start of the leader's
    own epoch, so that a record of its epoch is committed before any older one is exposed (apache/kafka
    raft/src/main/java/org/apache/kafka/raft/LeaderState.java `maybeUpdateHighWatermark`: `indexOfHw =
    voterStates.size() / 2` of the end offsets in descending order, then `highWatermarkUpdateOffset >
    epochStartOffset`; branch 3.9 and trunk). None: nothing is committed in this epoch yet."""
    held = sorted(ends + [0] * max(0, voters - len(ends)), reverse=True)
    if not held:
        return None
    candidate = held[max(voters, len(ends)) // 2]
    return candidate if candidate > epoch_start else None


@dataclass
class RaftCommit:
    """The commit points of a KRaft quorum replay: as the voters' logs stand once each has truncated at
    its diverging epoch (what the leader learns from their first fetches), and after they caught up."""

    epoch_start: int                 # where the leader's epoch starts in its log
    start_record_pending: bool       # the leader's log holds no record of its epoch yet
    before: int | None
    after: int | None


def replay_raft(leader: Replica, followers: list[Replica], leader_epoch: int | None,
                voters: int) -> tuple[Transcript, dict[str, FollowerOutcome], RaftCommit]:
    """The KRaft metadata log's own replication between voter copies (KIP-595), on copies.

    The leader caches its epoch at its log end on election (`KafkaRaftClient.onBecomeLeader` ->
    `ReplicatedLog.initializeLeaderEpoch`) and appends its start-of-epoch control records there
    (`LeaderState.appendStartOfEpochControlRecords`; not modelled byte for byte: a replayed election
    reports it pending). Followers have no Truncating state: each Fetch carries the last fetched epoch,
    the leader answers a divergence with that epoch's end in its own log (`ReplicatedLog.validateOffsetAndEpoch`)
    and the follower truncates (`KafkaRaftClient.handleFetchResponse` -> `ReplicatedLog.truncateToEndOffset`,
    which `truncate_on_diverging_epoch` and `truncation_point` follow), then fetches. A fetch below the
    leader's log start is answered with its snapshot, which restarts the follower's log there (as
    OFFSET_OUT_OF_RANGE does in `fetch`). The high watermark is the quorum's (`quorum_high_watermark`)."""
    log = Transcript()
    outcomes = {f.name: FollowerOutcome(f.name) for f in followers}
    become_leader(leader, followers, leader_epoch)
    latest = leader.epochs.entries[-1] if leader.epochs.entries else None
    epoch_start = latest.start_offset if latest is not None else leader.log_end_offset
    pending = latest is not None and epoch_start >= leader.log_end_offset
    log.add("leader", leader.name, leader_epoch=leader.epochs.latest_epoch, log_end_offset=leader.log_end_offset,
            epoch_start_offset=epoch_start, voters=voters)
    if pending:
        log.add("start_of_epoch", leader.name, offset=leader.log_end_offset,
                rule="the new leader appends its LeaderChangeMessage here first (LeaderState."
                     "appendStartOfEpochControlRecords); once a majority holds it, every record below commits")
    for f in followers:
        if f.has_epochs and leader.has_epochs:
            truncate_on_diverging_epoch(leader, f, outcomes[f.name], log)
    ends = [leader.log_end_offset] + [f.log_end_offset for f in followers]
    before = quorum_high_watermark(ends, voters, epoch_start)
    log.add("quorum_commit", leader.name, high_watermark=before, stage="after truncation",
            end_offsets=dict(zip([leader.name] + [f.name for f in followers], ends, strict=True)))
    for f in followers:
        fetch(leader, f, outcomes[f.name], log)
    ends = [leader.log_end_offset] + [f.log_end_offset for f in followers if outcomes[f.name].failed is None]
    after = quorum_high_watermark([e + int(pending) for e in ends], voters, epoch_start)
    if after is not None:
        leader.high_watermark = max(leader.high_watermark, min(after, leader.log_end_offset))
        log.add("hw_update", leader.name, high_watermark=leader.high_watermark,
                rule="the offset a majority of the voters hold, past the start of the leader's epoch")
    for f in followers:
        fetch(leader, f, outcomes[f.name], log)
    return log, outcomes, RaftCommit(epoch_start, pending, before, after if after is None
                                     else min(after, leader.log_end_offset))
