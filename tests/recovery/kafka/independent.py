"""Replicas written without replog's writers: batches from kafka-python's builder, checkpoints as text.

For tests that compare replay with what the brokers do: the inputs must not come from the code under test.
A replica is a list of (base offset, last offset, epoch) batches plus an epoch checkpoint and a high watermark.
"""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

TS = 1_700_000_000_000


def kp_batch(base: int, last: int, epoch: int, tag: bytes = b"") -> bytes:
    """A v2 batch of last - base + 1 records by kafka-python; the broker-assigned fields (base offset,
    partition leader epoch, both outside the CRC) patched in as a leader would write them."""
    records = pytest.importorskip("kafka.record.default_records")
    builder = records.DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                                producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                                batch_size=1 << 20)
    for i in range(last - base + 1):
        builder.append(i, timestamp=TS + base + i, key=b"k%d" % (base + i), value=b"v" + tag, headers=[])
    raw = bytearray(builder.build())
    struct.pack_into(">q", raw, 0, base)
    struct.pack_into(">i", raw, 12, epoch)
    return bytes(raw)


def write_replica(root: Path, broker: str, batches: list[tuple[int, int, int]], epochs: list[tuple[int, int]],
                  hw: int, *, tag: bytes = b"", topic: str = "t", partition: int = 0) -> Path:
    """`root/broker/topic-partition` with one segment, its leader-epoch-checkpoint and the log dir's
    replication-offset-checkpoint (the broker's text formats: version, count, entries)."""
    log_dir = root / broker
    pdir = log_dir / f"{topic}-{partition}"
    pdir.mkdir(parents=True)
    (pdir / "00000000000000000000.log").write_bytes(b"".join(kp_batch(b, last, e, tag) for b, last, e in batches))
    (pdir / "leader-epoch-checkpoint").write_text(
        f"0\n{len(epochs)}\n" + "".join(f"{e} {o}\n" for e, o in epochs))
    (log_dir / "replication-offset-checkpoint").write_text(f"0\n1\n{topic} {partition} {hw}\n")
    return pdir
