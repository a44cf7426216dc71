"""Fast batch walk: a numba kernel over the clean v2 batches, the reference for the rest.

The kernel reads every batch header and checks every CRC (table-driven
CRC-32C, slice-by-8) in one compiled loop over a uint8 view of the buffer (no
copy), writing the `BatchInfo` fields into the int64 columns of a `BatchBlock`;
where each header field sits comes from the construct layout (`batch.AT`),
which row each field fills from the block's field list (`blocks.ROW`). It stops
at the first position that is not a clean, complete magic-2 batch; there the
reference `SegmentWalk` reads one entry (legacy, torn, zero tail...) and the
kernel takes over again after it. Batch checks are vectorised over the columns,
and only the rows they flag (bad CRC, gaps, control batches...) go through the
reference's public `SegmentWalk.check`, on a reference walk this walk owns and
keeps the outcome in, so every finding, its order and `valid_bytes` are the
reference's own: speed never changes an answer.
Without numba everything falls back to the reference walk.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from replog.formats.fileio import RELEASE_STEP, release_pages
from replog.formats.fileview import readable
from replog.formats.findings import Finding
from replog.formats.kafka import batch as v2
from replog.formats.kafka import batch_rules, blocks
from replog.formats.kafka.blocks import BatchBlock, column_buffer, int64_row, reference_blocks, rows_for
from replog.formats.kafka.columns import BATCH_SCHEMA, CHUNK, to_record_batch
from replog.formats.kafka.kernels import HAVE_NUMBA, add_fits, be, intrinsic, njit
from replog.formats.kafka.segment import SegmentWalk

if HAVE_NUMBA:
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils

_CRC32C_POLY = 0x82F63B78
_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1
_INT64_MIN = -2**63
FIELDS = blocks.FIELDS
# Rows of the block each field fills, and where in a v2 header each field is: module
# constants, frozen into the compiled kernels.
(F_POSITION, F_SIZE, F_MAGIC, F_BASE, F_LAST, F_COUNT, F_EPOCH, F_CRC, F_CRC_VALID, F_ATTR, F_CODEC,
 F_TS_TYPE, F_FIRST_TS, F_MAX_TS, F_PID, F_PEPOCH, F_BSEQ, F_TXN, F_CONTROL, F_DELETE_HORIZON) = (
    blocks.ROW[name] for name in ("position", "size", "magic", "base_offset", "last_offset", "count",
                                  "partition_leader_epoch", "crc", "crc_valid", "attributes", "codec",
                                  "timestamp_type", "first_timestamp", "max_timestamp", "producer_id",
                                  "producer_epoch", "base_sequence", "is_transactional", "is_control",
                                  "has_delete_horizon"))
_AT_LENGTH, _AT_EPOCH, _AT_MAGIC, _AT_CRC = (v2.AT[k] for k in ("batch_length", "partition_leader_epoch",
                                                               "magic", "crc"))
_AT_ATTRIBUTES, _AT_DELTA, _AT_FIRST_TS, _AT_MAX_TS = (v2.AT[k] for k in ("attributes", "last_offset_delta",
                                                                         "base_timestamp", "max_timestamp"))
_AT_PID, _AT_PEPOCH, _AT_BSEQ, _AT_COUNT = (v2.AT[k] for k in ("producer_id", "producer_epoch", "base_sequence",
                                                              "records_count"))
_HEADER_SIZE, _LOG_OVERHEAD, _MIN_LENGTH = v2.HEADER_SIZE, v2.LOG_OVERHEAD, v2.HEADER_SIZE - v2.LOG_OVERHEAD
_MAX_LENGTH = _INT32_MAX - _LOG_OVERHEAD  # size = length + 12 must stay an int32 position step
_CODEC_MASK, _TS_TYPE_MASK, _TXN_MASK = v2.CODEC_MASK, v2.TIMESTAMP_TYPE_MASK, v2.TRANSACTIONAL_MASK
_CONTROL_MASK, _DELETE_HORIZON_MASK = v2.CONTROL_MASK, v2.DELETE_HORIZON_MASK


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
def clean_size(buf, pos, end):  # pragma: no cover - compiled
    """Size of the clean, complete v2 batch at pos, or -1 where the reference must judge.

    Not clean: fewer bytes left than a v2 header, a length below a v2 header,
    magic other than 2, a batch running past `end`, a last offset outside int64.
    """
    if end - pos < _HEADER_SIZE:
        return -1
    length = be(buf, pos + _AT_LENGTH, 4)
    if (length < _MIN_LENGTH or buf[pos + _AT_MAGIC] != 2 or length > _MAX_LENGTH
            or pos + _LOG_OVERHEAD + length > end):
        return -1
    if not add_fits(be(buf, pos, 8), be(buf, pos + _AT_DELTA, 4)):
        return -1
    return length + _LOG_OVERHEAD


@njit(cache=True, nogil=True, inline="always")
def fill_row(buf, pos, size, cols, row):  # pragma: no cover - compiled
    """Write the BatchInfo fields of the batch at pos (all but crc_valid) into cols[:, row]."""
    base = be(buf, pos, 8)
    attributes = be(buf, pos + _AT_ATTRIBUTES, 2)
    cols[F_POSITION, row] = pos
    cols[F_SIZE, row] = size
    cols[F_MAGIC, row] = 2
    cols[F_BASE, row] = base
    cols[F_LAST, row] = base + be(buf, pos + _AT_DELTA, 4)
    cols[F_COUNT, row] = be(buf, pos + _AT_COUNT, 4)
    cols[F_EPOCH, row] = be(buf, pos + _AT_EPOCH, 4)
    cols[F_CRC, row] = be(buf, pos + _AT_CRC, 4) & 0xFFFFFFFF
    cols[F_ATTR, row] = attributes
    cols[F_CODEC, row] = attributes & _CODEC_MASK
    cols[F_TS_TYPE, row] = 1 if attributes & _TS_TYPE_MASK else 0
    cols[F_FIRST_TS, row] = be(buf, pos + _AT_FIRST_TS, 8)
    cols[F_MAX_TS, row] = be(buf, pos + _AT_MAX_TS, 8)
    cols[F_PID, row] = be(buf, pos + _AT_PID, 8)
    cols[F_PEPOCH, row] = be(buf, pos + _AT_PEPOCH, 2)
    cols[F_BSEQ, row] = be(buf, pos + _AT_BSEQ, 4)
    cols[F_TXN, row] = 1 if attributes & _TXN_MASK else 0
    cols[F_CONTROL, row] = 1 if attributes & _CONTROL_MASK else 0
    cols[F_DELETE_HORIZON, row] = 1 if attributes & _DELETE_HORIZON_MASK else 0


@njit(cache=True, nogil=True, inline="always")
def _crc32c_hw(buf, start, stop, t):  # pragma: no cover - compiled
    """`crc32c_hw_kernel` with `crc32c_kernel`'s signature (`t` unused)."""
    return crc32c_hw_kernel(buf, start, stop)


