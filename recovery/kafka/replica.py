"""A Kafka replica as the replication protocol sees it: metadata only, bytes stay on disk.

`load_replica` brings a partition dir to what the broker's startup recovery
would leave (truncated at the first invalid batch, later segments dropped,
epoch cache corrected) and keeps, per batch, where its bytes are so that a
repair can copy them later.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from itertools import repeat
from pathlib import Path
from typing import NamedTuple

from replog.formats.errors import FormatError, UnreadableInput
from replog.formats.fileio import mapped, read_small
from replog.formats.findings import Finding
from replog.formats.kafka import checkpoint, names
from replog.formats.kafka.blocks import ROW
from replog.formats.kafka.checkpoint import EpochEntry
from replog.formats.kafka.partition_files import list_partition_files
from replog.formats.kafka.segment import SegmentWalk
from replog.recovery.kafka.epoch_cache import EpochCache
from replog.recovery.kafka.logdir import RisingEpochs, node_id, read_broker_checkpoints, use_fast_walk
from replog.recovery.naming import broker_name


class BatchRef(NamedTuple):
    """Where a batch is and what the protocol needs to know about it."""

    base_offset: int
    last_offset: int
    epoch: int
    crc: int
    count: int  # type: ignore[assignment]  # the brokers' name; shadows tuple.count on purpose
    size: int
    magic: int
    first_timestamp: int
    max_timestamp: int
    producer_id: int
    file: str
    position: int


@dataclass
class Replica:
    name: str
    path: str
    topic: str
    partition: int
    batches: list[BatchRef] = field(default_factory=list)
    epochs: EpochCache = field(default_factory=EpochCache)
    log_start_offset: int = 0
    high_watermark: int = 0
    recovery_point: int = 0
    topic_id: str | None = None
    dropped_at_load: list[BatchRef] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def log_end_offset(self) -> int:
        return self.batches[-1].last_offset + 1 if self.batches else self.log_start_offset

    @property
    def has_epochs(self) -> bool:
        return bool(self.epochs.entries)

    def batch_index_at_or_after(self, offset: int) -> int:
        """Index of the first batch whose last offset is >= `offset` (bisect)."""
        lo, hi = 0, len(self.batches)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.batches[mid].last_offset < offset:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def copy(self) -> Replica:
        return Replica(self.name, self.path, self.topic, self.partition, list(self.batches),
                       EpochCache(self.epochs.entries), self.log_start_offset, self.high_watermark,
                       self.recovery_point, self.topic_id, list(self.dropped_at_load), list(self.findings))


def default_name(path: Path) -> str:
    """The replica's default name: its broker log dir's name (`naming.broker_name`)."""
    log_dir = path.resolve().parent
    return broker_name(node_id(log_dir), log_dir.name or path.resolve().name)


def load_replica(path: str | os.PathLike[str], name: str | None = None, *,
                 fast_threshold: int | None = None) -> Replica:
    """The replica as the broker would load it after an unclean shutdown.

    Segments larger than `fast_threshold` (default `logdir.FAST_WALK_BYTES`) are walked
    by the compiled kernel; the answer is the same either way (tested).
    """
    p = Path(path)
    parsed = names.parse_partition_dir(p.name)
    if parsed is None or not p.is_dir():
        raise UnreadableInput(f"{p}: not a Kafka partition directory")
    rep = Replica(name or default_name(p), str(p), parsed.topic, parsed.partition)
    first_segment_base, rising = _load_batches(p, rep, fast_threshold)
    cps = read_broker_checkpoints(p.parent)
    rep.findings.extend(cps.findings)
    tp = (rep.topic, rep.partition)
    lso_cp = (cps.log_start_offsets or {}).get(tp, 0)
    rep.log_start_offset = max(lso_cp, first_segment_base if first_segment_base is not None else lso_cp)
    _load_epochs(p, rep, lso_cp, rising)
    hw = (cps.high_watermarks or {}).get(tp, 0)
    rep.high_watermark = min(max(hw, rep.log_start_offset), rep.log_end_offset)
    rep.recovery_point = min((cps.recovery_points or {}).get(tp, 0), rep.log_end_offset)
    rep.topic_id = _topic_id(p)
    return rep


def _load_batches(p: Path, rep: Replica, fast_threshold: int | None = None) -> tuple[int | None, list[EpochEntry]]:
    """Batches up to the first invalid one; returns the first segment's base offset and the
    epoch candidates: (epoch, base offset) of kept v2 batches whose epoch exceeds every earlier one."""
    truncated, first_base, rising = False, None, RisingEpochs()
    for base, seg_path in list_partition_files(p).logs.items():
        first_base = base if first_base is None else first_base
        path = str(seg_path)
        with mapped(seg_path) as buf:
            if use_fast_walk(len(buf), fast_threshold):
                valid_bytes, found = _segment_refs_fast(buf, path, base, rep, truncated, rising)
            else:
                valid_bytes, found = _segment_refs(buf, path, base, rep, truncated, rising)
            rep.findings.extend(found)
            truncated = truncated or valid_bytes < len(buf)
    return first_base, rising.starts


def _segment_refs(buf: memoryview, path: str, base_offset: int, rep: Replica, truncated: bool,
                  rising: RisingEpochs) -> tuple[int, list[Finding]]:
    """The reference: one `BatchRef` per batch from `SegmentWalk`."""
    walk = SegmentWalk(buf, path, base_offset)
    for b in walk.batches():
        ref = BatchRef(b.base_offset, b.last_offset, b.partition_leader_epoch if b.magic == 2 else -1,
                       b.crc, b.count, b.size, b.magic, b.first_timestamp, b.max_timestamp,
                       b.producer_id, path, b.position)
        if truncated or b.end > walk.valid_bytes:
            rep.dropped_at_load.append(ref)
        else:
            rep.batches.append(ref)
            if ref.magic == 2 and ref.epoch >= 0:
                rising.feed(ref.epoch, ref.base_offset)
    return walk.valid_bytes, walk.findings


_REF_FIELDS = [ROW[name] for name in ("base_offset", "last_offset", "partition_leader_epoch", "crc", "count",
                                      "size", "magic", "first_timestamp", "max_timestamp", "producer_id")]


def _segment_refs_fast(buf: memoryview, path: str, base_offset: int, rep: Replica, truncated: bool,
                       rising: RisingEpochs) -> tuple[int, list[Finding]]:
    """`_segment_refs` from the kernel's batch blocks: no per-batch Python besides the BatchRef itself."""
    import numpy as np

    from replog.formats.kafka.fastwalk import FastWalk
    walk = FastWalk(buf, path, base_offset)
    for block in walk.blocks():
        pick = block.cols[_REF_FIELDS]
        magic = block.magic
        pick[2] = np.where(magic == 2, pick[2], -1)
        kept = 0 if truncated else int(np.searchsorted(block.end, walk.valid_bytes, side="right"))
        rows = [c.tolist() for c in pick] + [block.position.tolist()]
        refs = list(map(BatchRef._make, zip(*rows[:10], repeat(path), rows[10], strict=False)))
        rep.batches.extend(refs[:kept])
        rep.dropped_at_load.extend(refs[kept:])
        if kept:
            keep = (magic[:kept] == 2) & (pick[2, :kept] >= 0)
            rising.feed_columns(pick[2, :kept][keep], pick[0, :kept][keep])
    return walk.valid_bytes, walk.findings


