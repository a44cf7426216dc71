"""A Kafka replica as the replication protocol sees it: metadata only, bytes stay on disk.

`load_replica` brings a partition dir to what the broker's startup recovery
would leave (truncated at the first invalid batch, later segments dropped,
epoch cache corrected). Its batches stay on disk: the replica keeps a
`ReplicaLog` (pieces of segment files with counts, marks and epoch runs) and a
`Fingerprint` of its offsets for comparing replicas, so memory does not grow
with the log; a repair copies the pieces' bytes later.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from replog.formats.errors import FormatError, InputChanged, UnreadableInput, VanishedInput
from replog.formats.fileio import mapped, read_small, reading_pool
from replog.formats.findings import Finding, finding, from_unreadable
from replog.formats.kafka import checkpoint, names
from replog.formats.kafka.batch import BatchInfo
from replog.formats.kafka.blocks import FIELDS, ROW, BatchBlock, walk_blocks
from replog.formats.kafka.checkpoint import EpochEntry
from replog.formats.kafka.partition_files import list_partition_files
from replog.recovery.kafka import replica_log
from replog.recovery.kafka.compaction import CleaningSigns, cleaner_point
from replog.recovery.kafka.divergence import Fingerprint
from replog.recovery.kafka.epoch_cache import EpochCache
from replog.recovery.kafka.logdir import RisingEpochs, node_id, read_broker_checkpoints, use_fast_walk
from replog.recovery.kafka.replica_log import PieceBuilder, ReplicaLog
from replog.recovery.naming import broker_name
from replog.recovery.progress import Tally

# What `load_replica` reads from the log dir's checkpoints rather than the segments: the high watermark
# and the recovery point always; the log start offset when its checkpoint entry (not the first segment's
# base offset) decides it. `CHECKPOINT_INTERVALS`: how often a running broker writes each, by default.
CHECKPOINTED = ("high_watermark", "recovery_point", "log_start_offset")
CHECKPOINT_INTERVALS = {
    "high_watermark": (names.REPLICATION_OFFSET_CHECKPOINT, "replica.high.watermark.checkpoint.interval.ms", 5_000),
    "recovery_point": (names.RECOVERY_POINT_OFFSET_CHECKPOINT, "log.flush.offset.checkpoint.interval.ms", 60_000),
    "log_start_offset": (names.LOG_START_OFFSET_CHECKPOINT, "log.flush.start.offset.checkpoint.interval.ms", 60_000),
}


def batch_rows(log: ReplicaLog) -> list[BatchInfo]:
    """Every batch of `log` as its row view (`BatchInfo`), in log order: one object per batch, for small
    logs only (tests, pictures). The file a row lies in is its piece's (`Piece.file`)."""
    return [row for piece in log.pieces for block in piece.blocks() for row in block]


