"""The controller's own record of a partition's elections: the KRaft metadata log or ZooKeeper's partition state.

KRaft. The controller writes every change of a partition's registration to
`__cluster_metadata-0`; `PartitionRegistration.merge`
(`metadata/src/main/java/org/apache/kafka/metadata/PartitionRegistration.java`)
applies them: a `PartitionRecord` is the whole registration (a new partition, or
a snapshot's image); in a `PartitionChangeRecord` a null ISR/ELR/replicas field
means unchanged, leader -2 (`NO_LEADER_CHANGE`) keeps leader and leader epoch,
and any other leader value, -1 (`NO_LEADER`) included, sets it and bumps the
leader epoch by one. Unclean elections are read from the record itself,
following `metadata/src/main/java/org/apache/kafka/controller/PartitionChangeBuilder.java`:
`electLeader` keeps a current leader still valid, else takes the first assignment
replica in the ISR (or in the ELR when the ISR is empty) — clean; the last known
leader (`lastKnownElr`) or, under an UNCLEAN election, any live replica is unclean,
and an unclean result forces the ISR to the new leader alone and sets
`leaderRecoveryState` RECOVERING (1). So a new leader outside the previous ISR
and ELR, or a change to RECOVERING, is an unclean election.

A `ClearElrRecord` (api key 28, 4.x: written when ELR is turned off or the
min ISR changes) empties the ELR and last known ELR of every partition of the
topic it names, or of every topic when the name is empty, as one change without
an election (`ReplicationControlManager.replay(ClearElrRecord)` -> `removeTopicElrs`
merges a `PartitionChangeRecord` with both lists empty; read in the 4.4.0 jar).

Metadata transactions (`BeginTransactionRecord` .. `End`/`AbortTransactionRecord`)
take effect at their end, or never when aborted, as the metadata loader applies
them. One walk (`walk_metadata_log`) feeds the records to every `MetadataApplier`
that asks for them: the partition's history here, the cluster profile
(`profile.py`) beside it. The newest complete snapshot (`<end offset>-<epoch>.checkpoint`) is read
first and the log from its end offset on, as a broker loads its metadata.

ZooKeeper. The partition state znode (`/brokers/topics/T/partitions/P/state`,
`core/src/main/scala/kafka/zk/ZkData.scala` `TopicPartitionStateZNode`, branch 3.9) holds
one state: `leader`, `leader_epoch`, `isr`, `controller_epoch` and, when not
recovered, `leader_recovery_state`.
"""
from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from replog.formats.errors import FormatError, ReplogError, UnreadableInput
from replog.formats.fileio import mapped, read_small
from replog.formats.kafka import names
from replog.formats.kafka.internal.metadata import decode_metadata_record
from replog.formats.kafka.partition_files import list_partition_files
from replog.formats.kafka.segment import SegmentWalk, batch_records

METADATA_DIR = "__cluster_metadata-0"
NO_LEADER, NO_LEADER_CHANGE, RECOVERING = -1, -2, 1
METADATA, PARTITION_STATE = "metadata", "partition_state"
# api keys worth decoding (metadata/src/main/resources/common/metadata/*.json); every other record is skipped
_TOPIC, _PARTITION, _CHANGE, _REMOVE_TOPIC, _BEGIN, _END, _ABORT, _CLEAR_ELR = 2, 3, 5, 9, 23, 24, 25, 28
_TRANSACTION = frozenset({_BEGIN, _END, _ABORT})


@dataclass(frozen=True)
class Election:
    """The partition's registration after one record: who leads in which epoch, with which ISR and ELR.

    `elected` is True when the record set the leader (a new leader, an epoch bump, or no leader);
    `unclean` when that leader came from outside the previous ISR and ELR or was marked RECOVERING."""

    offset: int | None          # the record's offset in the metadata log (None: a snapshot or a state file)
    record: str                 # PartitionRecord | PartitionChangeRecord | snapshot | partition_state
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    elr: tuple[int, ...]
    replicas: tuple[int, ...]   # the assignment, in preferred order (empty for ZooKeeper's state file)
    leader_recovery_state: int
    elected: bool
    unclean: bool
    last_known_elr: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"offset": self.offset, "record": self.record, "leader": self.leader,
                "leader_epoch": self.leader_epoch, "isr": list(self.isr), "elr": list(self.elr),
                "unclean": self.unclean}


