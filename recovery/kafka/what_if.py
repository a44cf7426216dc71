"""`replay --what-if`: which leader loses least, when every in-sync replica is gone.

For every replica that could lead, the one replay model (`replay.run_replay`) runs with that
leader forced, and the one impact model (`impact.analyze_impact`) reads what the result means
for consumer groups, producers and transactions. Nothing here replays or classifies on its own:
this module only runs those two behind each leader, counts, and ranks.

The choices:
- "wait": the leader the controller elects by itself once brokers return (its record's leader,
  the first ISR or ELR member, the last known leader: `controller.recorded_leader`), or without
  a record the replica the election rule picks from disk (`election.elect`);
- every other replica, forced: an unclean election when its log ends below the highest high
  watermark a replica recorded (`replay.user_choice`), else a clean one the controller would not
  make by itself.

Ranked by what they lose (`Choice.key`): acknowledged records first (lost records below the highest
high watermark any replica recorded before the replay: a producer was told they were written), then
every lost record, then records consumer groups read that are gone and groups affected, producers
with lost writes, transactions left hanging, replicas whose fetcher would fail. A record lost on
several replicas (the same batch: offsets and CRC) counts once.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from replog.formats.errors import ReplogError
from replog.recovery.advice import Ranked
from replog.recovery.kafka.controller import METADATA, PARTITION_STATE, ControllerRecord, replica_broker_id
from replog.recovery.kafka.impact import ImpactResult, ImpactSources, analyze_impact, impact_sources
from replog.recovery.kafka.protocol import EPOCH
from replog.recovery.kafka.replay import ReplayInputs, ReplayResult, run_replay
from replog.recovery.kafka.what_if_commands import KRAFT, UNKNOWN, ZOOKEEPER, Recommendation, recommend

WAIT, CLEAN, UNCLEAN = "wait", "clean", "unclean"


@dataclass(frozen=True)
class Loss:
    """The records a choice loses on the whole partition: each lost batch once, whichever replicas held it."""

    records: int = 0
    acknowledged: int = 0           # in batches starting below the highest high watermark before the replay
    first_offset: int | None = None
    last_offset: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"records": self.records, "acknowledged": self.acknowledged, "first_offset": self.first_offset,
                "last_offset": self.last_offset}


def cluster_loss(result: ReplayResult) -> Loss:
    """Every replica's lost batches (`ReplicaResult.lost`) as one set, keyed by offsets and CRC (memory: the
    lost batches' keys, bounded by what differs); acknowledged when the batch starts below the highest high
    watermark any replica recorded."""
    top_hw = max(r.replica.high_watermark for r in result.replicas)
    seen: set[tuple[int, int, int]] = set()
    records = acknowledged = 0
    for r in result.replicas:
        for block in r.lost.blocks():
            cols = zip(block.base_offset.tolist(), block.last_offset.tolist(), block.crc.tolist(),
                       block.count.tolist(), strict=True)
            for base, last, crc, count in cols:
                if (base, last, crc) not in seen:
                    seen.add((base, last, crc))
                    records += count
                    acknowledged += count if base < top_hw else 0
    firsts = [k[0] for k in seen]
    return Loss(records, acknowledged, min(firsts, default=None), max((k[1] for k in seen), default=None))


@dataclass
class Choice:
    """One leader, the replay behind it, its impact and what the partition loses."""

    leader: str
    broker: int | None
    how: str                        # WAIT | CLEAN | UNCLEAN
    result: ReplayResult
    impact: ImpactResult
    loss: Loss
    rank: int = 0

    @property
    def loses_or_fails(self) -> bool:
        """Records lost or a fetcher failed behind this leader (replay's exit 1)."""
        return self.result.loses_or_fails

    @property
    def failed(self) -> list[str]:
        """Replicas whose fetcher the broker's own code would fail behind this leader."""
        return [r.replica.name for r in self.result.replicas if r.outcome is not None and r.outcome.failed]

    @property
    def producers_lost(self) -> dict[int, int]:
        """Records lost per producer id (a write lost on several replicas counted once: the most any loses)."""
        out: dict[int, int] = {}
        for w in self.impact.producers:
            out[w.producer_id] = max(out.get(w.producer_id, 0), w.records_lost)
        return out

    def key(self) -> tuple[int, ...]:
        """What the ranking compares, most important first (module docstring)."""
        s = self.impact.summary
        return (self.loss.acknowledged, self.loss.records, s["records_consumed_lost"], s["groups_affected"],
                s["producers_with_lost_writes"], s["hanging_transactions"], len(self.failed))

    def to_dict(self) -> dict[str, Any]:
        return choice_dict(self)


def _groups(impact: ImpactResult) -> dict[str, Any]:
    counts = {k: sum(1 for g in impact.groups if g.classification == k)
              for k in ("consumed_lost", "will_detect_truncation", "will_reset")}
    return {"groups": len(impact.groups), "affected": impact.summary["groups_affected"], **counts,
            "records_consumed_lost": impact.summary["records_consumed_lost"],
            "detail": [{"group": g.group, "committed_offset": g.committed_offset,
                        "classification": g.classification, "records_consumed_lost": g.lost.records,
                        "resumes_at": g.resumes_at} for g in impact.groups]}


def choice_dict(c: Choice) -> dict[str, Any]:
    """A choice in the contract's shape (docs/CLI-CONTRACT.md, `replay --what-if`)."""
    lead = c.result.leader
    return {
        "rank": c.rank, "leader": c.leader, "broker": c.broker, "how": c.how, "unclean": lead.unclean,
        "leader_epoch": lead.leader_epoch, "explanation": lead.explanation, "lost": c.loss.to_dict(),
        "replicas": [{"name": r.replica.name, "truncated_to": r.outcome.truncated_to if r.outcome else None,
                      "lost_records": r.lost_summary.records, "log_end_offset_after": r.final.log_end_offset,
                      "failed": r.outcome.failed if r.outcome else None} for r in c.result.replicas],
        "consumer_groups": _groups(c.impact),
        "producers": [{"producer_id": p, "records_lost": n} for p, n in sorted(c.producers_lost.items())],
        "producers_with_lost_writes": len(c.producers_lost),
        "hanging_transactions": c.impact.summary["hanging_transactions"],
        "open_transactions": c.impact.summary["open_transactions"],
        "failed": c.failed, "loses_or_fails": c.result.loses_or_fails,
    }


@dataclass
class WhatIf(Ranked[Choice]):
    """Every choice, ranked; the recommended one first; the leaders that could not be judged and why."""

    topic: str
    partition: int
    mode: str                                   # KRAFT | ZOOKEEPER | UNKNOWN
    controller: ControllerRecord | None
    choices: list[Choice]
    recommendation: Recommendation
    notes: list[str] = field(default_factory=list)


    def to_dict(self) -> dict[str, Any]:
        c = self.controller
        return {"system": "kafka", "topic": self.topic, "partition": self.partition, "mode": self.mode,
                "controller": None if c is None else {"source": c.source, "path": c.path},
                "premise": self.recommended.result.premise.sentence if self.recommended.result.premise else None,
                "choices": [x.to_dict() for x in self.choices], "recommended": self.recommendation.to_dict(),
                "notes": self.notes}


def cluster_mode(controller: ControllerRecord | None) -> str:
    """The cluster's mode as the controller's record on disk shows it: a KRaft metadata log or ZooKeeper's
    partition state; unknown without one."""
    if controller is None:
        return UNKNOWN
    return {METADATA: KRAFT, PARTITION_STATE: ZOOKEEPER}.get(controller.source, UNKNOWN)


def _choice(result: ReplayResult, how: str, sources: ImpactSources) -> Choice:
    lead = next(r.replica for r in result.replicas if r.replica.name == result.leader.name)
    return Choice(lead.name, replica_broker_id(lead.name, lead.broker_id), how, result,
                  analyze_impact(result, sources.offsets, sources.coordinator, sources.shares), cluster_loss(result))


def rank(choices: Sequence[Choice]) -> list[Choice]:
    """Best first by `Choice.key`; a tie keeps the controller's own choice ahead, then the order given."""
    order = sorted(choices, key=lambda c: (*c.key(), c.how != WAIT, choices.index(c)))
    for i, c in enumerate(order, 1):
        c.rank = i
    return order


def what_if(inputs: ReplayInputs, protocol: str = EPOCH, running: Sequence[str] = (),
            sources: ImpactSources | None = None) -> WhatIf:
    """Replay behind every replica, read each impact (from `sources`: none when not given), rank (module
    docstring)."""
    sources = sources if sources is not None else ImpactSources()
    replicas, controller = inputs.replicas, inputs.controller
    notes: list[str] = []
    choices: list[Choice] = []
    try:
        default = run_replay(replicas, None, protocol, controller, running, inputs.profile)
    except ReplogError as e:   # the controller elects nobody by itself: only forced choices remain
        default = None
        notes.append(f"no leader without an operator: {e}")
    if default is not None:
        how = WAIT if controller is not None else UNCLEAN if default.leader.unclean else CLEAN
        choices.append(_choice(default, how, sources))
    for r in replicas:
        if default is not None and r.name == default.leader.name:
            continue
        result = run_replay(replicas, r.name, protocol, controller, running, inputs.profile)
        result.leader.explanation = result.leader.explanation.replace(
            f"{r.name} chosen by the user", f"{r.name} made leader by the operator (what-if)", 1)
        choices.append(_choice(result, UNCLEAN if result.leader.unclean else CLEAN, sources))
    ranked = rank(choices)
    mode = cluster_mode(controller)
    first = replicas[0]
    return WhatIf(first.topic, first.partition, mode, controller, ranked,
                  recommend(ranked[0], ranked[1:], mode, first.topic, first.partition), notes)


def what_if_paths(specs: Sequence[str], protocol: str = EPOCH, progress: Any = None, *,
                  metadata: str | None = None, partition_state: str | None = None, running: Sequence[str] = (),
                  assumed: dict[str, str] | None = None,
                  offsets: Sequence[str | os.PathLike[str]] = ()) -> WhatIf:
    """Load the replicas (as `replay_paths` does, with its errors), the groups' offsets and the coordinators'
    transactions once, then `what_if`."""
    from replog.recovery.kafka.replay import load_inputs

    inputs = load_inputs(specs, progress, metadata=metadata, partition_state=partition_state, running=running,
                         assumed=assumed)
    first = inputs.replicas[0]
    sources = impact_sources((r.path for r in inputs.replicas), first.topic, first.partition, offsets)
    return what_if(inputs, protocol, running, sources)
