"""The fast benchmark builders write what the slow, obvious way writes: the same batches, the same files."""
from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest

from bench import inputs, partitions
from replog.formats.kafka import names
from replog.recovery.kafka.writer import write_partition

pytestmark = pytest.mark.bench
SEGMENT_BYTES = 64 << 10  # several segments from a few hundred KiB


def restamped(shape: inputs.Shape, count: int, first_offset: int, epoch: int, seed: int) -> list[bytes]:
    """`count` batches from `first_offset`, one at a time: each template copied and restamped."""
    rnd = random.Random(seed)
    templates = [inputs._template(rnd, shape) for _ in range(inputs.TEMPLATES)]
    out = []
    for i in range(count):
        raw = bytearray(templates[i % len(templates)])
        struct.pack_into(">q", raw, 0, first_offset + i * shape.records)
        struct.pack_into(">i", raw, 12, epoch)
        out.append(bytes(raw))
    return out


def files_of(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("shape", inputs.SHAPES[:3], ids=lambda s: s.name)
@pytest.mark.parametrize("count", [1, 63, 64, 65, 1000])
def test_raw_log_is_the_batches_back_to_back(tmp_path: Path, shape: inputs.Shape, count: int) -> None:
    path = tmp_path / "raw"
    size = partitions.write_raw_log(path, shape, count, 500, 6, seed=3)
    expected = b"".join(restamped(shape, count, 500, 6, seed=3))
    assert path.read_bytes() == expected and size == len(expected)
    cycle = partitions.Cycle.of(shape, 3)
    assert cycle.position(count) == len(expected)
    assert cycle.batches_for(len(expected)) == count and cycle.batches_for(len(expected) - 1) == count


def test_partition_is_the_writer_s_partition_of_those_batches(tmp_path: Path) -> None:
    shape = inputs.SHAPES[1]
    count = partitions.build_partition(tmp_path / "fast" / "bench-0", shape, 200_000, segment_bytes=SEGMENT_BYTES)
    write_partition(tmp_path / "slow" / "bench-0", restamped(shape, count, 0, 3, 7), segment_bytes=SEGMENT_BYTES)
    fast = files_of(tmp_path / "fast")
    assert fast == files_of(tmp_path / "slow")
    assert sum(1 for name in fast if name.endswith(".log")) > 1


def test_replicas_diverge_as_the_story_says(tmp_path: Path) -> None:
    shape = inputs.SHAPES[1]
    pdirs = partitions.build_replicas(tmp_path / "fast", 150_000, shape, segment_bytes=SEGMENT_BYTES)
    common = partitions.Cycle.of(shape, 7).batches_for(150_000) - partitions.LEADER_TAIL
    prefix = restamped(shape, common, 0, 3, 7)
    logs = {"broker-1": prefix + restamped(shape, partitions.LEADER_TAIL, common, 4, 8),
            "broker-2": prefix + restamped(shape, partitions.UNREPLICATED_TAIL, common, 3, 9),
            "broker-3": prefix[:-partitions.LAG]}
    for pdir, (broker, batches) in zip(pdirs, logs.items(), strict=True):
        assert pdir == tmp_path / "fast" / broker / "bench-0"
        written = write_partition(tmp_path / "slow" / broker / "bench-0", batches, segment_bytes=SEGMENT_BYTES)
        assert files_of(pdir) == files_of(tmp_path / "slow" / broker / "bench-0")
        hw = (pdir.parent / names.REPLICATION_OFFSET_CHECKPOINT).read_text().split()
        assert hw[-1] == str(min(common, written.log_end_offset))
    assert not (tmp_path / "fast" / ".raw").exists()
