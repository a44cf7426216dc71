"""The records of one large batch as column tables of at most `batch.BLOCK_RECORDS` records each.

A batch may hold up to `batch.MAX_BATCH_RECORDS` records (a million tiny ones fit in a few MiB of
zstd), and their columns, decoded at once, take about a hundred bytes a record. `batch_record_tables`
decompresses the payload once (bounded, `codecs`), finds where every `block`-th record starts by
their length fields alone (`record_starts_kernel`), has the record kernel check that every block
decodes (nothing kept), then hands the blocks' tables out one at a time: the rows
`fastrecords.record_columns` gives for the batch, a block of them in memory at once. A batch the
kernels have any doubt about gives None: the caller asks the reference decoder, whose rows or error
are the answer.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from replog.formats.errors import FormatError
from replog.formats.kafka import batch as v2
from replog.formats.kafka.fastrecords import RecordColumns, records_kernel
from replog.formats.kafka.kernels import HAVE_NUMBA, njit, record_frame
from replog.formats.kafka.segment import BatchInfo

_COLUMNS = (("offset", np.int64), ("timestamp", np.int64), ("attributes", np.uint8), ("sequence", np.int32),
            ("key_pos", np.int64), ("key_len", np.int64), ("value_pos", np.int64), ("value_len", np.int64),
            ("header_pos", np.int64), ("header_count", np.int64))


@njit(cache=True, nogil=True)
def record_starts_kernel(data, count, every, out):  # pragma: no cover - compiled
    """Where records 0, every, 2*every, ... of the `count` records filling `data` start, into `out`;
    how many were written, or -1 when the length fields do not frame exactly `count` records."""
    pos, k, stop = 0, 0, len(data)
    for i in range(count):
        if i % every == 0:
            out[k] = pos
            k += 1
        _body, pos, ok = record_frame(data, pos, stop)
        if not ok:
            return -1
    return k if pos == stop else -1


def batch_record_tables(buf: bytes | memoryview, info: BatchInfo,
                        block: int | None = None) -> Iterator[pa.Table] | None:
    """The records of the v2 batch `info` as tables of at most `block` (default `batch.BLOCK_RECORDS`)
    records (`RECORD_SCHEMA`), or None when the kernels cannot vouch for every record (the reference
    decides then)."""
    block = block or v2.BLOCK_RECORDS
    if not HAVE_NUMBA or info.magic != 2 or info.size < v2.HEADER_SIZE:
        return None
    header = v2.read_header(buf, info.position, crc_valid=info.crc_valid)
    count = header.count
    if count < 0 or count > v2.MAX_BATCH_RECORDS:
        return None
    try:
        data = np.frombuffer(v2.records_payload(buf, header), dtype=np.uint8)
    except FormatError:
        return None
    if count > len(data) // v2.MIN_RECORD_SIZE:
        return None
    starts = np.empty(count // block + 1, dtype=np.int64)
    blocks = record_starts_kernel(data, count, block, starts)
    if blocks < 0:
        return None
    bounds = [*starts[:blocks].tolist(), len(data)]
    runs = [(bounds[j], bounds[j + 1], min(block, count - j * block)) for j in range(blocks)]
    if not all(_decode(data, header, run)[0] for run in runs):  # every block decodes: nothing handed out before
        return None
    return (_table(data, header, info.position, run) for run in runs)


def _decode(data: np.ndarray, header: BatchInfo, run: tuple[int, int, int]) -> tuple[bool, dict[str, np.ndarray]]:
    """One block of records through the record kernel: (decoded cleanly, its columns)."""
    start, stop, n = run
    out = {name: np.zeros(n, dtype=dtype) for name, dtype in _COLUMNS}
    ok = np.zeros(1, dtype=np.bool_)
    one = np.ones(1, dtype=np.int64)
    records_kernel(data, one * start, one * stop, one * n, one * header.base_offset, one * header.first_timestamp,
                   one * header.max_timestamp, np.array([header.timestamp_type == v2.LOG_APPEND_TIME]),
                   one * header.base_sequence, np.array([0, n], dtype=np.int64), ok, *out.values())
    return bool(ok[0]), out


def _table(data: np.ndarray, header: BatchInfo, position: int, run: tuple[int, int, int]) -> pa.Table:
    _, columns = _decode(data, header, run)
    return RecordColumns(data, position=np.full(run[2], position, dtype=np.int64), **columns).to_table()