# The CRC the walk computes, chosen once: the hardware instruction is never compiled where the CPU lacks it.
# (numba freezes this global into the kernel; its on-disk cache is keyed by the CPU, so it stays consistent.)
_CRC32C = _crc32c_hw if HARDWARE_CRC else crc32c_kernel


@njit(cache=True, nogil=True, inline="always")
def walk_rows(buf, pos, end, cols, row, row_limit, t, verify):  # pragma: no cover - compiled
    """Fill cols[:, row:] with clean v2 batches from pos (`clean_size`, `fill_row`); with `verify`,
    crc_valid says whether the CRC holds, without, the batches are trusted (1). (next row, stop position)."""
    while row < row_limit:
        size = clean_size(buf, pos, end)
        if size < 0:
            break
        fill_row(buf, pos, size, cols, row)
        if verify:
            cols[F_CRC_VALID, row] = 1 if _CRC32C(buf, pos + _AT_ATTRIBUTES, pos + size, t) == cols[F_CRC, row] else 0
        else:
            cols[F_CRC_VALID, row] = 1
        pos += size
        row += 1
    return row, pos


@njit(cache=True, nogil=True)
def walk_kernel(buf, pos, end, cols, row, row_limit, t):  # pragma: no cover - compiled
    """Fill cols[:, row:] with clean v2 batches from pos, CRCs checked; return (next row, stop position)."""
    return walk_rows(buf, pos, end, cols, row, row_limit, t, True)


WALK_KERNEL = walk_kernel


_broken_rules = njit(cache=True, nogil=True, inline="always")(batch_rules.broken_rules)


@njit(cache=True, nogil=True)
def judge_kernel(cols, start, stop, prev_last, has_prev, seg, check_seg, first_of_segment,
                 flagged, prev):  # pragma: no cover - compiled
    """For each row i of cols[:, start:stop]: prev[i - start], the highest last offset before it, and
    flagged[i - start], whether it breaks any rule of `batch_rules.RULES` (`broken_rules`, the predicate
    `SegmentWalk.check` runs), so `check` must look at it. Returns the highest last offset after the rows.
    One pass instead of a dozen array operations: the walk's bookkeeping stays a small part of its cost
    on one-record batches."""
    top = prev_last
    seen = has_prev
    for i in range(start, stop):
        last = cols[F_LAST, i]
        flagged[i - start] = _broken_rules(
            cols[F_MAGIC, i], cols[F_SIZE, i], cols[F_CRC_VALID, i] != 0, cols[F_CODEC, i], cols[F_COUNT, i],
            cols[F_BASE, i], last, cols[F_CONTROL, i] != 0, top, seen, seg, check_seg,
            i == start and first_of_segment) != 0
        prev[i - start] = top
        if not seen or last > top:
            top = last
        seen = True
    return top


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