@dataclass
class ControllerRecord:
    """A partition's history as the controller recorded it, oldest first."""

    source: str                 # METADATA | PARTITION_STATE
    path: str
    topic: str
    partition: int
    topic_id: str | None = None
    history: list[Election] = field(default_factory=list)

    @property
    def current(self) -> Election:
        return self.history[-1]

    @property
    def leader_election(self) -> Election:
        """The record that set the current leader (the last one that elected)."""
        return next((e for e in reversed(self.history) if e.elected), self.current)


def _ints(value: Any) -> tuple[int, ...]:
    return tuple(int(v) for v in value) if value else ()


def from_partition_record(data: dict[str, Any], offset: int | None, record: str) -> Election:
    """A whole registration: unclean only when it says the leader is still RECOVERING."""
    recovery = int(data.get("leaderRecoveryState", 0))
    return Election(offset, record, int(data["leader"]), int(data["leaderEpoch"]), _ints(data["isr"]),
                    _ints(data.get("eligibleLeaderReplicas")), _ints(data["replicas"]), recovery,
                    True, recovery == RECOVERING, _ints(data.get("lastKnownElr")))


def merge_change(prev: Election, data: dict[str, Any], offset: int | None) -> Election:
    """`PartitionRegistration.merge` of one `PartitionChangeRecord`, with the election it made judged."""
    leader_field = int(data.get("leader", NO_LEADER_CHANGE))
    elected = leader_field != NO_LEADER_CHANGE
    leader = leader_field if elected else prev.leader
    epoch = prev.leader_epoch + 1 if elected else prev.leader_epoch
    recovery = int(data.get("leaderRecoveryState", -1))
    recovery = prev.leader_recovery_state if recovery == -1 else recovery
    new_leader = elected and leader >= 0 and leader != prev.leader
    unclean = new_leader and (leader not in prev.isr and leader not in prev.elr
                              or recovery == RECOVERING and prev.leader_recovery_state != RECOVERING)

    def pick(key: str, old: tuple[int, ...]) -> tuple[int, ...]:
        return old if data.get(key) is None else _ints(data[key])

    return Election(offset, "PartitionChangeRecord", leader, epoch, pick("isr", prev.isr),
                    pick("eligibleLeaderReplicas", prev.elr), pick("replicas", prev.replicas), recovery,
                    elected, unclean, pick("lastKnownElr", prev.last_known_elr))


class MetadataApplier(ABC):
    """Takes the metadata records of the api keys in `wanted`, metadata transactions applied at their end
    (never when aborted), each record once, in log order (a snapshot's records first, offset None)."""

    wanted: frozenset[int] = frozenset()

    def __init__(self) -> None:
        self.pending: list[tuple[int, dict[str, Any], int | None, str]] | None = None

    def feed(self, api_key: int, data: dict[str, Any], offset: int | None, record: str) -> None:
        if api_key == _BEGIN:
            self.pending = []
        elif api_key in (_END, _ABORT):
            todo, self.pending = self.pending or [], None
            if api_key == _END:
                for item in todo:
                    self.apply(*item)
        elif self.pending is not None:
            self.pending.append((api_key, data, offset, record))
        else:
            self.apply(api_key, data, offset, record)

    @abstractmethod
    def apply(self, api_key: int, data: dict[str, Any], offset: int | None, record: str) -> None:
        """One record of a wanted api key, taking effect now."""


class _History(MetadataApplier):
    """Applies metadata records to the partition's registrations, one per topic id carrying its name."""

    wanted = frozenset({_TOPIC, _PARTITION, _CHANGE, _REMOVE_TOPIC, _CLEAR_ELR})

    def __init__(self, topic: str, partition: int) -> None:
        super().__init__()
        self.topic, self.partition = topic, partition
        self.ids: list[str] = []                  # topic ids named `topic`, in order
        self.removed: set[str] = set()
        self.histories: dict[str, list[Election]] = {}

    def apply(self, api_key: int, data: dict[str, Any], offset: int | None, record: str) -> None:
        if api_key == _TOPIC and data["name"] == self.topic:
            self.ids.append(data["topicId"])
            self.removed.discard(data["topicId"])
        elif api_key == _REMOVE_TOPIC:
            self.removed.add(data["topicId"])
        elif api_key == _CLEAR_ELR:
            self.clear_elr(data, offset, record)
        elif data.get("partitionId") != self.partition or data.get("topicId") not in self.ids:
            return
        elif api_key == _PARTITION:
            self.histories.setdefault(data["topicId"], []).append(from_partition_record(data, offset, record))
        elif api_key == _CHANGE:
            past = self.histories.get(data["topicId"])
            if past:  # a change without its registration (log start past it, no snapshot): nothing to merge into
                past.append(merge_change(past[-1], data, offset))

    def clear_elr(self, data: dict[str, Any], offset: int | None, record: str) -> None:
        """`removeTopicElrs`: a registration with an ELR or last known ELR merges both empty, no election."""
        if data.get("topicName") not in ("", self.topic):
            return
        for topic_id in self.ids:
            past = self.histories.get(topic_id)
            if past and (past[-1].elr or past[-1].last_known_elr) and topic_id not in self.removed:
                cleared = merge_change(past[-1], {"eligibleLeaderReplicas": [], "lastKnownElr": []}, offset)
                past.append(replace(cleared, record=record))


