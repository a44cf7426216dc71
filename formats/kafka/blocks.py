"""Batch metadata as columns: the one model of a Kafka batch.

A `BatchBlock` holds up to a few tens of thousands of batches as one int64
array `cols[field, row]`, the fields being those of its row view `BatchInfo`
(`batch.py`), in its order: `block.row(i)` and iterating a block give
`BatchInfo`s, which is also what the reference walk and a v2 header decode
yield. Every command consumes blocks; a Python object per batch exists only
for the rows that a check flags. Flags (crc_valid, is_control, ...) are 0/1; values are raw (a
legacy magic of 130 stays 130), typed only when turned into Arrow.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from replog.formats.fileio import RELEASE_STEP, release_pages
from replog.formats.kafka import legacy
from replog.formats.kafka.batch import BatchInfo
from replog.formats.kafka.columns import BATCH_SCHEMA, CHUNK
from replog.formats.kafka.segment import SegmentWalk

FIELDS: tuple[str, ...] = BatchInfo._fields
ROW: dict[str, int] = {name: k for k, name in enumerate(FIELDS)}
_INT64_MIN, _INT64_MAX = -2**63, 2**63 - 1
FLAG_FIELDS = frozenset({"crc_valid", "is_transactional", "is_control", "has_delete_horizon"})
_NUMPY_TYPES = [BATCH_SCHEMA.field(name).type.to_pandas_dtype() for name in FIELDS]


def _column(name: str) -> Any:
    row = ROW[name]
    return property(lambda self: self.cols[row], doc=f"the `{name}` of every batch of the block")


class BatchBlock:
    """Consecutive batches of one segment, as columns (a view: copy it to keep it past the next block).

    Its row view is `BatchInfo`: `row(i)`, `rows()` and iteration give one per batch."""

    __slots__ = ("cols",)

    position = _column("position")
    size = _column("size")
    magic = _column("magic")
    base_offset = _column("base_offset")
    last_offset = _column("last_offset")
    count = _column("count")
    partition_leader_epoch = _column("partition_leader_epoch")
    crc = _column("crc")
    crc_valid = _column("crc_valid")
    attributes = _column("attributes")
    codec = _column("codec")
    timestamp_type = _column("timestamp_type")
    first_timestamp = _column("first_timestamp")
    max_timestamp = _column("max_timestamp")
    producer_id = _column("producer_id")
    producer_epoch = _column("producer_epoch")
    base_sequence = _column("base_sequence")
    is_transactional = _column("is_transactional")
    is_control = _column("is_control")
    has_delete_horizon = _column("has_delete_horizon")

    def __init__(self, cols: np.ndarray) -> None:
        if cols.ndim != 2 or cols.shape[0] != len(FIELDS):
            raise ValueError(f"a batch block has {len(FIELDS)} rows of fields, not {cols.shape}")
        self.cols = cols

    @classmethod
    def empty(cls) -> BatchBlock:
        return cls(np.empty((len(FIELDS), 0), dtype=np.int64))

    @classmethod
    def from_infos(cls, infos: Sequence[BatchInfo]) -> BatchBlock:
        """A block of reference-walk batches (tests, and the few entries the kernel leaves to the reference)."""
        if not infos:
            return cls.empty()
        return cls(np.array([int64_row(info) for info in infos], dtype=np.int64).T.copy())

    @classmethod
    def concat(cls, blocks: Iterable[BatchBlock]) -> BatchBlock:
        parts = [b.cols for b in blocks]
        return cls(np.concatenate(parts, axis=1)) if parts else cls.empty()

    def __len__(self) -> int:
        return int(self.cols.shape[1])

    def __getitem__(self, rows: slice | np.ndarray) -> BatchBlock:
        """The rows selected by a slice, a boolean mask or an index array."""
        return BatchBlock(self.cols[:, rows])

    def copy(self) -> BatchBlock:
        return BatchBlock(self.cols.copy())

    def column(self, name: str) -> np.ndarray:
        return self.cols[ROW[name]]

    @property
    def end(self) -> np.ndarray:
        """Position just past each batch."""
        return self.position + self.size

    def row(self, i: int) -> BatchInfo:
        """Row `i` as its row view `BatchInfo` (for the rows a check flags)."""
        values: list[Any] = self.cols[:, i].tolist()
        for name in FLAG_FIELDS:
            values[ROW[name]] = bool(values[ROW[name]])
        return BatchInfo(*values)

    def rows(self) -> Iterator[BatchInfo]:
        return (self.row(i) for i in range(len(self)))

    def __iter__(self) -> Iterator[BatchInfo]:
        return self.rows()

    @classmethod
    def from_arrow(cls, batch: pa.RecordBatch) -> BatchBlock:
        """The block `to_arrow` made (its `path` column, when present, is not part of a block)."""
        cols = np.empty((len(FIELDS), batch.num_rows), dtype=np.int64)
        for k, name in enumerate(FIELDS):
            cols[k] = batch.column(name).to_numpy(zero_copy_only=False)
        return cls(cols)

    def to_arrow(self, path: str) -> pa.RecordBatch:
        """The block typed as `BATCH_SCHEMA` (a `path` column first)."""
        n = len(self)
        arrays = [repeat_string(path, n)]
        arrays += [pa.array(self.cols[k].astype(dtype), BATCH_SCHEMA.field(name).type)
                   for k, (name, dtype) in enumerate(zip(FIELDS, _NUMPY_TYPES, strict=True))]
        return pa.RecordBatch.from_arrays(arrays, schema=BATCH_SCHEMA)


# Each field's row of a column buffer is padded by a cache line: rows `chunk` int64s apart (a multiple
# of 4 KiB) put a kernel's twenty stores per batch in one cache set, which made the kernels 3-6x slower.
_ROW_PAD = 8


def column_buffer(chunk: int) -> np.ndarray:
    """The int64 buffer a compiled walk fills, one row per field: `chunk` usable columns (plus padding)."""
    return np.empty((len(FIELDS), chunk + _ROW_PAD), dtype=np.int64)


def rows_for(span: int, chunk: int) -> int:
    """The block size to walk `span` bytes with: `chunk`, or fewer when no more entries fit in the span.

    The smallest entry is a v0 message of an empty key and value. Sized to the file, a small
    segment's buffer is kilobytes, not `chunk` rows of every field (10 MiB): the pages of a fresh
    10 MiB buffer cost milliseconds to fault in, which was most of a fleet scan's time on small
    segments, and a block a consumer keeps (a slice of its buffer) no longer holds 10 MiB."""
    return max(1, min(chunk, span // (legacy.LOG_OVERHEAD + legacy.RECORD_OVERHEAD[0]) + 1))


def int64_row(info: BatchInfo) -> list[int]:
    """A reference batch as a block row. A damaged header can claim a last offset past int64 (base offset
    near 2^63 plus a delta); the walk has already reported it, and the row holds it clamped to int64."""
    return [min(max(int(v), _INT64_MIN), _INT64_MAX) for v in info]


def repeat_string(text: str, n: int) -> pa.Array:
    """`n` copies of one string as an Arrow string column, built from buffers."""
    data = text.encode("utf-8")
    if n * len(data) >= 2**31:
        return pa.array([text] * n, pa.string())
    offsets = np.arange(n + 1, dtype=np.int32) * len(data)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data * n)])


def reference_blocks(walk: SegmentWalk, chunk: int = CHUNK) -> Iterator[BatchBlock]:
    """A reference walk's batches grouped into blocks (small inputs, no numba, or a `limit`) of at most
    `chunk` rows spanning about `RELEASE_STEP` bytes, whose bytes stay in memory until the next block
    is asked for (as `FastWalk.blocks`'): a consumer may read them (records), then they are released."""
    pending: list[BatchInfo] = []
    released = start = 0
    for info in walk.batches(release=False):
        pending.append(info)
        if len(pending) == chunk or info.end - start > RELEASE_STEP:
            yield BatchBlock.from_infos(pending)
            pending, start = [], info.end
            if info.end - released > RELEASE_STEP:
                release_pages(walk.buf, released, info.end)
                released = info.end
    if pending:
        yield BatchBlock.from_infos(pending)


def walk_blocks(buf: bytes | memoryview, path: str, base_offset: int | None, compiled: bool,
                chunk: int = CHUNK) -> tuple[SegmentWalk, Iterator[BatchBlock]]:
    """A segment's blocks and the walk that holds the outcome (findings, `valid_bytes`): the compiled
    walk when `compiled` (numba imported only then), else the reference walk's batches in blocks."""
    if compiled:
        from replog.formats.kafka.fastwalk import FastWalk
        fast = FastWalk(buf, path, base_offset)
        return fast.reference, fast.blocks(chunk)
    walk = SegmentWalk(buf, path, base_offset)
    return walk, reference_blocks(walk, chunk)
