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
    reps = [dict(r) for r in replicas]
    lower = next((r["lower_bound"] for r in reps if r.get("lower_bound") is not None), None)
    keys = [_keys(r.get("tail")) for r in reps]
    d, compacted = None, None
    if lower is not None:
        lead = _leader_index(reps)
        for k, r in enumerate(reps):
            if k == lead:
                continue
            start = max(r["log_start_offset"], reps[lead]["log_start_offset"])
            at = max(start, lower)
            found = first_difference_keys([reaching(keys[k][0], at)], [reaching(keys[lead][0], at)], start)
            found, up_to = compacted_comparison(found, r, reps[lead], topic, partition)
            d = found if d is None or (found is not None and found < d) else d
            compacted = up_to if compacted is None or (up_to is not None and up_to > compacted) else compacted
    for r, (held, counts) in zip(reps, keys, strict=True):
        r.update(_facts_at(d, held, counts, r["high_watermark"]))
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
    """What a replica holds at D and from D on: the batch covering D, its records ending at or after D,
    and of those the ones in batches starting below its high watermark."""
    if d is None:
        return {"divergent_offset": None, "at_d": None, "records_from_d": None, "committed_from_d": None}
    cover = np.flatnonzero((keys[0] <= d) & (keys[1] >= d))
    after = keys[1] >= d
    committed = after & (keys[0] < hw) if hw is not None else np.zeros_like(after)
    at_d = None if not len(cover) else dict(zip(("base_offset", "last_offset", "crc"),
                                                (int(v) for v in keys[:, cover[0]]), strict=True))
    return {"divergent_offset": d, "at_d": at_d, "records_from_d": int(counts[after].sum()) if after.any() else None,
            "committed_from_d": int(counts[committed].sum()) if after.any() else None}


def assemble_replica_set(topic: str, partition: int, replicas: list[dict[str, Any]], *, cluster: str = "",
                         topic_id: str | None = None) -> dict[str, Any]:
    """One `replicas` row from per-replica facts joined by Spark, for one replica set: the replicas
    of one partition in one `cluster` (of one `topic_id` when their partition.metadata gives one).

    Each replica dict: broker, log_dir (optional), log_end_offset, high_watermark, latest_epoch, and
    when the set diverges: divergent_offset (D, the same for all), at_d (the
    (base_offset, last_offset, crc) of its kept batch covering D, or None),
    records_from_d (records in its kept batches ending at or after D) and
    committed_from_d (those of them in batches starting below its high watermark).

    Sides at D: the replica `replay` would elect (`election.elect`: among those
    reaching the highest high watermark, the latest leader epoch, then the longest
    log) is taken as the leader whose log wins.
    `kept` = replicas holding the leader's batch at D (or, when the leader holds
    nothing there, those holding nothing); `diverged` = replicas holding another
    batch there: their log from D on is what follower truncation discards;
    `behind` = replicas holding nothing at D, which simply lag. records_at_risk is
    the most records any diverged replica holds from D on; committed_at_risk the
    most of those below that replica's own high watermark, i.e. records it had
    reported committed and consumers may have read.
    """
    reps = sorted(replicas, key=lambda r: (r["broker"], r.get("log_dir") or ""))
    leos = [r["log_end_offset"] for r in reps]
    hws = [r["high_watermark"] for r in reps]
    known_hws = [h for h in hws if h is not None]
    row: dict[str, Any] = {
        "cluster": cluster, "topic": topic, "partition": partition, "topic_id": topic_id,
        "replicas": [r["broker"] for r in reps], "log_dirs": [r.get("log_dir") for r in reps],
        "log_end_offsets": leos, "high_watermarks": hws, "latest_epochs": [r["latest_epoch"] for r in reps],
        "leo_spread": max(leos) - min(leos) if leos else 0,
        "hw_spread": max(known_hws) - min(known_hws) if known_hws else None,
        "first_divergent_offset": None, "kept": [], "diverged": [], "behind": [],
        "records_at_risk": 0, "committed_at_risk": 0, "compacted_up_to": None}
    d = next((r.get("divergent_offset") for r in reps if r.get("divergent_offset") is not None), None)
    if d is None:
        return row
    leader = reps[_leader_index(reps)]
    winner = _key(leader.get("at_d"))
    diverged = [r for r in reps if _key(r.get("at_d")) != winner and r.get("at_d") is not None]
    row.update(first_divergent_offset=d,
               kept=[r["broker"] for r in reps if _key(r.get("at_d")) == winner],
               diverged=[r["broker"] for r in diverged],
               behind=[r["broker"] for r in reps if r.get("at_d") is None and winner is not None],
               records_at_risk=max((r.get("records_from_d") or 0 for r in diverged), default=0),
               committed_at_risk=max((r.get("committed_from_d") or 0 for r in diverged), default=0))
    return row


def _leader_index(reps: list[dict[str, Any]]) -> int:
    """Which replica `replay` would elect from the same facts (`election.elect`; an unknown HW counts as 0)."""
    return int(elect([Candidate(str(k), r["high_watermark"] or 0, r["log_end_offset"], r["latest_epoch"])
                      for k, r in enumerate(reps)]).name)


def _key(at_d: Any) -> tuple[int, int, int] | None:
    if at_d is None:
        return None
    if isinstance(at_d, dict):
        return (at_d["base_offset"], at_d["last_offset"], at_d["crc"])
    return tuple(at_d)