@dataclass
class Replica:
    name: str
    path: str
    topic: str
    partition: int
    log: ReplicaLog = field(default_factory=ReplicaLog)
    epochs: EpochCache = field(default_factory=EpochCache)
    log_start_offset: int = 0
    high_watermark: int = 0
    recovery_point: int = 0
    topic_id: str | None = None
    dropped_at_load: int = 0                 # batches at or past the first invalid one
    findings: list[Finding] = field(default_factory=list)
    fingerprint: Fingerprint | None = None   # of the log as loaded, when its offsets only grow
    # The log end a truncation inside a batch left past the last kept batch: Kafka drops the whole batch
    # but sets the log end to the target (`LocalLog.truncateTo` -> `updateLogEndOffset`). None once
    # anything is appended (or the log restarts).
    truncated_end: int | None = None
    broker_id: int | None = None             # node.id / broker.id of its log dir's meta.properties
    clean_shutdown: bool = False             # its log dir holds `.kafka_cleanshutdown`: a clean stop
    checkpointed: tuple[str, ...] = ()       # figures read from the log dir's checkpoints (`CHECKPOINTED`)
    # The log dir's `cleaner-offset-checkpoint` entry: below it its cleaner rewrote the batches (`compaction`).
    cleaner_offset: int | None = None
    cleaner_checkpointed: bool = False       # the log dir has a cleaner-offset-checkpoint (with or without entry)
    last_segment_base: int | None = None     # the active segment's base offset: no cleaner ever passes it
    epoch_checkpointed: bool = False         # its epochs come from its leader-epoch-checkpoint (the broker's)
    cleaning_signs_end: int | None = None    # past the last batch the cleaner visibly rewrote (`CleaningSigns`)
    log_start_checkpointed: int | None = None   # its log-start-offset-checkpoint entry (None: no entry)
    # Tiered storage (KIP-405): where its local segments start when the log start is below them (the records
    # between are held in remote storage); None when the partition has no remote storage (`tiered`).
    local_log_start_offset: int | None = None

    @property
    def local_start(self) -> int:
        """Where its local log starts: `UnifiedLog.localLogStartOffset`, the log start without remote storage."""
        return self.log_start_offset if self.local_log_start_offset is None else self.local_log_start_offset

    def cleaned_below(self, policy: str | None = None) -> int:
        """Below which offset its cleaner may have rewritten its batches (`compaction.cleaner_point`)."""
        return cleaner_point(self.cleaner_offset, self.cleaner_checkpointed, self.last_segment_base,
                             self.log_start_offset, self.log_end_offset, policy, self.cleaning_signs_end)

    @property
    def from_checkpoints(self) -> list[str]:
        """The figures that may lag what the broker knew: those read from checkpoints a running broker
        writes only now and then (`CHECKPOINT_INTERVALS`). A clean stop writes them fresh before the
        marker (apache/kafka core/src/main/scala/kafka/server/ReplicaManager.scala `shutdown` ->
        `checkpointHighWatermarks`; core/src/main/scala/kafka/log/LogManager.scala `shutdown` checkpoints
        recovery points and log start offsets, then writes `.kafka_cleanshutdown`), so with the marker
        none lags; a running broker has no marker (it deletes it once its logs are loaded)."""
        return [] if self.clean_shutdown else list(self.checkpointed)

    @property
    def kept_end(self) -> int:
        """Where the kept batches end (the local log start when there are none)."""
        return self.log.last_offset + 1 if self.log else self.local_start

    @property
    def log_end_offset(self) -> int:
        return self.kept_end if self.truncated_end is None else max(self.kept_end, self.truncated_end)

    @property
    def has_epochs(self) -> bool:
        return bool(self.epochs.entries)

    def copy(self) -> Replica:
        """A copy the protocol may change (the pieces are shared: they never change)."""
        return Replica(self.name, self.path, self.topic, self.partition, self.log.copy(),
                       EpochCache(self.epochs.entries), self.log_start_offset, self.high_watermark,
                       self.recovery_point, self.topic_id, self.dropped_at_load, list(self.findings),
                       truncated_end=self.truncated_end, broker_id=self.broker_id,
                       clean_shutdown=self.clean_shutdown, checkpointed=self.checkpointed,
                       cleaner_offset=self.cleaner_offset, cleaner_checkpointed=self.cleaner_checkpointed,
                       last_segment_base=self.last_segment_base, epoch_checkpointed=self.epoch_checkpointed,
                       cleaning_signs_end=self.cleaning_signs_end,
                       log_start_checkpointed=self.log_start_checkpointed,
                       local_log_start_offset=self.local_log_start_offset)


def default_name(path: Path) -> str:
    """The replica's default name: its broker log dir's name (`naming.broker_name`)."""
    log_dir = path.resolve().parent
    return broker_name(node_id(log_dir), log_dir.name or path.resolve().name)


