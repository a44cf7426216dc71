"""Partition and log dirs for doctor/recover tests, built with our writers (helpers, not tests)."""
from __future__ import annotations

import hashlib
import struct
from pathlib import Path

from crc32c import crc32c

from replog.formats.kafka import batch as v2
from replog.formats.kafka import checkpoint, names
from replog.formats.kafka.segment import SegmentWalk
from replog.recovery.kafka.writer import write_partition
from tests.formats.kafka.segments import TS, data_batch, marker

TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"


def build_log_dir(root: Path, *, n: int = 40, per: int = 5, segment_bytes: int = 3000,
                  extra: list[bytes] | None = None) -> tuple[Path, list[int]]:
    """A log dir with one partition `t-0` (epochs 0..3) and consistent root checkpoints."""
    batches = [data_batch(i * per, per, epoch=i // 10) for i in range(n)] + (extra or [])
    pdir = root / "t-0"
    written = write_partition(pdir, batches, segment_bytes=segment_bytes, interval=500, topic_id=TOPIC_ID)
    leo = written.log_end_offset
    set_checkpoint(root, names.REPLICATION_OFFSET_CHECKPOINT, leo)
    set_checkpoint(root, names.RECOVERY_POINT_OFFSET_CHECKPOINT, 0)
    (root / names.LOG_START_OFFSET_CHECKPOINT).write_bytes(checkpoint.build_offset_checkpoint({}))
    return pdir, written.segment_bases


def set_checkpoint(root: Path, name: str, offset: int, topic: str = "t", partition: int = 0) -> None:
    (root / name).write_bytes(checkpoint.build_offset_checkpoint({(topic, partition): offset}))


def seg_path(pdir: Path, base: int, kind: str = "log") -> Path:
    return pdir / names.segment_file_name(base, kind)


def batches_of(path: Path, base: int):
    return list(SegmentWalk(path.read_bytes(), str(path), base).batches())


def flip(path: Path, position: int, mask: int = 0xFF) -> None:
    data = bytearray(path.read_bytes())
    data[position] ^= mask
    path.write_bytes(bytes(data))


def tree_hashes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def txn_batch(offset: int, n: int, pid: int) -> bytes:
    recs = [v2.Record(offset + i, TS + offset + i, None, b"t") for i in range(n)]
    return v2.build_batch(recs, base_offset=offset, producer_id=pid, producer_epoch=0, base_sequence=0,
                          transactional=True)


def undecodable_batch(offset: int) -> bytes:
    """A batch whose CRC is valid but whose gzip-flagged payload is not gzip."""
    raw = bytearray(data_batch(offset, 3))
    raw[22] = (raw[22] & ~0x07) | 1  # codec gzip in the attributes low byte
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    return bytes(raw)


__all__ = ["build_log_dir", "set_checkpoint", "seg_path", "batches_of", "flip", "tree_hashes", "txn_batch",
           "marker", "undecodable_batch", "data_batch", "TS"]
