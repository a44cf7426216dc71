"""`replay --what-if` for RocketMQ: which master loses least, classic or controller mode (auto-switch).

Every store is made master in turn and the one HA replay (`ha.replay_stores`) runs behind it, then the one
impact model (`impact.analyze_rocketmq_impact`). What the group loses: each slave's lost messages (auto-switch
truncation), or, where classic HA leaves a slave stalled or mixed, what cutting it to the common prefix removes
(`ReplicaOutcome.repair_lost`, the operator fix); a message lost on several stores (same physical offset and
signature) counts once. Acknowledged: below the highest confirm offset a store recorded (controller mode, 5.1.1+;
unknown in classic mode, where no store records one). That is a lower bound: a controller-mode master alone in its
SyncStateSet acknowledges every append without moving the confirm offset it records (5.3.3
`CommitLog#getConfirmOffsetDirectly` returns `getMaxPhyOffset()` then, and only `setConfirmOffset` writes the
checkpoint's confirmPhyOffset), so the lost messages at or past it are counted apart (`unconfirmed`): the stores do
not say whether a producer had them acknowledged.

The choices: "wait" is the master the brokers settle on by themselves (`ha.choose_master`: the controller's
preference, highest epoch then offset; classic: the store named master or with brokerId 0); any other store must
be made master: controller mode by `mqadmin electMaster` (`ElectMasterSubCommand`, tools/.../command/controller;
a broker outside the SyncStateSet needs `enableElectUncleanMaster`, `DefaultElectPolicy`), classic mode by
reconfiguring it as brokerId 0 and restarting the group (classic HA has no election: docs/reference/rocketmq.md §8).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from replog.formats.errors import UnreadableInput
from replog.formats.fileio import read_small
from replog.formats.rocketmq.broker_identity import PROPERTIES_FILE, StoreIdentity, store_identity
from replog.recovery.advice import Ranked, Recommendation, compare_words
from replog.recovery.rocketmq.ha import (
    AUTOSWITCH,
    CLASSIC,
    choose_master,
    compare_logs,
    replay_stores,
    same_epoch_point,
)
from replog.recovery.rocketmq.ha_result import HAReplayResult
from replog.recovery.rocketmq.impact import RocketImpact, analyze_rocketmq_impact
from replog.recovery.rocketmq.store_model import MessageRef, StoreModel

WAIT, CLEAN, UNCLEAN, SWITCH = "wait", "clean", "unclean", "switch"
MODES = {AUTOSWITCH: "controller", CLASSIC: "classic"}


def identity(model: StoreModel) -> StoreIdentity | None:
    """The store's cluster, broker name and id from `brokerIdentity` or `config/broker.properties`."""
    def read(path: Any) -> bytes | None:
        try:
            return read_small(path, limit=1 << 16) if path is not None and path.is_file() else None
        except UnreadableInput:
            return None
    return store_identity(read(model.layout.broker_identity), read(model.layout.root / PROPERTIES_FILE))


def lost_messages(result: HAReplayResult) -> list[MessageRef]:
    """Each store's lost messages (or the operator fix's cut for a stalled or mixed slave), each once."""
    seen: dict[tuple[int, tuple[object, ...]], MessageRef] = {}
    for r in result.replicas:
        for m in r.lost or r.repair_lost:
            seen.setdefault((m.physical_offset, m.signature), m)
    return sorted(seen.values(), key=lambda m: m.physical_offset)


@dataclass
class MasterChoice:
    master: str
    broker_id: int | None
    how: str
    result: HAReplayResult
    impact: RocketImpact
    lost: list[MessageRef]
    acknowledged: int | None
    unconfirmed: int | None
    rank: int = 0

    @property
    def stalled(self) -> list[str]:
        return [r.model.name for r in self.result.replicas if r.stall is not None]

    @property
    def loses_or_fails(self) -> bool:
        """The replay's verdict, or messages the operator fix of a stalled or mixed classic slave cuts."""
        return self.result.loses_or_fails or bool(self.lost)

    def key(self) -> tuple[int, ...]:
        s = self.impact.summary
        return (self.acknowledged or 0, len(self.lost), s["messages_consumed_lost"], s["groups_affected"],
                len(self.stalled))

    def to_dict(self) -> dict[str, Any]:
        s = self.impact.summary
        return {"rank": self.rank, "leader": self.master, "broker": self.broker_id, "how": self.how,
                "unclean": self.how == UNCLEAN, "explanation": self.result.explanation,
                "lost": {"records": len(self.lost), "acknowledged": self.acknowledged,
                         "unconfirmed": self.unconfirmed,
                         "first_offset": self.lost[0].physical_offset if self.lost else None,
                         "last_offset": self.lost[-1].physical_offset if self.lost else None},
                "replicas": [{"name": r.model.name, "status": r.status, "truncated_to": r.truncated_to,
                              "lost_records": len(r.lost or r.repair_lost), "log_end_offset_after": r.max_offset_after,
                              "stall": None if r.stall is None else r.stall.to_dict()}
                             for r in self.result.replicas],
                "consumer_groups": {"groups": s["groups"], "affected": s["groups_affected"],
                                    "records_consumed_lost": s["messages_consumed_lost"]},
                "failed": self.stalled, "loses_or_fails": self.loses_or_fails}


