"""Segment bytes for tests, built with our writers (helpers, not tests)."""
from __future__ import annotations

from replog.formats.kafka import batch as v2
from replog.formats.kafka import control

TS = 1_700_000_000_000


def data_batch(offset: int, n: int = 3, *, epoch: int = 0, codec: int = 0, pid: int = -1) -> bytes:
    recs = [v2.Record(offset + i, TS + offset + i, f"k{offset + i}".encode(), b"v" * (10 + i)) for i in range(n)]
    return v2.build_batch(recs, base_offset=offset, partition_leader_epoch=epoch, codec=codec,
                          producer_id=pid, producer_epoch=0 if pid >= 0 else -1,
                          base_sequence=0 if pid >= 0 else -1)


def segment(*batches: bytes) -> bytes:
    return b"".join(batches)


def simple_segment(count: int = 5, per: int = 3, start: int = 0, epoch: int = 0) -> tuple[bytes, list[int]]:
    """`count` batches of `per` records from `start`; returns bytes and batch positions."""
    out, positions, pos = [], [], 0
    for i in range(count):
        b = data_batch(start + i * per, per, epoch=epoch)
        positions.append(pos)
        out.append(b)
        pos += len(b)
    return b"".join(out), positions


def marker(offset: int, *, commit: bool, pid: int, epoch: int = 0) -> bytes:
    return control.build_marker_batch(offset=offset, commit=commit, producer_id=pid, producer_epoch=0,
                                      coordinator_epoch=1, timestamp=TS + offset, partition_leader_epoch=epoch)
