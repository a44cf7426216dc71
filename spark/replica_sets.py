"""One `replicas` row from the per-replica facts Spark has joined: sides at the divergence, records at risk."""
from __future__ import annotations

from typing import Any

# -- replica sets ----------------------------------------------------------------------


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
        "records_at_risk": 0, "committed_at_risk": 0}
    d = next((r.get("divergent_offset") for r in reps if r.get("divergent_offset") is not None), None)
    if d is None:
        return row
    leader = _leader(reps)
    winner = _key(leader.get("at_d"))
    diverged = [r for r in reps if _key(r.get("at_d")) != winner and r.get("at_d") is not None]
    row.update(first_divergent_offset=d,
               kept=[r["broker"] for r in reps if _key(r.get("at_d")) == winner],
               diverged=[r["broker"] for r in diverged],
               behind=[r["broker"] for r in reps if r.get("at_d") is None and winner is not None],
               records_at_risk=max((r.get("records_from_d") or 0 for r in diverged), default=0),
               committed_at_risk=max((r.get("committed_from_d") or 0 for r in diverged), default=0))
    return row


def _leader(reps: list[dict[str, Any]]) -> dict[str, Any]:
    """The replica `replay` would elect from the same facts (`election.elect`; an unknown HW counts as 0)."""
    from replog.recovery.kafka.election import Candidate, elect

    name = elect([Candidate(str(k), r["high_watermark"] or 0, r["log_end_offset"], r["latest_epoch"])
                  for k, r in enumerate(reps)]).name
    return reps[int(name)]


def _key(at_d: Any) -> tuple[int, int, int] | None:
    if at_d is None:
        return None
    if isinstance(at_d, dict):
        return (at_d["base_offset"], at_d["last_offset"], at_d["crc"])
    return tuple(at_d)
