"""Fast batch walk: a numba kernel over the clean v2 batches, the reference for the rest.

The kernel reads every batch header and checks every CRC (table-driven
CRC-32C, slice-by-8) in one compiled loop over a uint8 view of the buffer (no
copy), writing the `BatchInfo` fields into preallocated int64 columns. It stops
at the first position that is not a clean, complete magic-2 batch; there the
reference `SegmentWalk` reads one entry (legacy, torn, zero tail...) and the
kernel takes over again after it. Batch checks are vectorised over the columns,
and only the rows they flag (bad CRC, gaps, control batches...) go through the
reference `SegmentWalk._check`, so every finding, its order and `valid_bytes`
are the reference's own: speed never changes an answer.
Without numba everything falls back to the reference walk.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from replog.formats.fileio import RELEASE_STEP, release_pages
from replog.formats.findings import Finding
from replog.formats.kafka.columns import BATCH_SCHEMA, CHUNK, column_chunks, to_record_batch
from replog.formats.kafka.segment import BatchInfo, SegmentWalk

try:  # numba is optional at run time: without it the reference walk answers
    from llvmlite import ir
    from numba import njit, types
    from numba.core import cgutils
    from numba.extending import intrinsic as _intrinsic
    # Any: jitted code calls an intrinsic without the typing context its Python signature starts with
    intrinsic: Any = _intrinsic
    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - exercised only where numba is absent
    HAVE_NUMBA = False

    def njit(*_args, **_kwargs):  # type: ignore[no-redef]
        return lambda f: f

    intrinsic = njit

_CRC32C_POLY = 0x82F63B78
_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1
_INT64_MIN = -2**63
# Row index of each BatchInfo field in the kernel's int64 column block.
FIELDS = BatchInfo._fields
(F_POSITION, F_SIZE, F_MAGIC, F_BASE, F_LAST, F_COUNT, F_EPOCH, F_CRC, F_CRC_VALID, F_ATTR, F_CODEC,
 F_TS_TYPE, F_FIRST_TS, F_MAX_TS, F_PID, F_PEPOCH, F_BSEQ, F_TXN, F_CONTROL, F_DELETE_HORIZON) = range(len(FIELDS))
_NUMPY_TYPES = [BATCH_SCHEMA.field(name).type.to_pandas_dtype() for name in FIELDS]


def crc32c_tables() -> np.ndarray:
    """Slice-by-8 tables for reflected CRC-32C: table[k][b] is b's CRC after k more zero bytes."""
    table = np.zeros((8, 256), dtype=np.uint32)
    for b in range(256):
        c = b
        for _ in range(8):
            c = (c >> 1) ^ (_CRC32C_POLY if c & 1 else 0)
        table[0, b] = c
    for k in range(1, 8):
        prev = table[k - 1].astype(np.int64)
        table[k] = (prev >> 8) ^ table[0][prev & 0xFF]
    return table


CRC_TABLES = crc32c_tables()


# --- kernels --------------------------------------------------------------------


@njit(cache=True, nogil=True)
def crc32c_kernel(buf, start, stop, t):  # pragma: no cover - compiled
    """CRC-32C of buf[start:stop], slice-by-8, all arithmetic in int64 (no float promotion)."""
    crc = np.int64(0xFFFFFFFF)
    i = start
    while i + 8 <= stop:
        one = crc ^ (np.int64(buf[i]) | (np.int64(buf[i + 1]) << 8)
                     | (np.int64(buf[i + 2]) << 16) | (np.int64(buf[i + 3]) << 24))
        crc = (np.int64(t[7, one & 0xFF]) ^ np.int64(t[6, (one >> 8) & 0xFF])
               ^ np.int64(t[5, (one >> 16) & 0xFF]) ^ np.int64(t[4, (one >> 24) & 0xFF])
               ^ np.int64(t[3, buf[i + 4]]) ^ np.int64(t[2, buf[i + 5]])
               ^ np.int64(t[1, buf[i + 6]]) ^ np.int64(t[0, buf[i + 7]]))
        i += 8
    while i < stop:
        crc = np.int64(t[0, (crc ^ np.int64(buf[i])) & 0xFF]) ^ (crc >> 8)
        i += 1
    return crc ^ 0xFFFFFFFF


def _has_sse42() -> bool:
    """True where the CPU has the CRC32 instruction (x86-64 SSE4.2)."""
    if not HAVE_NUMBA:
        return False
    try:
        import llvmlite.binding as llvm
        return "+sse4.2" in llvm.get_host_cpu_features().flatten().split(",")
    except Exception:  # noqa: BLE001 - any doubt means the portable path
        return False


HARDWARE_CRC = _has_sse42()


