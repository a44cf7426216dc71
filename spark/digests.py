"""Digests of each replica's batches by bucket of offsets: where a replica set needs comparing at all.

Followers copy the leader's batches byte for byte, so the replicas of a healthy set hold the same
batches (base offset, last offset, CRC) at the same offsets, and only their segment boundaries,
log starts and log ends differ. A scan task sums each block's batches up by bucket (`BUCKET_BITS`
offsets of base offset): the bucket's batch count and the XOR of a 64-bit mix of each batch's
(base, last, crc). Sums of one bucket from several blocks, segments or units combine in any order
(`digests_frame`).

`suspect_buckets` then says, per set, which buckets can hold a mismatch (`spark.replicas`): only
there are batch rows joined. A bucket is passed over when fewer than two replicas take part in it
(hold a batch there, or a log range reaching into it), or when all that do have equal digests:
then each holds exactly the others' batches there, and no batch of one is missing from another.
A bucket whose digests differ is a suspect. When every replica taking part covers the whole bucket
with its log range, the difference is a certain mismatch there (the lowest such bucket bounds the
set's first mismatch from above), so the buckets after it are not needed; a bucket only partly
covered (a log start or log end inside it) may differ without any mismatch and is a suspect
without ending the list. A set of equal replicas has no suspects and none of its batch rows is read.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from replog.formats.kafka.blocks import BatchBlock
from replog.spark import schemas
from replog.spark.schemas import Where

BUCKET_BITS = 12     # 4096 offsets a bucket: one bucket of one-record batches is 4096 rows at most
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, over uint64 arrays (wrapping arithmetic)."""
    x = x ^ (x >> np.uint64(30))
    x = x * _M1
    x = x ^ (x >> np.uint64(27))
    x = x * _M2
    return x ^ (x >> np.uint64(31))


def batch_hashes(base: np.ndarray, last: np.ndarray, crc: np.ndarray) -> np.ndarray:
    """A 64-bit mix of each batch's (base offset, last offset, crc), as int64."""
    u = np.uint64
    with np.errstate(over="ignore"):
        h = _mix(_mix(_mix(base.astype(u)) ^ last.astype(u)) ^ crc.astype(u))
    return h.view(np.int64)


def block_digests(base: np.ndarray, last: np.ndarray, crc: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(buckets, batch counts, XOR of the batch hashes) of one block's batches."""
    buckets, where = np.unique(base >> BUCKET_BITS, return_inverse=True)
    counts = np.bincount(where, minlength=len(buckets)).astype(np.int64)
    digests = np.zeros(len(buckets), dtype=np.int64)
    np.bitwise_xor.at(digests, where, batch_hashes(base, last, crc))
    return buckets.astype(np.int64), counts, digests


def digest_rows(where: Where, block: BatchBlock) -> pa.RecordBatch:
    """One block's `replica_digests` rows (the where columns as dictionaries: one value per block)."""
    schema = schemas.REPLICA_DIGESTS
    if not len(block):
        return pa.RecordBatch.from_pylist([], schema=schema)
    buckets, counts, digests = block_digests(block.column("base_offset"), block.column("last_offset"),
                                             block.column("crc"))
    zeros = pa.array(np.zeros(len(buckets), dtype=np.int32))
    cols: list[pa.Array] = [pa.DictionaryArray.from_arrays(zeros, pa.array([v], pa.string()))
                            for v in (where["cluster"], where["log_dir"], where["topic"])]
    cols += [pa.array(np.full(len(buckets), where["partition"], dtype=np.int32)), pa.array(buckets),
             pa.array(counts), pa.array(digests)]
    return pa.RecordBatch.from_arrays(cols, schema=schema)


def suspect_buckets(ranges: dict[str, tuple[int, int]], digests: list[tuple[str, int, int, int]]) -> list[int]:
    """The buckets of one replica set where its replicas' batches must be compared (module docstring).

    `ranges`: replica -> (log start offset, log end offset); `digests`: (replica, bucket, batch count,
    digest), one row per replica and bucket (summed)."""
    by_bucket: dict[int, dict[str, tuple[int, int]]] = {}
    for replica, bucket, count, digest in digests:
        by_bucket.setdefault(bucket, {})[replica] = (count, digest)
    out = []
    for k in sorted(by_bucket):
        lo, hi = k << BUCKET_BITS, (k + 1) << BUCKET_BITS
        held = by_bucket[k]
        taking_part = [r for r, (start, end) in ranges.items() if r in held or (start < hi and end > lo)]
        if len(taking_part) < 2 or len({held.get(r) for r in taking_part}) == 1:
            continue
        out.append(k)
        if all(ranges[r][0] <= lo and ranges[r][1] >= hi for r in taking_part):
            break
    return out


def digests_frame(digests: Any) -> Any:
    """Every replica's digest per bucket, the sums of the tasks' rows (any number per bucket)."""
    from pyspark.sql import functions as F

    return digests.groupBy("log_dir", "cluster", "topic", "partition", "bucket").agg(
        F.sum("count").alias("count"), F.bit_xor("digest").alias("digest"))


SUSPECTS = pa.schema([("cluster", pa.string()), ("topic", pa.string()), ("partition", pa.int32()),
                      ("set_topic_id", pa.string()), ("bucket", pa.int64())])


def suspects_frame(sets: Any, digests: Any, replica: str, key: list[str]) -> Any:
    """(set key, bucket) of every suspect bucket (`suspect_buckets`), from the sets' replicas
    (`replica`, `key`, log start and end offsets) and the tasks' digest rows."""
    from pyspark.sql import functions as F

    summed = digests_frame(digests).join(sets.select(replica, *key), [replica, "cluster", "topic", "partition"])
    held = summed.groupBy(*key).agg(F.collect_list(F.struct(replica, "bucket", "count", "digest")).alias("digests"))
    ranges = sets.groupBy(*key).agg(F.collect_list(F.struct(replica, "log_start_offset", "log_end_offset"))
                                    .alias("ranges"))
    return held.join(ranges, key).mapInArrow(lambda it: _suspect_rows(it, replica, key),
                                             schemas.spark_schema(SUSPECTS))


def _suspect_rows(batches: Iterator[pa.RecordBatch], replica: str, key: list[str]) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: a set's digests and ranges -> its suspect buckets."""
    for rb in batches:
        rows = []
        for s in rb.to_pylist():
            ranges = {r[replica]: (r["log_start_offset"] or 0, r["log_end_offset"] or 0) for r in s["ranges"]}
            held = [(d[replica], d["bucket"], d["count"], d["digest"]) for d in s["digests"]]
            rows += [{**{k: s[k] for k in key}, "bucket": b} for b in suspect_buckets(ranges, held)]
        if rows:
            yield pa.RecordBatch.from_pylist(rows, schema=SUSPECTS)
