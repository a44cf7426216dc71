"""The compiled header hop: columns of batches that are already known to be valid.

`hop_kernel` is `fastwalk.walk_kernel` without the CRC: the same loop (`walk_rows`: framing rule
and header fields), so its rows are the fast walk's rows. It serves writers that copy batches
someone has already validated (CRC included); they need the batches' columns, not a second
verdict, and the CRC would be most of the walk's cost on small batches.
"""
from __future__ import annotations

from replog.formats.kafka.fastwalk import CRC_TABLES, walk_rows
from replog.formats.kafka.kernels import njit


@njit(cache=True, nogil=True)
def hop_kernel(buf, pos, end, cols, row, row_limit):  # pragma: no cover - compiled
    """Fill cols[:, row:] with the clean v2 batches from pos (crc_valid 1: trusted); (next row, stop position)."""
    return walk_rows(buf, pos, end, cols, row, row_limit, CRC_TABLES, False)