@intrinsic
def _load_u64(typingctx, arr, idx):  # pragma: no cover - compiled
    """Unaligned little-endian load of 8 bytes at arr[idx] (a uint8 array)."""
    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        ptr = builder.gep(ary.data, [args[1]])
        return builder.load(builder.bitcast(ptr, ir.IntType(64).as_pointer()), align=1)
    return types.uint64(arr, idx), codegen


@intrinsic
def _crc32_u64(typingctx, crc, data):  # pragma: no cover - compiled
    """One SSE4.2 CRC32 step over 8 bytes (`llvm.x86.sse42.crc32.64.64`)."""
    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(i64, [i64, i64]),
                                            "llvm.x86.sse42.crc32.64.64")
        return builder.call(fn, args)
    return types.uint64(types.uint64, types.uint64), codegen


@intrinsic
def _crc32_u8(typingctx, crc, data):  # pragma: no cover - compiled
    """One SSE4.2 CRC32 step over one byte (`llvm.x86.sse42.crc32.32.8`)."""
    def codegen(context, builder, signature, args):
        i32, i8 = ir.IntType(32), ir.IntType(8)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(i32, [i32, i8]),
                                            "llvm.x86.sse42.crc32.32.8")
        return builder.call(fn, [builder.trunc(args[0], i32), builder.trunc(args[1], i8)])
    return types.uint32(types.uint64, types.uint64), codegen


def _bswap_load(width: int):
    """An intrinsic: the signed big-endian int of `width` bits at arr[idx], as int64."""
    def load(typingctx, arr, idx):  # pragma: no cover - compiled
        def codegen(context, builder, signature, args):
            ity = ir.IntType(width)
            ary = context.make_array(signature.args[0])(context, builder, args[0])
            raw = builder.load(builder.bitcast(builder.gep(ary.data, [args[1]]), ity.as_pointer()), align=1)
            swap = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ity, [ity]), f"llvm.bswap.i{width}")
            value = builder.call(swap, [raw])
            return value if width == 64 else builder.sext(value, ir.IntType(64))
        return types.int64(arr, idx), codegen
    load.__name__ = f"_be{width}"
    return intrinsic(load)


if HAVE_NUMBA:
    _be64, _be32, _be16 = _bswap_load(64), _bswap_load(32), _bswap_load(16)


@njit(cache=True, nogil=True, inline="always")
def _be(buf, pos, n):  # pragma: no cover - compiled
    """Big-endian signed integer of n (8, 4 or 2) bytes at pos: one load and a byte swap."""
    if n == 8:
        return _be64(buf, pos)
    if n == 4:
        return _be32(buf, pos)
    return _be16(buf, pos)


@njit(cache=True, nogil=True)
def crc32c_hw_kernel(buf, start, stop):  # pragma: no cover - compiled
    """CRC-32C of buf[start:stop] with the CPU's CRC32 instruction, 8 bytes a step."""
    crc = np.uint64(0xFFFFFFFF)
    i = start
    while i + 8 <= stop:
        crc = _crc32_u64(crc, _load_u64(buf, i))
        i += 8
    while i < stop:
        crc = np.uint64(_crc32_u8(crc, np.uint64(buf[i])))
        i += 1
    return np.int64(crc ^ np.uint64(0xFFFFFFFF))


@njit(cache=True, nogil=True, inline="always")
def _clean_size(buf, pos, end):  # pragma: no cover - compiled
    """Size of the clean, complete v2 batch at pos, or -1 where the reference must judge.

    Not clean: fewer than 61 bytes left, a length below a v2 header, magic
    other than 2, a batch running past `end`, a last offset outside int64.
    """
    if end - pos < 61:
        return -1
    length = _be(buf, pos + 8, 4)
    if length < 49 or buf[pos + 16] != 2 or length > 2147483635 or pos + 12 + length > end:
        return -1
    base = _be(buf, pos, 8)
    delta = _be(buf, pos + 23, 4)
    if (delta > 0 and base > 9223372036854775807 - delta) or (delta < 0 and base < -9223372036854775808 - delta):
        return -1
    return length + 12


@njit(cache=True, nogil=True, inline="always")
def _fill_row(buf, pos, size, cols, row):  # pragma: no cover - compiled
    """Write the BatchInfo fields of the batch at pos (all but crc_valid) into cols[:, row]."""
    base = _be(buf, pos, 8)
    attributes = _be(buf, pos + 21, 2)
    cols[0, row] = pos
    cols[1, row] = size
    cols[2, row] = 2
    cols[3, row] = base
    cols[4, row] = base + _be(buf, pos + 23, 4)
    cols[5, row] = _be(buf, pos + 57, 4)
    cols[6, row] = _be(buf, pos + 12, 4)
    cols[7, row] = _be(buf, pos + 17, 4) & 0xFFFFFFFF
    cols[9, row] = attributes
    cols[10, row] = attributes & 0x07
    cols[11, row] = 1 if attributes & 0x08 else 0
    cols[12, row] = _be(buf, pos + 27, 8)
    cols[13, row] = _be(buf, pos + 35, 8)
    cols[14, row] = _be(buf, pos + 43, 8)
    cols[15, row] = _be(buf, pos + 51, 2)
    cols[16, row] = _be(buf, pos + 53, 4)
    cols[17, row] = 1 if attributes & 0x10 else 0
    cols[18, row] = 1 if attributes & 0x20 else 0
    cols[19, row] = 1 if attributes & 0x40 else 0