def metadata_log_dir(path: str | os.PathLike[str]) -> Path:
    """`path` itself when it is a `__cluster_metadata-0` dir, or the one inside a log dir."""
    p = Path(path)
    if p.name != METADATA_DIR and (p / METADATA_DIR).is_dir():
        p = p / METADATA_DIR
    if not p.is_dir():
        raise UnreadableInput(f"{path}: not a KRaft metadata log ({METADATA_DIR} directory)")
    return p


def _snapshot(files: Any) -> tuple[Path, int] | None:
    """The newest complete KRaft snapshot and its end offset."""
    best: tuple[Path, int] | None = None
    for p in files.kraft_snapshots:
        name = names.parse_kraft_snapshot_name(p.name)
        if name is not None and name.state == "complete" and (best is None or name.end_offset > best[1]):
            best = (p, name.end_offset)
    return best


def _feed_file(appliers: Sequence[MetadataApplier], path: Path, from_offset: int, snapshot: bool) -> bool:
    """Feed the records of one file; False once an invalid batch ends the log (the broker truncates there)."""
    wanted = frozenset().union(*(a.wanted for a in appliers)) | _TRANSACTION
    with mapped(path) as buf:
        walk = SegmentWalk(buf, str(path))
        for info in walk.batches():
            if walk.broken:
                return False
            if info.is_control or info.last_offset < from_offset:
                continue
            try:
                records = batch_records(buf, info)
            except FormatError:
                return False
            for rec in records:
                value = rec.value
                if value is None or len(value) < 3 or value[0] != 1 or value[1] not in wanted:
                    continue
                if not snapshot and rec.offset < from_offset:
                    continue
                decoded = decode_metadata_record(value)
                if "data" in decoded:
                    for applier in appliers:
                        if value[1] in applier.wanted or value[1] in _TRANSACTION:
                            applier.feed(value[1], decoded["data"], None if snapshot else rec.offset,
                                         "snapshot" if snapshot else decoded["type"])
        return not walk.broken and walk.valid_bytes == len(buf)


def walk_metadata_log(path: str | os.PathLike[str], appliers: Sequence[MetadataApplier]) -> Path:
    """Feed the metadata log's records to `appliers`: the newest complete snapshot, then the log from its end
    offset on, up to the first invalid batch (where the broker truncates). Returns the metadata log dir."""
    d = metadata_log_dir(path)
    files = list_partition_files(d)
    if not files.logs and not files.kraft_snapshots:
        raise UnreadableInput(f"{d}: no metadata log segments or snapshots")
    start = 0
    snap = _snapshot(files)
    try:
        if snap is not None:
            _feed_file(appliers, snap[0], 0, snapshot=True)
            start = snap[1]
        for _, seg in files.logs.items():
            if not _feed_file(appliers, seg, start, snapshot=False):
                break
    except FormatError as e:
        raise UnreadableInput(f"{d}: a metadata record cannot be decoded: {e}") from None
    return d


def read_metadata_log(path: str | os.PathLike[str], topic: str, partition: int,
                      topic_id: str | None = None, also: Sequence[MetadataApplier] = ()) -> ControllerRecord:
    """The partition's history from a KRaft metadata log dir (or a log dir holding one).

    `topic_id` (from the replicas' partition.metadata) picks the topic among recreated ones of the
    same name; without it, the newest topic of that name not removed. A usage error when the log
    has no such partition. `also`: more appliers fed by the same walk (the cluster profile)."""
    history = _History(topic, partition)
    d = walk_metadata_log(path, [history, *also])
    chosen = _topic_id(history, topic_id, d, topic)
    past = history.histories.get(chosen, [])
    if not past:
        raise ReplogError(f"{d} records topic {topic} ({chosen}) but no registration of partition {partition}")
    return ControllerRecord(METADATA, str(d), topic, partition, chosen, past)


