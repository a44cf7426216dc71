"""Batch rows of chosen offsets, read again from a replica's segments: the replica comparison's detail.

A scan without the batch table writes no batch rows: for every block it writes only digests by
bucket of offsets (`spark.digests`). Where a replica set's digests differ, the comparison
(`spark.replicas`) asks for the batches of the suspect buckets, and then, for a set that parts,
for each replica's batches from the set's lower bound on; an executor task walks just the
segments holding those offsets (the compiled walk the scan took, so the rows are the scan's) and
hands the rows back. A set of equal replicas costs no read at all. Replicas on a remote filesystem
are not read again: their scan wrote their batch rows (`replica_batches`).
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NotRequired, TypedDict, cast

import numpy as np
import pyarrow as pa

from replog.formats.errors import ReplogError
from replog.formats.fileio import mapped
from replog.formats.kafka.blocks import walk_blocks
from replog.formats.kafka.partition_files import list_partition_files
from replog.spark import schemas
from replog.spark.digests import BUCKET_BITS
from replog.spark.rows import WHERE, where_columns
from replog.spark.schemas import Where

# One fetch: which replica (`where`, its partition dir `path`), and which of its batches: those whose base
# offset is in a bucket of `buckets`, or whose last offset is at or after `from`.
FetchTask = TypedDict("FetchTask", {"where": Where, "path": str, "buckets": NotRequired[list[int]],
                                    "from": NotRequired[int]})


def wanted_segments(bases: list[int], buckets: list[int] | None, from_offset: int | None) -> list[int]:
    """The base offsets of the segments that can hold a wanted batch: one whose base offset is in a
    bucket of `buckets`, or (with `from_offset`) one ending at or after it. Segment i holds the base
    offsets [bases[i], bases[i + 1])."""
    out = []
    for i, base in enumerate(bases):
        nxt = bases[i + 1] if i + 1 < len(bases) else None
        if from_offset is not None:
            keep = nxt is None or nxt > from_offset
        else:
            keep = any((k << BUCKET_BITS) < (nxt if nxt is not None else 1 << 63) and ((k + 1) << BUCKET_BITS) > base
                       for k in buckets or [])
        if keep:
            out.append(base)
    return out


def fetch_rows(task: FetchTask) -> Iterator[pa.RecordBatch]:
    """A task's rows (`schemas.REPLICA_BATCHES`): the batches of partition dir `path` whose base offset
    is in a bucket of `buckets`, or whose last offset is at or after `from`. An unreadable segment
    gives no rows (the scan reported it)."""
    from replog.formats.kafka.fastwalk import HAVE_NUMBA

    where, buckets, from_offset = task["where"], task.get("buckets"), task.get("from")
    try:
        logs = list_partition_files(task["path"]).logs
    except ReplogError:
        return
    keep_buckets = np.array(sorted(buckets or []), dtype=np.int64)
    for base in wanted_segments(sorted(logs), buckets, from_offset):
        try:
            with mapped(Path(logs[base])) as buf:
                _, blocks = walk_blocks(buf, str(logs[base]), base, HAVE_NUMBA)
                for block in blocks:
                    cols = {n: np.array(block.column(n), dtype=np.int64)
                            for n in ("base_offset", "last_offset", "crc", "count")}
                    keep = (cols["last_offset"] >= from_offset if from_offset is not None
                            else np.isin(cols["base_offset"] >> BUCKET_BITS, keep_buckets))
                    if keep.any():
                        yield _rows(where, {n: c[keep] for n, c in cols.items()})
        except (ReplogError, OSError):
            continue


def _rows(where: Where, cols: dict[str, np.ndarray]) -> pa.RecordBatch:
    schema, n = schemas.REPLICA_BATCHES, len(cols["base_offset"])
    arrays = where_columns(where, schema, n) + [pa.array(cols[f.name], f.type) for f in schema if f.name in cols]
    return pa.RecordBatch.from_arrays(arrays, names=[*WHERE, *(f.name for f in schema if f.name in cols)]).select(
        schema.names)


def fetched_frame(spark: Any, tasks: list[FetchTask]) -> Any:
    """The rows of `tasks`, read by executor tasks, as a DataFrame of `schemas.REPLICA_BATCHES`."""
    sc = spark.sparkContext
    schema = schemas.spark_schema(schemas.REPLICA_BATCHES)
    if not tasks:
        return spark.createDataFrame([], schema)
    rdd = sc.parallelize([json.dumps(t) for t in tasks], max(1, min(len(tasks), sc.defaultParallelism * 2)))
    names = schemas.REPLICA_BATCHES.names

    def rows(lines: Iterator[str]) -> Iterator[tuple[Any, ...]]:
        for line in lines:
            for rb in fetch_rows(cast(FetchTask, json.loads(line))):
                yield from zip(*(rb.column(n).to_pylist() for n in names), strict=True)

    return spark.createDataFrame(rdd.mapPartitions(rows), schema)