@njit(cache=True, nogil=True)
def walk_kernel(buf, pos, end, cols, row, row_limit, t):  # pragma: no cover - compiled
    """Fill cols[:, row:] with clean v2 batches from pos; return (next row, stop position)."""
    while row < row_limit:
        size = _clean_size(buf, pos, end)
        if size < 0:
            break
        _fill_row(buf, pos, size, cols, row)
        cols[8, row] = 1 if crc32c_kernel(buf, pos + 21, pos + size, t) == cols[7, row] else 0
        pos += size
        row += 1
    return row, pos


@njit(cache=True, nogil=True)
def walk_kernel_hw(buf, pos, end, cols, row, row_limit, t):  # pragma: no cover - compiled
    """`walk_kernel` with the hardware CRC (`t` unused, same signature)."""
    while row < row_limit:
        size = _clean_size(buf, pos, end)
        if size < 0:
            break
        _fill_row(buf, pos, size, cols, row)
        cols[8, row] = 1 if crc32c_hw_kernel(buf, pos + 21, pos + size) == cols[7, row] else 0
        pos += size
        row += 1
    return row, pos


WALK_KERNEL = walk_kernel_hw if HARDWARE_CRC else walk_kernel


def as_uint8(buf: bytes | bytearray | memoryview) -> np.ndarray:
    """A read-only uint8 view of `buf` (an mmap, bytes or memoryview) without copying."""
    return np.frombuffer(buf, dtype=np.uint8)


def crc32c(buf: bytes | memoryview) -> int:
    """CRC-32C of a whole buffer through the kernel (tests check it against `crc32c`)."""
    arr = as_uint8(buf)
    if HARDWARE_CRC:
        return int(crc32c_hw_kernel(arr, 0, len(arr)))
    return int(crc32c_kernel(arr, 0, len(arr), CRC_TABLES))


# --- the walk -------------------------------------------------------------------


