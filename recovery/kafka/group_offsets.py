"""The offsets consumer groups last committed, as their group coordinator would load them from `__consumer_offsets`.

The coordinator replays its partition of `__consumer_offsets` in offset order
(group-coordinator `OffsetMetadataManager.replay` and `replayEndTransactionMarker`):
- an offset commit outside a transaction replaces the group's entry for that topic-partition;
- a tombstone (null value) deletes it, and the pending transactional commits for it;
- a commit written by a transactional producer (`sendOffsetsToTransaction`) waits under its
  producer id: a COMMIT marker of that producer applies it, unless a later plain commit (by record
  offset) already replaced it; an ABORT marker drops it.
Other record types (group metadata, KIP-848 and share-group records) carry no committed offsets.
The committed leader epoch (OffsetCommitValue v3+, KIP-320) is kept: -1 when absent.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from replog.formats.errors import FormatError
from replog.formats.kafka import control
from replog.formats.kafka.internal.consumer_offsets import decode_key, decode_value
from replog.recovery.kafka.internal_topics import (
    CONSUMER_OFFSETS,
    InternalRecord,
    coordinator_copy,
    internal_records,
    partition_copies,
)

Key = tuple[str, str, int]   # group, topic, partition


@dataclass(frozen=True)
class CommittedOffset:
    group: str
    topic: str
    partition: int
    offset: int
    leader_epoch: int        # -1: the commit carries none
    commit_timestamp: int
    record_offset: int       # of the commit in `__consumer_offsets`
    source: str              # the `__consumer_offsets-N` dir it was read from


@dataclass
class GroupOffsets:
    """The latest commit per (group, topic, partition), and where they were read."""

    commits: dict[Key, CommittedOffset] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)    # undecodable batches and records, described

    def for_partition(self, topic: str, partition: int) -> list[CommittedOffset]:
        """The commits on one topic-partition, by group name."""
        return sorted((c for (g, t, p), c in self.commits.items() if t == topic and p == partition),
                      key=lambda c: c.group)


class _Replay:
    """`OffsetMetadataManager`'s replay of offset commits, over one partition's records."""

    def __init__(self, source: str, wanted: set[tuple[str, int]] | None) -> None:
        self.source, self.wanted = source, wanted
        self.offsets: dict[Key, CommittedOffset] = {}
        self.pending: dict[int, dict[Key, CommittedOffset]] = {}

    def feed(self, rec: InternalRecord, skipped: list[str]) -> None:
        if rec.marker is not None:
            self._end_transaction(rec.producer_id, rec.marker)
            return
        if rec.key is None:
            return
        try:
            key = decode_key(rec.key)
            if key.get("type") != "offset_commit":
                return
            data = key["data"]
            k = (data["group"], data["topic"], data["partition"])
            if self.wanted is not None and k[1:] not in self.wanted:
                return
            if rec.value is None:
                self._tombstone(k)
                return
            value = decode_value(key["version"], rec.value)
        except FormatError as e:
            skipped.append(f"{self.source} offset {rec.offset}: {e.message}")
            return
        if "data" not in value:
            skipped.append(f"{self.source} offset {rec.offset}: offset commit value version {value['version']} "
                           "is not one replog knows")
            return
        v = value["data"]
        commit = CommittedOffset(*k, v["offset"], v.get("leaderEpoch", -1), v["commitTimestamp"], rec.offset,
                                 self.source)
        if rec.producer_id < 0 or not rec.is_transactional:
            self.offsets[k] = commit
        else:
            self.pending.setdefault(rec.producer_id, {})[k] = commit

    def _tombstone(self, k: Key) -> None:
        self.offsets.pop(k, None)
        for pending in self.pending.values():
            pending.pop(k, None)

    def _end_transaction(self, producer_id: int, marker: int) -> None:
        pending = self.pending.pop(producer_id, None)
        if pending is None or marker != control.COMMIT:
            return
        for k, commit in pending.items():
            existing = self.offsets.get(k)
            if existing is None or commit.record_offset > existing.record_offset:
                self.offsets[k] = commit


def read_group_offsets(log_dirs: Sequence[str | os.PathLike[str]],
                       partitions: Iterable[tuple[str, int]] | None = None) -> GroupOffsets:
    """The committed offsets held by the `__consumer_offsets` partitions under `log_dirs` (each partition
    read from the copy a coordinator would load); only those on `partitions` when given."""
    wanted = None if partitions is None else set(partitions)
    out = GroupOffsets()
    for _, copies in sorted(partition_copies(log_dirs, CONSUMER_OFFSETS).items()):
        rep = coordinator_copy(copies)
        replay = _Replay(rep.path, wanted)
        for rec in internal_records(rep, out.skipped):
            replay.feed(rec, out.skipped)
        out.commits.update(replay.offsets)
        out.sources.append(rep.path)
    return out


def has_consumer_offsets(log_dirs: Sequence[str | os.PathLike[str]]) -> bool:
    """Whether any of the log dirs holds a `__consumer_offsets` partition."""
    return bool(partition_copies(log_dirs, CONSUMER_OFFSETS))
