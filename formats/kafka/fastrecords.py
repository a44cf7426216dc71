"""Fast record decode: v2 records as Arrow columns through a numba kernel.

The kernel parses every record of a run of v2 batches (uncompressed: straight
from the mmap; compressed: from the batches' decompressed payloads, joined)
into offset, timestamp, attributes, sequence and key/value/header positions;
key, value and header bytes are then gathered into Arrow binary columns, or
left as positions (`RecordColumns`) for callers that need only some of them.
The kernel is conservative: a batch it has any doubt about (malformed, or a
value outside int64/int32) is handed to the reference `segment.batch_records`,
which gives the exact rows or the exact error. Speed never changes an answer.
Batches come as a walk's `BatchBlock`s (or a `BATCH_SCHEMA` table).

`check_record_bounds` is the check without the columns: the same parse, in
place, keeping only each record's offset and timestamp to test them against
its batch's bounds; it says which batches the reference must look at.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from replog.formats.errors import FormatError
from replog.formats.findings import Finding, from_error
from replog.formats.kafka import batch as v2
from replog.formats.kafka import codecs, legacy
from replog.formats.kafka.blocks import FIELDS, BatchBlock
from replog.formats.kafka.fastwalk import as_uint8
from replog.formats.kafka.kernels import (
    HAVE_NUMBA,
    add_fits,
    be,
    intrinsic,
    length_field,
    njit,
    record_fields,
    record_frame,
)

if HAVE_NUMBA:
    from numba import types
    from numba.core import cgutils
from replog.formats.kafka.segment import BatchInfo, batch_records

HEADER_TYPE = pa.struct([("key", pa.string()), ("value", pa.binary())])
RECORD_SCHEMA = pa.schema([
    ("position", pa.int64()),       # the position of the record's batch
    ("offset", pa.int64()),
    ("timestamp", pa.int64()),
    ("attributes", pa.uint8()),
    ("sequence", pa.int32()),
    ("key", pa.binary()),
    ("value", pa.binary()),
    ("headers", pa.list_(HEADER_TYPE)),
])
CHUNK_BYTES = 64 << 20  # decompressed payload held at once
_INT32_MIN, _INT32_MAX = -2**31, 2**31 - 1


# --- kernels --------------------------------------------------------------------


@njit(cache=True, nogil=True)
def records_kernel(data, starts, stops, counts, bases, base_ts, max_ts, log_append, base_seq, first,
                   ok, offset, timestamp, attributes, sequence, key_pos, key_len, value_pos, value_len,
                   header_pos, header_count):  # pragma: no cover - compiled
    """Parse the records of every batch b into rows first[b]..; ok[b] False on any doubt."""
    for b in range(len(starts)):
        pos, stop, n = starts[b], stops[b], counts[b]
        good = True
        row = first[b]
        for _ in range(n):
            body, end, good = record_frame(data, pos, stop)
            if not good:
                break
            (attributes[row], ts_delta, delta, key_pos[row], key_len[row], value_pos[row], value_len[row],
             header_pos[row], header_count[row], good) = record_fields(data, body, end)
            pos = end
            if not good or not add_fits(bases[b], delta):
                good = False
                break
            offset[row] = bases[b] + delta
            if log_append[b]:
                timestamp[row] = max_ts[b]
            else:
                if not add_fits(base_ts[b], ts_delta):
                    good = False
                    break
                timestamp[row] = base_ts[b] + ts_delta
            s = base_seq[b]
            if s < 0:
                sequence[row] = -1
            else:
                seq = delta - (2147483647 - s) - 1 if s > 2147483647 - delta else s + delta
                if seq < -2147483648 or seq > 2147483647:
                    good = False
                    break
                sequence[row] = seq
            row += 1
        ok[b] = good and pos == stop


@njit(cache=True, nogil=True)
def headers_kernel(data, header_pos, header_count, hkey_pos, hkey_len, hval_pos, hval_len):  # pragma: no cover
    """Positions of every header of every record (already validated by `records_kernel`)."""
    h = 0
    for r in range(len(header_pos)):
        pos = header_pos[r]
        for _ in range(header_count[r]):
            hkey_pos[h], hkey_len[h], pos, _ok = length_field(data, pos, len(data))
            hval_pos[h], hval_len[h], pos, _ok = length_field(data, pos, len(data))
            h += 1


@intrinsic
def copy_bytes(typingctx, dst, dst_at, src, src_at, n):  # pragma: no cover - compiled
    """memcpy(dst + dst_at, src + src_at, n) on uint8 arrays (bounds checked by the caller)."""
    def codegen(context, builder, signature, args):
        d = context.make_array(signature.args[0])(context, builder, args[0])
        s = context.make_array(signature.args[2])(context, builder, args[2])
        cgutils.raw_memcpy(builder, builder.gep(d.data, [args[1]]), builder.gep(s.data, [args[3]]), args[4], 1)
        return context.get_dummy_value()
    return types.void(dst, dst_at, src, src_at, n), codegen


@njit(cache=True, nogil=True)
def gather_kernel(data, pos, length, out_offsets, out):  # pragma: no cover - compiled
    """Copy data[pos[i]:pos[i]+length[i]] back to back into `out` (nulls, length -1, are empty)."""
    o = 0
    for i in range(len(pos)):
        out_offsets[i] = o
        n = length[i]
        if n > 0:
            copy_bytes(out, o, data, pos[i], n)
            o += n
    out_offsets[len(pos)] = o


# --- bounds check: offsets and timestamps only, no record bytes ---------------------
#
# What `segment.batch_records` decodes, parsed in place (positions and lengths, never
# bytes), and the record check's rules applied to each record as it goes: offsets
# strictly increasing within base..last, and (CreateTime) timestamps not above the
# batch's max nor negative other than -1. A batch is CLEAN only when the reference
# would decode it to the same records and find nothing; on any doubt or any rule
# broken it is SUSPECT, and the reference (`deep_check`) says what, exactly.

CLEAN, SUSPECT, COMPRESSED = 0, 1, 2
CHECK_CHUNK_BYTES = 8 << 20  # decompressed payload checked at once (one reused buffer, cache sized)
_BOUNDS_COLUMNS = ("position", "size", "magic", "base_offset", "last_offset", "max_timestamp", "timestamp_type")
_V2_HEADER, _MIN_RECORD, _LOG_OVERHEAD = v2.HEADER_SIZE, v2.MIN_RECORD_SIZE, v2.LOG_OVERHEAD
_AT_LENGTH, _AT_ATTRIBUTES, _AT_COUNT = v2.AT["batch_length"], v2.AT["attributes"], v2.AT["records_count"]
_AT_BASE_TS, _AT_MAX_TS = v2.AT["base_timestamp"], v2.AT["max_timestamp"]
_CODEC_MASK, _TS_TYPE_MASK, _CREATE_TIME = v2.CODEC_MASK, v2.TIMESTAMP_TYPE_MASK, v2.CREATE_TIME
_LEGACY_OVERHEAD, _LEGACY_MAGIC_AT = legacy.LOG_OVERHEAD, legacy.MAGIC_POSITION
_LEGACY_MIN_V0, _LEGACY_MIN_V1 = legacy.RECORD_OVERHEAD[0], legacy.RECORD_OVERHEAD[1]
_LEGACY_CODEC_MASK = legacy.CODEC_MASK
_MAX_RECORDS = v2.MAX_BATCH_RECORDS


@njit(cache=True, nogil=True)
def _v2_in_bounds(data, pos, stop, count, base, base_ts, header_max_ts, log_append,
                  lo, hi, max_ts, check_ts):  # pragma: no cover - compiled
    """True when data[pos:stop] is exactly `count` records (as `batch.decode_records` reads them)
    whose offsets rise strictly within lo..hi and, with `check_ts`, whose timestamps are valid."""
    if count < 0 or count > (stop - pos) // _MIN_RECORD:
        return False
    prev = lo
    for i in range(count):
        body, end, ok = record_frame(data, pos, stop)
        if not ok:
            return False
        _a, ts_delta, delta, _kp, _kl, _vp, _vl, _hp, _hc, ok = record_fields(data, body, end)
        pos = end
        if not ok or not add_fits(base, delta):
            return False
        offset = base + delta
        if offset > hi or (offset < lo if i == 0 else offset <= prev):
            return False
        prev = offset
        if check_ts:
            if log_append:
                ts = header_max_ts
            else:
                if not add_fits(base_ts, ts_delta):
                    return False
                ts = base_ts + ts_delta
            if ts > max_ts or (ts < 0 and ts != -1):
                return False
    return pos == stop


@njit(cache=True, nogil=True)
def _legacy_in_bounds(buf, pos, lo, hi):  # pragma: no cover - compiled
    """True when the entry at pos is an uncompressed v0/v1 message `legacy.read_legacy_entry`
    reads without error, its offset within lo..hi (a compressed one is the reference's)."""
    total = len(buf)
    if pos < 0 or total - pos < _LEGACY_OVERHEAD:
        return False
    message_size = be(buf, pos + 8, 4)
    if message_size < _LEGACY_MIN_V0:
        return False
    end = pos + _LEGACY_OVERHEAD + message_size
    if end > total:
        return False
    magic = buf[pos + _LEGACY_MAGIC_AT]
    if magic > 1 or message_size < (_LEGACY_MIN_V1 if magic == 1 else _LEGACY_MIN_V0):
        return False
    if buf[pos + _LEGACY_MAGIC_AT + 1] & _LEGACY_CODEC_MASK:
        return False
    p = pos + _LEGACY_MAGIC_AT + 2 + (8 if magic == 1 else 0)
    for _f in range(2):  # key, value: int32 length, -1 for null
        if end - p < 4:
            return False
        n = be(buf, p, 4)
        p += 4
        if n != -1:
            if n < 0 or n > end - p:
                return False
            p += n
    offset = be(buf, pos, 8)
    return lo <= offset <= hi


@njit(cache=True, nogil=True)
def bounds_kernel(buf, position, size, magic, base_offset, last_offset, max_timestamp, timestamp_type,
                  rows, status):  # pragma: no cover - compiled
    """status[k] for the batch in row rows[k] of the columns, read in place in `buf`: CLEAN, SUSPECT,
    or COMPRESSED (a v2 batch with a sound header and a codec: its payload is to be decompressed)."""
    n = len(buf)
    for k in range(len(rows)):
        r = rows[k]
        pos = position[r]
        if magic[r] != 2:
            status[k] = CLEAN if _legacy_in_bounds(buf, pos, base_offset[r], last_offset[r]) else SUSPECT
            continue
        if size[r] < _V2_HEADER or pos < 0 or pos + _V2_HEADER > n:
            status[k] = SUSPECT
            continue
        stop = pos + be(buf, pos + _AT_LENGTH, 4) + _LOG_OVERHEAD
        if stop < pos + _V2_HEADER or stop > n or be(buf, pos + _AT_COUNT, 4) > _MAX_RECORDS:
            status[k] = SUSPECT  # (too many records: the reference refuses them before decompressing)
            continue
        attributes = be(buf, pos + _AT_ATTRIBUTES, 2)
        if attributes & _CODEC_MASK:
            status[k] = COMPRESSED
            continue
        ok = _v2_in_bounds(buf, pos + _V2_HEADER, stop, be(buf, pos + _AT_COUNT, 4), be(buf, pos, 8),
                           be(buf, pos + _AT_BASE_TS, 8), be(buf, pos + _AT_MAX_TS, 8),
                           (attributes & _TS_TYPE_MASK) != 0, base_offset[r], last_offset[r],
                           max_timestamp[r], timestamp_type[r] == _CREATE_TIME)
        status[k] = CLEAN if ok else SUSPECT


@njit(cache=True, nogil=True)
def payload_bounds_kernel(data, starts, stops, header, rule, status):  # pragma: no cover - compiled
    """`bounds_kernel` for decompressed payloads data[starts[k]:stops[k]]: header[:, k] is the
    batch's (count, base offset, base timestamp, max timestamp, log append time), rule[:, k]
    the row's (base offset, last offset, max timestamp, timestamps checked)."""
    for k in range(len(starts)):
        ok = _v2_in_bounds(data, starts[k], stops[k], header[0, k], header[1, k], header[2, k], header[3, k],
                           header[4, k] != 0, rule[0, k], rule[1, k], rule[2, k], rule[3, k] != 0)
        status[k] = CLEAN if ok else SUSPECT


# --- columns --------------------------------------------------------------------


@dataclass
class RecordColumns:
    """Records of a run of batches as positions into `data`; bytes gathered on demand."""

    data: np.ndarray
    position: np.ndarray
    offset: np.ndarray
    timestamp: np.ndarray
    attributes: np.ndarray
    sequence: np.ndarray
    key_pos: np.ndarray
    key_len: np.ndarray
    value_pos: np.ndarray
    value_len: np.ndarray
    header_pos: np.ndarray
    header_count: np.ndarray

    def binary(self, pos: np.ndarray, length: np.ndarray) -> pa.Array:
        """Gather one byte column (length -1 is null) into an Arrow binary array."""
        n = len(pos)
        total = int(np.maximum(length, 0).sum())
        offsets = np.empty(n + 1, dtype=np.int64)
        out = np.empty(total, dtype=np.uint8)
        gather_kernel(self.data, pos, length, offsets, out)
        validity = pa.array(length >= 0).buffers()[1] if (length < 0).any() else None
        arr = pa.Array.from_buffers(pa.large_binary(), n, [validity, pa.py_buffer(offsets), pa.py_buffer(out)])
        return arr.cast(pa.binary()) if total < 2**31 else arr

    def keys(self) -> pa.Array:
        return self.binary(self.key_pos, self.key_len)

    def values(self) -> pa.Array:
        return self.binary(self.value_pos, self.value_len)

    def headers(self) -> pa.Array:
        """The headers column: list<struct<key: string, value: binary>>."""
        total = int(self.header_count.sum())
        cols = [np.zeros(total, dtype=np.int64) for _ in range(4)]
        if total:
            headers_kernel(self.data, self.header_pos, self.header_count, *cols)
        list_offsets = np.zeros(len(self.header_count) + 1, dtype=np.int32)
        np.cumsum(self.header_count, out=list_offsets[1:])
        hkey = _utf8(self.binary(cols[0], cols[1]))
        struct = pa.StructArray.from_arrays([hkey, self.binary(cols[2], cols[3])], fields=list(HEADER_TYPE))
        return pa.ListArray.from_arrays(pa.array(list_offsets), struct)

    def to_table(self) -> pa.Table:
        """Every column, bytes materialised (`RECORD_SCHEMA`)."""
        arrays = [pa.array(self.position), pa.array(self.offset), pa.array(self.timestamp),
                  pa.array(self.attributes), pa.array(self.sequence), self.keys(), self.values(),
                  self.headers()]
        return pa.Table.from_arrays(arrays, schema=RECORD_SCHEMA)


def _utf8(arr: pa.Array) -> pa.Array:
    """Header keys as strings, invalid UTF-8 replaced as the reference decoder does."""
    try:
        return arr.cast(pa.string())
    except pa.ArrowInvalid:
        return pa.array([None if v is None else v.decode("utf-8", "replace") for v in arr.to_pylist()],
                        pa.string())


# --- driver ---------------------------------------------------------------------

_NEEDED = ("position", "size", "magic", "codec", "count", "base_offset", "timestamp_type",
           "first_timestamp", "max_timestamp", "base_sequence")


def as_block(batches: pa.Table | pa.RecordBatch | BatchBlock) -> BatchBlock:
    """A `BATCH_SCHEMA` table's batch columns as a `BatchBlock` (a block is returned as it is)."""
    if isinstance(batches, BatchBlock):
        return batches
    if not batches.num_rows:
        return BatchBlock.empty()
    return BatchBlock(np.stack([batches.column(name).to_numpy(zero_copy_only=False).astype(np.int64)
                                for name in FIELDS]))


def record_columns(buf: bytes | memoryview, path: str,
                   batches: pa.Table | pa.RecordBatch | BatchBlock) -> tuple[pa.Table, list[Finding]]:
    """All records of the `batches` rows (a `BATCH_SCHEMA` table or a walk's `BatchBlock`), in
    order, and one finding per batch whose records cannot be decoded (the reference's own error)."""
    tables, findings = [], []
    for table, found in iter_record_columns(buf, path, batches):
        tables.append(table)
        findings += found
    return pa.concat_tables(tables) if tables else RECORD_SCHEMA.empty_table(), findings


def iter_record_columns(buf: bytes | memoryview, path: str, batches: pa.Table | pa.RecordBatch | BatchBlock,
                        chunk_bytes: int = CHUNK_BYTES) -> Iterator[tuple[pa.Table, list[Finding]]]:
    """`record_columns` in pieces of at most ~`chunk_bytes` of payload, so memory stays flat."""
    block = as_block(batches)
    cols = {name: block.column(name) for name in _NEEDED}
    decodable = ((cols["magic"] == 2) & (cols["size"] >= v2.HEADER_SIZE)) | (cols["magic"] == 0) | (cols["magic"] == 1)
    rows = np.flatnonzero(decodable)
    arr = as_uint8(buf)
    weight = cols["size"][rows].astype(np.int64) * np.where(cols["codec"][rows] == 0, 1, 8)
    ends = np.searchsorted(np.cumsum(weight), np.arange(1, len(rows) + 1) * chunk_bytes, side="right")
    lo = 0
    for hi in ends.tolist():
        hi = max(hi, lo + 1)
        if lo >= len(rows):
            break
        yield _decode_run(arr, buf, path, block, cols, rows[lo:hi])
        lo = hi


def _decode_run(arr: np.ndarray, buf: bytes | memoryview, path: str, block: BatchBlock,
                cols: dict[str, np.ndarray], rows: np.ndarray) -> tuple[pa.Table, list[Finding]]:
    """Decode one run of batch rows: the kernel where it can, the reference elsewhere."""
    positions, ok = _kernel_run(arr, cols, rows)
    return _merge_reference(buf, path, block, rows, ok, positions.to_table())


def record_positions(buf: bytes | memoryview, block: BatchBlock) -> RecordColumns | None:
    """Every record of `block` as positions (`RecordColumns`, bytes not gathered), or None when the kernel
    leaves any batch to the reference (damage, legacy magic, no numba): then the caller takes the reference's
    way. For writers that turn columns straight into text (`dump`'s block formatting)."""
    if not HAVE_NUMBA or not len(block):
        return None
    cols = {name: block.column(name) for name in _NEEDED}
    positions, ok = _kernel_run(as_uint8(buf), cols, np.arange(len(block)))
    return positions if ok.all() else None


def _kernel_run(arr: np.ndarray, cols: dict[str, np.ndarray],
                rows: np.ndarray) -> tuple[RecordColumns, np.ndarray]:
    """The kernel's records of the batch rows it decodes, and which rows those are (the others: none)."""
    fast = (cols["magic"][rows] == 2) if HAVE_NUMBA else np.zeros(len(rows), dtype=bool)
    fast &= cols["count"][rows] <= v2.MAX_BATCH_RECORDS  # beyond: the reference refuses, before decompressing
    data, starts, stops = arr, cols["position"][rows] + v2.HEADER_SIZE, cols["position"][rows] + cols["size"][rows]
    compressed = fast & (cols["codec"][rows] != 0)
    if compressed.any():
        data, starts, stops, fast = _decompress(arr, rows, cols, starts, stops, fast)
    counts = np.where(fast, cols["count"][rows], 0).astype(np.int64)
    fast &= (counts >= 0) & (counts <= (stops - starts) // v2.MIN_RECORD_SIZE)
    counts[~fast] = 0
    first = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(counts, out=first[1:])
    rc = _run_kernel(data, rows, cols, starts, stops, counts, first)
    ok = rc.pop("ok") & fast
    keep = np.repeat(ok, counts)
    return RecordColumns(data, position=np.repeat(cols["position"][rows], counts)[keep],
                         **{k: v[keep] for k, v in rc.items()}), ok


def _run_kernel(data: np.ndarray, rows: np.ndarray, cols: dict[str, np.ndarray], starts: np.ndarray,
                stops: np.ndarray, counts: np.ndarray, first: np.ndarray) -> dict[str, np.ndarray]:
    total = int(first[-1])
    out = {"ok": np.zeros(len(rows), dtype=np.bool_)}
    for name, dtype in (("offset", np.int64), ("timestamp", np.int64), ("attributes", np.uint8),
                        ("sequence", np.int32), ("key_pos", np.int64), ("key_len", np.int64),
                        ("value_pos", np.int64), ("value_len", np.int64), ("header_pos", np.int64),
                        ("header_count", np.int64)):
        out[name] = np.zeros(total, dtype=dtype)
    if len(rows) and HAVE_NUMBA:
        records_kernel(data, starts.astype(np.int64), stops.astype(np.int64), counts,
                       cols["base_offset"][rows], cols["first_timestamp"][rows], cols["max_timestamp"][rows],
                       cols["timestamp_type"][rows] == v2.LOG_APPEND_TIME,
                       cols["base_sequence"][rows].astype(np.int64), first, *out.values())
    return out


def _decompress(arr: np.ndarray, rows: np.ndarray, cols: dict[str, np.ndarray], starts: np.ndarray,
                stops: np.ndarray, fast: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Join every fast batch's (decompressed) payload into one buffer; failures go to the reference."""
    parts, new_starts, new_stops, pos = [], np.zeros(len(rows), np.int64), np.zeros(len(rows), np.int64), 0
    fast = fast.copy()
    for i in np.flatnonzero(fast).tolist():
        raw: np.ndarray | bytes
        raw = arr[starts[i]:stops[i]]
        codec = int(cols["codec"][rows[i]])
        if codec:
            try:
                raw = codecs.decompress(codec, raw.data, magic=v2.MAGIC)  # .data: the array's memoryview
            except FormatError:
                fast[i] = False
                continue
        parts.append(raw)
        new_starts[i], pos = pos, pos + len(raw)
        new_stops[i] = pos
    data = np.frombuffer(b"".join(bytes(p) if isinstance(p, np.ndarray) else p for p in parts), dtype=np.uint8)
    return data, new_starts, new_stops, fast


def _merge_reference(buf: bytes | memoryview, path: str, block: BatchBlock, rows: np.ndarray,
                     ok: np.ndarray, table: pa.Table) -> tuple[pa.Table, list[Finding]]:
    """Splice in, in batch order, the rows of batches the kernel left to the reference."""
    if ok.all():
        return table, []
    pieces, findings, done = [], [], 0
    counts = np.zeros(len(rows), dtype=np.int64)
    counts[ok] = block.count[rows[ok]]
    starts = np.concatenate([[0], np.cumsum(counts)])
    for i in np.flatnonzero(~ok).tolist():
        pieces.append(table.slice(done, int(starts[i]) - done))
        done = int(starts[i])
        info = block.row(int(rows[i]))
        piece, found = reference_rows(buf, path, info)
        pieces.append(piece)
        findings += found
    pieces.append(table.slice(done))
    return pa.concat_tables(pieces), findings


def reference_rows(buf: bytes | memoryview, path: str, info: BatchInfo) -> tuple[pa.Table, list[Finding]]:
    """One batch through the reference decoder, as rows or as a finding."""
    try:
        records = batch_records(buf, info)
        return pa.Table.from_pylist([{
            "position": info.position, "offset": r.offset, "timestamp": r.timestamp,
            "attributes": r.attributes, "sequence": r.sequence, "key": r.key, "value": r.value,
            "headers": [{"key": k, "value": v} for k, v in r.headers]} for r in records],
            schema=RECORD_SCHEMA), []
    except FormatError as err:
        if err.position is None:  # a codec's error does not know its batch: place it there
            err = FormatError(err.code, err.message, info.position, info.base_offset)
        return RECORD_SCHEMA.empty_table(), [from_error(err, path)]
    except (OverflowError, pa.ArrowInvalid) as err:
        return RECORD_SCHEMA.empty_table(), [from_error(FormatError(
            "KAFKA_RECORDS_UNDECODABLE", f"a record value is outside 64 bits: {err}",
            info.position, info.base_offset), path)]


def reference_record_columns(buf: bytes | memoryview, path: str,
                             batches: pa.Table | pa.RecordBatch | BatchBlock) -> tuple[pa.Table, list[Finding]]:
    """The same as `record_columns` through the reference decoder alone (the tests' oracle)."""
    tables, findings = [], []
    for info in as_block(batches).rows():
        if (info.magic == 2 and info.size >= v2.HEADER_SIZE) or info.magic in (0, 1):
            table, found = reference_rows(buf, path, info)
            tables.append(table)
            findings += found
    return (pa.concat_tables(tables) if tables else RECORD_SCHEMA.empty_table()), findings


# --- bounds check driver ----------------------------------------------------------


@dataclass
class RecordBounds:
    """What `check_record_bounds` leaves to the reference decoder."""

    rows: np.ndarray                 # block rows (ascending) the kernel did not clear
    errors: dict[int, FormatError]   # row -> why its payload does not decompress (at its batch)


def check_record_bounds(buf: bytes | memoryview, block: BatchBlock, rows: np.ndarray,
                        budget: int | None = None, chunk_bytes: int = CHECK_CHUNK_BYTES) -> RecordBounds:
    """The `rows` of `block` (batches of magic 0..2 in `buf`) whose records may not decode, or break
    their batch's offset or timestamp bounds: those the reference must judge; the rest are clean.

    Uncompressed v2 batches and plain legacy messages are read in place; compressed v2
    payloads are decompressed (bounded, `codecs`), at most ~`chunk_bytes` held at once.
    Once `budget` rows are flagged, the compressed rows after them are left unread (and
    flagged): a caller that stops at `budget` problems never decompresses them.
    """
    rows = np.asarray(rows, dtype=np.int64)
    if not HAVE_NUMBA or not len(rows):
        return RecordBounds(rows.copy(), {})
    status = np.empty(len(rows), dtype=np.int8)
    cols = [np.ascontiguousarray(block.column(name)) for name in _BOUNDS_COLUMNS]
    bounds_kernel(_readonly(as_uint8(buf)), *cols, rows, status)  # type: ignore[call-arg]  # a numba dispatcher
    errors: dict[int, FormatError] = {}
    compressed = np.flatnonzero(status == COMPRESSED)
    if len(compressed):
        _check_compressed(buf, block, rows, status, compressed, errors, budget, chunk_bytes)
    return RecordBounds(rows[status != CLEAN], errors)


def _readonly(arr: np.ndarray) -> np.ndarray:
    """A read-only view: the kernels see one array type whatever the buffer (one compilation)."""
    if arr.flags.writeable:
        arr = arr.view()
        arr.flags.writeable = False
    return arr


def _check_compressed(buf: bytes | memoryview, block: BatchBlock, rows: np.ndarray, status: np.ndarray,
                      compressed: np.ndarray, errors: dict[int, FormatError], budget: int | None,
                      chunk_bytes: int) -> None:
    """Decompress the COMPRESSED rows in order into one reused chunk and run the payload kernel over it."""
    flagged_before = np.cumsum(status == SUSPECT)  # in-place rows flagged up to each index
    scratch = np.empty(chunk_bytes, dtype=np.uint8)  # reused: no fresh pages per chunk
    pending: list[tuple[int, BatchInfo, int, int]] = []
    held = flagged = 0
    for n, k in enumerate(compressed.tolist()):
        if budget is not None and int(flagged_before[k]) + flagged >= budget:
            status[compressed[n:]] = SUSPECT  # past the budget: the reference's, if ever asked
            break
        row = int(rows[k])
        header = v2.read_header(buf, int(block.position[row]), crc_valid=bool(block.crc_valid[row]))
        try:
            payload = np.frombuffer(v2.records_payload(buf, header), dtype=np.uint8)
        except FormatError as err:  # a codec's error does not know its batch: place it there
            errors[row] = FormatError(err.code, err.message, header.position, int(block.base_offset[row]))
            status[k] = SUSPECT
            flagged += 1
            continue
        if held + len(payload) > chunk_bytes and pending:
            flagged += _check_payloads(block, rows, status, scratch, pending)
            pending, held = [], 0
        if len(payload) > chunk_bytes:  # one payload larger than the chunk: checked where it is
            flagged += _check_payloads(block, rows, status, payload, [(k, header, 0, len(payload))])
            continue
        scratch[held:held + len(payload)] = payload
        pending.append((k, header, held, held + len(payload)))
        held += len(payload)
    if pending:
        _check_payloads(block, rows, status, scratch, pending)


def _check_payloads(block: BatchBlock, rows: np.ndarray, status: np.ndarray, data: np.ndarray,
                    pending: list[tuple[int, BatchInfo, int, int]]) -> int:
    """Run the payload kernel over data[start:stop] of each pending row; the number of rows it flags."""
    ks = np.array([k for k, _, _, _ in pending], dtype=np.int64)
    starts = np.array([start for _, _, start, _ in pending], dtype=np.int64)
    stops = np.array([stop for _, _, _, stop in pending], dtype=np.int64)
    header = np.array([[h.count, h.base_offset, h.first_timestamp, h.max_timestamp,
                        h.timestamp_type == v2.LOG_APPEND_TIME] for _, h, _, _ in pending], dtype=np.int64).T.copy()
    sel = rows[ks]
    rule = np.stack([block.base_offset[sel], block.last_offset[sel], block.max_timestamp[sel],
                     (block.timestamp_type[sel] == v2.CREATE_TIME).astype(np.int64)])
    out = np.empty(len(ks), dtype=np.int8)
    payload_bounds_kernel(_readonly(data), starts, stops, header, rule, out)
    status[ks] = out
    return int(np.count_nonzero(out != CLEAN))
