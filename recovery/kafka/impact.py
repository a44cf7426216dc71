"""`impact`: what a replay's truncation means for consumer groups, producers and transactions.

Joins what the replay removes (`ReplayResult`: each replica's lost batches and the
leader's log after) with what else is on the same disks: the groups' committed
offsets (`group_offsets`, from `__consumer_offsets`), the coordinators' transaction
records (`txn_coordinator`, from `__transaction_state`) and the producer state the
logs imply (`producer_scan`). The rules live in `impact_groups` (consumers) and
`impact_producers` (producers, transactions); this module gathers their inputs:
- producer state is read once along the leader's log; a replica that shares the
  leader's batches up to where it diverged starts from a copy of the leader's state
  there and reads only its own tail (memory: the producers, never the batches);
- only the lost batches and the leader's batches over the replaced offsets are read
  again, to count the records consumers read there.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from replog.formats.shape import Field, Shape
from replog.recovery.kafka.group_offsets import GroupOffsets, has_consumer_offsets, read_group_offsets
from replog.recovery.kafka.impact_groups import (
    GROUP_IMPACT,
    UNAFFECTED,
    GroupContext,
    GroupImpact,
    LeaderAfter,
    LostLog,
    classify,
)
from replog.recovery.kafka.impact_producers import (
    PRODUCER_IMPACT,
    TXN_BEFORE,
    TXN_IMPACT,
    LostWrites,
    TxnBefore,
    TxnImpact,
    judge_producers,
    judge_transactions,
    lost_writes,
)
from replog.recovery.kafka.impact_shares import SHARE_IMPACT, ShareImpact, classify_share
from replog.recovery.kafka.impact_shares import UNAFFECTED as SHARE_UNAFFECTED
from replog.recovery.kafka.internal_topics import TRANSACTION_STATE, partition_copies
from replog.recovery.kafka.producer_scan import ProducerScan, scan_log
from replog.recovery.kafka.replay import ReplayResult, ReplicaResult
from replog.recovery.kafka.share_state import ShareStates, has_share_group_state, read_share_states
from replog.recovery.kafka.txn_coordinator import CoordinatorState, read_coordinator_state


@dataclass
class ImpactResult:
    topic: str
    partition: int
    leader: LeaderAfter
    groups: list[GroupImpact] = field(default_factory=list)
    producers: list[LostWrites] = field(default_factory=list)
    transactions: list[TxnImpact] = field(default_factory=list)
    before: list[TxnBefore] = field(default_factory=list)
    last_stable_offset_after: int = 0
    offsets_sources: list[str] = field(default_factory=list)
    coordinator_sources: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    shares: list[ShareImpact] = field(default_factory=list)      # share groups on the partition (KIP-932)
    share_state_sources: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return IMPACT_RESULT.dump(self)

    @property
    def summary(self) -> dict[str, int]:
        """Counts for a line or a fleet row: groups affected, distinct lost records some group read,
        producers with lost writes, hanging and open transactions."""
        per_replica: dict[str, int] = {}
        for g in self.groups:
            if g.read_from is not None:
                per_replica[g.read_from] = max(per_replica.get(g.read_from, 0), g.lost.records)
        return {"groups": len(self.groups),
                "groups_affected": sum(1 for g in self.groups if g.classification != UNAFFECTED),
                "records_consumed_lost": sum(per_replica.values()),
                "producers_with_lost_writes": len({w.producer_id for w in self.producers}),
                "hanging_transactions": sum(1 for t in self.transactions if t.state == "hanging"),
                "open_transactions": len(self.transactions),
                "share_groups_affected": sum(1 for s in self.shares if s.classification != SHARE_UNAFFECTED)}


IMPACT_RESULT = Shape(
    "topic", "partition", Field("leader", "leader.name"),
    Field("log_start_offset_after", "leader.log_start_offset"), Field("log_end_offset_after", "leader.log_end_offset"),
    Field("high_watermark_after", "leader.high_watermark"), "last_stable_offset_after",
    Field("consumer_groups", "groups", shape=GROUP_IMPACT), Field("producers", shape=PRODUCER_IMPACT),
    Field("transactions", shape=TXN_IMPACT), Field("transactions_before", "before", shape=TXN_BEFORE),
    "summary", "offsets_sources", "coordinator_sources", "skipped",
    Field("share_groups", "shares", shape=SHARE_IMPACT), "share_state_sources",
)


def _leader(result: ReplayResult) -> ReplicaResult:
    return next(r for r in result.replicas if r.replica.name == result.leader.name)


def _same_log(a: Any, b: Any) -> bool:
    return len(a.pieces) == len(b.pieces) and all(x is y for x, y in zip(a.pieces, b.pieces, strict=True))


def producer_states(result: ReplayResult, watch: Iterable[int]) -> tuple[ProducerScan, dict[str, ProducerScan]]:
    """The producer state of the leader after the replay, and of every replica before it (module docstring)."""
    watched = frozenset(watch)
    lead_result = _leader(result)
    lead = lead_result.replica
    points: dict[str, int | None] = {}
    for r in result.replicas:
        if r is lead_result:
            continue
        shares = r.replica.log_start_offset >= lead.log_start_offset
        points[r.replica.name] = (None if not shares else r.diverged_at if r.diverged_at is not None
                                  else min(r.replica.log_end_offset, lead.log_end_offset))
    lead_scan = ProducerScan(watched)
    captured = scan_log(lead.log, lead_scan, capture=[p for p in points.values() if p is not None])
    before = {lead.name: lead_scan}
    for r in result.replicas:
        if r is lead_result:
            continue
        point = points[r.replica.name]
        scan = ProducerScan(watched) if point is None else captured[point].copy()
        scan_log(r.replica.log, scan, start=point)
        before[r.replica.name] = scan
    final = lead_result.final
    if _same_log(final.log, lead.log):
        return lead_scan, before
    after = ProducerScan(watched)
    scan_log(final.log, after)
    return after, before


def analyze_impact(result: ReplayResult, offsets: GroupOffsets | None = None,
                   coordinator: CoordinatorState | None = None, shares: ShareStates | None = None) -> ImpactResult:
    """The impact of `result` on the groups in `offsets`, the share groups in `shares`, the producers and
    the transactions."""
    lead = _leader(result)
    first = result.replicas[0].replica
    topic, partition = first.topic, first.partition
    final = lead.final
    leader = LeaderAfter(final.name, final.log, final.epochs, final.log_start_offset, final.log_end_offset,
                         final.high_watermark)
    lost = [LostLog(r.replica.name, r.lost, r.replica.high_watermark) for r in result.replicas if r.lost]
    writes, lost_markers = lost_writes(lost)
    after, before = producer_states(result, (w.producer_id for w in writes))
    judge_producers(writes, after, lost_markers)
    ctx = GroupContext(leader, lost)
    out = ImpactResult(topic, partition, leader, producers=writes)
    if offsets is not None:
        out.groups = [classify(c, ctx) for c in offsets.for_partition(topic, partition)]
        out.offsets_sources, out.skipped = offsets.sources, list(offsets.skipped)
    if coordinator is not None:
        out.coordinator_sources = coordinator.sources
        out.skipped += coordinator.skipped
    if shares is not None:
        topic_id = next((r.replica.topic_id for r in result.replicas if r.replica.topic_id is not None), None)
        reached = {r.replica.name: r.replica.log_end_offset for r in result.replicas}
        out.shares = [classify_share(s, leader, lost, reached) for s in shares.for_partition(topic_id, partition)]
        out.share_state_sources = shares.sources
        out.skipped += shares.skipped
    out.transactions = judge_transactions(after.open_transactions(), lost_markers, coordinator, topic, partition)
    out.last_stable_offset_after = after.last_stable_offset(final.high_watermark)
    out.before = [TxnBefore(r.replica.name, before[r.replica.name].open_transactions(),
                            before[r.replica.name].last_stable_offset(r.replica.high_watermark))
                  for r in result.replicas]
    return out


def impact_log_dirs(replica_paths: Iterable[str], extra: Sequence[str | os.PathLike[str]] = ()) -> list[Path]:
    """The log dirs holding the replicas, then the `--offsets` ones: where internal topics are looked for."""
    out: list[Path] = []
    for p in [Path(x).resolve().parent for x in replica_paths] + [Path(x) for x in extra]:
        if p not in out:
            out.append(p)
    return out


def read_impact(result: ReplayResult, extra: Sequence[str | os.PathLike[str]] = ()) -> ImpactResult:
    """The impact of a replay, reading the internal topics under the replicas' log dirs and `extra`
    (without `__consumer_offsets` there, the groups are left empty; producers and transactions stay)."""
    first = result.replicas[0].replica
    sources = impact_sources((r.replica.path for r in result.replicas), first.topic, first.partition, extra)
    return analyze_impact(result, sources.offsets, sources.coordinator, sources.shares)


@dataclass(frozen=True)
class ImpactSources:
    """What an impact is read from, whoever leads: the groups' committed offsets on the partition, the
    coordinators' transactions and the share groups' state (None where those internal topics are absent)."""

    offsets: GroupOffsets | None = None
    coordinator: CoordinatorState | None = None
    shares: ShareStates | None = None


def impact_sources(replica_paths: Iterable[str], topic: str, partition: int,
                   extra: Sequence[str | os.PathLike[str]] = ()) -> ImpactSources:
    """`ImpactSources` read once from the replicas' log dirs and `extra`."""
    dirs = impact_log_dirs(replica_paths, extra)
    return ImpactSources(
        read_group_offsets(dirs, [(topic, partition)]) if has_consumer_offsets(dirs) else None,
        read_coordinator_state(dirs) if partition_copies(dirs, TRANSACTION_STATE) else None,
        read_share_states(dirs) if has_share_group_state(dirs) else None)


def impact_of_replay(result: ReplayResult, extra: Sequence[str | os.PathLike[str]] = ()) -> ImpactResult | None:
    """`read_impact` when the replicas' log dirs or `extra` hold `__consumer_offsets`, else None: what
    `replay` and `repair` add to their output."""
    if not has_consumer_offsets(impact_log_dirs((r.replica.path for r in result.replicas), extra)):
        return None
    return read_impact(result, extra)
