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

from typing import Any

import numpy as np

from replog.recovery.kafka.divergence import first_difference_keys, reaching
from replog.recovery.kafka.election import Candidate, elect

# One replica against the leader, as replay compares them below the cleaner points.
Compared = tuple[int | None, int | None]   # (divergent offset, compacted up to)


def replica_set_row(topic: str, partition: int, replicas: list[dict[str, Any]], *, cluster: str = "",
                    topic_id: str | None = None) -> dict[str, Any]:
    """One `replicas` row from each replica's facts and tail.

    Each replica dict: broker, log_dir (optional: it tells two replicas of one broker apart),
    log_start_offset, log_end_offset, high_watermark, latest_epoch, lower_bound (L, None when Spark
    found nothing to compare) and tail (its kept batches ending at or after L: base_offset,
    last_offset, crc, count; None when it holds none)."""
    reps = sorted((dict(r) for r in replicas), key=_order)
    lower = next((r["lower_bound"] for r in reps if r.get("lower_bound") is not None), None)
    keys = [_keys(r.get("tail")) for r in reps]
    lead = _leader_index(reps)
    compacted = None
    for k, r in enumerate(reps):
        found = None
        if lower is not None and k != lead:
            start = max(r["log_start_offset"], reps[lead]["log_start_offset"])
            at = max(start, lower)
            found = first_difference_keys([reaching(keys[k][0], at)], [reaching(keys[lead][0], at)], start)
            found, up_to = compacted_comparison(found, r, reps[lead], topic, partition)
            compacted = up_to if compacted is None or (up_to is not None and up_to > compacted) else compacted
        r.update(_facts_at(found, *keys[k], r["high_watermark"]))
    row = assemble_replica_set(topic, partition, reps, cluster=cluster, topic_id=topic_id)
    row["compacted_up_to"] = compacted
    return row


def compacted_comparison(found: int | None, rep: dict[str, Any], lead: dict[str, Any], topic: str,
                         partition: int) -> Compared:
    """`found` (the batch pairing's divergent offset) checked by replay's rule when a cleaner cleaned the
    partition on either broker (its `cleaner-offset-checkpoint` has an entry for it): (divergent offset,
    compacted up to). Replicas are loaded only then, and only from local log dirs."""
    from pathlib import Path

    from replog.formats.kafka.names import partition_dir_name
    from replog.recovery.kafka.logdir import read_broker_checkpoints
    if found is None:
        return None, None
    dirs = [Path(str(x.get("log_dir") or "")) / partition_dir_name(topic, partition) for x in (rep, lead)]
    if not all(d.is_dir() for d in dirs):
        return found, None
    points = [(read_broker_checkpoints(d.parent).cleaner_offsets or {}).get((topic, partition)) for d in dirs]
    if all(p is None for p in points):   # no cleaner ever cleaned this partition on either broker
        return found, None
    from replog.recovery.kafka.replay import compare_replicas
    from replog.recovery.kafka.replica import load_replica
    compared = compare_replicas(load_replica(dirs[0]), load_replica(dirs[1]))
    return compared.diverged_at, compared.compaction.up_to if compared.compaction is not None else None


def _keys(tail: list[dict[str, Any]] | None) -> tuple[np.ndarray, np.ndarray]:
    """(3, n) (base, last, crc) keys in offset order, and the record counts."""
    rows = sorted(tail or [], key=lambda b: (b["base_offset"], b["last_offset"]))
    keys = np.array([[b["base_offset"] for b in rows], [b["last_offset"] for b in rows], [b["crc"] for b in rows]],
                    dtype=np.int64).reshape(3, len(rows))
    return keys, np.array([b["count"] for b in rows], dtype=np.int64)


def _facts_at(d: int | None, keys: np.ndarray, counts: np.ndarray, hw: int | None) -> dict[str, Any]:
    """A replica diverging from the leader at `d` (None: it does not): its records in batches ending at
    or after `d`, and of those the ones in batches starting below its high watermark."""
    if d is None:
        return {"divergent_offset": None, "records_from_d": None, "committed_from_d": None}
    after = keys[1] >= d
    committed = after & (keys[0] < hw) if hw is not None else np.zeros_like(after)
    return {"divergent_offset": d, "records_from_d": int(counts[after].sum()),
            "committed_from_d": int(counts[committed].sum())}


def assemble_replica_set(topic: str, partition: int, replicas: list[dict[str, Any]], *, cluster: str = "",
                         topic_id: str | None = None) -> dict[str, Any]:
    """One `replicas` row for one replica set (the replicas of one partition in one `cluster`, of one
    `topic_id` when their partition.metadata gives one): the one verdict both fleet scan modes give.

    Each replica dict: broker, log_dir (optional), log_end_offset, high_watermark, latest_epoch, and
    where the scan found its log leaving the leader's: divergent_offset (None or absent: it does not),
    records_from_d (the records its truncation there discards) and committed_from_d (those of them
    below its own high watermark: records it reported committed, which consumers may have read).

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
    d = min((r["divergent_offset"] for r in parts.values()), default=None)
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


def _order(r: dict[str, Any]) -> tuple[str, str]:
    """Replicas in a row: by broker, then log dir (two replicas of one broker)."""
    return r["broker"], r.get("log_dir") or ""


def _leader_index(reps: list[dict[str, Any]]) -> int:
    """Which replica `replay` would elect from the same facts (`election.elect`; an unknown HW counts as 0)."""
    return int(elect([Candidate(str(k), r["high_watermark"] or 0, r["log_end_offset"], r["latest_epoch"])
                      for k, r in enumerate(reps)]).name)
