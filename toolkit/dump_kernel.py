"""A numba kernel that writes lines of text from integer columns into a byte buffer: `dump`'s hot loop.

A line is a `Program`: literal text and fields, each field read from a column of
the batch (`BATCH`) or of the record (`RECORD`) being written. The kernel walks
the batches of a block, writes each batch's line and then the lines of its
records, and returns the length written, or -1 when a field holds what it does
not write itself (a value outside an enum's table, a byte outside ASCII, a null
header key): the caller then writes that block the slow way, entry by entry, so
the text never depends on which way it took. Turning numbers into decimal ASCII
is what the Python formatter spends its time on; here it is a loop of digits.

Ops are rows of int64 `(op, column, a, b, c, d, prefix)`, `prefix` a literal written first (-1: none, one op
less per field: the kernel's time is mostly per op); batch columns are read at the batch's row of `batches`
(rows x fields), record columns at the record's row of `records`:
- LIT: literal `a`.
- INT / RINT: the batch's / the record's column in decimal.
- ENUM: `text[a + value - b]` for `b <= value < b + c` of the batch's column, else refused.
- OPT: literal `b` when the batch's column `a` (a 0/1 flag) is 0, else literal `c`, the column, literal `d`.
- JSTR: the bytes at the record's column `column` (position) of length column `a` as a JSON string (`null`
  for a length of -1), with JSON's escapes for `"`, `\\` and control characters, as `json.dumps` writes them.
- HKEYS: the record's header keys, comma separated (kafka-dump-log's `headerKeys: [..]`).
- JHEADERS: the record's headers as JSON, `[{"key": "k", "value": "v"}, ...]`.
Rows, not columns, hold a batch's fields: a line reads them all, and 21 column streams cost twice the time.
"""
from __future__ import annotations

import numpy as np

from replog.formats.kafka.fastrecords import copy_bytes
from replog.formats.kafka.kernels import njit

LIT, INT, RINT, ENUM, OPT, JSTR, HKEYS, JHEADERS = range(8)
WIDTH = 7  # int64s per op
INT_CHARS = 20  # "-9223372036854775808"


_PAIRS = np.frombuffer("".join(f"{n:02d}" for n in range(100)).encode(), dtype=np.uint8).copy()


@njit(cache=True, nogil=True, inline="always")
def _digits(out, o, v):  # pragma: no cover - compiled
    """`v` in decimal at out[o:], two digits at a time from the right into the 20 bytes past the line's
    end (the buffer has room: see `dump_blocks.RunText`), then moved into place; the position after it."""
    if v < 0:
        out[o] = 45  # "-"
        o += 1
        u = np.uint64(-(v + 1)) + np.uint64(1)
    else:
        u = np.uint64(v)
    end = o + 2 * INT_CHARS
    p = end
    hundred = np.uint64(100)
    while u >= hundred:
        q = u // hundred
        pair = np.int64(u - q * hundred) * 2
        p -= 2
        out[p] = _PAIRS[pair]
        out[p + 1] = _PAIRS[pair + 1]
        u = q
    if u >= np.uint64(10):
        pair = np.int64(u) * 2
        p -= 2
        out[p] = _PAIRS[pair]
        out[p + 1] = _PAIRS[pair + 1]
    else:
        p -= 1
        out[p] = np.uint8(48) + np.uint8(u)
    n = end - p
    for k in range(n):
        out[o + k] = out[p + k]
    return o + n


@njit(cache=True, nogil=True, inline="always")
def _copy(out, o, src, start, n):  # pragma: no cover - compiled
    """src[start:start+n] at out[o:] (a loop for the short texts of a line, else one memcpy); the position
    after it."""
    if n <= 24:
        for k in range(n):
            out[o + k] = src[start + k]
    else:
        copy_bytes(out, o, src, start, n)
    return o + n


_ESCAPES = {0x22: ord('"'), 0x5C: ord("\\"), 0x08: ord("b"), 0x0C: ord("f"), 0x0A: ord("n"), 0x0D: ord("r"),
            0x09: ord("t")}
ESCAPE = np.zeros(128, dtype=np.uint8)  # the letter after `\` of a short escape, 0 for none
for _byte, _letter in _ESCAPES.items():
    ESCAPE[_byte] = _letter
HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8).copy()


@njit(cache=True, nogil=True)
def _json_bytes(out, o, data, start, n, escape, hexdigits):  # pragma: no cover - compiled
    """data[start:start+n] as a JSON string (-1: refused, a byte outside ASCII); `null` for n == -1."""
    if n < 0:
        for c in (110, 117, 108, 108):  # null
            out[o] = c
            o += 1
        return o
    out[o] = 34
    o += 1
    for k in range(start, start + n):
        c = data[k]
        if c >= 128:
            return -1
        if escape[c] != 0:
            out[o] = 92
            out[o + 1] = escape[c]
            o += 2
        elif c < 32:
            for x in (92, 117, 48, 48):  # \u00
                out[o] = x
                o += 1
            out[o] = hexdigits[c >> 4]
            out[o + 1] = hexdigits[c & 15]
            o += 2
        else:
            out[o] = c
            o += 1
    out[o] = 34
    return o + 1


@njit(cache=True, nogil=True)
def _ascii(data, start, n):  # pragma: no cover - compiled
    for k in range(start, start + n):
        if data[k] >= 128:
            return False
    return True