class FastWalk(SegmentWalk):
    """A `SegmentWalk` whose clean v2 stretches are read by the kernel.

    Same fields and the same outcome; `column_chunks()` yields Arrow record
    batches (`BATCH_SCHEMA`) of at most `chunk` rows while it walks.
    """

    def column_chunks(self, chunk: int = CHUNK) -> Iterator[pa.RecordBatch]:
        if not HAVE_NUMBA or self.limit is not None:
            yield from column_chunks(self.path, self.batches(), chunk)
            return
        for cols in self.column_blocks(chunk):
            yield self._emit(cols, cols.shape[1])

    def column_blocks(self, chunk: int = CHUNK) -> Iterator[np.ndarray]:
        """The walk as int64 blocks `cols[field, row]` (rows of `FIELDS`, at most `chunk` columns).

        Raw values, no Arrow typing (a legacy magic of 130 stays 130). Each block
        is a view into one reused buffer: read it before asking for the next.
        When a block is yielded, `valid_bytes` and the counters cover its rows.
        """
        if not HAVE_NUMBA or self.limit is not None:
            for batch in self.batches():
                yield np.array([[int(v)] for v in batch], dtype=np.int64)
            return
        arr = as_uint8(self.buf)
        end = len(arr)
        cols = np.empty((len(FIELDS), chunk), dtype=np.int64)
        pos, row, released, self._prev_last, self._broken = 0, 0, 0, None, False
        while pos < end:
            if pos - released > RELEASE_STEP:  # keep memory flat on multi-GiB segments
                release_pages(self.buf, released, pos)
                released = pos
            start_row = row
            window = min(end, pos + RELEASE_STEP)  # a batch across the window's end goes to the reference
            row, pos = WALK_KERNEL(arr, pos, window, cols, row, chunk, CRC_TABLES)
            self._judge(cols, start_row, row)
            if row == chunk:
                yield cols[:, :row]
                row = 0
                continue
            if pos >= end:
                break
            if pos == window:
                continue
            info = self._read_at(pos, end)
            if info is None:
                break
            self._step(info)
            cols[:, row] = [int(v) for v in info]
            row += 1
            pos = info.end
            if row == chunk:
                yield cols[:, :row]
                row = 0
        self.end_position = pos
        if row:
            yield cols[:, :row]

    def _judge(self, cols: np.ndarray, lo: int, hi: int) -> None:
        """Apply the reference checks to kernel rows [lo, hi): `_check` runs only where flagged."""
        if hi <= lo:
            return
        last = cols[F_LAST, lo:hi]
        running = np.maximum.accumulate(last)
        prev = np.empty_like(last)
        prev[1:] = running[:-1]
        if self._prev_last is not None:
            prev[0] = self._prev_last
            np.maximum(prev, self._prev_last, out=prev)
        count0 = self.batch_count
        for i in np.flatnonzero(self._flagged(cols, lo, hi, prev)).tolist():
            self.batch_count = count0 + i
            prev_last = int(prev[i]) if i or self._prev_last is not None else None
            if not self._check(BatchInfo(*_row(cols, lo + i)), prev_last) and not self._broken:
                if i:
                    self.valid_bytes = int(cols[F_POSITION, lo + i - 1] + cols[F_SIZE, lo + i - 1])
                self._broken = True
        if not self._broken:
            self.valid_bytes = int(cols[F_POSITION, hi - 1] + cols[F_SIZE, hi - 1])
        top = int(running[-1])
        self._prev_last = top if self._prev_last is None else max(self._prev_last, top)
        self.batch_count = count0 + hi - lo
        if self.first_offset is None:
            self.first_offset = int(cols[F_BASE, lo])
        self.next_offset = int(last[-1]) + 1

    def _flagged(self, cols: np.ndarray, lo: int, hi: int, prev: np.ndarray) -> np.ndarray:
        """Rows on which `_check` could add a finding or return False."""
        base, last, count = cols[F_BASE, lo:hi], cols[F_LAST, lo:hi], cols[F_COUNT, lo:hi]
        flagged = (cols[F_CRC_VALID, lo:hi] == 0) | (cols[F_CODEC, lo:hi] > 4) | (cols[F_CONTROL, lo:hi] != 0)
        flagged |= (count < 0) | (last < base) | (count > last - base + 1)
        continuous = (base > prev) & (base - prev == 1)
        if self._prev_last is None:
            continuous[0] = True
        flagged |= ~continuous
        if self.base_offset is not None:
            seg = self.base_offset
            if _INT64_MIN <= seg <= _INT64_MAX - _INT32_MAX:
                flagged |= (last < seg) | (last > seg + _INT32_MAX)
                if self.batch_count == 0:
                    flagged[0] |= base[0] < seg
            else:
                flagged[:] = True
        return flagged

    def _emit(self, cols: np.ndarray, n: int) -> pa.RecordBatch:
        """Columns of the first n rows, typed as `BATCH_SCHEMA`."""
        arrays = [_repeat_string(self.path, n)]
        arrays += [pa.array(cols[k, :n].astype(dtype), BATCH_SCHEMA.field(k + 1).type)
                   for k, dtype in enumerate(_NUMPY_TYPES)]
        return pa.RecordBatch.from_arrays(arrays, schema=BATCH_SCHEMA)


def _row(cols: np.ndarray, row: int) -> list[Any]:  # BatchInfo's fields: ints, four of them bools
    values: list[Any] = cols[:, row].tolist()
    for k in (F_CRC_VALID, F_TXN, F_CONTROL, F_DELETE_HORIZON):
        values[k] = bool(values[k])
    return values


def _repeat_string(text: str, n: int) -> pa.Array:
    """`n` copies of one string as an Arrow string column, built from buffers."""
    data = text.encode("utf-8")
    offsets = np.arange(n + 1, dtype=np.int32) * len(data) if n * len(data) < 2**31 else None
    if offsets is None:
        return pa.array([text] * n, pa.string())
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data * n)])


def fast_walk(buf: bytes | memoryview, path: str, base_offset: int | None = None) -> tuple[FastWalk, pa.Table]:
    """Walk a whole segment; the finished walk and all its batch columns."""
    walk = FastWalk(buf, path, base_offset)
    chunks = list(walk.column_chunks())
    return walk, pa.Table.from_batches(chunks, schema=BATCH_SCHEMA)


def fast_batch_columns(buf: bytes | memoryview, path: str,
                       base_offset: int | None = None) -> tuple[pa.Table, int, list[Finding]]:
    """What `SegmentWalk` + `columns.to_record_batch` give: (batches table, valid_bytes, findings)."""
    walk, table = fast_walk(buf, path, base_offset)
    return table, walk.valid_bytes, walk.findings


def reference_batch_columns(buf: bytes | memoryview, path: str,
                            base_offset: int | None = None) -> tuple[pa.Table, int, list[Finding]]:
    """The same triple from the reference walk alone (the fallback, and the tests' oracle)."""
    walk = SegmentWalk(buf, path, base_offset)
    table = pa.Table.from_batches([to_record_batch(path, list(walk.batches()))], schema=BATCH_SCHEMA)
    return table, walk.valid_bytes, walk.findings
