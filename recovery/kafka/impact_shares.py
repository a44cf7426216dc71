"""What a replay's truncation means for the share groups (KIP-932) reading the partition.

A share group keeps no consumer offset: the share coordinator holds, per topic-partition, a start offset
(below it the group is done with every record) and state batches above it (`share_state`). After an
election the new leader's share partition loads that state as it is (`SharePartition.maybeInitialize`) and
fetches from the start offset. Read in the 4.4.0 jar (kafka_2.13-4.4.0.jar `kafka.server.share`):
- the share partition starts from the persisted state as it is: the in-flight batches become its cached state,
  its end offset the last batch's (the lambda of `maybeInitialize`), so acknowledged or archived batches
  right above the start offset are skipped and the next fetch is past them (`finished_end`): the persisted
  start offset may lag (the coordinator got the acknowledgement before the start offset moved);
- a fetch past the log end answers OFFSET_OUT_OF_RANGE; `ShareFetchUtils.processFetchResponse` then calls
  `SharePartition.updateCacheAndOffsets` with the log's earliest offset, which changes nothing while that
  offset is not above the start offset (it logs "The log start offset: .. is not greater than the start
  offset: .. for the share partition"). So when a truncation leaves the log end below that next fetch offset,
  the records written next at offsets [new log end, next fetch offset) are never delivered to the group;
  delivery resumes there once the log reaches it;
- records the group acknowledged (below the start offset, or acknowledged/archived batches) that the
  truncation removes are gone with no redelivery: the group had finished with them.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from replog.formats.shape import Field, Shape
from replog.recovery.kafka.impact_groups import LeaderAfter, LostLog
from replog.recovery.kafka.share_state import SharePartitionState

UNAFFECTED, FINISHED_LOST, AHEAD_OF_LOG = "unaffected", "finished_records_lost", "start_beyond_log_end"
FINISHED = (2, 4)   # RecordState ACKNOWLEDGED, ARCHIVED: the group is done with them


def finished_end(state: SharePartitionState) -> int:
    """The first offset the group is not done with: its start offset, moved past the acknowledged or archived
    batches that follow it without a gap (where the share partition's next fetch starts)."""
    end = state.start_offset
    for b in sorted(state.batches, key=lambda b: b.first_offset):
        if b.first_offset > end or b.delivery_state not in FINISHED:
            break
        end = max(end, b.last_offset + 1)
    return end


@dataclass
class ShareImpact:
    state: SharePartitionState
    classification: str
    explanation: str
    finished_lost: dict[str, int | str | None] = field(default_factory=dict)   # records the group finished with
    never_delivered: dict[str, int] | None = None    # offsets the group will skip once producers write there


SHARE_IMPACT = Shape(
    Field("group", "state.group"), Field("topic_id", "state.topic_id"), Field("partition", "state.partition"),
    Field("start_offset", "state.start_offset"), Field("next_fetch_offset", lambda s: finished_end(s.state)),
    Field("leader_epoch", "state.leader_epoch"),
    Field("state_batches", lambda s: [b.to_dict() for b in s.state.batches]),
    "classification", "explanation", Field("finished_records_lost", "finished_lost"),
    Field("never_delivered", "never_delivered"), Field("source", "state.source"),
)


def _lost_below(lost: LostLog, end: int) -> tuple[int, int | None, int | None]:
    """Records of `lost` at offsets below `end`: count, lowest and highest offset."""
    count, lo, hi = 0, None, None
    for block in lost.log.blocks():
        sel = block.base_offset < end
        if not sel.any():
            continue
        last = np.minimum(block.last_offset[sel], end - 1)
        count += int((last - block.base_offset[sel] + 1).sum())
        first, top = int(block.base_offset[sel].min()), int(last.max())
        lo, hi = (first if lo is None else min(lo, first)), (top if hi is None else max(hi, top))
    return count, lo, hi


def classify_share(state: SharePartitionState, leader: LeaderAfter, lost: Sequence[LostLog],
                   reached: dict[str, int]) -> ShareImpact:
    """The share group's fate on the partition after the replay (module docstring). `reached`: each
    replica's log end before the replay; the group read from a replica whose log reached its start offset."""
    done = max([finished_end(state)] + [b.last_offset + 1 for b in state.batches if b.delivery_state in FINISHED])
    best: dict[str, int | str | None] = {"records": 0, "first_offset": None, "last_offset": None, "replica": None}
    for item in lost:
        if reached.get(item.replica, 0) < state.start_offset:
            continue
        count, lo, hi = _lost_below(item, done)
        if count > int(best["records"] or 0):
            best = {"records": count, "first_offset": lo, "last_offset": hi, "replica": item.replica}
    end, nxt = leader.log_end_offset, finished_end(state)
    if nxt > end:
        return ShareImpact(state, AHEAD_OF_LOG,
                           f"the group's next fetch offset {nxt} (start offset {state.start_offset}) is past the new "
                           f"log end {end}: its fetches answer OFFSET_OUT_OF_RANGE and the share partition keeps its "
                           "start offset (the log start is not above it), so records written at offsets "
                           f"{end}..{nxt - 1} are never delivered to the group", best,
                           {"first_offset": end, "last_offset": nxt - 1})
    if best["records"]:
        return ShareImpact(state, FINISHED_LOST, f"{best['records']} record(s) the group had finished with (below its "
                           "start offset or acknowledged) are lost; the group does not see them again", best)
    return ShareImpact(state, UNAFFECTED, "no record the group finished with is lost and its start offset is within "
                       "the log", best)
