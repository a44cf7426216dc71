"""A small Kafka fleet for tests, written with replog's writers, with planted defects (helpers, not tests).

Three brokers, four topics x three partitions, replication factor 3 (topics
prefixed `fx.` so this fleet can be scanned next to the sample generator's). Planted:
- divergence: orders-1 on broker 3 holds other batches (old epoch 0) from offset 30;
- divergence by boundaries: payments-0 on broker 2 from offset 12;
- lag: events-2 on broker 1 ends at offset 21 (others at 60), no divergence;
- damage: a flipped CRC in orders-0 on broker 2 at offset 15; a torn tail in
  audit-1 on broker 1; HW above LEO for events-0 on broker 3.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from replog.formats.fileio import atomic_write
from replog.formats.kafka import batch as v2
from replog.formats.kafka import checkpoint, names
from replog.formats.kafka.meta_properties import MetaProperties, build_meta_properties
from replog.recovery.kafka.writer import write_partition
from tests.formats.kafka.segments import TS, data_batch

TOPICS = ("fx.orders", "fx.payments", "fx.events", "fx.audit")
PARTITIONS = 3
BROKERS = ("1", "2", "3")
PER = 3           # records per batch
BATCHES = 20      # batches per partition -> log end offset 60


@dataclass
class Planted:
    divergences: dict[tuple[str, int], int] = field(default_factory=dict)   # tp -> first divergent offset
    diverged: dict[tuple[str, int], list[str]] = field(default_factory=dict)
    lag: dict[tuple[str, int], str] = field(default_factory=dict)
    damage: list[tuple[str, str, int, str]] = field(default_factory=list)  # (broker, topic, partition, code)


def _history(tp: tuple[str, int], broker: str) -> list[bytes]:
    """Epoch 0 up to offset 30, epoch 1 after, except where a defect is planted."""
    common = [data_batch(i * PER, PER, epoch=0 if i < 10 else 1) for i in range(BATCHES)]
    if tp == ("fx.orders", 1) and broker == "3":      # the old leader's unreplicated writes
        return common[:10] + [_other_batch(i * PER) for i in (10, 11)]
    if tp == ("fx.payments", 0) and broker == "2":    # other batch boundaries from 12
        return common[:4] + [data_batch(12, 2 * PER, epoch=0)] + common[6:]
    if tp == ("fx.events", 2) and broker == "1":      # a lagging follower
        return common[:7]
    return common


def build_fleet(root: Path, segment_bytes: int = 700) -> Planted:
    planted = Planted(divergences={("fx.orders", 1): 30, ("fx.payments", 0): 12},
                      diverged={("fx.orders", 1): ["3"], ("fx.payments", 0): ["2"]},
                      lag={("fx.events", 2): "1"})
    for broker in BROKERS:
        log_dir = root / f"broker-{broker}"
        hws, rps = {}, {}
        for topic in TOPICS:
            for p in range(PARTITIONS):
                batches = _history((topic, p), broker)
                w = write_partition(log_dir / f"{topic}-{p}", batches, segment_bytes=segment_bytes)
                hws[(topic, p)] = min(w.log_end_offset, 21)
                rps[(topic, p)] = w.log_end_offset
        if broker == "3":
            hws[("fx.events", 0)] = 61
            hws[("fx.orders", 1)] = 33
        atomic_write(log_dir / names.REPLICATION_OFFSET_CHECKPOINT, checkpoint.build_offset_checkpoint(hws))
        atomic_write(log_dir / names.RECOVERY_POINT_OFFSET_CHECKPOINT, checkpoint.build_offset_checkpoint(rps))
        atomic_write(log_dir / names.META_PROPERTIES, build_meta_properties(
            MetaProperties.of(0, "fleet-test", int(broker)), when="Mon Jan 01 00:00:00 UTC 2024"))
    _flip_crc(root / "broker-2" / "fx.orders-0", offset=15)
    _tear_tail(root / "broker-1" / "fx.audit-1")
    planted.damage = [("2", "fx.orders", 0, "KAFKA_BATCH_CRC_MISMATCH"), ("1", "fx.audit", 1, "KAFKA_TORN_TAIL"),
                      ("3", "fx.events", 0, "KAFKA_HW_ABOVE_LEO")]
    return planted


def _other_batch(offset: int) -> bytes:
    recs = [v2.Record(offset + i, TS + offset + i, b"other", b"x" * 7) for i in range(PER)]
    return v2.build_batch(recs, base_offset=offset, partition_leader_epoch=0)


def _segment_holding(part: Path, offset: int) -> Path:
    logs = sorted(part.glob("*.log"))
    return [s for s in logs if names.parse_segment_file_name(s.name).base_offset <= offset][-1]


def _flip_crc(part: Path, offset: int) -> None:
    """Flip one byte in the records of the batch starting at `offset` (stored CRC no longer matches)."""
    from replog.formats.kafka.segment import SegmentWalk

    seg = _segment_holding(part, offset)
    data = bytearray(seg.read_bytes())
    info = next(b for b in SegmentWalk(bytes(data), str(seg)).batches() if b.base_offset == offset)
    data[info.end - 2] ^= 0xFF
    seg.write_bytes(bytes(data))


def _tear_tail(part: Path) -> None:
    seg = sorted(part.glob("*.log"))[-1]
    data = seg.read_bytes()
    seg.write_bytes(data[:-10])


def build_divergent_fleet(root: Path) -> tuple[str, int]:
    """Two brokers holding one partition that diverges from offset 30 and nothing else wrong with it.

    No finding of error severity anywhere: only the divergence can make a command exit 1.
    Returns the partition.
    """
    tp = ("fx.orders", 1)
    for broker in ("1", "3"):   # broker 3 holds the old leader's unreplicated writes from offset 30
        log_dir = root / f"broker-{broker}"
        w = write_partition(log_dir / f"{tp[0]}-{tp[1]}", _history(tp, broker), segment_bytes=700)
        atomic_write(log_dir / names.REPLICATION_OFFSET_CHECKPOINT,
                     checkpoint.build_offset_checkpoint({tp: min(w.log_end_offset, 21)}))
        atomic_write(log_dir / names.RECOVERY_POINT_OFFSET_CHECKPOINT,
                     checkpoint.build_offset_checkpoint({tp: w.log_end_offset}))
        atomic_write(log_dir / names.META_PROPERTIES, build_meta_properties(
            MetaProperties.of(0, "fleet-test", int(broker)), when="Mon Jan 01 00:00:00 UTC 2024"))
    return tp


CLUSTERS = {"alpha": "AlphaClusterId-0000001", "beta": "BetaClusterId-00000002", "old": None}


def build_clusters(root: Path) -> dict[str, list[Path]]:
    """Three groups of two brokers, `1` and `2`, each holding `fx.orders-0`: clusters alpha and beta (their
    own cluster.id, the same broker ids and topic, other data at the same offsets), and `old`, whose
    meta.properties names no cluster (a ZooKeeper broker before cluster.id). Within a group the two
    replicas agree. Returns the log dirs by group."""
    out: dict[str, list[Path]] = {}
    for k, (group, cluster_id) in enumerate(CLUSTERS.items()):
        for broker in (1, 2):
            log_dir = root / group / f"broker-{broker}"
            batches = [data_batch(i * PER, PER, epoch=0) if k == 0 else _other_batch(i * PER) if k == 1
                       else data_batch(i * PER, PER, epoch=2) for i in range(6)]
            w = write_partition(log_dir / "fx.orders-0", batches, segment_bytes=400)
            atomic_write(log_dir / names.REPLICATION_OFFSET_CHECKPOINT,
                         checkpoint.build_offset_checkpoint({("fx.orders", 0): w.log_end_offset}))
            atomic_write(log_dir / names.META_PROPERTIES, build_meta_properties(
                MetaProperties.of(0, cluster_id, broker), when="Mon Jan 01 00:00:00 UTC 2024"))
            out.setdefault(group, []).append(log_dir)
    return out