def _topic_id(history: _History, topic_id: str | None, d: Path, topic: str) -> str:
    if topic_id is not None:
        if topic_id not in history.ids:
            raise ReplogError(f"{d} has no topic {topic} with id {topic_id} (the replicas' partition.metadata); "
                              f"ids recorded for {topic}: {', '.join(history.ids) or 'none'}")
        return topic_id
    live = [i for i in history.ids if i not in history.removed]
    if not live and not history.ids:
        raise ReplogError(f"{d} records no topic named {topic}")
    return (live or history.ids)[-1]


def read_partition_state(path: str | os.PathLike[str], topic: str, partition: int) -> ControllerRecord:
    """ZooKeeper's partition state JSON as a one-entry history; a usage error when it is not one."""
    try:
        doc = json.loads(read_small(path, limit=1 << 20))
    except (ValueError, UnicodeDecodeError) as e:
        raise UnreadableInput(f"{path}: not partition state JSON ({e})") from None
    try:
        leader, epoch = doc["leader"], doc["leader_epoch"]
        isr = doc["isr"]
        ok = (isinstance(leader, int) and isinstance(epoch, int) and isinstance(isr, list)
              and all(isinstance(i, int) for i in isr))
    except (KeyError, TypeError):
        ok = False
    if not ok:
        raise UnreadableInput(f"{path}: partition state needs integer leader and leader_epoch and an isr list, "
                              'e.g. {"controller_epoch":1,"leader":1,"leader_epoch":3,"isr":[1,2]}')
    recovery = doc.get("leader_recovery_state", 0)
    recovery = recovery if isinstance(recovery, int) else 0
    state = Election(None, PARTITION_STATE, leader, epoch, tuple(isr), (), (), recovery, True, recovery == RECOVERING)
    return ControllerRecord(PARTITION_STATE, str(path), topic, partition, None, [state])


# -- the leader the controller elected, among the replicas given ------------------------------------


def replica_broker_id(name: str, broker_id: int | None) -> int | None:
    """The broker a replica lives on: its log dir's meta.properties node.id/broker.id, else a NAME the
    user gave as `broker-<id>` or `<id>` (`naming.broker_name` writes the first form)."""
    if broker_id is not None:
        return broker_id
    digits = name.removeprefix("broker-")
    return int(digits) if digits.isdigit() and len(digits) < 10 else None


@dataclass(frozen=True)
class RecordedLeader:
    """The controller's leader for the replay: which broker, in which epoch, and why."""

    broker: int
    leader_epoch: int
    unclean: bool
    explanation: str


@dataclass(frozen=True)
class Returning:
    """What the controller learns as the brokers of the replay come back, for a partition left without a leader.

    A broker that restarts registers a new incarnation. Since 4.0 the controller compares the broker epoch
    the broker read from its `.kafka_cleanshutdown` file (`previousBrokerEpoch`, -1 without the file) with
    its last registration's: a mismatch is an unclean shutdown, and with ELR on the broker leaves the ISR
    and the ELR of every partition (4.4.0 jar: `ClusterControlManager.registerBroker` computes the clean flag
    for BrokerRegistration v3+, `ReplicationControlManager.handleBrokerShutdown` -> `generateLeaderAndIsrUpdates(
    "handleBrokerUncleanShutdown", ...)` -> `PartitionChangeBuilder.setUncleanShutdownReplicas`, which also
    keeps it out of the new ELR). Without ELR it only leaves the ISR, and an ISR is never emptied then
    (`PartitionChangeBuilder.build`), so nothing changes for the election."""

    unclean_shutdown: frozenset[int] = frozenset()   # brokers restarting without a clean-shutdown marker
    elr_enabled: bool = False                        # the profile's ELR (eligible.leader.replicas.version >= 1)
    unclean_election: bool = False                   # unclean.leader.election.enable for the topic
    brokers: tuple[int, ...] = ()                    # brokers whose replicas are given: those that come back


