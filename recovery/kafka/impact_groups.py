"""What a replay's truncation means for each consumer group with a committed offset on the partition.

A consumer group resumes from its committed offset C. What happens then is the
consumer's own rule, given the leader after the replay:
- with a committed leader epoch E (KIP-320, OffsetCommitValue v3+), the consumer first validates
  its position: it asks the leader for the end offset of epoch E (OffsetsForLeaderEpoch, answered by
  `LeaderEpochFileCache.endOffsetFor`); an answer below C means the log it read was truncated, and it
  seeks to that offset, or raises LogTruncationException when no auto.offset.reset policy is set; an
  undefined answer makes it reset by auto.offset.reset (clients `SubscriptionState.maybeCompleteValidation`);
- with no epoch, a position outside [log start, log end] fails the fetch with OFFSET_OUT_OF_RANGE and
  auto.offset.reset decides (earliest: from the log start; latest: from the log end);
- with no epoch and a position inside the log, nothing tells the consumer: it fetches from C on.

Which records it read that no longer exist: the records a replica loses below C. The consumer read
them (rather than the records that replaced them at the same offsets) when it committed before the
new leader's history began there: after the election only the new leader serves fetches.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from replog.formats.shape import Field, Shape
from replog.recovery.kafka.epoch_cache import EpochCache
from replog.recovery.kafka.group_offsets import CommittedOffset
from replog.recovery.kafka.record_spans import Span, first_timestamp_from, lowest_offset, span
from replog.recovery.kafka.replica_log import ReplicaLog

UNAFFECTED, CONSUMED_LOST, WILL_DETECT, WILL_RESET = (
    "unaffected", "consumed_lost", "will_detect_truncation", "will_reset")


@dataclass
class LeaderAfter:
    """The partition after the replay, as consumers meet it: the leader's log and epoch cache."""

    name: str
    log: ReplicaLog
    epochs: EpochCache
    log_start_offset: int
    log_end_offset: int
    high_watermark: int


@dataclass
class LostLog:
    """What one replica loses (its batches, possibly out of offset order) and its high watermark before."""

    replica: str
    log: ReplicaLog
    high_watermark: int      # below it, the records were acknowledged even to acks=all producers

    @property
    def first_offset(self) -> int | None:
        return lowest_offset(self.log)


@dataclass
class GroupImpact:
    group: str
    committed_offset: int
    committed_leader_epoch: int | None
    commit_timestamp: int
    classification: str
    lost: Span = field(default_factory=Span)
    read_from: str | None = None       # the replica whose lost records it read
    resumes_at: int | None = None      # where it fetches next (None: auto.offset.reset decides)
    records_skipped: int = 0           # records of the new history it will never read
    explanation: str = ""


GROUP_IMPACT = Shape(
    "group", "committed_offset", "committed_leader_epoch", "commit_timestamp", "classification",
    Field("records_consumed_lost", "lost.records"), Field("first_lost_offset", "lost.first_offset"),
    Field("last_lost_offset", "lost.last_offset"), Field("first_lost_timestamp", "lost.first_timestamp"),
    Field("last_lost_timestamp", "lost.last_timestamp"), "read_from", "resumes_at", "records_skipped", "explanation",
)


class GroupContext:
    """The facts every group's classification reads; each count is read once and kept."""

    def __init__(self, leader: LeaderAfter, lost: list[LostLog]) -> None:
        self.leader, self.lost = leader, [x for x in lost if x.log]
        self._spans: dict[tuple[int, int, int], Span] = {}

    def _span(self, which: int, lo: int, hi: int) -> Span:
        """Records in [lo, hi) of lost log `which` (-1: the leader's log)."""
        key = (which, lo, hi)
        if key not in self._spans:
            self._spans[key] = span(self.leader.log if which < 0 else self.lost[which].log, lo, hi)
        return self._spans[key]

    def consumed_lost(self, committed: int) -> tuple[LostLog | None, Span]:
        """The replica whose lost records below `committed` are the most, and those records."""
        best: tuple[LostLog | None, Span] = (None, Span())
        for i, x in enumerate(self.lost):
            found = self._span(i, -1, committed)
            if found.records > best[1].records:
                best = (x, found)
        return best

    def new_history_start(self, lost: LostLog) -> int | None:
        """When the leader's history replacing `lost` began: the timestamp of its first batch there."""
        first = lost.first_offset
        return None if first is None else first_timestamp_from(self.leader.log, first)

    def skipped(self, lo: int | None, hi: int) -> int:
        """Records of the leader's log in [lo, hi) (what a consumer jumping past them never reads)."""
        return 0 if lo is None else self._span(-1, lo, hi).records