class FastWalk:
    """A batch walk whose clean v2 stretches are read by the kernel, yielding `BatchBlock`s.

    The outcome (findings, `valid_bytes`, counters) is kept on `reference`, a
    `SegmentWalk` of the same buffer: it reads the entries the kernel leaves to
    it and judges the rows the vectorised checks flag, through its public
    `read_at`/`step`/`check`. So the outcome is the reference's by construction.
    """

    def __init__(self, buf: bytes | memoryview, path: str, base_offset: int | None = None,
                 limit: int | None = None) -> None:
        self.buf, self.path, self.base_offset, self.limit = buf, path, base_offset, limit
        self.reference = SegmentWalk(buf, path, base_offset, limit)

    # the outcome, as the reference walk has it
    findings = property(lambda self: self.reference.findings)
    valid_bytes = property(lambda self: self.reference.valid_bytes)
    end_position = property(lambda self: self.reference.end_position)
    batch_count = property(lambda self: self.reference.batch_count)
    first_offset = property(lambda self: self.reference.first_offset)
    next_offset = property(lambda self: self.reference.next_offset)
    zero_tail = property(lambda self: self.reference.zero_tail)

    def column_chunks(self, chunk: int = CHUNK) -> Iterator[pa.RecordBatch]:
        """The walk as Arrow record batches (`BATCH_SCHEMA`) of at most `chunk` rows."""
        for block in self.blocks(chunk):
            yield block.to_arrow(self.path)

    def blocks(self, chunk: int = CHUNK) -> Iterator[BatchBlock]:
        """The walk as `BatchBlock`s of at most `chunk` rows.

        Each block is a view into one reused buffer: read it (or copy it) before
        asking for the next. When a block is yielded, the outcome covers its rows.
        A block spans about `RELEASE_STEP` bytes at most, and its bytes stay mapped
        until the next block is asked for: a consumer that reads them (records)
        finds them in memory, and memory stays flat all the same.
        """
        if not HAVE_NUMBA or self.limit is not None:
            yield from reference_blocks(self.reference, chunk)
            return
        ref = self.reference
        arr = as_uint8(self.buf)
        end = len(arr)
        chunk = rows_for(end, chunk)
        cols = column_buffer(chunk)
        ref.begin()
        pos, row, released = 0, 0, 0
        while pos < end:
            if pos - released > RELEASE_STEP:  # keep memory flat on multi-GiB segments
                if row:  # its consumer may read its bytes: they go after it is done
                    yield BatchBlock(cols[:, :row])
                    row = 0
                release_pages(self.buf, released, pos)
                released = pos
            start_row = row
            window = min(end, pos + RELEASE_STEP)  # a batch across the window's end goes to the reference
            readable(self.buf, pos, window)
            row, pos = WALK_KERNEL(arr, pos, window, cols, row, chunk, CRC_TABLES)
            self._judge(cols, start_row, row)
            if row == chunk:
                yield BatchBlock(cols[:, :row])
                row = 0
                continue
            if pos >= end:
                break
            if pos == window:
                continue
            info = ref.read_at(pos, end)
            if info is None:
                break
            ref.step(info)
            cols[:, row] = int64_row(info)
            row += 1
            pos = info.end
            if row == chunk:
                yield BatchBlock(cols[:, :row])
                row = 0
        ref.end_position = pos
        if row:
            yield BatchBlock(cols[:, :row])

    def _judge(self, cols: np.ndarray, start: int, stop: int) -> None:
        """Apply the reference checks to kernel rows cols[:, start:stop]: `check` runs only on the rows
        `judge_kernel` flags."""
        if stop <= start:
            return
        ref = self.reference
        seg = self.base_offset
        check_seg = seg is not None and _INT64_MIN <= seg <= _INT64_MAX - _INT32_MAX
        flagged = np.empty(stop - start, dtype=np.bool_)
        prev = np.empty(stop - start, dtype=np.int64)
        has_prev = ref.prev_last is not None
        top = judge_kernel(cols, start, stop, ref.prev_last if has_prev else 0, has_prev, seg if check_seg else 0,
                           check_seg, ref.batch_count == 0, flagged, prev)
        if seg is not None and not check_seg:  # a base offset no last offset can be checked against
            flagged[:] = True
        block = BatchBlock(cols[:, start:stop])
        count0 = ref.batch_count
        for i in np.flatnonzero(flagged).tolist():
            ref.batch_count = count0 + i
            prev_last = int(prev[i]) if i or has_prev else None
            if not ref.check(block.row(i), prev_last) and not ref.broken:
                if i:
                    ref.valid_bytes = int(block.position[i - 1] + block.size[i - 1])
                ref.broken = True
        if not ref.broken:
            ref.valid_bytes = int(block.position[-1] + block.size[-1])
        ref.prev_last = int(top)
        ref.batch_count = count0 + len(block)
        if ref.first_offset is None:
            ref.first_offset = int(block.base_offset[0])
        ref.next_offset = int(block.last_offset[-1]) + 1


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
