"""Replicas of a compacted topic on disk, cleaned as Kafka's log cleaner cleans them (helpers, not tests).

`clean` follows apache/kafka core/src/main/scala/kafka/log/LogCleaner.scala (`Cleaner.cleanInto`,
`shouldRetainRecord`) on the records below the cleaner's end offset: a record survives when it is the
latest of its key there; a tombstone survives until its delete horizon has passed (`tombstones_expired`);
a batch kept whole without a tombstone keeps its bytes, one holding a tombstone is rewritten with the
delete horizon stamped (`MemoryRecords.filterTo`), keeping its base and last offset; a batch left empty
is dropped unless it ends the round. Records at or past the end offset are kept as they are.
"""
from __future__ import annotations

from pathlib import Path

from replog.formats.fileio import atomic_write
from replog.formats.kafka import batch as v2
from replog.formats.kafka import checkpoint, names
from replog.recovery.kafka.writer import write_partition

TS = 1_700_000_000_000
Raw = tuple[int, bytes, bytes | None, int]   # offset, key, value (None: tombstone), leader epoch


def history(rounds: int, keys: int = 4, epoch_at: dict[int, int] | None = None) -> list[Raw]:
    """`rounds` rounds of one record per key (`k0`..), one batch each; in round r key r mod `keys` is
    deleted (a tombstone). `epoch_at`: {offset: leader epoch from it on}."""
    out: list[Raw] = []
    epoch = 0
    for r in range(rounds):
        for k in range(keys):
            offset = len(out)
            epoch = (epoch_at or {}).get(offset, epoch)
            out.append((offset, f"k{k}".encode(), None if k == r % keys else f"r{r}k{k}".encode(), epoch))
    return out


def clean(raw: list[Raw], end: int, horizon: int = TS + 86_400_000, tombstones_expired: bool = False) -> list[bytes]:
    """One-record batches of `raw`, those below `end` cleaned as the cleaner cleans them."""
    latest = {key: offset for offset, key, _, _ in raw if offset < end}
    out = []
    for offset, key, value, epoch in raw:
        record = v2.Record(offset, TS + offset, key, value)
        kept = offset >= end or latest[key] == offset and (value is not None or not tombstones_expired)
        if kept and (offset >= end or value is not None):
            out.append(v2.build_batch([record], base_offset=offset, partition_leader_epoch=epoch))
        elif kept or offset == end - 1:   # the round's last batch is kept, even empty
            out.append(v2.build_batch([record] if kept else [], base_offset=offset, partition_leader_epoch=epoch,
                                      delete_horizon=horizon, last_offset_delta=0))
    return out


def raw_batches(raw: list[Raw]) -> list[bytes]:
    return clean(raw, 0)


def compacted_replica(root: Path, name: str, batches: list[bytes], *, hw: int, cleaner: int | None = None,
                      epochs: list[tuple[int, int]] | None = None, segment_bytes: int = 1 << 20) -> Path:
    """A log dir `root/name` with `t-0` holding `batches`, its high watermark, its cleaner checkpoint when
    `cleaner` is given (else none: a broker whose cleaner never ran), and `epochs` as its leader-epoch
    checkpoint when given (the cleaner leaves the cache as it was before it removed batches)."""
    log_dir = root / name
    part = log_dir / "t-0"
    write_partition(part, batches, segment_bytes=segment_bytes)
    atomic_write(log_dir / names.REPLICATION_OFFSET_CHECKPOINT, checkpoint.build_offset_checkpoint({("t", 0): hw}))
    if cleaner is not None:
        atomic_write(log_dir / names.CLEANER_OFFSET_CHECKPOINT,
                     checkpoint.build_offset_checkpoint({("t", 0): cleaner}))
    if epochs is not None:
        atomic_write(part / names.LEADER_EPOCH_CHECKPOINT, checkpoint.build_leader_epoch_checkpoint(epochs))
    return part