def recorded_leader(record: ControllerRecord, returning: Returning = Returning()) -> RecordedLeader:
    """The leader in the record, or, when the record leaves the partition without one, the one the
    controller elects next once brokers return (a usage error when that depends on what the record
    does not hold: which brokers are alive, ZooKeeper's assignment order)."""
    cur = record.current
    if cur.leader >= 0:
        made = record.leader_election
        how = "an UNCLEAN election" if made.unclean else "a clean election"
        return RecordedLeader(cur.leader, cur.leader_epoch, made.unclean,
                              f"the controller's record ({record.path}) has broker {cur.leader} leading in epoch "
                              f"{cur.leader_epoch} (ISR {list(cur.isr)}), set by {how}{_at(made)}")
    if record.source == PARTITION_STATE:
        if len(cur.isr) != 1:
            raise ReplogError(f"{record.path}: no leader (-1); ZooKeeper's controller elects the first live ISR "
                              f"member in the assignment order, which this file does not hold (ISR "
                              f"{list(cur.isr)}): choose with --leader")
        return RecordedLeader(cur.isr[0], cur.leader_epoch + 1, False,
                              f"the partition state has no leader (epoch {cur.leader_epoch}); "
                              f"PartitionLeaderElectionAlgorithms.offlinePartitionLeaderElection elects the only "
                              f"ISR member, broker {cur.isr[0]}, in epoch {cur.leader_epoch + 1}")
    return _elect_next(record, returning)


def _elect_next(record: ControllerRecord, returning: Returning) -> RecordedLeader:
    """`PartitionChangeBuilder.electAnyLeader` once the brokers return: the first assignment replica in the
    ISR (in the ELR when the ISR is empty); else, with ELR on, the last known leader when `lastKnownElr`
    holds exactly one broker (`canElectLastKnownLeader`, an unclean result); else, with unclean elections
    on, the first assignment replica that returns (unclean). Brokers that restart after an unclean shutdown
    are out of the ISR and ELR first when ELR is on (`Returning`)."""
    cur, where = record.current, f"{record.path}{_at(record.current)}"
    gone = returning.unclean_shutdown if returning.elr_enabled else frozenset()
    isr = [r for r in cur.isr if r not in gone]
    elr = [r for r in cur.elr if r not in gone]
    removed = sorted(gone & (set(cur.isr) | set(cur.elr)))
    note = (f"; broker(s) {', '.join(map(str, removed))} restart after an unclean shutdown (no "
            ".kafka_cleanshutdown in the copy) and leave the ISR and ELR as they register "
            "(ReplicationControlManager.handleBrokerShutdown, ELR on)") if removed else ""
    head = (f"the controller's record ({where}) leaves the partition without a leader in epoch {cur.leader_epoch} "
            f"(ISR {list(cur.isr)}, ELR {list(cur.elr)}){note}")
    epoch = cur.leader_epoch + 1
    eligible = [r for r in cur.replicas if r in isr or (not isr and r in elr)]
    if eligible:
        return RecordedLeader(eligible[0], epoch, False,
                              f"{head}; PartitionChangeBuilder.electAnyLeader elects the first assignment replica "
                              f"in the {'ISR' if isr else 'ELR'} once it returns: broker {eligible[0]}, epoch {epoch}")
    if returning.elr_enabled and len(cur.last_known_elr) == 1:
        last = cur.last_known_elr[0]
        return RecordedLeader(last, epoch, True,
                              f"{head}; ISR and ELR empty, so PartitionChangeBuilder.canElectLastKnownLeader "
                              f"elects the last known leader (lastKnownElr [{last}]) once it returns: broker {last}, "
                              f"epoch {epoch}, an UNCLEAN election (ISR forced to it, leader RECOVERING)")
    back = [r for r in cur.replicas if r in returning.brokers]
    if returning.unclean_election and back:
        return RecordedLeader(back[0], epoch, True,
                              f"{head}; with unclean.leader.election.enable the controller elects the first "
                              f"assignment replica alive (taken: the first given, broker {back[0]}), epoch {epoch}: "
                              "an UNCLEAN election")
    raise ReplogError(f"{head}: no ISR or ELR member is left and no single last known leader "
                      f"(lastKnownElr {list(cur.last_known_elr)}"
                      f"{'' if returning.elr_enabled else ', ELR off'}): the controller elects again only by an "
                      "unclean election (unclean.leader.election.enable): choose with --leader")


def _at(e: Election) -> str:
    if e.record == PARTITION_STATE:
        return ""
    return f" at offset {e.offset}" if e.offset is not None else " in its snapshot"
