"""Benchmark inputs, built with our own writers: segments of large, tiny and compressed batches.

A few dozen distinct batches are built with `batch.build_batch`, then repeated
with their base offsets restamped (the base offset is outside the CRC), so a
multi-megabyte segment costs milliseconds to make and every batch stays valid.
"""
from __future__ import annotations

import random
import struct
from dataclasses import dataclass
from pathlib import Path

from replog.formats.fileio import atomic_write
from replog.formats.kafka import batch as v2
from replog.formats.kafka import codecs

TEMPLATES = 64
TS = 1_700_000_000_000


@dataclass(frozen=True)
class Shape:
    """How one input's batches look."""

    name: str
    records: int       # per batch
    value_size: int
    codec: int = codecs.NONE


SHAPES = (
    Shape("large", 100, 100),
    Shape("tiny", 1, 16),             # ~90-byte batches: one small record each
    Shape("lz4", 100, 100, codecs.LZ4),
    Shape("zstd", 100, 100, codecs.ZSTD),
    Shape("snappy", 100, 100, codecs.SNAPPY),
    Shape("gzip", 100, 100, codecs.GZIP),
)


def _value(rnd: random.Random, size: int) -> bytes:
    """A JSON-ish value: compressible like real payloads, not trivially so."""
    text = f'{{"id":{rnd.randrange(10**9)},"user":"u{rnd.randrange(10**5)}","v":{rnd.random():.6f},"s":"'
    pad = size - len(text) - 2
    return (text + "".join(rnd.choice("abcdefghij") for _ in range(max(pad, 0))) + '"}').encode()[:size]


def _template(rnd: random.Random, shape: Shape) -> bytes:
    recs = [v2.Record(i, TS + i, b"key-%06d" % rnd.randrange(10**6), _value(rnd, shape.value_size),
                      (("trace", b"%08x" % rnd.getrandbits(32)),) if shape.records > 1 and i % 10 == 0 else ())
            for i in range(shape.records)]
    return v2.build_batch(recs, base_offset=0, codec=shape.codec, partition_leader_epoch=3)


def build_segment(shape: Shape, size: int, seed: int = 7) -> tuple[bytes, int, int]:
    """About `size` bytes of consecutive batches; returns (bytes, batch count, record count)."""
    rnd = random.Random(seed)
    templates = [_template(rnd, shape) for _ in range(TEMPLATES)]
    out, total, offset = bytearray(), 0, 0
    while total < size:
        start = len(out)
        out += templates[(offset // shape.records) % TEMPLATES]
        struct.pack_into(">q", out, start, offset)
        offset += shape.records
        total = len(out)
    return bytes(out), offset // shape.records, offset


def write_inputs(directory: Path, size: int) -> dict[str, tuple[Path, int, int]]:
    """One `.log` per shape in `directory`: name -> (path, batches, records)."""
    out = {}
    for shape in SHAPES:
        data, batches, records = build_segment(shape, size)
        path = directory / shape.name / "00000000000000000000.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, data)
        out[shape.name] = (path, batches, records)
    return out
