"""Replicas of a compacted topic, compared below their log cleaners' points by the records the cleaner keeps.

Each broker's log cleaner rewrites its own replica's closed segments on its own
schedule, so below the cleaner points replicas that hold the same data carry
different batches. What the cleaner does (apache/kafka
core/src/main/scala/kafka/log/LogCleaner.scala, `Cleaner.doClean`, `cleanInto`,
`shouldRetainRecord`; storage/.../internals/log/Cleaner.java from 4.x):

- it cleans the segments below `endOffset` = the offset map's latest offset + 1,
  which it then writes to the log dir's `cleaner-offset-checkpoint`
  (`LogCleanerManager.doneCleaning`), never past the active segment or the last
  stable offset (`LogCleanerManager.cleanableOffsets`);
- a record is kept when it is the latest of its key in that map (a record
  above the map's latest offset is always kept); a tombstone (null value) is
  kept until `delete.retention.ms` after it was first cleaned (the batch's
  delete horizon); a record without a key is dropped; aborted transactional data
  is dropped, and a transaction marker once its data is gone and its horizon
  passed (`CleanedTransactionMetadata`);
- a rewritten v2 batch keeps its base and last offset and every kept record its
  offset, key, value and headers (`MemoryRecords.filterTo` ->
  `buildRetainedRecordsInto`, `overrideLastOffset`); its CRC changes, and a
  batch left empty is dropped unless it holds a producer's last sequence or
  ends the cleaning round.

So below C = the higher of two replicas' cleaner points, a record one replica
holds and the other does not is explained when the other's cleaner could have
removed it: the offset is below the other's cleaner point, the other's epoch
cache gives that offset the record's leader epoch (the other held the same
write), and the record is a tombstone, keyless, transactional or a marker, or a
later record of its key below C is held by either replica. Two different records at one offset, or a
record no cleaning explains, is a divergence at that offset. At and above C the
existing rule stands: batch by batch, offsets and CRC.

The cleaner does not touch the leader-epoch cache (`UnifiedLog.replaceSegments`
replaces segments only), so an epoch whose first batches were cleaned away
keeps its checkpointed start below the first batch that still carries it
(`replica.contradicted_entries`).

Memory: one entry per distinct key below C (a 16-byte digest and an offset),
the bound the broker's own cleaner lives with (its offset map,
`log.cleaner.dedupe.buffer.size`); the records themselves are streamed.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from replog.formats.errors import FormatError, ReplogError
from replog.formats.fileio import mapped
from replog.formats.fileview import readable
from replog.formats.kafka.blocks import BatchBlock
from replog.formats.kafka.partition_files import is_live_segment
from replog.formats.kafka.segment import BatchInfo, batch_records
from replog.recovery.kafka.epoch_cache import EpochCache
from replog.recovery.kafka.replica_log import ReplicaLog

COMPACT, DELETE = "compact", "delete"
POLICIES = (COMPACT, DELETE)


def is_compacted(policy: str | None) -> bool | None:
    """Whether a `cleanup.policy` value ("compact", "delete", "compact,delete") compacts; None when unknown."""
    if policy is None:
        return None
    return COMPACT in {p.strip() for p in policy.split(",")}


def cleaner_point(cleaner_offset: int | None, checkpointed: bool, last_segment_base: int | None,
                  log_start: int, log_end: int, policy: str | None = None, signs_end: int | None = None) -> int:
    """Below which offset this replica's cleaner may have rewritten its batches (`log_start`: nowhere).

    Its log dir's `cleaner-offset-checkpoint` entry when it has one, or past it where the batches show
    the cleaner's hand (`signs_end`, `CleaningSigns`: a follower copies the leader's cleaned batches
    without moving its own checkpoint), when a cleaner is known to be at work (the log dir has that
    checkpoint, or the topic compacts). A topic known not to compact (`policy` "delete") is never
    cleaned. A topic known to compact whose log dir has no such checkpoint (a partition dir copied
    alone) may be cleaned up to its active segment, which the cleaner never touches. Clamped to the
    log, as `LogCleanerManager.cleanableOffsets` resets a checkpoint outside it."""
    compacted = is_compacted(policy)
    if compacted is False:
        return log_start
    point = cleaner_offset
    if point is None and compacted and not checkpointed:
        point = last_segment_base
    signs = signs_end if checkpointed or compacted else None   # only where a cleaner is known to be at work
    point = max(p for p in (point, signs, log_start) if p is not None)
    return min(point, log_end)


class CleaningSigns:
    """Where a log's v2 batches show the cleaner's hand, whatever its checkpoint says: an offset gap
    between consecutive batches or from the first segment's base offset, fewer records than the batch's
    offsets span, or a delete horizon (`MemoryRecords.filterTo` stamps it on a batch it cleaned). None
    of them happens to a log the cleaner never touched (appends, truncation and DeleteRecords leave
    offsets contiguous). `end`: past the last batch showing one (None: none does)."""

    def __init__(self) -> None:
        self.prev_last: int | None = None
        self.end: int | None = None

    def feed(self, block: BatchBlock, segment_base: int) -> None:
        """The kept batches of a segment's block, in log order."""
        if not len(block):
            return
        base, last = block.base_offset, block.last_offset
        before = segment_base - 1 if self.prev_last is None else self.prev_last
        prev = np.concatenate(([before], last[:-1]))
        v2 = block.magic == 2
        signs = v2 & ((base > prev + 1) | (block.count < last - base + 1) | (block.has_delete_horizon == 1))
        if signs.any():
            top = int(last[signs].max()) + 1
            self.end = top if self.end is None else max(self.end, top)
        self.prev_last = int(last[-1])


