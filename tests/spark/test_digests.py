"""Digests by bucket: the replica comparison joins batch rows only in the suspect buckets, and finds
there the same first mismatch as a comparison of every batch (checked without Spark, on replica sets
drawn by hypothesis: retention, lag, divergence with other batch boundaries, log starts inside a batch)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from replog.spark.digests import BUCKET_BITS, block_digests, suspect_buckets
from replog.spark.tasks import _renamed

Batch = tuple[int, int, int]   # base offset, last offset, crc
W = 1 << BUCKET_BITS


def _log(sizes: list[int], crc_seed: int, start: int = 0) -> list[Batch]:
    out, base = [], start
    for k, n in enumerate(sizes):
        out.append((base, base + n - 1, (crc_seed * 1_000_003 + k) % (1 << 32)))
        base += n
    return out


@st.composite
def replica_sets(draw: st.DrawFn) -> dict[str, tuple[list[Batch], tuple[int, int]]]:
    sizes = draw(st.lists(st.sampled_from([1, 7, 300, W - 1, W, 3 * W + 5]), min_size=1, max_size=30))
    common = _log(sizes, 1)
    reps = {}
    for name in "abc"[:draw(st.integers(2, 3))]:
        lo = draw(st.integers(0, len(common) - 1))
        hi = draw(st.integers(lo + 1, len(common)))
        log = common[lo:hi]
        if draw(st.booleans()):   # diverged from some batch on, with its own batch boundaries
            at = draw(st.integers(0, len(log) - 1))
            more = draw(st.lists(st.sampled_from([1, 5, 900, W + 3]), min_size=1, max_size=6))
            log = log[:at] + _log(more, ord(name) * 7 + 2, log[at][0])
        first = log[0]
        start = draw(st.integers(first[0], first[1]))   # a log start inside its first batch (DeleteRecords)
        reps[name] = (log, (start, log[-1][1] + 1))
    return reps


def _first_mismatch(reps: dict[str, tuple[list[Batch], tuple[int, int]]], buckets: set[int] | None) -> int | None:
    """The lowest base offset of a batch of one replica that another's range covers and that other
    does not hold; among the batches of `buckets` only (None: every batch)."""
    held = {r: set(log) for r, (log, _) in reps.items()}
    found = [b[0] for x, (log, _) in reps.items() for b in log
             if buckets is None or b[0] >> BUCKET_BITS in buckets
             for y, (_, (start, end)) in reps.items() if y != x and start <= b[0] < end and b not in held[y]]
    return min(found, default=None)


def _digests(reps: dict[str, tuple[list[Batch], tuple[int, int]]]) -> list[tuple[str, int, int, int]]:
    out = []
    for r, (log, _) in reps.items():
        cols = np.array(log, dtype=np.int64).T
        for cut in range(0, len(log), 4):   # blocks of 4 batches: a bucket summed over several blocks
            b, n, d = block_digests(cols[0, cut:cut + 4], cols[1, cut:cut + 4], cols[2, cut:cut + 4])
            out += [(r, int(k), int(c), int(x)) for k, c, x in zip(b, n, d, strict=True)]
    summed: dict[tuple[str, int], tuple[int, int]] = {}
    for r, k, n, d in out:
        c0, d0 = summed.get((r, k), (0, 0))
        summed[(r, k)] = (c0 + n, d0 ^ d)
    return [(r, k, n, d) for (r, k), (n, d) in summed.items()]


@settings(max_examples=300, deadline=None)
@given(replica_sets())
def test_suspect_buckets_hold_the_first_mismatch(reps: dict[str, tuple[list[Batch], tuple[int, int]]]) -> None:
    suspects = suspect_buckets({r: rng for r, (_, rng) in reps.items()}, _digests(reps))
    assert _first_mismatch(reps, set(suspects)) == _first_mismatch(reps, None)


def test_equal_replicas_with_other_starts_and_ends_leave_only_the_buckets_with_a_boundary() -> None:
    log = _log([100] * 200, 1)                               # offsets 0..19999, five buckets
    reps = {"a": (log, (0, 20_000)), "b": (log[30:], (3_000, 20_000)), "c": (log[:150], (0, 15_000))}
    suspects = suspect_buckets({r: rng for r, (_, rng) in reps.items()}, _digests(reps))
    assert suspects == [3_000 >> BUCKET_BITS, 15_000 >> BUCKET_BITS]   # b's log start, c's log end
    at_a_bucket = {"a": (log, (0, 20_000)), "b": (log[41:], (4_100, 20_000))}   # b starts with bucket 1
    assert suspect_buckets({r: rng for r, (_, rng) in at_a_bucket.items()}, _digests(at_a_bucket)) == []
    same = {r: (log, (0, 20_000)) for r in "ab"}
    assert suspect_buckets({r: rng for r, (_, rng) in same.items()}, _digests(same)) == []


def test_block_digests_combine_in_any_order() -> None:
    cols = np.array(_log([3, 5000, 1, 9000, 2], 4), dtype=np.int64).T
    whole = block_digests(*cols)
    parts = [block_digests(*cols[:, k:k + 1]) for k in range(cols.shape[1])][::-1]
    summed: dict[int, tuple[int, int]] = {}
    for b, n, d in parts:
        for k, c, x in zip(b.tolist(), n.tolist(), d.tolist(), strict=True):
            c0, x0 = summed.get(k, (0, 0))
            summed[k] = (c0 + c, x0 ^ x)
    assert {k: (c, x) for k, c, x in zip(*(a.tolist() for a in whole), strict=True)} == summed


def test_remote_rows_name_remote_paths_in_dictionary_columns_too() -> None:
    col = pa.DictionaryArray.from_arrays(pa.array([0, 0], pa.int32()), pa.array(["/scratch/x/broker-1"]))
    batch = pa.RecordBatch.from_arrays([col, pa.array(["/scratch/x/broker-1/t-0"] * 2)], names=["log_dir", "path"])
    renamed = _renamed(batch, "/scratch/x/broker-1", "/remote/broker-1")
    assert renamed.column("log_dir").to_pylist() == ["/remote/broker-1"] * 2
    assert renamed.column("path").to_pylist() == ["/remote/broker-1/t-0"] * 2
