"""What a replay assumes of the brokers: which replicas restart from their copies, which keep running.

A Kafka follower truncates only when a fetcher starts for its partition. The
broker adds the partition to a fetcher when it becomes a follower with a new
leader epoch: `Partition.makeFollower` returns `isNewLeaderEpoch` ("We must
restart the fetchers when the leader epoch changed regardless of whether the
leader changed as well", apache/kafka core/src/main/scala/kafka/cluster/Partition.scala),
and `ReplicaManager.makeFollowers` (ZooKeeper) / `applyLocalFollowersDelta`
(KRaft) add fetchers only for those partitions
(core/src/main/scala/kafka/server/ReplicaManager.scala). A broker that starts
has no leader epoch yet, so every partition it follows gets a fetcher. A new
fetcher begins in the Truncating state (`truncateToHighWatermark` without
epochs or before IBP 0.11.0-IV2, OffsetsForLeaderEpoch after), while one whose
leader epoch did not change keeps its state and fetches on from its fetch
offset (core/src/main/scala/kafka/server/AbstractFetcherThread.scala
`partitionFetchState`, `fetchTruncatingPartitions`, `truncateToHighWatermark`).

So the replay states its premise. By default every replica restarts from its
copy on disk (source `assumed`). `--running NAME` names replicas whose broker
kept running (source `option`); a running follower keeps its fetcher when its
leader epoch is unchanged: from disk, its copy's latest leader epoch is the
leader's; with the controller's record (source `controller`), the record's
leader epoch is one the leader's copy already holds, so no election came after
the copies. Any other running follower met a new leader epoch and truncates
as a restarted one does.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from replog.formats.errors import ReplogError
from replog.recovery.kafka.controller import ControllerRecord
from replog.recovery.kafka.replica import Replica

ASSUMED, OPTION, CONTROLLER = "assumed", "option", "controller"


@dataclass(frozen=True)
class FollowerPremise:
    """One follower: whether its broker keeps running, whether a fetcher starts for it, and why."""

    name: str
    running: bool
    fetcher_restarts: bool
    why: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "running": self.running, "fetcher_restarts": self.fetcher_restarts,
                "why": self.why}


@dataclass(frozen=True)
class Premise:
    """The replay's premise; `continuing` are the followers whose fetcher is not restarted."""

    source: str
    leader: str
    restarted: tuple[str, ...]
    running: tuple[str, ...]
    followers: tuple[FollowerPremise, ...]
    from_checkpoints: tuple[tuple[str, tuple[str, ...]], ...] = ()   # (replica, figures that may lag), by name
    implied: tuple[str, ...] = ()    # running without being named: the leader of a follower whose leader is unchanged

    @property
    def continuing(self) -> frozenset[str]:
        return frozenset(f.name for f in self.followers if not f.fetcher_restarts)

    @property
    def new_election(self) -> bool:
        """Whether the replay's leader starts a new leader epoch: a restarted leader broker loses its
        leadership and wins it back only in a new epoch; a running one keeps its epoch."""
        return self.leader not in self.running

    def fetcher_restarts(self, name: str) -> bool | None:
        """For a follower, whether a fetcher starts for it; None for the leader."""
        return next((f.fetcher_restarts for f in self.followers if f.name == name), None)

    @property
    def sentence(self) -> str:
        """The premise in one line, for the table, the page and the JSON."""
        if self.source == ASSUMED:
            return ("premise: every replica restarts from its copy on disk (name a replica whose broker kept "
                    "running with --running)")
        parts = [_restart_words(self.restarted)] if self.restarted else []
        for name in self.running:
            f = next((x for x in self.followers if x.name == name), None)
            if f is None:
                parts.append(f"{name} keeps running and keeps leading" + (
                    " (not named by --running, but a follower's leader is unchanged, so its broker did not "
                    "restart either)" if name in self.implied else ""))
            elif f.fetcher_restarts:
                parts.append(f"{name} keeps running, but a new leader epoch restarts its fetcher, which truncates")
            else:
                parts.append(f"{name} keeps running: its leader is unchanged, its fetcher keeps running and "
                             "fetches from its log end, with no truncation step")
        return "premise: " + "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "restarted": list(self.restarted), "running": list(self.running),
                "implied": list(self.implied), "new_leader_epoch": self.new_election, "sentence": self.sentence,
                "followers": [f.to_dict() for f in self.followers],
                "from_checkpoints": {name: list(figures) for name, figures in self.from_checkpoints}}