@dataclass
class RocketWhatIf(Ranked[MasterChoice]):
    protocol: str
    broker_name: str | None
    cluster: str | None
    choices: list[MasterChoice]
    recommendation: Recommendation
    notes: list[str] = field(default_factory=list)


    def to_dict(self) -> dict[str, Any]:
        return {"system": "rocketmq", "protocol": self.protocol, "mode": MODES[self.protocol],
                "cluster": self.cluster, "broker_name": self.broker_name,
                "choices": [c.to_dict() for c in self.choices], "recommended": self.recommendation.to_dict(),
                "notes": self.notes}


def _acknowledged(stores: Sequence[StoreModel], lost: list[MessageRef]) -> tuple[int | None, int | None]:
    """(lost below the highest recorded confirm offset, lost at or past it); None, None without any record."""
    confirms = [s.confirm_offset for s in stores if s.confirm_offset is not None]
    if not confirms:
        return None, None
    below = sum(1 for m in lost if m.physical_offset < max(confirms))
    return below, len(lost) - below


def _how(store: StoreModel, default: StoreModel, protocol: str, stores: Sequence[StoreModel]) -> str:
    """Controller mode: unclean when the store cannot have been in the last master's SyncStateSet.

    The controller elects from the SyncStateSet first and from every other live replica only with
    `enableElectUncleanMaster` (`DefaultElectPolicy#elect`, 5.3.3). A replica joins the set only once the
    master has its report after the handshake truncated it to the consistent point and it caught up with the
    confirm offset (`AutoSwitchHAService#maybeExpandInSyncStateSet`): so a member holds a prefix of the last
    master's log (the default choice, the highest epoch). A store that ends below a recorded confirm offset,
    diverges from the last master's bytes or runs past its end (an older epoch's tail) was not a member."""
    if store is default:
        return WAIT
    if protocol == CLASSIC:
        return SWITCH
    confirms = [s.confirm_offset for s in stores if s.confirm_offset is not None]
    behind = bool(confirms) and store.max_offset < max(confirms)
    diverged = compare_logs(store, default)[0] is not None or store.max_offset > default.max_offset
    return UNCLEAN if behind or diverged else CLEAN


def master_choices(stores: Sequence[StoreModel], protocol: str) -> list[MasterChoice]:
    """Every store as master, replayed and its impact read, ranked best first (ties: the default, then order)."""
    default, _ = choose_master(stores, protocol, None)
    out = []
    for s in stores:
        result = replay_stores(stores, None if s is default else s.name, protocol)   # the default says why
        lost = lost_messages(result)
        ident = identity(s)
        out.append(MasterChoice(s.name, ident.broker_id if ident else None, _how(s, default, protocol, stores),
                                result, analyze_rocketmq_impact(result), lost, *_acknowledged(stores, lost)))
    ranked = sorted(out, key=lambda c: (*c.key(), c.how != WAIT, out.index(c)))
    for i, c in enumerate(ranked, 1):
        c.rank = i
    return ranked


def elect_command(ident: StoreIdentity | None, broker_id: int | None) -> str:
    cluster = ident.cluster if ident and ident.cluster else "<cluster>"
    name = ident.broker_name if ident and ident.broker_name else "<brokerName>"
    bid = str(broker_id) if broker_id is not None else "<brokerId>"
    return f"mqadmin electMaster -a <controller address> -c {cluster} -bn {name} -b {bid}"


def commands_for(best: MasterChoice, ident: StoreIdentity | None, protocol: str) -> tuple[str, list[str]]:
    others = ", ".join(r.model.name for r in best.result.replicas if r.model.name != best.master)
    if best.how == WAIT:
        command = f"start {best.master}'s broker first"
        return command, [command, f"it becomes master by itself: {best.result.explanation}",
                         f"then start {others}: they sync from it"]
    if protocol == AUTOSWITCH:
        command = elect_command(ident, best.broker_id)
        unclean = ("outside the SyncStateSet it needs unclean elections: mqadmin updateControllerConfig "
                   "-a <controller address> -k enableElectUncleanMaster -v true")
        return command, [f"start {best.master}'s broker", unclean,
                         f"run: {command}", f"then start {others}: they truncate to its epochs and sync from it"]
    command = f"set brokerId=0 and brokerRole=ASYNC_MASTER in {best.master}'s broker.conf"
    return command, [f"stop every broker of {ident.broker_name if ident and ident.broker_name else 'the group'}",
                     command + ", and start it", f"give {others} a brokerId above 0 and brokerRole=SLAVE, start them",
                     "classic HA never truncates: cut any slave ahead of it first (replog repair writes that cut)"]


