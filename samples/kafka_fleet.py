"""A realistic three-broker Kafka fleet with planted damage and divergence.

`generate_kafka_fleet(out)` writes `out/broker-1..3` (log dirs a broker could
start from, written only with replog's own writers), `out/README.txt` and
`out/PLANTED.json`, the list of every defect and divergence planted, where it
is and which finding a correct scanner must report. The same seed gives the
same bytes: one `random.Random(seed)`, a fixed clock, fixed file dates.

The story: broker-3 led `orders-2` in epoch E, appended batches no follower
fetched and crashed (no clean shutdown, preallocated tails left behind, a
torn append, a cleaner swap and a retention deletion cut short); broker-1
took over in epoch E+1 and wrote other batches at the same offsets.
broker-2 fell behind on `payments-0` and dropped out of its ISR.
"""
from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from replog.formats.errors import UnsafeOutput
from replog.formats.fileio import atomic_write
from replog.formats.kafka import checkpoint, names
from replog.formats.kafka.clean_shutdown import CleanShutdown, build_clean_shutdown
from replog.formats.kafka.meta_properties import MetaProperties, build_meta_properties
from replog.formats.kafka.partition_metadata import uuid_to_topic_id
from replog.formats.kafka.segment import SegmentWalk
from replog.recovery.kafka.writer import WrittenPartition, write_partition
from replog.samples import damage, kafka_topics
from replog.samples.kafka_topics import TS0
from replog.samples.manifest import (
    GENERATOR,
    MANIFEST_NAME,
    Divergence,
    FleetManifest,
    PlantedDamage,
    ReplicaInfo,
    TopicInfo,
)