def _restart_words(names: Sequence[str]) -> str:
    if len(names) == 1:
        return f"{names[0]} restarts from its copy on disk"
    return f"{', '.join(names)} restart from their copies on disk"


def check_running(names: Sequence[str], running: Sequence[str]) -> tuple[str, ...]:
    """The `--running` names, each once, in the replicas' order; a name no replica has is a usage error
    (checked before any replica is loaded, when the names are known)."""
    for name in running:
        if name not in names:
            raise ReplogError(f"--running {name!r} is not one of {', '.join(names)}")
    return tuple(n for n in names if n in set(running))


def judge(replicas: Sequence[Replica], leader: str, running: Sequence[str],
          controller: ControllerRecord | None = None, leader_epoch: int | None = None) -> Premise:
    """The premise for replaying `replicas` behind `leader` (`leader_epoch`: the epoch it serves in by the
    controller's record, when given)."""
    kept = check_running([r.name for r in replicas], running)
    source = ASSUMED if not kept else CONTROLLER if controller is not None else OPTION
    lead = next(r for r in replicas if r.name == leader)
    followers = tuple(_follower(r, lead, r.name in kept, controller, leader_epoch)
                      for r in replicas if r.name != leader)
    # a leader restart costs it the leadership (the controller elects anew, in a new epoch): a follower
    # whose leader epoch is unchanged says the leader's broker kept running too
    implied = (leader,) if leader not in kept and any(not f.fetcher_restarts for f in followers) else ()
    up = tuple(r.name for r in replicas if r.name in kept or r.name in implied)
    lag = tuple((r.name, tuple(r.from_checkpoints)) for r in replicas)
    return Premise(source, leader, tuple(r.name for r in replicas if r.name not in up), up, followers, lag,
                   implied)


def _follower(f: Replica, lead: Replica, running: bool, controller: ControllerRecord | None,
              leader_epoch: int | None) -> FollowerPremise:
    if not running:
        return FollowerPremise(f.name, False, True, "its broker restarts: a fetcher starts for the partition and "
                                                    "truncates first")
    if controller is not None:
        same, why = _unchanged_by_record(lead, leader_epoch)
    else:
        same, why = _unchanged_by_epochs(f, lead)
    return FollowerPremise(f.name, True, not same, why)


def _unchanged_by_epochs(f: Replica, lead: Replica) -> tuple[bool, str]:
    """From disk alone: the leader is the one the follower followed when its latest leader epoch is the
    leader's (a follower caches an epoch only from batches it fetched in it, so a follower that fetched
    nothing in the current epoch yet reads as one whose leader changed: it truncates, as before)."""
    mine, theirs = f.epochs.latest_epoch, lead.epochs.latest_epoch
    if mine == theirs:
        what = ("neither copy holds a leader epoch" if mine is None
                else f"its latest leader epoch {mine} is the leader's ({lead.name})")
        return True, f"{what}: its leader is unchanged, so its fetcher keeps running"
    return False, (f"its latest leader epoch {_epoch(mine)} is not the leader's epoch {_epoch(theirs)} "
                   f"({lead.name}): a new leader epoch reached it, so its fetcher restarts and truncates")


def _unchanged_by_record(lead: Replica, leader_epoch: int | None) -> tuple[bool, str]:
    """By the controller's record: no election after the copies when the leader's copy already holds the
    epoch the record has it lead in (a leader caches its epoch as it becomes leader)."""
    held = lead.epochs.latest_epoch
    if leader_epoch is not None and held == leader_epoch:
        return True, (f"the controller's record has {lead.name} leading in epoch {leader_epoch}, which its copy "
                      "already holds: no election since the copies, so its fetcher keeps running")
    return False, (f"the controller's record has {lead.name} leading in epoch {_epoch(leader_epoch)}, but its "
                   f"copy holds epoch {_epoch(held)}: an election after the copies restarts its fetcher, which "
                   "truncates")


def _epoch(e: int | None) -> str:
    return "none" if e is None else str(e)