@njit(cache=True, nogil=True)
def _header_keys(out, o, data, heads, first, count):  # pragma: no cover - compiled
    """`a,b,c` of the record's header keys (-1: refused, a null or non-ASCII key)."""
    for h in range(first, first + count):
        if h > first:
            out[o] = 44
            o += 1
        n = heads[h, 1]
        if n < 0 or not _ascii(data, heads[h, 0], n):
            return -1
        o = _copy(out, o, data, heads[h, 0], n)
    return o


_HEAD_KEY = np.frombuffer(b'{"key": ', dtype=np.uint8).copy()
_HEAD_VALUE = np.frombuffer(b', "value": ', dtype=np.uint8).copy()


@njit(cache=True, nogil=True)
def _json_headers(out, o, data, heads, first, count, escape, hexdigits):  # pragma: no cover - compiled
    """`[{"key": "k", "value": "v"}, ...]` (-1: refused)."""
    out[o] = 91
    o += 1
    for h in range(first, first + count):
        if h > first:
            out[o] = 44
            out[o + 1] = 32
            o += 2
        o = _copy(out, o, _HEAD_KEY, 0, len(_HEAD_KEY))
        o = _json_bytes(out, o, data, heads[h, 0], heads[h, 1], escape, hexdigits)
        if o < 0:
            return -1
        o = _copy(out, o, _HEAD_VALUE, 0, len(_HEAD_VALUE))
        o = _json_bytes(out, o, data, heads[h, 2], heads[h, 3], escape, hexdigits)
        if o < 0:
            return -1
        out[o] = 125
        o += 1
    out[o] = 93
    return o + 1


@njit(cache=True, nogil=True, inline="always")
def _line(out, o, ops, text, starts, tile, t, records, r, data, heads, escape, hexdigits):  # pragma: no cover
    """One line of a program over batch row `t` of `tile` and record row `r` of `records` (indexes, not row
    views: a view per line costs a reference count)."""
    for k in range(ops.shape[0]):
        op, col, a, b, c, d, prefix = ops[k, 0], ops[k, 1], ops[k, 2], ops[k, 3], ops[k, 4], ops[k, 5], ops[k, 6]
        if prefix >= 0:
            o = _copy(out, o, text, starts[prefix], starts[prefix + 1] - starts[prefix])
        if op == LIT:
            o = _copy(out, o, text, starts[a], starts[a + 1] - starts[a])
        elif op == INT:
            o = _digits(out, o, tile[t, col])
        elif op == RINT:
            o = _digits(out, o, records[r, col])
        elif op == ENUM:
            v = tile[t, col] - b
            if v < 0 or v >= c:
                return -1
            o = _copy(out, o, text, starts[a + v], starts[a + v + 1] - starts[a + v])
        elif op == OPT:
            if tile[t, a] == 0:
                o = _copy(out, o, text, starts[b], starts[b + 1] - starts[b])
            else:
                o = _copy(out, o, text, starts[c], starts[c + 1] - starts[c])
                o = _digits(out, o, tile[t, col])
                o = _copy(out, o, text, starts[d], starts[d + 1] - starts[d])
        elif op == JSTR:
            o = _json_bytes(out, o, data, records[r, col], records[r, a], escape, hexdigits)
        elif op == HKEYS:
            o = _header_keys(out, o, data, heads, records[r, col], records[r, a])
        else:
            o = _json_headers(out, o, data, heads, records[r, col], records[r, a], escape, hexdigits)
        if o < 0:
            return -1
    return o


TILE = 256  # batches whose fields are gathered into rows at a time (the block holds them as columns)


@njit(cache=True, nogil=True)
def _gather(tile, cols, extra, lo, hi):  # pragma: no cover - compiled
    """Batches lo:hi of `cols` (fields x batches) then `extra`'s fields, as the rows of `tile`."""
    width = cols.shape[0]
    for f in range(width):
        for i in range(lo, hi):
            tile[i - lo, f] = cols[f, i]
    for f in range(extra.shape[0]):
        for i in range(lo, hi):
            tile[i - lo, width + f] = extra[f, i]


@njit(cache=True, nogil=True)
def fill(out, text, starts, batch_ops, record_ops, cols, extra, records, first, data, heads, escape,
         hexdigits, begin, end):  # pragma: no cover - compiled
    """The line of every batch of begin:end, each followed by its records' lines (records first[i]:first[i+1]
    of batch i); the length written, or -1 when a field is refused. A batch's fields are `cols`' then `extra`'s
    (both fields x batches), gathered `TILE` batches at a time into rows: a line reads every field of its batch."""
    o = 0
    tile = np.empty((TILE, cols.shape[0] + extra.shape[0]), dtype=np.int64)
    for lo in range(begin, end, TILE):
        hi = min(lo + TILE, end)
        _gather(tile, cols, extra, lo, hi)
        for i in range(lo, hi):
            o = _line(out, o, batch_ops, text, starts, tile, i - lo, records, 0, data, heads, escape, hexdigits)
            if o < 0:
                return -1
            for r in range(first[i], first[i + 1]):
                o = _line(out, o, record_ops, text, starts, tile, i - lo, records, r, data, heads, escape,
                          hexdigits)
                if o < 0:
                    return -1
    return o
