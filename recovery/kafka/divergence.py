"""Where two replicas' logs part, and which batches a truncation really loses, without holding either log.

Batches are compared by (base offset, last offset, CRC), as the replay always
did. Loading records one digest per bucket of 2^16 offsets (`Fingerprint`);
two ordered logs whose buckets agree hold the same batches there, so the exact
batch-by-batch comparison starts at the first bucket that differs, and only
the bytes from there on are walked again.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

from replog.formats.jit import lazy_kernel
from replog.formats.kafka.blocks import BatchBlock
from replog.recovery.kafka.replica_log import ReplicaLog

BUCKET_BITS = 16
_M1, _M2, _M3 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def bucket_sums(base: np.ndarray, ubase: np.ndarray, ulast: np.ndarray, ucrc: np.ndarray,
                ids: np.ndarray, sums: np.ndarray, counts: np.ndarray) -> int:
    """Per run of batches in one bucket (base offset >> BUCKET_BITS): the bucket id, the wrapping sum
    of its batches' 64-bit hashes and their count, written to ids/sums/counts; returns how many runs.

    A batch's hash mixes (base offset, last offset, CRC) with splitmix64's finaliser. `ubase`,
    `ulast`, `ucrc` are the uint64 views of the columns (wrapping arithmetic in numba and numpy alike);
    `base` is the int64 column the bucket ids come from. Written once, compiled by `jit.kernel`."""
    k = -1
    for i in range(len(base)):
        x = ubase[i] * _M1
        x ^= ulast[i] + (ucrc[i] << np.uint64(32))
        x ^= x >> np.uint64(30)
        x *= _M2
        x ^= x >> np.uint64(27)
        x *= _M3
        x ^= x >> np.uint64(31)
        bucket = base[i] >> BUCKET_BITS
        if k < 0 or ids[k] != bucket:
            k += 1
            ids[k], sums[k], counts[k] = bucket, x, 0
        else:
            sums[k] += x
        counts[k] += 1
    return k + 1


_BUCKET_SUMS = lazy_kernel(bucket_sums)


@dataclass
class Fingerprint:
    """Per bucket of offsets (keyed by base offset), the sum of its batches' hashes and their count."""

    ids: list[np.ndarray] = field(default_factory=list)
    sums: list[np.ndarray] = field(default_factory=list)
    counts: list[np.ndarray] = field(default_factory=list)

    def feed(self, block: BatchBlock) -> None:
        """Add the kept batches of `block` (in log order; meaningful only for ordered logs)."""
        n = len(block)
        if not n:
            return
        base = np.ascontiguousarray(block.base_offset)
        ids, counts = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
        sums = np.empty(n, dtype=np.uint64)
        with np.errstate(over="ignore"):
            k = _BUCKET_SUMS(base, base.view(np.uint64), np.ascontiguousarray(block.last_offset).view(np.uint64),
                             np.ascontiguousarray(block.crc).view(np.uint64), ids, sums, counts)
        self.ids.append(ids[:k].copy())
        self.sums.append(sums[:k].copy())
        self.counts.append(counts[:k].copy())

    def table(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(bucket ids, sums, counts) with each bucket once."""
        if not self.ids:
            empty = np.empty(0, dtype=np.int64)
            return empty, empty.astype(np.uint64), empty
        ids, sums, counts = (np.concatenate(x) for x in (self.ids, self.sums, self.counts))
        heads = np.flatnonzero(np.concatenate(([True], ids[1:] != ids[:-1])))
        with np.errstate(over="ignore"):
            merged = ids[heads], np.add.reduceat(sums, heads), np.add.reduceat(counts, heads)
        self.ids, self.sums, self.counts = [merged[0]], [merged[1]], [merged[2]]
        return merged


def first_differing_bucket(a: Fingerprint, b: Fingerprint, at_least: int | None = None) -> int | None:
    """Lowest bucket id (from `at_least` on) where the two logs' batches may differ (None: they agree)."""
    ia, sa, ca = a.table()
    ib, sb, cb = b.table()
    ids = np.union1d(ia, ib)
    if not len(ids):
        return None
    pa_, pb_ = np.searchsorted(ia, ids), np.searchsorted(ib, ids)
    in_a = (pa_ < len(ia)) & (ia[np.minimum(pa_, len(ia) - 1)] == ids) if len(ia) else np.zeros(len(ids), bool)
    in_b = (pb_ < len(ib)) & (ib[np.minimum(pb_, len(ib) - 1)] == ids) if len(ib) else np.zeros(len(ids), bool)
    same = in_a & in_b
    same[same] = (sa[pa_[same]] == sb[pb_[same]]) & (ca[pa_[same]] == cb[pb_[same]])
    differ = np.flatnonzero(~same & (ids >= at_least if at_least is not None else True))
    return int(ids[differ[0]]) if len(differ) else None


def key_stream(log: ReplicaLog, offset: int) -> Iterator[np.ndarray]:
    """(base, last, crc) rows of the log's batches from the first one reaching `offset`, block by block."""
    for block in log.from_offset(offset).blocks():
        yield np.stack((block.base_offset, block.last_offset, block.crc))


def first_difference(a: ReplicaLog, b: ReplicaLog, start: int, skip_to: int | None = None) -> int | None:
    """Pair the batches of both logs from the first reaching `start`, in order; the first pair that
    differs gives max(min(base offsets), start). None when the shorter log ends first.

    `skip_to` (>= start) starts the pairing later, where both logs are known to agree before it."""
    at = start if skip_to is None else skip_to
    return first_difference_keys(key_stream(a, at), key_stream(b, at), start)


def first_difference_keys(xs: Iterable[np.ndarray], ys: Iterable[np.ndarray], start: int) -> int | None:
    """`first_difference` over two logs given as (3, n) blocks of (base, last, CRC) keys in log order,
    each from its first batch reaching the offset the pairing starts at: the one pairing rule for
    replay and for a fleet scan's replica sets."""
    xi, yi = iter(xs), iter(ys)
    x: np.ndarray | None = np.empty((3, 0), dtype=np.int64)
    y: np.ndarray | None = x
    while True:
        while x is not None and not x.shape[1]:
            x = next(xi, None)
        while y is not None and not y.shape[1]:
            y = next(yi, None)
        if x is None or y is None:
            return None
        n = min(x.shape[1], y.shape[1])
        bad = np.flatnonzero((x[:, :n] != y[:, :n]).any(axis=0))
        if len(bad):
            i = int(bad[0])
            return max(min(int(x[0, i]), int(y[0, i])), start)
        x, y = x[:, n:], y[:, n:]


def reaching(keys: np.ndarray, offset: int) -> np.ndarray:
    """The (3, n) keys of an ordered log from its first batch reaching `offset` (last offset >= it)."""
    return keys[:, np.searchsorted(keys[1], offset, side="left"):] if keys.shape[1] else keys


def _tail_keys(tail: ReplicaLog, lo: int, hi: int) -> np.ndarray:
    """(base, last, crc) of the ordered `tail`'s batches with base offsets in [lo, hi]."""
    parts = []
    for block in tail.from_offset(lo).blocks():
        sel = block.base_offset <= hi
        parts.append(np.stack((block.base_offset[sel], block.last_offset[sel], block.crc[sel])))
        if not sel.all():
            break
    return np.concatenate(parts, axis=1) if parts else np.empty((3, 0), dtype=np.int64)


def _missing_from_ordered(tail: ReplicaLog) -> Callable[[BatchBlock], np.ndarray]:
    """Mask of a block's batches absent from `tail` (ordered: at most one batch per base offset)."""
    def missing(block: BatchBlock) -> np.ndarray:
        if not len(block):
            return np.zeros(0, dtype=bool)
        keys = _tail_keys(tail, int(block.base_offset.min()), int(block.base_offset.max()))
        if not keys.shape[1]:
            return np.ones(len(block), dtype=bool)
        at = np.minimum(np.searchsorted(keys[0], block.base_offset), keys.shape[1] - 1)
        found = ((keys[0, at] == block.base_offset) & (keys[1, at] == block.last_offset)
                 & (keys[2, at] == block.crc))
        return ~found
    return missing


def _missing_from_set(tail: ReplicaLog) -> Callable[[BatchBlock], np.ndarray]:
    """The same for an unordered `tail` (a damaged log): its keys held as a set, bounded by the tail."""
    kept = {k for block in tail.blocks()
            for k in zip(block.base_offset.tolist(), block.last_offset.tolist(), block.crc.tolist(), strict=True)}

    def missing(block: BatchBlock) -> np.ndarray:
        keys = zip(block.base_offset.tolist(), block.last_offset.tolist(), block.crc.tolist(), strict=True)
        return np.fromiter((k not in kept for k in keys), dtype=bool, count=len(block))
    return missing


def lost_batches(removed: ReplicaLog, final: ReplicaLog) -> ReplicaLog:
    """The removed batches that the final log does not hold again (same offsets and CRC) past the
    lowest removed offset: what the replica really loses, in the order it removed them."""
    if not removed:
        return ReplicaLog()
    tail = final.from_offset(min(p.min_base for p in removed.pieces))
    ordered = tail.ordered and all(p.ordered for p in removed.pieces)
    return removed.where(_missing_from_ordered(tail) if ordered else _missing_from_set(tail))


@dataclass
class LostSummary:
    """What the lost batches hold, for the replay's `lost` object."""

    records: int = 0
    bytes: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    first_timestamp: int | None = None
    max_timestamp: int | None = None
    producer_ids: list[int] = field(default_factory=list)


def summarize_lost(lost: ReplicaLog) -> LostSummary:
    """Counts and the lowest and highest offsets lost from the pieces (several truncations remove
    pieces out of offset order); timestamps and producers from one walk of the lost bytes."""
    if not lost:
        return LostSummary()
    first_ts: int | None = None
    max_ts: int | None = None
    producers: set[int] = set()
    for block in lost.blocks():
        ts = block.first_timestamp[block.first_timestamp >= 0]
        if len(ts):
            first_ts = int(ts.min()) if first_ts is None else min(first_ts, int(ts.min()))
        if len(block):
            top = int(block.max_timestamp.max())
            max_ts = top if max_ts is None else max(max_ts, top)
        producers.update(np.unique(block.producer_id[block.producer_id >= 0]).tolist())
    return LostSummary(lost.records, lost.nbytes, min(p.min_base for p in lost.pieces),
                       max(p.max_last for p in lost.pieces), first_ts, max_ts, sorted(producers))
