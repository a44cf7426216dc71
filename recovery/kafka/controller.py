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

Metadata transactions (`BeginTransactionRecord` .. `End`/`AbortTransactionRecord`)
take effect at their end, or never when aborted, as the metadata loader applies
them. The newest complete snapshot (`<end offset>-<epoch>.checkpoint`) is read
first and the log from its end offset on, as a broker loads its metadata.

ZooKeeper. The partition state znode (`/brokers/topics/T/partitions/P/state`,
`core/src/main/scala/kafka/zk/ZkData.scala` `TopicPartitionStateZNode`, branch 3.9) holds
one state: `leader`, `leader_epoch`, `isr`, `controller_epoch` and, when not
recovered, `leader_recovery_state`.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
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
_TOPIC, _PARTITION, _CHANGE, _REMOVE_TOPIC, _BEGIN, _END, _ABORT = 2, 3, 5, 9, 23, 24, 25
_CONFIG = 4
_WANTED = frozenset({_TOPIC, _PARTITION, _CHANGE, _REMOVE_TOPIC, _BEGIN, _END, _ABORT, _CONFIG})
# ConfigRecord resource types (clients/.../common/config/ConfigResource.java `Type`): a topic's own
# settings, and the brokers' (resource name "" = the cluster-wide default, `log.`-prefixed names).
_TOPIC_RESOURCE, _BROKER_RESOURCE = 2, 4
CLEANUP_POLICY = "cleanup.policy"
_BROKER_SYNONYMS = {CLEANUP_POLICY: "log.cleanup.policy"}   # ServerTopicConfigSynonyms


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
    # the topic's dynamic settings the metadata log records (ConfigRecord), the cluster-wide default
    # standing in where the topic sets none; ZooKeeper's state file carries none
    topic_configs: dict[str, str] = field(default_factory=dict)

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


class _History:
    """Applies metadata records to the partition's registrations, one per topic id carrying its name."""

    def __init__(self, topic: str, partition: int) -> None:
        self.topic, self.partition = topic, partition
        self.ids: list[str] = []                  # topic ids named `topic`, in order
        self.removed: set[str] = set()
        self.histories: dict[str, list[Election]] = {}
        self.pending: list[tuple[int, dict[str, Any], int | None, str]] | None = None
        self.topic_configs: dict[str, str] = {}
        self.default_configs: dict[str, str] = {}

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

    def configs(self) -> dict[str, str]:
        """The topic's settings, each topic setting from the cluster-wide broker default where unset."""
        defaults = {topic_name: self.default_configs[broker_name] for topic_name, broker_name
                    in _BROKER_SYNONYMS.items() if broker_name in self.default_configs}
        return defaults | self.topic_configs

    def apply_config(self, data: dict[str, Any]) -> None:
        """A ConfigRecord: a set value, or null for a deleted one (the default applies again)."""
        kind, name = data.get("resourceType"), data.get("resourceName")
        target = (self.topic_configs if kind == _TOPIC_RESOURCE and name == self.topic
                  else self.default_configs if kind == _BROKER_RESOURCE and name == "" else None)
        if target is None:
            return
        if data.get("value") is None:
            target.pop(data["name"], None)
        else:
            target[data["name"]] = data["value"]

    def apply(self, api_key: int, data: dict[str, Any], offset: int | None, record: str) -> None:
        if api_key == _CONFIG:
            self.apply_config(data)
        elif api_key == _TOPIC and data["name"] == self.topic:
            self.ids.append(data["topicId"])
            self.removed.discard(data["topicId"])
        elif api_key == _REMOVE_TOPIC:
            self.removed.add(data["topicId"])
            if data["topicId"] in self.ids:   # its configs go with it (the controller drops them on replay)
                self.topic_configs.clear()
        elif data.get("partitionId") != self.partition or data.get("topicId") not in self.ids:
            return
        elif api_key == _PARTITION:
            self.histories.setdefault(data["topicId"], []).append(from_partition_record(data, offset, record))
        elif api_key == _CHANGE:
            past = self.histories.get(data["topicId"])
            if past:  # a change without its registration (log start past it, no snapshot): nothing to merge into
                past.append(merge_change(past[-1], data, offset))


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


def _feed_file(history: _History, path: Path, from_offset: int, snapshot: bool) -> bool:
    """Feed the records of one file; False once an invalid batch ends the log (the broker truncates there)."""
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
                if value is None or len(value) < 3 or value[0] != 1 or value[1] not in _WANTED:
                    continue
                if not snapshot and rec.offset < from_offset:
                    continue
                decoded = decode_metadata_record(value)
                if "data" in decoded:
                    history.feed(value[1], decoded["data"], None if snapshot else rec.offset,
                                 "snapshot" if snapshot else decoded["type"])
        return not walk.broken and walk.valid_bytes == len(buf)


def read_metadata_log(path: str | os.PathLike[str], topic: str, partition: int,
                      topic_id: str | None = None) -> ControllerRecord:
    """The partition's history from a KRaft metadata log dir (or a log dir holding one).

    `topic_id` (from the replicas' partition.metadata) picks the topic among recreated ones of the
    same name; without it, the newest topic of that name not removed. A usage error when the log
    has no such partition."""
    d = metadata_log_dir(path)
    files = list_partition_files(d)
    if not files.logs and not files.kraft_snapshots:
        raise UnreadableInput(f"{d}: no metadata log segments or snapshots")
    history = _History(topic, partition)
    start = 0
    snap = _snapshot(files)
    try:
        if snap is not None:
            _feed_file(history, snap[0], 0, snapshot=True)
            start = snap[1]
        for _, seg in files.logs.items():
            if not _feed_file(history, seg, start, snapshot=False):
                break
    except FormatError as e:
        raise UnreadableInput(f"{d}: a metadata record cannot be decoded: {e}") from None
    chosen = _topic_id(history, topic_id, d, topic)
    past = history.histories.get(chosen, [])
    if not past:
        raise ReplogError(f"{d} records topic {topic} ({chosen}) but no registration of partition {partition}")
    return ControllerRecord(METADATA, str(d), topic, partition, chosen, past, history.configs())


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


def recorded_leader(record: ControllerRecord) -> RecordedLeader:
    """The leader in the record, or, when the record leaves the partition without one, the one the
    controller elects next once brokers return (a usage error when that depends on what the record
    does not hold: which brokers are alive, the unclean-election setting, ZooKeeper's assignment order)."""
    cur, where = record.current, f"{record.path}{_at(record.current)}"
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
    eligible = [r for r in cur.replicas if r in cur.isr or (not cur.isr and r in cur.elr)]
    if not eligible:
        raise ReplogError(f"the controller's record ({where}) leaves {record.topic}-{record.partition} without a "
                          f"leader and with no ISR or ELR member: it elects again only by an unclean election "
                          "(unclean.leader.election.enable) or a last known leader: choose with --leader")
    return RecordedLeader(eligible[0], cur.leader_epoch + 1, False,
                          f"the controller's record ({where}) leaves the partition without a leader in epoch "
                          f"{cur.leader_epoch}; PartitionChangeBuilder.electAnyLeader elects the first assignment "
                          f"replica in the {'ISR' if cur.isr else 'ELR'} once it returns: broker {eligible[0]}, "
                          f"epoch {cur.leader_epoch + 1}")


def _at(e: Election) -> str:
    if e.record == PARTITION_STATE:
        return ""
    return f" at offset {e.offset}" if e.offset is not None else " in its snapshot"
