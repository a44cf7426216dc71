"""Each replica's log before and after a replay, as the report pictures need it: epoch ranges, the
truncated, lost and fetched ranges, and the batches (Kafka) or messages (RocketMQ) of one region on demand.

A `LogView` holds no object per batch: epoch runs are numpy columns the replica
model already keeps (`ReplicaLog.epoch_runs`, a RocketMQ store's epoch file),
ranges come from the replay's outcome, and `units` walks only the region asked
for, stopping at `cap` units and counting the rest from the pieces' totals. So
the page of a replay of three 2 GiB replicas costs a walk of the divergent tail.
"""
from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from replog.recovery.kafka.replay import ReplayResult
from replog.recovery.kafka.replica_log import ReplicaLog, ref_epochs
from replog.recovery.rocketmq.ha_result import HAReplayResult, ReplicaOutcome
from replog.recovery.rocketmq.store_model import MessageRef

Unit = tuple[int, int, int, str]            # first offset, end offset (exclusive), epoch, description
Range = tuple[str, int, int]                # kind (truncated | lost | fetched | hole), first, end (exclusive)
_NO_RUNS = np.empty((3, 0), dtype=np.int64)


@dataclass
class LogView:
    """One replica's log at one moment (`when`: before or after the replay)."""

    replica: str
    when: str
    log_start: int
    log_end: int
    high_watermark: int | None
    runs: np.ndarray = field(repr=False)                    # rows: first offset, end offset, epoch
    ranges: list[Range] = field(default_factory=list)
    units: Callable[[int, int, int], tuple[list[Unit], int]] = field(repr=False, default=lambda lo, hi, cap: ([], 0))
    unit_before: Callable[[int], int | None] = field(repr=False, default=lambda offset: None)