def load_replica(path: str | os.PathLike[str], name: str | None = None, *,
                 fast_threshold: int | None = None, tally: Tally | None = None) -> Replica:
    """The replica as the broker would load it after an unclean shutdown.

    Segments larger than `fast_threshold` (default `logdir.FAST_WALK_BYTES`) are walked
    by the compiled kernel; the answer is the same either way (tested).
    """
    p = Path(path)
    parsed = names.parse_partition_dir(p.name)
    if parsed is None or not p.is_dir():
        raise UnreadableInput(f"{p}: not a Kafka partition directory")
    rep = Replica(name or default_name(p), str(p), parsed.topic, parsed.partition,
                  broker_id=node_id(p.resolve().parent))
    first_segment_base, rising = _load_batches(p, rep, fast_threshold, tally)
    cps = read_broker_checkpoints(p.parent)
    rep.findings.extend(cps.findings)
    tp = (rep.topic, rep.partition)
    rep.log_start_checkpointed = (cps.log_start_offsets or {}).get(tp)
    lso_cp = rep.log_start_checkpointed or 0
    rep.log_start_offset = max(lso_cp, first_segment_base if first_segment_base is not None else lso_cp)
    rep.cleaner_checkpointed = cps.cleaner_offsets is not None
    rep.cleaner_offset = (cps.cleaner_offsets or {}).get(tp)
    _load_epochs(p, rep, lso_cp, rising)
    hw = (cps.high_watermarks or {}).get(tp, 0)
    rep.high_watermark = min(max(hw, rep.log_start_offset), rep.log_end_offset)
    rep.recovery_point = min((cps.recovery_points or {}).get(tp, 0), rep.log_end_offset)
    rep.topic_id = _topic_id(p)
    rep.clean_shutdown = os.path.lexists(p.parent / names.CLEAN_SHUTDOWN)
    from_lso_checkpoint = first_segment_base is None or lso_cp > first_segment_base
    rep.checkpointed = CHECKPOINTED if from_lso_checkpoint else CHECKPOINTED[:2]
    return rep


def load_replicas(named: Sequence[tuple[str | None, str]], tally: Tally | None = None) -> list[Replica]:
    """`load_replica` of each (name, path), side by side on the machine's cores (at most 4 at once).

    Each load is its own walk over its own files (the kernels release the GIL), so a replay of three
    large replicas takes about the time of the longest two instead of the sum of three. In input order.
    `tally` counts each segment as it is walked."""
    if len(named) < 2:
        return [load_replica(path, name, tally=tally) for name, path in named]
    workers = max(1, min(4, os.cpu_count() or 1, len(named)))
    with reading_pool(workers, "replog-load") as pool:
        return list(pool.map(lambda item: load_replica(item[1], item[0], tally=tally), named))


def _load_batches(p: Path, rep: Replica, fast_threshold: int | None = None,
                  tally: Tally | None = None) -> tuple[int | None, list[EpochEntry]]:
    """Batches up to the first invalid one, as pieces; returns the first segment's base offset and the
    epoch candidates: (epoch, base offset) of kept v2 batches whose epoch exceeds every earlier one."""
    truncated, first_base, rising, fingerprint, signs = False, None, RisingEpochs(), Fingerprint(), CleaningSigns()
    files = list_partition_files(p)
    for base, seg_path in files.logs.items():
        first_base = base if first_base is None else first_base
        try:
            with mapped(seg_path, live=files.live(seg_path), windows=True) as buf:
                truncated = _load_segment(buf, str(seg_path), base, truncated, rep, (rising, fingerprint, signs),
                                          fast_threshold)
        except VanishedInput as e:
            raise InputChanged(f"{e}: the replica is changing under replay (a live broker?)") from None
        except UnreadableInput as e:
            # unreadable (not mappable under an address-space limit, say): a finding, as in doctor and ls,
            # and the log ends before it, as it does at a damaged batch
            rep.findings.append(from_unreadable(e, str(seg_path)))
            truncated = True
        if tally is not None:
            tally.done(seg_path)
    rep.last_segment_base = next(reversed(files.logs), None)
    rep.cleaning_signs_end = signs.end
    rep.fingerprint = fingerprint if rep.log.ordered else None
    return first_base, rising.starts


def _load_segment(buf: memoryview, path: str, base: int, truncated: bool, rep: Replica,
                  folds: tuple[RisingEpochs, Fingerprint, CleaningSigns], fast_threshold: int | None) -> bool:
    """One segment's batches up to the first invalid one into `rep` (none once `truncated`); whether the
    log is truncated after it."""
    kept = PieceBuilder(path, base)
    walk, blocks = walk_blocks(buf, path, base, use_fast_walk(len(buf), fast_threshold, buf), replica_log.BLOCK_ROWS)
    for block in blocks:
        n = 0 if truncated else int(np.searchsorted(block.end, walk.valid_bytes, side="right"))
        _keep(block[:n], kept, *folds[:2])
        folds[2].feed(block[:n], base)
        rep.dropped_at_load += len(block) - n
    rep.findings.extend(walk.findings)
    if kept:
        rep.log.pieces.append(kept.piece())
    return truncated or walk.valid_bytes < len(buf)