def classify(c: CommittedOffset, ctx: GroupContext) -> GroupImpact:
    """The consumer's rule applied to one committed offset (module docstring)."""
    leader = ctx.leader
    committed, epoch = c.offset, c.leader_epoch
    source, lost = ctx.consumed_lost(committed)
    out = GroupImpact(c.group, committed, epoch if epoch >= 0 else None, c.commit_timestamp, UNAFFECTED, lost,
                      source.replica if source else None, committed)
    if epoch >= 0:
        end_epoch, end = leader.epochs.end_offset_for(epoch, leader.log_end_offset)
        if end_epoch < 0 or end < 0:
            return _reset(out, ctx, source, f"the leader {leader.name} knows no end for leader epoch {epoch}: "
                                    "the consumer's validation resets the position by auto.offset.reset")
        if end < committed:
            return _detected(out, ctx, end)
    if not leader.log_start_offset <= committed <= leader.log_end_offset:
        return _reset(out, ctx, source, f"offset {committed} is outside the log [{leader.log_start_offset}, "
                                f"{leader.log_end_offset}] after the replay: the fetch fails with OFFSET_OUT_OF_RANGE")
    if source is None or lost.records == 0:
        out.lost = Span()
        out.explanation = _unaffected(c, ctx)
        return out
    began = ctx.new_history_start(source)
    if epoch < 0 and (began is None or c.commit_timestamp < 0 or c.commit_timestamp < began):
        out.classification = CONSUMED_LOST
        out.records_skipped = ctx.skipped(source.first_offset, committed)
        out.explanation = (f"it read {lost.records} records at {lost.first_offset}..{lost.last_offset} that "
                           f"{source.replica} loses; with no committed leader epoch nothing tells it: it goes on from "
                           f"{committed} and never reads the {out.records_skipped} records that took their offsets")
        return out
    out.lost, out.read_from = Span(), None
    out.explanation = ("its committed leader epoch shows it read the new leader's records" if epoch >= 0 else
                       f"it committed at {c.commit_timestamp}, after the new leader's records at these offsets "
                       f"began ({began}): it read those, not the lost ones")
    return out


def _detected(out: GroupImpact, ctx: GroupContext, end: int) -> GroupImpact:
    """KIP-320: the leader's end offset for the committed epoch lies below the position."""
    committed = out.committed_offset
    out.classification, out.resumes_at = WILL_DETECT, end
    now = ctx.skipped(end, committed)      # the leader's records between the seek and the old position
    last = min(committed, ctx.leader.log_end_offset) - 1   # the leader's log may end below the old position
    reads = f"reads the {now} records now at {end}..{last}" if now else f"reads on from {end}"
    out.explanation = (f"on restart the consumer validates offset {committed} of epoch {out.committed_leader_epoch}; "
                       f"the leader answers end offset {end}, so it detects the truncation and seeks to {end} "
                       f"(LogTruncationException instead, with no auto.offset.reset) and {reads}")
    return out


def _reset(out: GroupImpact, ctx: GroupContext, source: LostLog | None, why: str) -> GroupImpact:
    """Where auto.offset.reset takes the group, and what of the new history the latest policy skips."""
    leader = ctx.leader
    first_lost = source.first_offset if source is not None else None
    out.classification, out.resumes_at = WILL_RESET, None
    out.records_skipped = ctx.skipped(first_lost, leader.log_end_offset)
    out.explanation = (f"{why}; auto.offset.reset decides: earliest re-reads from offset {leader.log_start_offset}, "
                       f"latest goes on from {leader.log_end_offset}"
                       + (f" and never reads the {out.records_skipped} records that replaced the lost ones"
                          if out.records_skipped else ""))
    return out


def _unaffected(c: CommittedOffset, ctx: GroupContext) -> str:
    firsts = [x.first_offset for x in ctx.lost if x.first_offset is not None]
    if firsts and c.offset <= min(firsts):
        return f"its offset {c.offset} is at or behind the truncation point {min(firsts)}: nothing it read is lost"
    return "no record it read is lost"