def _joined(ranges: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Offset ranges in order, touching ones joined (a lost tail of many pieces is one range)."""
    out: list[tuple[int, int]] = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


# --- Kafka ----------------------------------------------------------------------------------------


def _pieces(log: ReplicaLog) -> list[tuple[int, int]]:
    return _joined([(p.first_offset, p.last_offset + 1) for p in log.pieces])


def _batch_units(log: ReplicaLog) -> Callable[[int, int, int], tuple[list[Unit], int]]:
    """Batches of `log` from offset `lo` on that start below `hi`: the first `cap`, and how many more."""
    def units(lo: int, hi: int, cap: int) -> tuple[list[Unit], int]:
        tail = log.from_offset(lo)
        out: list[Unit] = []
        blocks = tail.blocks()
        try:
            for block in blocks:
                cols = zip(block.base_offset.tolist(), block.last_offset.tolist(), ref_epochs(block).tolist(),
                           block.count.tolist(), block.crc.tolist(), strict=True)
                for base, last, epoch, count, crc in cols:
                    if base >= hi or len(out) >= cap:
                        return out, (max(0, tail.batches - len(out)) if base < hi else 0)
                    title = f"offsets {base:,}..{last:,}, epoch {epoch}, {count:,} records, CRC {crc:08x}"
                    out.append((base, last + 1, epoch, title))
        finally:
            close = getattr(blocks, "close", None)
            if close is not None:
                close()   # the walk lets go of its map now, not when collected
        return out, 0
    return units


def _batch_before(log: ReplicaLog) -> Callable[[int], int | None]:
    """The base offset of the last batch holding an offset below `offset` (the last common batch)."""
    def before(offset: int) -> int | None:
        found = log.find(offset - 1) if offset > 0 else None
        if found is None:
            return None
        cut = found[1]
        return cut.base_offset if cut.base_offset < offset else (cut.prev_last if cut.prev_last >= 0 else None)
    return before


def kafka_views(result: ReplayResult) -> list[tuple[LogView, LogView]]:
    """(before, after) of every replica of a Kafka replay, in the order the replay lists them."""
    out = []
    for r in result.replicas:
        before_ranges: list[Range] = []
        after_ranges: list[Range] = []
        outcome = r.outcome
        if outcome is not None and outcome.truncated_to is not None:
            before_ranges.append(("truncated", outcome.truncated_to, r.replica.log_end_offset))
        before_ranges += [("lost", a, b) for a, b in _pieces(r.lost)]
        if outcome is not None:
            after_ranges += [("fetched", a, b) for a, b in _pieces(outcome.fetched)]
            after_ranges += [("hole", a, b + 1) for a, b in outcome.holes]
        before = LogView(r.replica.name, "before", r.replica.log_start_offset, r.replica.log_end_offset,
                         r.replica.high_watermark, r.replica.log.epoch_runs(), before_ranges,
                         _batch_units(r.replica.log), _batch_before(r.replica.log))
        after = LogView(r.final.name, "after", r.final.log_start_offset, r.final.log_end_offset,
                        r.final.high_watermark, r.final.log.epoch_runs(), after_ranges,
                        _batch_units(r.final.log), _batch_before(r.final.log))
        out.append((before, after))
    return out


# --- RocketMQ -------------------------------------------------------------------------------------


def epoch_ranges(epochs: Sequence[Sequence[int]], start: int, end: int) -> np.ndarray:
    """Runs (first, end, epoch) of an epoch file's entries (epoch, start offset) over the log [start, end);
    one run without an epoch (-1) when the store keeps no epochs (classic HA)."""
    if end <= start:
        return _NO_RUNS
    if not epochs:
        return np.array([[start], [end], [-1]], dtype=np.int64)
    rows = []
    for i, (epoch, first) in enumerate(epochs):
        stop = epochs[i + 1][1] if i + 1 < len(epochs) else end
        a, b = max(first, start), min(stop, end)
        if a < b:
            rows.append((a, b, epoch))
    return np.array(rows, dtype=np.int64).T.reshape(3, -1) if rows else _NO_RUNS


def _epoch_of(epochs: Sequence[Sequence[int]]) -> Callable[[int], int]:
    starts = [e[1] for e in epochs]
    return lambda offset: epochs[bisect.bisect_right(starts, offset) - 1][0] if starts and offset >= starts[0] else -1


def _message_units(msgs: Sequence[MessageRef], epochs: Sequence[Sequence[int]]
                   ) -> Callable[[int, int, int], tuple[list[Unit], int]]:
    """Messages (in log order) starting in [lo, hi): the first `cap`, and how many more."""
    offsets = [m.physical_offset for m in msgs]
    epoch_of = _epoch_of(epochs)

    def units(lo: int, hi: int, cap: int) -> tuple[list[Unit], int]:
        i, j = bisect.bisect_left(offsets, lo), bisect.bisect_left(offsets, hi)
        shown = msgs[i:min(j, i + cap)]
        return ([(m.physical_offset, m.end, epoch_of(m.physical_offset),
                  f"offset {m.physical_offset:,} ({m.size} B), {m.topic}/{m.queue_id} queue offset "
                  f"{m.queue_offset}" + (f", keys {' '.join(m.user_keys())}" if m.keys else "")) for m in shown],
                max(0, j - i - len(shown)))
    return units


def _message_before(msgs: Sequence[MessageRef]) -> Callable[[int], int | None]:
    offsets = [m.physical_offset for m in msgs]

    def before(offset: int) -> int | None:
        i = bisect.bisect_left(offsets, offset)
        return offsets[i - 1] if i else None
    return before


def _after_messages(r: ReplicaOutcome, master: ReplicaOutcome) -> list[MessageRef]:
    """What the store holds after the replay: its own messages below the plan's cut, then the master's fetched."""
    if r.plan is None or r is master:
        return r.model.messages
    own = [m for m in r.model.messages if m.end <= r.plan.keep_to]
    fetched = [m for m in master.model.messages if r.plan.fetch_from <= m.physical_offset < r.plan.fetch_to]
    return own + fetched


def rocketmq_views(result: HAReplayResult) -> list[tuple[LogView, LogView]]:
    """(before, after) of every store of a RocketMQ HA replay."""
    master = next(r for r in result.replicas if r.role == "master")
    out = []
    for r in result.replicas:
        m = r.model
        before_eps = [(e.epoch, e.start_offset) for e in m.epochs]
        after_eps = [(e.epoch, e.start_offset) for e in r.epochs_after]
        before_ranges: list[Range] = []
        if r.truncated_to is not None:
            before_ranges.append(("truncated", r.truncated_to, m.max_offset))
        before_ranges += [("lost", a, b) for a, b in _joined([(x.physical_offset, x.end) for x in r.lost])]
        after_ranges: list[Range] = []
        if r.frames and r.plan is not None:
            after_ranges.append(("fetched", r.plan.fetch_from, r.plan.fetch_to))
        after_msgs = _after_messages(r, master)
        before = LogView(m.name, "before", m.min_offset, m.max_offset, m.confirm_offset,
                         epoch_ranges(before_eps, m.min_offset, m.max_offset), before_ranges,
                         _message_units(m.messages, before_eps), _message_before(m.messages))
        after = LogView(m.name, "after", r.min_offset_after, r.max_offset_after, r.confirm_after,
                        epoch_ranges(after_eps, r.min_offset_after, r.max_offset_after), after_ranges,
                        _message_units(after_msgs, after_eps), _message_before(after_msgs))
        out.append((before, after))
    return out
