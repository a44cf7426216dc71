"""What a RocketMQ HA replay says: per store its outcome and plan, and the JSON shapes of both.

Kept apart from the protocol (`ha.py`) so that repair and the views read results without the replay's
machinery; the lost messages are summarised per queue and listed (up to `LOST_LISTED`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from replog.formats.findings import Finding
from replog.formats.rocketmq.epoch_file import EpochEntry
from replog.formats.shape import Field, Shape
from replog.recovery.rocketmq.store_model import MessageRef, StoreModel
from replog.recovery.rocketmq.timers import lost_deliveries
from replog.recovery.rocketmq.timers import lost_summary as timer_lost_summary
from replog.recovery.transcript import Transcript

LOST_LISTED = 1000                    # lost messages listed one by one in the JSON


@dataclass
class Plan:
    """What the slave ends up with: its own bytes below `keep_to`, the master's in [fetch_from, fetch_to)."""

    keep_to: int
    fetch_from: int
    fetch_to: int
    epochs: list[EpochEntry]
    confirm_offset: int | None

    @property
    def end(self) -> int:
        return self.fetch_to if self.fetch_to > self.fetch_from else self.keep_to


@dataclass(frozen=True)
class Stall:
    """Why a slave's HA cannot go on by itself: it stalls (heartbeats only) or needs an operator. `cause`:
    slave_ahead | slave_behind_master_min_offset | no_consistent_point | offset_not_aligned; `connection`
    (classic, slave ahead): whether the master closes the link at each report (`ha.slave_ahead_connection`)."""

    cause: str
    explanation: str
    connection: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The contract's `stall` object (its keys in the order the replay has always written them)."""
        return {"cause": self.cause} | ({"connection": self.connection} if self.connection is not None else {}) \
            | {"explanation": self.explanation}


@dataclass
class ReplicaOutcome:
    model: StoreModel
    role: str                                   # "master" | "slave"
    status: str                                 # in_sync | fetched | truncated | stalled | manual | master
    diverged_at: int | None = None
    truncated_to: int | None = None
    lost: list[MessageRef] = field(default_factory=list)
    frames: int = 0
    fetched_bytes: int = 0
    stall: Stall | None = None
    findings: list[Finding] = field(default_factory=list)  # hazards the broker's own protocol leaves
    plan: Plan | None = None                    # what the replay leaves (None: unchanged)
    repair_plan: Plan | None = None             # what `repair` writes (differs only for a stall)
    repair_lost: list[MessageRef] = field(default_factory=list)
    max_offset_after: int = 0
    min_offset_after: int = 0
    confirm_after: int | None = None
    epochs_after: list[EpochEntry] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return REPLICA_OUTCOME.dump(self)

    @property
    def loses_or_fails(self) -> bool:
        """The store loses messages, its HA would stall or need an operator (`stall`), or the broker
        leaves it with an error-severity hazard (a mixed history)."""
        return bool(self.lost) or self.stall is not None or any(f.severity == "error" for f in self.findings)


@dataclass
class HAReplayResult:
    protocol: str
    master: str
    explanation: str
    replicas: list[ReplicaOutcome]
    transcript: Transcript

    def to_dict(self) -> dict[str, Any]:
        return HA_REPLAY_RESULT.dump(self)

    @property
    def stalled(self) -> bool:
        return any(r.stall for r in self.replicas)

    @property
    def loses_or_fails(self) -> bool:
        """Any store loses messages or stalls: the contract's exit 1 for replay and repair."""
        return any(r.loses_or_fails for r in self.replicas)


def lost_summary(msgs: list[MessageRef]) -> dict[str, Any]:
    """The contract's `lost` plus RocketMQ detail: per queue, and each message (topic, queue, keys)."""
    queues: dict[tuple[str, int], list[MessageRef]] = {}
    for m in msgs:
        queues.setdefault((m.topic, m.queue_id), []).append(m)
    return {
        "records": len(msgs), "first_offset": msgs[0].physical_offset if msgs else None,
        "last_offset": msgs[-1].physical_offset if msgs else None, "bytes": sum(m.size for m in msgs),
        "queues": [{"topic": t, "queue_id": q, "count": len(ms), "first_queue_offset": ms[0].queue_offset,
                    "last_queue_offset": ms[-1].queue_offset} for (t, q), ms in sorted(queues.items())],
        "messages": LOST_MESSAGE.dump_each(msgs[:LOST_LISTED]),
        "messages_listed": min(len(msgs), LOST_LISTED),
    }


def _repair_plan(r: ReplicaOutcome) -> dict[str, Any] | None:
    """What `repair` writes, when it differs from what the replay leaves (a stalled slave)."""
    if r.repair_plan is None or r.repair_plan == r.plan:
        return None
    return {"truncate_to": r.repair_plan.keep_to, "fetch_from": r.repair_plan.fetch_from,
            "fetch_to": r.repair_plan.fetch_to, "lost": lost_summary(r.repair_lost)}


def _epochs(entries: list[EpochEntry]) -> list[list[int]]:
    return [[e.epoch, e.start_offset] for e in entries]


LOST_MESSAGE = Shape("physical_offset", "size", "topic", "queue_id", "queue_offset",
                     Field("keys", lambda m: m.user_keys()), "store_timestamp")

REPLICA_OUTCOME = Shape(
    Field("name", "model.name"), Field("path", "model.path"), "role", "status",
    Field("log_start_offset_before", "model.min_offset"), Field("log_end_offset_before", "model.max_offset"),
    Field("high_watermark_before", "model.confirm_offset"), "truncated_to",
    Field("log_start_offset_after", "min_offset_after"), Field("log_end_offset_after", "max_offset_after"),
    Field("high_watermark_after", "confirm_after"), "diverged_at",
    Field("lost", lambda r: lost_summary(r.lost)),
    Field("fetched", lambda r: {"bytes": r.fetched_bytes, "frames": r.frames}),
    Field("stall", lambda r: None if r.stall is None else r.stall.to_dict()),
    Field("findings", lambda r: [f.to_dict() for f in r.findings]), Field("repair_plan", _repair_plan),
    Field("epochs_before", lambda r: _epochs(r.model.epochs)), Field("epochs_after", lambda r: _epochs(r.epochs_after)),
    Field("abort_present", "model.abort.present"), Field("recovery", lambda r: r.model.recovery()),
    Field("lost_scheduled_deliveries", lambda r: timer_lost_summary(lost_deliveries(r.model, r.lost))),
)

HA_REPLAY_RESULT = Shape(
    Field("system", lambda _: "rocketmq"), "protocol", Field("leader", "master"),
    Field("leader_election", lambda r: {"unclean": False, "explanation": r.explanation}),
    Field("replicas", shape=REPLICA_OUTCOME), Field("events", "transcript.events"),
)