class Kept(NamedTuple):
    """One record as the cleaner judges it: its offset, key digest (None: no key) and whole-record digest."""

    offset: int
    key: bytes | None
    digest: bytes
    removable: bool   # a cleaner may drop it whatever follows: tombstone, keyless, transactional or marker
    epoch: int        # its batch's partition leader epoch (-1: none, message format v0/v1)


def _digest(*parts: bytes | None) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    for p in parts:
        h.update(b"\x00" if p is None else b"\x01" + len(p).to_bytes(4, "big") + p)
    return h.digest()


def records(log: ReplicaLog, lo: int, hi: int) -> Iterator[Kept]:
    """The records of an ordered `log` with offsets in [lo, hi), in offset order, one batch decoded at a time
    (a live segment read window by window, as `replay.sample_keys` reads it)."""
    for piece in log.from_offset(lo).pieces:
        with mapped(piece.file, live=is_live_segment(piece.file), windows=True) as buf:
            for block in piece.blocks():
                for i in range(len(block)):
                    info = block.row(i)
                    if info.base_offset >= hi:
                        return
                    readable(buf, info.position, info.end)
                    yield from _batch(buf, info, lo, hi)


def _batch(buf: memoryview, info: BatchInfo, lo: int, hi: int) -> Iterator[Kept]:
    """The records of one batch in [lo, hi); a marker's record carries no key (it is no data of a key)."""
    try:
        recs = batch_records(buf, info)
    except (FormatError, ReplogError) as e:
        raise ReplogError(f"records of the batch at offset {info.base_offset} cannot be decoded to compare "
                          f"compacted replicas: {e}") from None
    removable_batch = info.is_control or info.is_transactional
    # what the cleaner keeps of a batch besides its records (`MemoryRecords.buildRetainedRecordsInto`)
    writer = b"%d/%d" % (info.producer_id, info.producer_epoch)
    for r in recs:
        if lo <= r.offset < hi:
            key = None if r.key is None or info.is_control else _digest(r.key)
            headers = b"".join(_digest(k.encode(), v) for k, v in r.headers)
            stamp = r.timestamp.to_bytes(8, "big", signed=True)
            yield Kept(r.offset, key, _digest(r.key, r.value, headers, writer, stamp),
                       removable_batch or key is None or r.value is None, info.partition_leader_epoch)


def latest_offsets(log: ReplicaLog, lo: int, hi: int) -> dict[bytes, int]:
    """Each key's highest offset among the records in [lo, hi), tombstones and transactional records included
    (an aborted record is no later record to the cleaner, so counting it only ever explains more)."""
    out: dict[bytes, int] = {}
    for r in records(log, lo, hi):
        if r.key is not None:
            out[r.key] = r.offset
    return out


@dataclass(frozen=True)
class Side:
    """One replica in a comparison below C: its log, cleaner point, log end and leader-epoch cache."""

    log: ReplicaLog
    cleaned_below: int
    end: int
    epochs: EpochCache | None = None
    epochs_exact: bool = False   # the cache is the broker's own (its leader-epoch-checkpoint), not rebuilt


def first_record_difference(a: Side, b: Side, lo: int, hi: int) -> int | None:
    """The lowest offset in [lo, hi) where the replicas hold records no cleaning explains, else None.

    One offset held by both must hold the same record (key, value, headers, timestamp) from the same
    producer (id, epoch) in the same leader epoch, which the cleaner all keeps;
    one held by one only must be explained (`_explained`). A key's later record is its highest offset
    below `hi` in either replica: one number per key, so a chain of records the cleaners dropped one
    after the other explains the earlier ones (the permissive side: no false divergence)."""
    if lo >= hi:
        return None
    later = latest_offsets(a.log, lo, hi)
    for key, offset in latest_offsets(b.log, lo, hi).items():
        if later.get(key, -1) < offset:
            later[key] = offset
    xs, ys = records(a.log, lo, hi), records(b.log, lo, hi)
    x, y = next(xs, None), next(ys, None)
    while x is not None or y is not None:
        if x is not None and y is not None and x.offset == y.offset:
            if x.digest != y.digest or x.epoch != y.epoch:   # the cleaner keeps a batch's epoch
                return x.offset
            x, y = next(xs, None), next(ys, None)
        elif y is None or (x is not None and x.offset < y.offset):
            assert x is not None
            if not _explained(x, b, later):
                return x.offset
            x = next(xs, None)
        else:
            if not _explained(y, a, later):
                return y.offset
            y = next(ys, None)
    return None


def _explained(r: Kept, other: Side, later: dict[bytes, int]) -> bool:
    """Whether `other` may lack `r`: its log ends before it, or its cleaner could have removed it.

    Only a record `other` once held can have been cleaned away there: its epoch cache, which the cleaner
    leaves alone, must give the offset the epoch `r`'s batch carries (another epoch there is another
    leader's write: the logs parted, as the broker's own truncation by epoch tells). A cache rebuilt from
    cleaned batches (no checkpoint) starts epochs late, so it only proves a higher epoch there."""
    if r.offset >= other.end:
        return True
    if r.offset >= other.cleaned_below:
        return False
    if r.epoch >= 0 and other.epochs is not None:
        held = other.epochs.epoch_for_offset(r.offset)
        if held is not None and (held > r.epoch or other.epochs_exact and held != r.epoch):
            return False
    return r.removable or (r.key is not None and later.get(r.key, -1) > r.offset)


@dataclass(frozen=True)
class CompactionDifference:
    """Replicas whose batches differ below `up_to` (the higher cleaner point) while the records the cleaner
    keeps agree: the cleaners ran at different points, nothing diverged."""

    first_offset: int     # where their batches first differ
    up_to: int            # below it records were compared as the cleaner keeps them; batches from it on

    def to_dict(self) -> dict[str, int]:
        return {"first_offset": self.first_offset, "up_to": self.up_to}
