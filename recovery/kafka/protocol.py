"""Offline replay of Kafka's follower protocol between on-disk replicas (kafka.md §11-§13).

A deterministic state machine over `Replica` models, no I/O: each follower
first truncates (leader-epoch protocol with the KIP-279 refinement, or the
pre-KIP-101 high-watermark rule), then fetches from the leader, handling
OFFSET_OUT_OF_RANGE both ways; the leader's high watermark then advances to
the smallest log end offset of the replicas, and a last fetch round carries
it to the followers. Every step is an event in the transcript.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from replog.recovery.kafka.replica import Replica
from replog.recovery.kafka.replica_log import ReplicaLog, locate, split
from replog.recovery.transcript import Transcript

EPOCH, HW = "epoch", "hw"
MAX_ROUNDS = 10_000  # truncation rounds per follower; each strictly lowers the latest epoch


@dataclass
class FollowerOutcome:
    name: str
    truncated_to: int | None = None
    removed: ReplicaLog = field(default_factory=ReplicaLog)   # batches this follower removed, in order
    fetched: ReplicaLog = field(default_factory=ReplicaLog)   # batches copied from the leader


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
    """`UnifiedLog.truncateTo`: drop batches holding offsets >= `offset` (§12.7)."""
    if offset >= rep.log_end_offset:
        rep.epochs.truncate_from_end(rep.log_end_offset)
        return
    if offset < rep.log_start_offset or (rep.log and offset < rep.log.first_offset):
        truncate_fully(rep, offset, outcome, log, reason)
        return
    removed = rep.log.cut_at(offset)
    outcome.removed.extend(removed)
    outcome.truncated_to = offset if outcome.truncated_to is None else min(outcome.truncated_to, offset)
    rep.epochs.truncate_from_end(offset)
    rep.high_watermark = min(rep.high_watermark, rep.log_end_offset)
    rep.recovery_point = min(rep.recovery_point, rep.log_end_offset)
    log.add("truncate", rep.name, offset=offset, reason=reason, batches_removed=removed.batches,
            records_removed=removed.records, log_end_offset=rep.log_end_offset)


def truncate_fully(rep: Replica, start: int, outcome: FollowerOutcome, log: Transcript, reason: str) -> None:
    """`truncateFullyAndStartAt`: every segment goes, the log restarts empty at `start`."""
    outcome.removed.extend(rep.log)
    rep.log = ReplicaLog()
    rep.epochs.clear()
    rep.log_start_offset = start
    rep.high_watermark = rep.recovery_point = start
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
    """One fetch from the follower's log end to the leader's (§12.5-§12.8)."""
    offset = f.log_end_offset
    log.add("request", f.name, api="Fetch", fetch_offset=offset, last_fetched_epoch=f.epochs.latest_epoch)
    if offset > leader.log_end_offset or offset < leader.log_start_offset:
        log.add("response", leader.name, api="Fetch", to=f.name, error="OFFSET_OUT_OF_RANGE",
                leader_log_start_offset=leader.log_start_offset, leader_log_end_offset=leader.log_end_offset)
        _out_of_range(leader, f, outcome, log)
        offset = f.log_end_offset
    new = leader.log.from_offset(offset)
    if f.log:
        new = starting_at(new, offset)
    f.log.extend(new)
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


def starting_at(batches: ReplicaLog, offset: int) -> ReplicaLog:
    """The batches that start at or after `offset`: a follower with a log appends only those
    (the leader's batch holding `offset` but starting below it is not sent again)."""
    if not batches or batches.first_offset >= offset:
        return batches
    if not batches.ordered:
        return batches.where(lambda block: block.base_offset >= offset)
    first = batches.pieces[0]
    cut = locate(first, offset, by_base=True)
    tail = split(first, cut)[1] if cut is not None else None
    return ReplicaLog(([tail] if tail else []) + batches.pieces[1:])


def _out_of_range(leader: Replica, f: Replica, outcome: FollowerOutcome, log: Transcript) -> None:
    """`handleOutOfRangeError`: leader shorter -> truncate to its end; follower behind its start -> restart."""
    if leader.log_end_offset < f.log_end_offset:
        truncate(f, leader.log_end_offset, outcome, log, "leader's log end offset (OFFSET_OUT_OF_RANGE)")
    elif leader.log_start_offset > f.log_end_offset:
        truncate_fully(f, leader.log_start_offset, outcome, log, "leader's log start offset (OFFSET_OUT_OF_RANGE)")


def advance_leader_hw(leader: Replica, followers: list[Replica], log: Transcript) -> None:
    """The leader's HW moves to the smallest LEO of the in-sync replicas, never back (§12.9)."""
    candidate = min([leader.log_end_offset] + [f.log_end_offset for f in followers])
    if candidate > leader.high_watermark:
        leader.high_watermark = candidate
        log.add("hw_update", leader.name, high_watermark=candidate, rule="minimum log end offset of the ISR")


def truncation_on_fetch(leader: Replica, follower: Replica) -> int:
    """Where the KIP-595 path (Fetch with LastFetchedEpoch, DivergingEpoch answers, §12.5)
    leaves the follower's log end; computed on a copy, for cross-checking the
    OffsetsForLeaderEpoch path: for well-formed logs both must agree."""
    f, scratch, quiet = follower.copy(), FollowerOutcome(follower.name), Transcript()
    for _ in range(MAX_ROUNDS):
        last_epoch = f.epochs.latest_epoch
        if last_epoch is None:
            break
        e_l, o_l = leader.epochs.end_offset_for(last_epoch, leader.log_end_offset)
        if e_l == -1 or o_l == -1 or not (e_l < last_epoch or o_l < f.log_end_offset):
            break  # no divergence (or out of range, handled the same way by both paths)
        offset, _final = truncation_point(e_l, o_l, f, f.high_watermark)
        if offset >= f.log_end_offset:
            break
        truncate(f, offset, scratch, quiet, "diverging epoch")
    return f.log_end_offset


def become_leader(leader: Replica, followers: list[Replica]) -> None:
    """`Partition.makeLeader` -> `maybeAssignEpochStartOffset`: every election bumps the leader epoch and
    the new leader caches (new epoch, its log end) before it serves a fetch.

    From disk alone the controller's epoch is unknown; it is above every epoch any replica has seen
    (each was a leader epoch the controller handed out), so the new one is the highest of them plus one.
    Logs without any epoch (message formats 0 and 1 only) keep none."""
    known = [r.epochs.latest_epoch for r in [leader, *followers] if r.epochs.latest_epoch is not None]
    if known:
        leader.epochs.assign(max(known) + 1, leader.log_end_offset)


def replay(leader: Replica, followers: list[Replica],
           protocol: str = EPOCH) -> tuple[Transcript, dict[str, FollowerOutcome]]:
    """Replay on copies; the inputs stay untouched. Returns the transcript and per-follower outcomes."""
    log = Transcript()
    outcomes = {f.name: FollowerOutcome(f.name) for f in followers}
    if protocol == EPOCH:
        become_leader(leader, followers)
    log.add("leader", leader.name, leader_epoch=leader.epochs.latest_epoch, log_end_offset=leader.log_end_offset,
            high_watermark=leader.high_watermark)
    for f in followers:
        if protocol == HW:
            truncate_to_hw(f, outcomes[f.name], log, "pre-KIP-101 follower restart")
        elif f.has_epochs and leader.has_epochs:
            on_fetch = truncation_on_fetch(leader, f)
            truncate_by_epochs(leader, f, outcomes[f.name], log)
            log.add("cross_check", f.name, offsets_for_leader_epoch=f.log_end_offset, truncate_on_fetch=on_fetch,
                    agree=on_fetch == f.log_end_offset)
        else:
            truncate_to_hw(f, outcomes[f.name], log,
                           "no leader epochs on " + (f.name if not f.has_epochs else leader.name))
        fetch(leader, f, outcomes[f.name], log)
    advance_leader_hw(leader, followers, log)
    for f in followers:
        fetch(leader, f, outcomes[f.name], log)
    return log, outcomes