def _keep(block: BatchBlock, kept: PieceBuilder, rising: RisingEpochs, fingerprint: Fingerprint) -> None:
    kept.feed(block)
    fingerprint.feed(block)
    v2 = (block.magic == 2) & (block.partition_leader_epoch >= 0)
    rising.feed_columns(block.partition_leader_epoch[v2], block.base_offset[v2])


def _load_epochs(p: Path, rep: Replica, lso_checkpoint: int, rising: list[EpochEntry]) -> None:
    """Checkpoint replayed through assign, recovery's epoch rule, then trimmed to the log."""
    path = p / names.LEADER_EPOCH_CHECKPOINT
    if path.is_file():
        try:
            rep.epochs = EpochCache(checkpoint.parse_leader_epoch_checkpoint(read_small(path)))
            rep.epoch_checkpointed = True
        except (FormatError, ValueError):
            rep.epochs = EpochCache()
        rep.findings += contradicted_entries(str(path), rep.epochs, rising, rep.log_start_offset, rep.log_end_offset,
                                             rep.cleaned_below())
    for epoch, base_offset in rising:
        if rep.epochs.latest_epoch is None or epoch > rep.epochs.latest_epoch:
            rep.epochs.assign(epoch, base_offset)
    rep.epochs.truncate_from_end(rep.log_end_offset)
    rep.epochs.truncate_from_start(lso_checkpoint)


def contradicted_entries(path: str, cache: EpochCache, rising: list[EpochEntry], log_start: int,
                         log_end: int, cleaned_below: int | None = None) -> list[Finding]:
    """Checkpoint entries the batches contradict: inside the log, every entry must be where the batches'
    epoch rises (an epoch the batches never carry there, or a start elsewhere). The broker trusts its
    checkpoint all the same (`LeaderEpochFileCache` is loaded as is), so the replay uses it and says so;
    entries at or past the log end are an election's, written before any batch, and not checked.

    Below `cleaned_below` (the log cleaner's point) the cleaner may have removed an epoch's first batches,
    or all of them, and leaves the cache as it is (`compaction`): there an entry is contradicted only when
    the batches carry its epoch before its start."""
    loaded, derived = EpochCache(cache.entries), EpochCache(rising)
    for c in (loaded, derived):
        c.truncate_from_start(log_start)
    cleaned = log_start if cleaned_below is None else cleaned_below
    out = []
    for e in loaded.entries:
        where = next((r.start_offset for r in derived.entries if r.epoch == e.epoch), None)
        if e.start_offset < cleaned and (where is None or where >= e.start_offset):
            continue
        if log_start <= e.start_offset < log_end and e not in derived.entries:
            why = (f"the batches never carry epoch {e.epoch}" if where is None
                   else f"the batches start epoch {e.epoch} at {where}")
            out.append(finding("KAFKA_EPOCH_CHECKPOINT_MISMATCH", path, offset=e.start_offset,
                               message=f"entry (epoch {e.epoch}, start {e.start_offset}) contradicts the batches: "
                                       f"{why}; the broker uses the entry as it is"))
    return out


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
    rep = Replica(name, "", topic, partition, log_start_offset=log_start_offset)
    if batches:
        cols = np.zeros((len(FIELDS), len(batches)), dtype=np.int64)
        base, last, epoch = (np.array(c, dtype=np.int64) for c in zip(*batches, strict=True))
        for field_name, values in (("base_offset", base), ("last_offset", last), ("partition_leader_epoch", epoch),
                                   ("count", last - base + 1), ("size", 100), ("magic", 2),
                                   ("position", np.arange(len(batches)) * 100), ("producer_id", -1),
                                   ("crc", [hash(b) & 0xFFFFFFFF for b in batches])):
            cols[ROW[field_name]] = values
        block = BatchBlock(cols)
        builder, fingerprint = PieceBuilder("", 0, keep_rows=True), Fingerprint()
        builder.feed(block)
        fingerprint.feed(block)
        rep.log.pieces.append(builder.piece())
        rep.fingerprint = fingerprint if rep.log.ordered else None
    if epochs is None:
        for b, _last, e in batches:
            if e >= 0 and (rep.epochs.latest_epoch is None or e > rep.epochs.latest_epoch):
                rep.epochs.assign(e, b)
    else:
        rep.epochs = EpochCache(epochs)
    rep.high_watermark = high_watermark
    return rep
