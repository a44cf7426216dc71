"""Which replica a controller could elect, judged from disk alone: one rule for replay and fleet scans.

A replica is a clean candidate when its log reaches the highest high watermark any replica recorded
(it holds every acknowledged record, as an ISR member must). Among candidates the newest history wins:
highest latest epoch, then longest log, then the first given. With no candidate the election is unclean.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

RULE, OPTION = "rule", "option"  # where the leader came from; controller.METADATA / PARTITION_STATE too


@dataclass
class LeaderChoice:
    name: str
    unclean: bool
    explanation: str
    source: str = RULE
    leader_epoch: int | None = None   # the epoch the leader serves in when the controller's record gives it


@dataclass(frozen=True)
class Candidate:
    """What the election looks at: a replica's name, high watermark, log end and latest leader epoch."""

    name: str
    high_watermark: int
    log_end_offset: int
    latest_epoch: int | None


def elect(candidates: Sequence[Candidate]) -> LeaderChoice:
    """The leader among `candidates` (in the order given: the first wins a full tie)."""
    top_hw = max(c.high_watermark for c in candidates)
    clean = [c for c in candidates if c.log_end_offset >= top_hw]
    pool = clean or list(candidates)
    best = max(pool, key=lambda c: (c.latest_epoch if c.latest_epoch is not None else -1,
                                    c.log_end_offset, -candidates.index(c)))
    why = (f"{best.name} holds every offset below the highest high watermark ({top_hw}) and has the newest "
           f"history (latest epoch {best.latest_epoch}, log end {best.log_end_offset})")
    if not clean:
        why = (f"no replica reaches the highest high watermark ({top_hw}): electing {best.name} "
               f"(latest epoch {best.latest_epoch}, log end {best.log_end_offset}) is an UNCLEAN election "
               "and acknowledged records can be lost")
    return LeaderChoice(best.name, not clean, why)