def _load_epochs(p: Path, rep: Replica, lso_checkpoint: int, rising: list[EpochEntry]) -> None:
    """Checkpoint replayed through assign, recovery's epoch rule, then trimmed to the log."""
    path = p / names.LEADER_EPOCH_CHECKPOINT
    if path.is_file():
        try:
            rep.epochs = EpochCache(checkpoint.parse_leader_epoch_checkpoint(read_small(path)))
        except (FormatError, ValueError):
            rep.epochs = EpochCache()
    for epoch, base_offset in rising:
        if rep.epochs.latest_epoch is None or epoch > rep.epochs.latest_epoch:
            rep.epochs.assign(epoch, base_offset)
    rep.epochs.truncate_from_end(rep.log_end_offset)
    rep.epochs.truncate_from_start(lso_checkpoint)


def _topic_id(p: Path) -> str | None:
    from replog.formats.kafka.partition_metadata import parse_partition_metadata
    path = p / names.PARTITION_METADATA
    if not path.is_file():
        return None
    try:
        return parse_partition_metadata(read_small(path)).topic_id
    except (FormatError, UnreadableInput):
        return None


def replica_from_batches(name: str, batches: list[tuple[int, int, int]], *, high_watermark: int = 0,
                         epochs: list[tuple[int, int]] | None = None, log_start_offset: int = 0,
                         topic: str = "t", partition: int = 0) -> Replica:
    """An in-memory replica from (base_offset, last_offset, epoch) triples, for reasoning and tests."""
    refs = [BatchRef(b, last, e, hash((b, last, e)) & 0xFFFFFFFF, last - b + 1, 100, 2, 0, 0, -1, "", i * 100)
            for i, (b, last, e) in enumerate(batches)]
    rep = Replica(name, "", topic, partition, refs, log_start_offset=log_start_offset)
    if epochs is None:
        for r in refs:
            if r.epoch >= 0 and (rep.epochs.latest_epoch is None or r.epoch > rep.epochs.latest_epoch):
                rep.epochs.assign(r.epoch, r.base_offset)
    else:
        rep.epochs = EpochCache(epochs)
    rep.high_watermark = high_watermark
    return rep
