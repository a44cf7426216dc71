"""Share groups' state per topic-partition, as the share coordinator loads it from `__share_group_state` (KIP-932).

The coordinator replays its partition of `__share_group_state` in offset order (share-coordinator
`ShareCoordinatorShard.replay`, read in the 4.4.0 jar): a ShareSnapshot record replaces the state of its
(group, topic id, partition); a ShareUpdate record merges into it (`ShareCoordinatorShard.merge`): its start
offset replaces the current one unless it is -1, and its state batches are combined with the current ones,
newer over older, none below the start offset (`PersisterStateBatchCombiner.combineStateBatches`); a null
value deletes the state. The start offset is the first offset the group has not finished with; the state
batches are the in-flight records above it (acquired, acknowledged, archived) with their delivery counts.
Values are read with the 4.4 schemas, then the 4.0 ones (`share_group_state.SCHEMA_RELEASES`).
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from replog.formats.errors import FormatError
from replog.formats.kafka.internal.share_group_state import SCHEMA_RELEASES, decode_share_group_state
from replog.recovery.kafka.internal_topics import coordinator_records, decoded_or_skipped, partition_copies

SHARE_GROUP_STATE = "__share_group_state"
SNAPSHOT, UPDATE = "ShareSnapshotKey", "ShareUpdateKey"
DELIVERY_STATES = {0: "available", 1: "acquired", 2: "acknowledged", 4: "archived"}   # RecordState ids

Key = tuple[str, str, int]   # group, topic id, partition


@dataclass(frozen=True)
class StateBatch:
    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int

    def to_dict(self) -> dict[str, int | str]:
        return {"first_offset": self.first_offset, "last_offset": self.last_offset,
                "delivery_state": DELIVERY_STATES.get(self.delivery_state, str(self.delivery_state)),
                "delivery_count": self.delivery_count}


@dataclass
class SharePartitionState:
    group: str
    topic_id: str
    partition: int
    start_offset: int
    leader_epoch: int
    batches: list[StateBatch] = field(default_factory=list)
    record_offset: int = -1     # of the last record applied, in `__share_group_state`
    source: str = ""


def combine(old: list[StateBatch], new: list[StateBatch], start: int) -> list[StateBatch]:
    """`PersisterStateBatchCombiner.combineStateBatches`: offsets the newer batches name take their state;
    the older batches keep the rest; nothing below `start`. Offsets are split where batches overlap."""
    cuts = sorted({b.first_offset for b in old + new} | {b.last_offset + 1 for b in old + new})
    out: list[StateBatch] = []
    for lo, hi in zip(cuts, cuts[1:], strict=False):
        if hi <= start:
            continue
        lo = max(lo, start)
        owner = next((b for b in reversed(new) if b.first_offset <= lo <= b.last_offset), None) \
            or next((b for b in reversed(old) if b.first_offset <= lo <= b.last_offset), None)
        if owner is None:
            continue
        if out and out[-1].last_offset + 1 == lo and (out[-1].delivery_state, out[-1].delivery_count) == \
                (owner.delivery_state, owner.delivery_count):
            out[-1] = StateBatch(out[-1].first_offset, hi - 1, owner.delivery_state, owner.delivery_count)
        else:
            out.append(StateBatch(lo, hi - 1, owner.delivery_state, owner.delivery_count))
    return out


@dataclass
class ShareStates:
    states: dict[Key, SharePartitionState] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def for_partition(self, topic_id: str | None, partition: int) -> list[SharePartitionState]:
        return sorted((s for (g, t, p), s in self.states.items() if t == topic_id and p == partition),
                      key=lambda s: s.group)

    def apply(self, decoded: dict, offset: int, source: str) -> None:
        """One decoded record, by the coordinator's replay rules (module docstring)."""
        key = decoded["key"]
        data = key.get("data") or {}
        k = (data.get("groupId", ""), data.get("topicId", ""), data.get("partition", -1))
        value = decoded.get("value")
        if value is None:
            self.states.pop(k, None)
            return
        body = value.get("data")
        if body is None:
            self.skipped.append(f"{source} offset {offset}: {key['type']} value version {value.get('version')} unknown")
            return
        batches = [StateBatch(b["firstOffset"], b["lastOffset"], b["deliveryState"], b["deliveryCount"])
                   for b in body.get("stateBatches", [])]
        current = self.states.get(k)
        if key["type"] == SNAPSHOT or current is None:
            start = body["startOffset"]
            self.states[k] = SharePartitionState(*k, start, body["leaderEpoch"], combine([], batches, start),
                                                 offset, source)
            return
        start = current.start_offset if body["startOffset"] == -1 else body["startOffset"]
        current.batches = combine(current.batches, batches, start)
        current.start_offset, current.record_offset = start, offset
        if body["leaderEpoch"] != -1:
            current.leader_epoch = body["leaderEpoch"]


def _decode(key: bytes | None, value: bytes | None) -> dict:
    """The record by the 4.4 schemas, else the 4.0 ones; FormatError when neither reads it."""
    error: FormatError | None = None
    for release in reversed(SCHEMA_RELEASES):
        try:
            return decode_share_group_state(key, value, release)
        except FormatError as e:
            error = e
    assert error is not None
    raise error


def has_share_group_state(log_dirs: Sequence[str | os.PathLike[str]]) -> bool:
    return bool(partition_copies(log_dirs, SHARE_GROUP_STATE))


def read_share_states(log_dirs: Sequence[str | os.PathLike[str]]) -> ShareStates:
    """Every share group's state found in the `__share_group_state` partitions under `log_dirs` (for each
    partition, the copy a controller would elect stands for the coordinator's, `coordinator_copy`)."""
    out = ShareStates()
    for path, rec in coordinator_records(log_dirs, SHARE_GROUP_STATE, out.sources, out.skipped):
        if rec.marker is not None:
            continue
        decoded = decoded_or_skipped(path, rec, _decode, out.skipped)
        if decoded is not None and decoded["key"].get("type") in (SNAPSHOT, UPDATE):
            out.apply(decoded, rec.offset, path)
    return out
