"""Replica sets of a fleet scan: where replicas of one partition part, and who keeps what.

Spark joins cheaply what only bounds the answer: the lowest offset L where one
replica holds a batch another's range covers but does not hold identically
(`fleet.replicas_frame`). For ordered logs no pairing can differ below L, so
each replica's batches from L on (its tail; memory bounded by what differs)
reach `replica_set_row`, which finds each replica's divergence from the leader
with replay's own pairing (`divergence.first_difference_keys`, from the first
batch reaching max(L, the higher log start)), the leader elected by replay's
rule (`election.elect`). The set's first divergent offset is the lowest of
them: what `replay` reports as `diverged_at`, replica by replica.

Compacted topics: where that pairing finds batches differing in a partition a
cleaner cleaned (an entry in either log dir's `cleaner-offset-checkpoint`), the
two replicas are loaded from their log dirs (when local) and compared by
replay's own rule (`replay.compare_replicas`: below the cleaner points the
records the cleaner keeps, batches above); `compacted_up_to` says where batches
differ only as the cleaners left them. A remote replica keeps the pairing's answer.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NotRequired, TypedDict

import numpy as np
import pyarrow as pa

from replog.recovery.kafka.divergence import first_difference_keys, reaching
from replog.recovery.kafka.election import Candidate, elect
from replog.spark.schemas import ReplicaSetRow

# One replica against the leader, as replay compares them below the cleaner points.
Compared = tuple[int | None, int | None]   # (divergent offset, compacted up to)


class Verdict(TypedDict):
    """One replica of a set as `assemble_replica_set` judges it: its facts, and where the scan found its
    log leaving the leader's (divergent_offset None or absent: it does not)."""
    broker: str
    log_dir: NotRequired[str | None]      # tells two replicas of one broker apart
    log_end_offset: int
    high_watermark: int | None
    latest_epoch: int | None
    divergent_offset: NotRequired[int | None]
    records_from_d: NotRequired[int | None]     # the records its truncation at divergent_offset discards
    committed_from_d: NotRequired[int | None]   # those of them below its own high watermark


@dataclass
class FullScanReplica:
    """One replica of a set as the full scan's comparison reads it: its facts, the lower bound L Spark
    found for the set (None: nothing to compare), and its kept batches ending at or after L as columns:
    `keys` (3, n) base offset, last offset, CRC, in offset order, and their record `counts`."""
    broker: str
    log_dir: str | None
    log_start_offset: int
    log_end_offset: int
    high_watermark: int | None
    latest_epoch: int | None
    lower_bound: int | None
    keys: np.ndarray = field(default_factory=lambda: np.empty((3, 0), dtype=np.int64))
    counts: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))

    def __post_init__(self) -> None:
        order = np.lexsort((self.keys[1], self.keys[0]))
        self.keys, self.counts = self.keys[:, order], self.counts[order]


def replica_set_row(topic: str, partition: int, replicas: list[FullScanReplica], *, cluster: str = "",
                    topic_id: str | None = None) -> ReplicaSetRow:
    """One `replicas` row from each replica's facts and tail."""
    reps = sorted(replicas, key=lambda r: (r.broker, r.log_dir or ""))
    lower = next((r.lower_bound for r in reps if r.lower_bound is not None), None)
    lead = _leader_index(reps)
    compacted = None
    verdicts: list[Verdict] = []
    for k, r in enumerate(reps):
        found = None
        if lower is not None and k != lead:
            start = max(r.log_start_offset, reps[lead].log_start_offset)
            at = max(start, lower)
            found = first_difference_keys([reaching(r.keys, at)], [reaching(reps[lead].keys, at)], start)
            found, up_to = compacted_comparison(found, r.log_dir, reps[lead].log_dir, topic, partition)
            compacted = up_to if compacted is None or (up_to is not None and up_to > compacted) else compacted
        verdicts.append(_verdict(r, found))
    row = assemble_replica_set(topic, partition, verdicts, cluster=cluster, topic_id=topic_id)
    row["compacted_up_to"] = compacted
    return row


def compacted_comparison(found: int | None, log_dir: str | None, lead_log_dir: str | None, topic: str,
                         partition: int) -> Compared:
    """`found` (the batch pairing's divergent offset) checked by replay's rule when a cleaner cleaned the
    partition on either broker (its `cleaner-offset-checkpoint` has an entry for it): (divergent offset,
    compacted up to). Replicas are loaded only then, and only from local log dirs."""
    from pathlib import Path

    from replog.formats.kafka.names import partition_dir_name
    from replog.recovery.kafka.logdir import read_broker_checkpoints
    if found is None:
        return None, None
    dirs = [Path(str(x or "")) / partition_dir_name(topic, partition) for x in (log_dir, lead_log_dir)]
    if not all(d.is_dir() for d in dirs):
        return found, None
    points = [(read_broker_checkpoints(d.parent).cleaner_offsets or {}).get((topic, partition)) for d in dirs]
    if all(p is None for p in points):   # no cleaner ever cleaned this partition on either broker
        return found, None
    from replog.recovery.kafka.replay import compare_replicas
    from replog.recovery.kafka.replica import load_replica
    compared = compare_replicas(load_replica(dirs[0]), load_replica(dirs[1]))
    return compared.diverged_at, compared.compaction.up_to if compared.compaction is not None else None


