"""A fleet scan's replica sets of a compacted topic are compared by replay's rule (one rule): batches that
differ below the cleaner points only as the cleaners left them are no divergence."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from replog.recovery.kafka.replica import batch_rows, load_replica
from replog.spark.replica_sets import FullScanReplica, replica_set_row
from tests.recovery.kafka.compacted import clean, compacted_replica, history

RAW = history(5)


def facts(part: Path, lower: int) -> FullScanReplica:
    """What the fleet's Spark join hands `replica_set_row` for one replica (its tail from `lower` on)."""
    rep = load_replica(part)
    tail = [b for b in batch_rows(rep.log) if b.last_offset >= lower]
    keys = np.array([[b.base_offset for b in tail], [b.last_offset for b in tail], [b.crc for b in tail]],
                    dtype=np.int64).reshape(3, len(tail))
    return FullScanReplica(part.parent.name, str(part.parent), rep.log_start_offset, rep.log_end_offset,
                       rep.high_watermark, rep.epochs.latest_epoch, lower, keys,
                       np.array([b.count for b in tail], dtype=np.int64))


def test_replicas_cleaned_at_different_points_are_no_divergent_set(tmp_path: Path) -> None:
    b2 = compacted_replica(tmp_path, "b2", clean(RAW, 16), hw=20, cleaner=16)
    b4 = compacted_replica(tmp_path, "b4", clean(RAW, 0), hw=20)
    row = replica_set_row("t", 0, [facts(b2, 0), facts(b4, 0)])
    assert row["first_divergent_offset"] is None, "a compaction difference is no divergence"
    assert row["compacted_up_to"] == 16, "where the batches differ only as the cleaners left them"


def test_a_divergence_above_the_cleaner_point_is_still_found(tmp_path: Path) -> None:
    other = [(o, k, v if o < 18 else b"x", e if o < 18 else 1) for o, k, v, e in RAW]
    b2 = compacted_replica(tmp_path, "b2", clean(RAW, 16), hw=20, cleaner=16)
    b3 = compacted_replica(tmp_path, "b3", clean(other, 8), hw=18, cleaner=8)
    row = replica_set_row("t", 0, [facts(b2, 0), facts(b3, 0)])
    assert row["first_divergent_offset"] == 18, "the divergence above the cleaner points"
    assert row["compacted_up_to"] == 16, "and the compaction difference below"


def test_without_cleaner_checkpoints_the_batch_pairing_stands(tmp_path: Path) -> None:
    """No cleaner point anywhere (a topic the cleaner never touched): batches differing at 4 diverge at 4."""
    other = [(o, k, b"x" if o == 4 else v, e) for o, k, v, e in RAW]
    a = compacted_replica(tmp_path, "a", clean(RAW, 0), hw=20)
    b = compacted_replica(tmp_path, "b", clean(other, 0), hw=20)
    row = replica_set_row("t", 0, [facts(a, 0), facts(b, 0)])
    assert (row["first_divergent_offset"], row["compacted_up_to"]) == (4, None), "batch pairing"
