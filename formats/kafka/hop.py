"""Columns of a byte range holding whole batches back to back, without judging them.

A writer that copies batches someone has already walked and validated (a
repair plan, a recovery's kept ranges) still needs their columns: offsets for
the segment roll, positions and timestamps for the indexes, producer fields
for the snapshots. `hop_blocks` hops from header to header over `buf[start:end]`
and yields them as `BatchBlock`s, by the fast walk's framing and fields
(`fasthop.hop_kernel`, compiled) or the reference walk's (`SegmentWalk.read_at`,
for everything the kernel leaves: legacy entries, and every entry without
numba). No CRC is computed: the `crc_valid` column is 1 on every row, the
input being trusted. Rows are exactly the rows a walk of the range yields
(tested against `FastWalk`).
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from replog.formats.fileio import RELEASE_STEP, release_pages
from replog.formats.fileview import readable
from replog.formats.kafka.blocks import ROW, BatchBlock, column_buffer, int64_row, rows_for
from replog.formats.kafka.columns import CHUNK
from replog.formats.kafka.segment import SegmentWalk

_CRC_VALID = ROW["crc_valid"]


def hop_blocks(buf: bytes | memoryview, path: str, start: int, end: int, *, compiled: bool,
               chunk: int = CHUNK) -> Iterator[BatchBlock]:
    """The batches of `buf[start:end]` as blocks (positions in `buf`), each spanning at most about
    `RELEASE_STEP` bytes; raises ValueError where the range does not hold whole entries.

    Each block is a view into one reused buffer, and its bytes stay mapped while the consumer holds it
    (a writer checksums them); they are released from this process when the next block is asked for.
    """
    if not 0 <= start <= end <= len(buf):
        raise ValueError(f"{path}: range {start}..{end} is outside the file's {len(buf)} bytes")
    kernel: Any = None  # the compiled hop, when asked for and numba is there
    if compiled:
        from replog.formats.kafka.fastwalk import HAVE_NUMBA
        if HAVE_NUMBA:
            from replog.formats.kafka.fasthop import hop_kernel as kernel
    arr = np.frombuffer(buf, dtype=np.uint8)
    reference = SegmentWalk(buf, path)
    chunk = rows_for(end - start, chunk)
    cols = column_buffer(chunk)
    pos = block_start = start
    row = 0
    while pos < end:
        limit = min(end, block_start + RELEASE_STEP)
        if kernel is not None:
            readable(buf, pos, limit)
            row, pos = kernel(arr, pos, limit, cols, row, chunk)
        if row < chunk and pos < limit:  # an entry the kernel leaves (or no kernel): the reference frames it
            info = reference.read_at(pos, end)
            if info is None:
                raise ValueError(f"{path}: no whole batch at position {pos} of the range {start}..{end}")
            cols[:, row] = int64_row(info)
            cols[_CRC_VALID, row] = 1
            row += 1
            pos = info.end
        if row == chunk or pos >= limit:
            yield BatchBlock(cols[:, :row])
            release_pages(buf, block_start, pos)
            block_start, row = pos, 0