def _verdict(r: FullScanReplica, d: int | None) -> Verdict:
    """A replica diverging from the leader at `d` (None: it does not): its records in batches ending at
    or after `d`, and of those the ones in batches starting below its high watermark."""
    v: Verdict = {"broker": r.broker, "log_dir": r.log_dir, "log_end_offset": r.log_end_offset,
                  "high_watermark": r.high_watermark, "latest_epoch": r.latest_epoch, "divergent_offset": d,
                  "records_from_d": None, "committed_from_d": None}
    if d is not None:
        after = r.keys[1] >= d
        committed = after & (r.keys[0] < r.high_watermark) if r.high_watermark is not None else np.zeros_like(after)
        v["records_from_d"], v["committed_from_d"] = int(r.counts[after].sum()), int(r.counts[committed].sum())
    return v


def assemble_replica_set(topic: str, partition: int, replicas: list[Verdict], *, cluster: str = "",
                         topic_id: str | None = None) -> ReplicaSetRow:
    """One `replicas` row for one replica set (the replicas of one partition in one `cluster`, of one
    `topic_id` when their partition.metadata gives one): the one verdict both fleet scan modes give.

    Each replica (`Verdict`): its facts, and where the scan found its log leaving the leader's:
    divergent_offset, records_from_d and committed_from_d (records it reported committed, which
    consumers may have read).

    The leader is the replica `replay` would elect (`election.elect`: among those reaching the highest
    high watermark, the latest leader epoch, then the longest log); its own divergent_offset is ignored.
    `diverged` = replicas whose log leaves the leader's; `kept` = the leader and every other replica
    reaching past the set's first divergent offset D (on a set that does not diverge: all of them);
    `behind` = the others, which simply lag. records_at_risk is the most records any diverged replica
    discards, committed_at_risk the most of those it had reported committed.
    """
    reps = sorted(replicas, key=_order)
    lead = _leader_index(reps)
    parts = {k: r for k, r in enumerate(reps) if k != lead and r.get("divergent_offset") is not None}
    d = min((at for r in parts.values() if (at := r.get("divergent_offset")) is not None), default=None)
    leos = [r["log_end_offset"] for r in reps]
    known_hws = [r["high_watermark"] for r in reps if r["high_watermark"] is not None]
    behind = [k for k, r in enumerate(reps) if d is not None and k != lead and k not in parts and leos[k] <= d]
    return {
        "cluster": cluster, "topic": topic, "partition": partition, "topic_id": topic_id,
        "replicas": [r["broker"] for r in reps], "log_dirs": [r.get("log_dir") for r in reps],
        "log_end_offsets": leos, "high_watermarks": [r["high_watermark"] for r in reps],
        "latest_epochs": [r["latest_epoch"] for r in reps],
        "leo_spread": max(leos) - min(leos) if leos else 0,
        "hw_spread": max(known_hws) - min(known_hws) if known_hws else None,
        "first_divergent_offset": d,
        "kept": [r["broker"] for k, r in enumerate(reps) if k not in parts and k not in behind],
        "diverged": [r["broker"] for r in parts.values()],
        "behind": [reps[k]["broker"] for k in behind],
        "records_at_risk": max((r.get("records_from_d") or 0 for r in parts.values()), default=0),
        "committed_at_risk": max((r.get("committed_from_d") or 0 for r in parts.values()), default=0),
        "compacted_up_to": None}


def _order(r: Verdict) -> tuple[str, str]:
    """Replicas in a row: by broker, then log dir (two replicas of one broker)."""
    return r["broker"], r.get("log_dir") or ""


def _leader_index(reps: list[Verdict] | list[FullScanReplica]) -> int:
    """Which replica `replay` would elect from the same facts (`election.elect`; an unknown HW counts as 0)."""
    facts = [(r.high_watermark, r.log_end_offset, r.latest_epoch) if isinstance(r, FullScanReplica)
             else (r["high_watermark"], r["log_end_offset"], r["latest_epoch"]) for r in reps]
    return int(elect([Candidate(str(k), hw or 0, leo, epoch) for k, (hw, leo, epoch) in enumerate(facts)]).name)


# -- from Spark's grouped rows ---------------------------------------------------------------------------


def full_scan_sets(rb: pa.RecordBatch) -> Iterator[list[FullScanReplica]]:
    """The replicas of each row of a batch of grouped replica sets (`replicas.replicas_frame`: a `replicas`
    list of each replica's facts, lower bound and `tail` of batch keys); the batch keys go from Arrow to
    numpy as columns, never a Python object per batch."""
    reps = rb.column("replicas")
    at = reps.offsets.to_numpy()
    flat = reps.values
    facts = {name: flat.field(name).to_pylist() for name in
             ("broker", "log_dir", "log_start_offset", "log_end_offset", "high_watermark", "latest_epoch",
              "lower_bound")}
    tails = flat.field("tail")
    bounds = tails.offsets.to_numpy()
    cols = [_int64(tails.values.field(name)) for name in ("base_offset", "last_offset", "crc", "count")]
    keys, counts = np.vstack(cols[:3]), cols[3]
    for i in range(rb.num_rows):
        members = []
        for j in range(int(at[i]), int(at[i + 1])):
            lo, hi = int(bounds[j]), int(bounds[j + 1])
            members.append(FullScanReplica(
                facts["broker"][j], facts["log_dir"][j], facts["log_start_offset"][j], facts["log_end_offset"][j],
                facts["high_watermark"][j], facts["latest_epoch"][j], facts["lower_bound"][j],
                keys[:, lo:hi], counts[lo:hi]))
        yield members


def _int64(column: pa.Array) -> np.ndarray:
    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.int64)
