"""The leader-epoch cache `recover` writes: the checkpoint replayed with the batches recovery keeps.

`KeptEpochs` is fed the kept batches block by block as recovery keeps them (never a
batch list); `recovered_epochs` then applies the broker's rules at load: the
checkpoint, the recovery rule for the scanned segments, `truncateFromEnd(LEO)` and
`truncateFromStart(log start)` (docs/reference/kafka.md §10.4; storage/.../epoch/LeaderEpochFileCache.java),
rebuilding the cache from the batches when the checkpoint contradicts them.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from replog.formats.errors import FormatError, UnreadableInput
from replog.formats.fileio import read_small
from replog.formats.findings import Finding, finding
from replog.formats.kafka import checkpoint, names
from replog.formats.kafka.blocks import BatchBlock
from replog.recovery.kafka.epoch_cache import EpochCache
from replog.recovery.kafka.rebuild import EpochRises


class EpochSpans:
    """Per epoch, the lowest and highest base offset of the kept v2 batches at or above the log start
    that carry it: all `_consistent` needs. A cache maps offsets to epochs by a non-decreasing step
    function, so it gives every batch of an epoch that epoch iff it gives it to the lowest and the
    highest. One pair per epoch, whatever the length of the log."""

    def __init__(self, log_start: int) -> None:
        self.log_start = log_start
        self.spans: dict[int, tuple[int, int]] = {}

    def feed(self, block: BatchBlock) -> None:
        rows = (block.magic == 2) & (block.partition_leader_epoch >= 0) & (block.base_offset >= self.log_start)
        if not rows.any():
            return
        epochs, starts = block.partition_leader_epoch[rows], block.base_offset[rows]
        if epochs.min() == epochs.max():  # the usual block: one epoch
            self._widen(int(epochs[0]), starts)
            return
        for epoch in np.unique(epochs).tolist():
            self._widen(epoch, starts[epochs == epoch])

    def _widen(self, epoch: int, starts: np.ndarray) -> None:
        low, high = int(starts.min()), int(starts.max())
        seen = self.spans.get(epoch)
        self.spans[epoch] = (low, high) if seen is None else (min(seen[0], low), max(seen[1], high))

    def consistent_with(self, cache: EpochCache) -> bool:
        return all(cache.epoch_for_offset(low) == epoch and cache.epoch_for_offset(high) == epoch
                   for epoch, (low, high) in self.spans.items())


class KeptEpochs:
    """What the epoch rebuild needs of the batches recovery keeps, fed as they are kept: the epoch rises
    of the scanned segments (replayed onto the checkpoint) and of all of them (the cache rebuilt when
    the checkpoint contradicts the batches), and the epochs' offset spans (the consistency check)."""

    def __init__(self, log_start: int) -> None:
        self.scanned, self.every, self.spans = EpochRises(), EpochRises(), EpochSpans(log_start)

    def feed(self, block: BatchBlock, *, scanned: bool) -> None:
        if scanned:
            self.scanned.feed(block)
        self.every.feed(block)
        self.spans.feed(block)


def recovered_epochs(pdir: Path, kept: KeptEpochs, leo: int, lso_cp: int, findings: list[Finding]) -> EpochCache:
    """The broker's cache (checkpoint + recovery rule + truncations); rebuilt from the batches
    when the checkpoint contradicts them (`findings` hears of it)."""
    cache = EpochCache()
    path = pdir / names.LEADER_EPOCH_CHECKPOINT
    if path.is_file():
        try:
            cache = EpochCache(checkpoint.parse_leader_epoch_checkpoint(read_small(path)))
        except (FormatError, UnreadableInput, ValueError) as e:
            findings.append(finding("KAFKA_CHECKPOINT_INVALID", str(path), message=f"{e}; rebuilt from batches"))
    kept.scanned.assign_to(cache)
    cache.truncate_from_end(leo)
    cache.truncate_from_start(lso_cp)
    if not kept.spans.consistent_with(cache):
        derived = EpochCache()
        kept.every.assign_to(derived)
        derived.truncate_from_end(leo)
        derived.truncate_from_start(lso_cp)
        findings.append(finding("KAFKA_EPOCH_CHECKPOINT_MISMATCH", str(path),
                                       message=f"checkpoint {[tuple(e) for e in cache.entries]} contradicts the "
                                               f"batches; written as rebuilt from them: "
                                               f"{[tuple(e) for e in derived.entries]}"))
        return derived
    return cache