def _why(best: MasterChoice, rest: Sequence[MasterChoice]) -> str:
    acked = "unknown" if best.acknowledged is None else f"{best.acknowledged:,}"
    head = f"{best.master} loses {len(best.lost):,} messages ({acked} acknowledged)"
    if not rest:
        return head
    nxt = rest[0]
    if best.key() == nxt.key():
        return f"{head}; it ties with {nxt.master}, and the default master wins a tie" if best.how == WAIT else head
    figures = [(label, a, b) for label, a, b in zip(
        ("acknowledged messages lost", "messages lost", "messages consumed then lost", "group queues affected",
         "stores that stall"), best.key(), nxt.key(), strict=True)]
    return f"{head}; against the next best, {nxt.master}: {compare_words(figures)}"


def what_if_stores(stores: Sequence[StoreModel], protocol: str) -> RocketWhatIf:
    ranked = master_choices(stores, protocol)
    best = ranked[0]
    ident = identity(next(s for s in stores if s.name == best.master))
    idents = [i for i in (identity(s) for s in stores) if i is not None]
    command, steps = commands_for(best, ident, protocol)
    rec = Recommendation(best.master, best.broker_id, best.how, MODES[protocol], command, steps, _why(best, ranked[1:]))
    return RocketWhatIf(protocol, idents[0].broker_name if idents else None, idents[0].cluster if idents else None,
                        ranked, rec, _notes(ranked, stores, protocol))


def _same_epoch_notes(ranked: Sequence[MasterChoice], stores: Sequence[StoreModel]) -> list[str]:
    """`ha.same_epoch_point` for the default master: the replica that would keep diverged bytes."""
    wait = next((c for c in ranked if c.how == WAIT), None)
    if wait is None:
        return []
    master = next(s for s in stores if s.name == wait.master)
    out = []
    for s in stores:
        got = same_epoch_point(master, s) if s is not master else None
        if got is not None and got[1]:
            out.append(f"if the controller still names {master.name} master when it returns (a controller "
                       f"restarted with the group), {master.name} keeps epoch {master.epochs[-1].epoch} and moves "
                       f"its start to {master.max_offset}: {s.name} then truncates at {got[0]}, not "
                       f"{wait_point(wait, s.name)}, and keeps {len(got[1]):,} messages of its own at offsets "
                       f"where {master.name} holds others (AutoSwitchHAService#changeToMaster, 5.3.3); elect "
                       f"{master.name} with the controller's master cleared to avoid it")
    return out


def wait_point(choice: MasterChoice, name: str) -> str:
    r = next(r for r in choice.result.replicas if r.model.name == name)
    return str(r.truncated_to) if r.truncated_to is not None else "its end"


def _notes(ranked: Sequence[MasterChoice], stores: Sequence[StoreModel], protocol: str) -> list[str]:
    """Why `acknowledged` may undercount, and what the default master's return under its old epoch leaves."""
    notes = _same_epoch_notes(ranked, stores) if protocol == AUTOSWITCH else []
    past = [c for c in ranked if c.unconfirmed]
    if not past:
        return notes
    figures = ", ".join(f"{c.master}: {c.unconfirmed:,}" for c in past)
    return [*notes, (f"lost messages past the highest confirm offset the stores recorded ({figures}) are not "
                     "counted as acknowledged, yet may have been: a controller-mode master alone in its SyncStateSet "
                     "acknowledges every append without recording it (CommitLog#getConfirmOffsetDirectly, 5.3.3)")]


def what_if_paths(specs: Sequence[str], protocol: str | None = None, progress: Any = None,
                  broker_version: str | None = None) -> RocketWhatIf:
    """Load the stores as `ha.replay_paths` does (its errors), then every master choice."""
    from replog.formats.errors import ReplogError
    from replog.recovery.rocketmq.ha import load_stores

    protocol = protocol or CLASSIC
    if protocol not in MODES:
        raise ReplogError(f"unknown protocol {protocol!r} for RocketMQ: use classic or autoswitch")
    stores = load_stores(specs, progress, broker_version)
    if any(s.dledger is not None for s in stores):
        raise ReplogError("--what-if compares master choices of classic and auto-switch HA; a DLedger group's "
                          "leader is elected by Raft: run replay without --what-if (or with --leader NAME)")
    return what_if_stores(stores, protocol)
