"""The numba building blocks every Kafka kernel shares: the import shim, big-endian loads, the v2 record grammar.

One public module, so a kernel never imports another module's private helper and the v2 record
(`batch.RECORD` in construct: length, attributes, timestamp delta, offset delta, key, value, headers)
is walked by ONE function, `record_fields`, in every kernel that reads records (`fastrecords`'
decode and bounds check, `record_blocks`' block starts through `record_frame`). Every helper is
`inline="always"`: inlined into its caller, it costs what the hand-written loop cost.

All helpers are conservative: `ok` False means "the reference decides" (a varint beyond its width, a
field past its record, a value outside int64), never a verdict of its own.
Without numba `njit` is the identity, so these are plain Python functions (callers then do not run them).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from replog.formats.kafka.batch import MIN_RECORD_BODY

try:  # numba is optional at run time: without it the reference paths answer
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

INT64_MAX, INT64_MIN = 9223372036854775807, -9223372036854775808


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
def be(buf, pos, n):  # pragma: no cover - compiled
    """Big-endian signed integer of n (8, 4 or 2) bytes at pos: one load and a byte swap."""
    if n == 8:
        return _be64(buf, pos)
    if n == 4:
        return _be32(buf, pos)
    return _be16(buf, pos)


@njit(cache=True, nogil=True, inline="always")
def add_fits(a, b):  # pragma: no cover - compiled
    """True when a + b stays within int64 (checked before adding: int64 arithmetic wraps)."""
    return not ((b > 0 and a > INT64_MAX - b) or (b < 0 and a < INT64_MIN - b))


@njit(cache=True, nogil=True, inline="always")
def varint(data, pos, stop, max_bytes):  # pragma: no cover - compiled
    """Zig-zag varint at pos within [pos, stop): (value, next pos, ok); not ok on any doubt."""
    result = np.int64(0)
    shift = 0
    start = pos
    while pos < stop:
        b = np.int64(data[pos])
        pos += 1
        if shift == 63 and (b & 0x7F) > 1:
            return 0, pos, False  # beyond 64 bits: the reference decides
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            half = (result >> 1) & 0x7FFFFFFFFFFFFFFF
            return (~half if result & 1 else half), pos, True
        shift += 7
        if pos - start >= max_bytes:
            return 0, pos, False
    return 0, pos, False


@njit(cache=True, nogil=True, inline="always")
def length_field(data, pos, stop):  # pragma: no cover - compiled
    """A length-prefixed field: (start, length or -1 for null, next pos, ok)."""
    n, pos, ok = varint(data, pos, stop, 5)
    if not ok:
        return 0, 0, pos, False
    if n < 0:
        return pos, -1, pos, True
    if pos + n > stop:
        return 0, 0, pos, False
    return pos, n, pos + n, True


@njit(cache=True, nogil=True, inline="always")
def record_frame(data, pos, stop):  # pragma: no cover - compiled
    """The record whose length varint is at pos: (body start, body end, ok); ok when the body fits in `stop`."""
    length, pos, ok = varint(data, pos, stop, 5)
    end = pos + length
    return pos, end, ok and length >= MIN_RECORD_BODY and end <= stop


@njit(cache=True, nogil=True, inline="always")
def record_fields(data, pos, end):  # pragma: no cover - compiled
    """The fields of the record body data[pos:end], in `batch.RECORD_BODY`'s order: (attributes, timestamp
    delta, offset delta, key start, key length, value start, value length, headers start, header count, ok).
    Lengths are -1 for null; ok only when the fields fill the body exactly and every header key is non-null."""
    attributes = data[pos]
    ts_delta, pos, ok = varint(data, pos + 1, end, 10)
    delta, key_pos, key_len, value_pos, value_len, header_count = 0, 0, 0, 0, 0, 0
    if ok:
        delta, pos, ok = varint(data, pos, end, 5)
    if ok:
        key_pos, key_len, pos, ok = length_field(data, pos, end)
    if ok:
        value_pos, value_len, pos, ok = length_field(data, pos, end)
    if ok:
        header_count, pos, ok = varint(data, pos, end, 5)
        ok = ok and 0 <= header_count <= end - pos
    header_pos = pos
    h = 0
    while ok and h < header_count:
        _s, kn, pos, ok = length_field(data, pos, end)
        ok = ok and kn >= 0  # a header key is never null
        if ok:
            _s, _vn, pos, ok = length_field(data, pos, end)
        h += 1
    ok = ok and pos == end
    return attributes, ts_delta, delta, key_pos, key_len, value_pos, value_len, header_pos, header_count, ok