BROKER_COUNT = 3
GENERATED_AT = datetime.fromtimestamp(TS0 // 1000 + 7 * 86_400, tz=UTC)  # meta.properties date line
CLEAN = {"broker-1": True, "broker-2": True, "broker-3": False}
ORDERS_SEGMENT_BYTES = 64 << 10


@dataclass
class PartitionPlan:
    """One partition: the bytes each broker's replica holds and who is in sync."""

    topic: str
    partition: int
    leader: str
    replicas: dict[str, list[bytes]]
    in_sync: set[str]
    segment_bytes: int
    hw_override: dict[str, int] = field(default_factory=dict)
    leader_log: list[bytes] = field(default_factory=list)
    first_dirty_offset: int | None = None   # compacted topics the cleaner has passed over

    @property
    def dir(self) -> str:
        return f"{self.topic}-{self.partition}"


def next_offset(batches: list[bytes]) -> int:
    """Offset after the last batch (0 for none)."""
    if not batches:
        return 0
    info = next(SegmentWalk(batches[-1], "<batch>").batches())
    return info.next_offset


def _lagging(rng: random.Random, log: list[bytes], leader: str, lags: dict[str, tuple[int, int]],
             ) -> dict[str, list[bytes]]:
    """Each follower holds a prefix of the leader log, `lag` batches short."""
    out = {leader: list(log)}
    for broker, (lo, hi) in lags.items():
        out[broker] = log[:len(log) - rng.randint(lo, hi)]
    return out


def _plans(rng: random.Random, scale: int) -> tuple[list[PartitionPlan], kafka_topics.DivergentOrders,
                                                    kafka_topics.CompactedLog]:
    every = 30
    plans: list[PartitionPlan] = []
    leaders = {0: "broker-1", 1: "broker-2"}
    for p, leader in leaders.items():
        log = kafka_topics.orders_log(rng, p, 160 * scale, every)
        followers = {b: ((2, 4) if b == "broker-3" else (0, 2)) for b in ("broker-1", "broker-2", "broker-3")
                     if b != leader}
        plans.append(PartitionPlan("orders", p, leader, _lagging(rng, log, leader, followers),
                                   {"broker-1", "broker-2", "broker-3"}, ORDERS_SEGMENT_BYTES, leader_log=log))
    div = kafka_topics.divergent_orders_log(rng, 2, 140 * scale, every)
    new_log = div.common + div.new
    plans.append(PartitionPlan("orders", 2, "broker-1",
                               {"broker-1": new_log, "broker-2": new_log[:-2], "broker-3": div.common + div.lost},
                               {"broker-1", "broker-2"}, ORDERS_SEGMENT_BYTES,
                               hw_override={"broker-3": div.divergent_offset}, leader_log=new_log))
    pay = kafka_topics.payments_log(rng, 150 * scale, 60 * scale)
    pay_lag3 = rng.randint(0, 1)
    plans.append(PartitionPlan("payments", 0, "broker-1",
                               {"broker-1": pay, "broker-2": pay[:-12], "broker-3": pay[:len(pay) - pay_lag3]},
                               {"broker-1", "broker-3"}, 32 << 10, leader_log=pay))
    users = kafka_topics.users_log(rng, 60 * scale)
    plans.append(PartitionPlan("users", 0, "broker-2",
                               _lagging(rng, users.batches, "broker-2", {"broker-1": (0, 1), "broker-3": (0, 1)}),
                               {"broker-1", "broker-2", "broker-3"}, 8 << 10, leader_log=users.batches,
                               first_dirty_offset=users.first_dirty_offset))
    legacy = kafka_topics.legacy_log(rng, 60 * scale)
    plans.append(PartitionPlan("legacy-events", 0, "broker-1",
                               {b: list(legacy) for b in ("broker-1", "broker-2", "broker-3")},
                               {"broker-1", "broker-2", "broker-3"}, 4 << 10, leader_log=legacy))
    commits = kafka_topics.group_commits(rng, 40 * scale, {p.dir: p.leader_log for p in plans})
    offsets = kafka_topics.consumer_offsets_log(rng, commits + kafka_topics.orders2_commits(div))
    plans.append(PartitionPlan("__consumer_offsets", 0, "broker-2",
                               _lagging(rng, offsets, "broker-2", {"broker-1": (0, 1), "broker-3": (0, 2)}),
                               {"broker-1", "broker-2", "broker-3"}, 16 << 10, leader_log=offsets))
    writers = {pid: (f"payments-writer-{pid - 5000}", at) for pid, at in kafka_topics.last_markers(pay).items()}
    txn_state = kafka_topics.transaction_state_log(div.txn, writers, ("orders", 2))
    plans.append(PartitionPlan("__transaction_state", 0, "broker-2",
                               {b: list(txn_state) for b in ("broker-1", "broker-2", "broker-3")},
                               {"broker-1", "broker-2", "broker-3"}, 16 << 10, leader_log=txn_state))
    return plans, div, users


_TOPICS = {
    "orders": (False, ("3 partitions; idempotent producer; none/gzip/snappy/lz4/zstd per batch; headers; "
                       "leader epoch +1 every 30 batches; 64 KiB segments; orders-2 also holds two transactions of "
                       f"{kafka_topics.TXN_ID!r} (producer id {kafka_topics.TXN_PRODUCER_ID})")),
    "payments": (False, "3 transactional producers, COMMIT and ABORT markers interleaved (.txnindex)"),
    "users": (True, "compacted once: offset gaps inside batches, empty batches, delete horizon, tombstones"),
    "legacy-events": (False, "magic 0 then magic 1 messages, some compressed wrappers; no leader epochs"),
    "__consumer_offsets": (True, ("offset commits of groups billing and fraud-check, and of shipping (with leader "
                                 "epochs), audit and reporting on orders-2 (OffsetCommitKey v1, value v3)")),
    "__transaction_state": (True, "the coordinator's records of the orders-2 transactions and the payments producers"),
}


def _uuid(rng: random.Random) -> str:
    return uuid_to_topic_id(uuid.UUID(int=rng.getrandbits(128)))


def generate_kafka_fleet(out: Path, *, seed: int = 7, brokers: int = 3, scale: int = 1) -> FleetManifest:
    """Write the sample fleet under `out` (new or empty) and return its manifest."""
    out = Path(out)
    if brokers != BROKER_COUNT:
        raise ValueError(f"the planted scenarios need exactly {BROKER_COUNT} brokers, not {brokers}")
    if scale < 1:
        raise ValueError(f"scale must be at least 1, not {scale}")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UnsafeOutput(f"{out} exists and is not an empty directory")
    rng = random.Random(seed)
    cluster_id = _uuid(rng)
    topic_ids = {t: _uuid(rng) for t in _TOPICS}
    plans, div, users = _plans(rng, scale)
    broker_names = [f"broker-{i}" for i in range(1, brokers + 1)]
    manifest = FleetManifest(GENERATOR, seed, scale, cluster_id, broker_names, dict(CLEAN))
    manifest.topics = [TopicInfo(t, sum(1 for p in plans if p.topic == t), topic_ids[t], compacted, text)
                       for t, (compacted, text) in _TOPICS.items()]
    written: dict[tuple[str, str], WrittenPartition] = {}
    for plan in plans:
        for broker in broker_names:
            written[(broker, plan.dir)] = write_partition(
                out / broker / plan.dir, plan.replicas[broker], segment_bytes=plan.segment_bytes,
                topic_id=topic_ids[plan.topic])
    log_starts = _plant_segment_damage(out, plans, users, manifest)
    _write_broker_files(out, plans, written, log_starts, manifest)
    manifest.divergences = _divergences(plans, div, written)
    manifest.damage += _hanging_transaction(div)
    manifest.notes.append("__consumer_offsets-0 and __transaction_state-0 are written with the encoders of "
                          "formats.kafka.internal")
    _write_readme(out, manifest)
    files = [p for p in out.rglob("*") if p.is_file()]
    manifest.total_bytes = sum(p.stat().st_size for p in files)
    manifest.file_count = len(files) + 1
    atomic_write(out / MANIFEST_NAME, manifest.to_json())
    return manifest


def _plan(plans: list[PartitionPlan], name: str) -> PartitionPlan:
    return next(p for p in plans if p.dir == name)


def _plant_segment_damage(out: Path, plans: list[PartitionPlan], users: kafka_topics.CompactedLog,
                          manifest: FleetManifest) -> dict[tuple[str, str], int]:
    """Apply the file-level damage; returns log start offsets that moved."""
    d = manifest.damage
    d.append(damage.flip_crc_in_middle_batch(out, "broker-2", out / "broker-2" / "orders-0"))
    orders1 = _plan(plans, "orders-1")
    torn_next = orders1.leader_log[len(orders1.replicas["broker-3"])]
    d.append(damage.tear_tail(out, "broker-3", out / "broker-3" / "orders-1", torn_next))
    d.append(damage.zero_tail_log(out, "broker-3", out / "broker-3" / "users-0"))
    d.extend(damage.zero_tail_indexes(out, "broker-3", out / "broker-3" / "payments-0"))
    d.append(damage.orphan_swap(out, "broker-3", out / "broker-3" / "users-0", 0, b"".join(users.cleaned_batches)))
    lost, log_start = damage.drop_oldest_log(out, "broker-3", out / "broker-3" / "orders-0")
    d.extend(lost)
    return {("broker-3", "orders-0"): log_start}


def _hw(plan: PartitionPlan, broker: str, written: dict[tuple[str, str], WrittenPartition]) -> int:
    """The high watermark a broker checkpointed: min LEO over the ISR, capped by its own LEO."""
    if broker in plan.hw_override:
        return plan.hw_override[broker]
    hw = min(written[(b, plan.dir)].log_end_offset for b in plan.in_sync)
    return min(hw, written[(broker, plan.dir)].log_end_offset)


def _write_broker_files(out: Path, plans: list[PartitionPlan], written: dict[tuple[str, str], WrittenPartition],
                        log_starts: dict[tuple[str, str], int], manifest: FleetManifest) -> None:
    for i, broker in enumerate(manifest.brokers, start=1):
        root = out / broker
        hws, recovery, starts = {}, {}, {}
        for plan in plans:
            w, tp = written[(broker, plan.dir)], (plan.topic, plan.partition)
            logs = sorted((root / plan.dir).glob("*.log"))
            hws[tp] = _hw(plan, broker, written)
            recovery[tp] = w.log_end_offset if CLEAN[broker] else w.segment_bases[-1]
            starts[tp] = log_starts.get((broker, plan.dir), 0)
            manifest.replicas.append(ReplicaInfo(
                broker, plan.dir, plan.topic, plan.partition, broker == plan.leader, broker in plan.in_sync,
                starts[tp], w.log_end_offset, hws[tp], recovery[tp], len(logs), sum(f.stat().st_size for f in logs)))
        if broker == "broker-2":
            leo = written[(broker, "legacy-events-0")].log_end_offset
            hws[("legacy-events", 0)] = leo + 7
        cp = checkpoint.build_offset_checkpoint(hws)
        atomic_write(root / names.REPLICATION_OFFSET_CHECKPOINT, cp)
        if broker == "broker-2":
            path = root / names.REPLICATION_OFFSET_CHECKPOINT
            manifest.damage.append(PlantedDamage(
                "KAFKA_HW_ABOVE_LEO", broker, "legacy-events-0", f"{broker}/{path.name}",
                damage.checkpoint_line_position(cp, "legacy-events", 0), leo + 7,
                damage.checkpoint_line_position(cp, "legacy-events", 0), len(f"legacy-events 0 {leo + 7}"),
                f"high watermark {leo + 7} checkpointed for a log that ends at {leo}"))
            next(r for r in manifest.replicas if r.broker == broker and r.dir == "legacy-events-0"
                 ).high_watermark = leo + 7
        atomic_write(root / names.RECOVERY_POINT_OFFSET_CHECKPOINT, checkpoint.build_offset_checkpoint(recovery))
        atomic_write(root / names.LOG_START_OFFSET_CHECKPOINT, checkpoint.build_offset_checkpoint(starts))
        atomic_write(root / names.CLEANER_OFFSET_CHECKPOINT, checkpoint.build_offset_checkpoint(
            {(p.topic, p.partition): min(p.first_dirty_offset, written[(broker, p.dir)].log_end_offset)
             for p in plans if p.first_dirty_offset is not None}))
        meta = MetaProperties.of(0, manifest.cluster_id, i)
        atomic_write(root / names.META_PROPERTIES, build_meta_properties(meta, when=GENERATED_AT))
        if CLEAN[broker]:
            atomic_write(root / names.CLEAN_SHUTDOWN, build_clean_shutdown(CleanShutdown(0, 4_294_967_296 * i + 42)))


def _hanging_transaction(div: kafka_topics.DivergentOrders) -> list[PlantedDamage]:
    """The enricher's second transaction, whose COMMIT marker only broker-3 holds: `doctor` on the brokers
    holding it open sees a coordinator that completed it (KAFKA_TXN_MARKER_MISSING); after the replay it
    hangs on the partition (`impact`)."""
    first = next(w.first_offset for w in reversed(div.txn) if not w.marker)
    return [PlantedDamage("KAFKA_TXN_MARKER_MISSING", broker, "orders-2", f"{broker}/orders-2", None, first, None, 0,
                          f"transaction of producer {kafka_topics.TXN_PRODUCER_ID} open from offset {first}: its "
                          f"COMMIT marker at {div.divergent_offset} is only on broker-3, which must truncate it")
            for broker in ("broker-1", "broker-2")]


def _impact(div: kafka_topics.DivergentOrders) -> dict[str, object]:
    """What `impact` must find for the divergence of orders-2."""
    return {"groups": {"billing": "unaffected", "reporting": "unaffected", "shipping": "will_detect_truncation",
                       "audit": "consumed_lost"},
            "hanging_transactions": [{"producer_id": kafka_topics.TXN_PRODUCER_ID,
                                      "first_offset": next(w.first_offset for w in reversed(div.txn)
                                                           if not w.marker)}],
            "producers_with_lost_writes": [1000 + 2]}


def _divergences(plans: list[PartitionPlan], div: kafka_topics.DivergentOrders,
                 written: dict[tuple[str, str], WrittenPartition]) -> list[Divergence]:
    orders2, pay = _plan(plans, "orders-2"), _plan(plans, "payments-0")
    leos = {p.dir: {b: written[(b, p.dir)].log_end_offset for b in p.replicas} for p in (orders2, pay)}
    return [
        Divergence("divergence", "orders", 2, "orders-2", "broker-1", leos["orders-2"],
                   _hw(orders2, "broker-1", written), div.divergent_offset, div.old_epoch + 1, div.old_epoch,
                   ["broker-3"], ["broker-1", "broker-2"], div.divergent_offset, div.lost_records,
                   [div.divergent_offset, div.lost_last_offset],
                   description=(f"broker-3 led epoch {div.old_epoch}, appended {len(div.lost)} batches "
                                f"({div.lost_records} records, the first a transaction's COMMIT marker) nobody "
                                f"fetched and crashed; broker-1 leads epoch {div.old_epoch + 1} and wrote other "
                                f"batches from offset {div.divergent_offset}; broker-3 must truncate to "
                                f"{div.divergent_offset}; groups shipping and audit had read the lost records"),
                impact=_impact(div)),
        Divergence("lag", "payments", 0, "payments-0", "broker-1", leos["payments-0"], _hw(pay, "broker-1", written),
                   lagging_replicas=["broker-2"], leader_side_replicas=["broker-1", "broker-3"],
                   description="broker-2 holds a clean prefix of the leader log and is out of the ISR"),
    ]


def _write_readme(out: Path, m: FleetManifest) -> None:
    lines = [f"replog sample Kafka fleet (seed {m.seed}, scale {m.scale}, cluster {m.cluster_id})", "",
             "Brokers (log dirs): " + ", ".join(
                 f"{b} ({'clean shutdown' if m.clean_shutdown[b] else 'crashed'})" for b in m.brokers),
             "Every partition has replication factor 3: one replica dir per broker.", "", "Topics:"]
    lines += [f"  {t.name:<20} {t.partitions} partition(s)  {t.description}" for t in m.topics]
    lines += ["", "Planted damage (what a correct scanner must report):"]
    lines += [f"  {d.code:<26} {d.file}" + (f" @ {d.position}" if d.position is not None else "")
              for d in m.damage]
    lines += ["", "Replicas that differ:"] + [f"  {v.dir}: {v.description}" for v in m.divergences]
    lines += ["", f"Every item above is listed with positions and offsets in {MANIFEST_NAME}."]
    atomic_write(out / "README.txt", ("\n".join(lines) + "\n").encode("utf-8"))
