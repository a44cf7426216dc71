"""Pathological inputs finish in bounded time and memory, with a finding, never a crash.

Memory is measured with tracemalloc (Python allocations; mapped file pages
are not allocations) against a generous bound; the 200,000-batch walk runs in
a child process and is measured by its peak RSS, because tracemalloc slows a
walk of that many batches ten-fold.
"""
from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from crc32c import crc32c

from replog.formats.errors import FormatError
from replog.formats.kafka import batch as v2
from replog.formats.kafka import checkpoint, codecs
from replog.formats.kafka.producer_snapshot import (
    ProducerSnapshotEntry,
    build_producer_snapshot,
    parse_producer_snapshot,
)
from replog.formats.kafka.segment import SegmentWalk, batch_records
from replog.recovery.kafka.replica import load_replica
from replog.toolkit.dump import DumpOptions, dump_file
from tests.reliability.hostile import bomb_batch, many_empty_batches

MEMORY_BOUND = 100 << 20
SEG = "00000000000000000000"
REPO = Path(__file__).resolve().parents[2]


def peak_memory(fn: Callable[[], Any]) -> tuple[Any, int]:
    """fn()'s result and the peak of Python allocations while it ran."""
    tracemalloc.start()
    try:
        result = fn()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def codes_of(entries: list[dict[str, Any]]) -> set[str]:
    return {e["code"] for e in entries if e["kind"] == "finding"}


def partition(tmp_path: Path, log: bytes, **files: bytes) -> Path:
    pdir = tmp_path / "logs" / "orders-0"
    pdir.mkdir(parents=True)
    (pdir / f"{SEG}.log").write_bytes(log)
    for name, data in files.items():
        (pdir / name.replace("_", "-")).write_bytes(data)
    return pdir


# --- 200,000 minimal batches ---------------------------------------------------------------

_CHILD = r"""
import json, resource, sys
from replog.toolkit.dump import DumpOptions, dump_file
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
batches = findings = 0
for e in dump_file(sys.argv[1], DumpOptions()):
    batches += e["kind"] == "batch"
    findings += e["kind"] == "finding"
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"batches": batches, "findings": findings, "rss_growth": (after - before) * 1024}))
"""


def test_200000_minimal_batches_walk_with_flat_memory(tmp_path: Path) -> None:
    n = 200_000
    seg = tmp_path / f"{SEG}.log"
    seg.write_bytes(many_empty_batches(n))
    assert seg.stat().st_size == n * v2.HEADER_SIZE
    out = subprocess.run([sys.executable, "-c", _CHILD, str(seg)], capture_output=True, text=True, cwd=REPO,
                         timeout=120, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    assert res["batches"] == n and res["findings"] == 0
    # the 12 MB file is mapped, so its pages may count in RSS; nothing grows with the batch count
    assert res["rss_growth"] < MEMORY_BOUND, res


def test_many_minimal_batches_tracemalloc_is_flat() -> None:
    """The walk keeps no per-batch state: 20,000 batches peak like 4,000 do."""
    small, large = many_empty_batches(4_000), many_empty_batches(20_000)
    _, peak_small = peak_memory(lambda: SegmentWalk(small, "s", 0).walk())
    walk, peak_large = peak_memory(lambda: SegmentWalk(large, "l", 0).walk())
    assert walk.batch_count == 20_000 and walk.findings == []
    assert peak_large < peak_small + (256 << 10), (peak_small, peak_large)


# --- lengths and counts declared far beyond the bytes -----------------------------------------

def test_length_field_2_31_minus_1_is_a_torn_tail_without_allocation() -> None:
    good = v2.build_batch([v2.Record(0, 1, b"k", b"v")], base_offset=0)
    bad = bytearray(v2.build_batch([v2.Record(1, 1, b"k", b"v")], base_offset=1))
    struct.pack_into(">i", bad, 8, 2**31 - 1)
    walk, peak = peak_memory(lambda: SegmentWalk(good + bytes(bad), "x", 0).walk())
    assert walk.batch_count == 1 and walk.valid_bytes == len(good)
    assert [f.code for f in walk.findings] == ["KAFKA_TORN_TAIL"]
    assert peak < 1 << 20


@pytest.mark.parametrize("value", [2**31 - 1, -1, -(2**31)])
def test_record_count_and_varint_lengths_never_size_an_allocation(value: int) -> None:
    """records_count (byte 57) set to a huge or negative value: a finding, not a 2^31 list."""
    b = bytearray(v2.build_batch([v2.Record(0, 1, b"k", b"v" * 10)], base_offset=0))
    struct.pack_into(">i", b, 57, value)
    struct.pack_into(">I", b, 17, crc32c(bytes(b[21:])))
    info = next(SegmentWalk(bytes(b), "x", 0).batches())

    def decode() -> Exception | None:
        try:
            batch_records(bytes(b), info)
        except FormatError as e:
            return e
        return None
    err, peak = peak_memory(decode)
    assert isinstance(err, FormatError)
    assert peak < 1 << 20


@pytest.mark.parametrize("name,build", [
    ("replication-offset-checkpoint", lambda: b"0\n1000000000\norders 0 5\n"),
    ("leader-epoch-checkpoint", lambda: b"0\n1000000000\n0 0\n"),
])
def test_checkpoint_declaring_a_billion_entries(tmp_path: Path, name: str, build: Callable[[], bytes]) -> None:
    data = build()
    with pytest.raises(FormatError) as e:
        (checkpoint.parse_leader_epoch_checkpoint if name.startswith("leader") else
         checkpoint.parse_offset_checkpoint)(data)
    assert e.value.code == "KAFKA_CHECKPOINT_INVALID"
    (tmp_path / name).write_bytes(data)
    entries, peak = peak_memory(lambda: list(dump_file(tmp_path / name, DumpOptions())))
    assert codes_of(entries) == {"KAFKA_CHECKPOINT_INVALID"}
    assert peak < 1 << 20


def test_checkpoint_a_billion_entries_in_a_partition_dir_is_a_finding(tmp_path: Path) -> None:
    pdir = partition(tmp_path, v2.build_batch([v2.Record(0, 1, b"k", b"v")], base_offset=0, partition_leader_epoch=3),
                     leader_epoch_checkpoint=b"0\n1000000000\n0 0\n")
    (pdir.parent / "replication-offset-checkpoint").write_bytes(b"0\n1000000000\norders 0 1\n")
    rep, peak = peak_memory(lambda: load_replica(pdir))
    assert rep.log_end_offset == 1
    assert "KAFKA_CHECKPOINT_INVALID" in {f.code for f in rep.findings}
    assert peak < 8 << 20


def test_snapshot_declaring_a_billion_entries(tmp_path: Path) -> None:
    snap = bytearray(build_producer_snapshot([ProducerSnapshotEntry(7, 0, 9, 100, 9, 1, -1, -1)]))
    struct.pack_into(">i", snap, 6, 10**9)
    struct.pack_into(">I", snap, 2, crc32c(bytes(snap[6:])))   # a consistent CRC: only the count lies
    with pytest.raises(FormatError) as e:
        parse_producer_snapshot(bytes(snap))
    assert e.value.code == "KAFKA_SNAPSHOT_INVALID"
    path = tmp_path / f"{SEG}.snapshot"
    path.write_bytes(bytes(snap))
    entries, peak = peak_memory(lambda: list(dump_file(path, DumpOptions())))
    assert codes_of(entries) == {"KAFKA_SNAPSHOT_INVALID"}
    assert peak < 1 << 20


# --- decompression bombs ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def bombs() -> dict[int, bytes]:
    return {codecs.ZSTD: bomb_batch(codecs.ZSTD, 512 << 20), codecs.GZIP: bomb_batch(codecs.GZIP, 32 << 20)}


@pytest.mark.parametrize("codec", [codecs.ZSTD, codecs.GZIP], ids=["zstd", "gzip"])
def test_decompression_bomb_in_a_batch_is_stopped(tmp_path: Path, bombs: dict[int, bytes], codec: int) -> None:
    bomb = bombs[codec]
    info = next(SegmentWalk(bomb, "x", 0).batches())
    assert info.crc_valid and info.codec == codec

    def decode() -> FormatError | None:
        try:
            batch_records(bomb, info)
        except FormatError as e:
            return e
        return None
    err, peak = peak_memory(decode)
    assert isinstance(err, FormatError) and err.code == "KAFKA_DECOMPRESSION_BOMB"
    assert peak < MEMORY_BOUND
    seg = tmp_path / f"{SEG}.log"
    seg.write_bytes(bomb)
    entries, peak = peak_memory(lambda: list(dump_file(seg, DumpOptions(deep=True, print_data=True))))
    assert "KAFKA_DECOMPRESSION_BOMB" in codes_of(entries)
    assert peak < MEMORY_BOUND


def test_decompression_bomb_seen_by_doctor(tmp_path: Path, bombs: dict[int, bytes]) -> None:
    diagnose = pytest.importorskip("replog.recovery.doctor").diagnose
    pdir = partition(tmp_path, bombs[codecs.ZSTD])
    report, peak = peak_memory(lambda: diagnose([pdir]))
    assert "KAFKA_DECOMPRESSION_BOMB" in {f.code for f in report.findings}
    assert peak < MEMORY_BOUND


# --- a 64 MiB zero-filled segment -----------------------------------------------------------

@pytest.fixture
def zero_partition(tmp_path: Path) -> Path:
    pdir = tmp_path / "logs" / "orders-0"
    pdir.mkdir(parents=True)
    with open(pdir / f"{SEG}.log", "wb") as f:
        f.truncate(64 << 20)          # sparse: zeros without writing them
    return pdir


def test_64mib_zero_filled_log(zero_partition: Path) -> None:
    seg = zero_partition / f"{SEG}.log"
    entries, peak = peak_memory(lambda: list(dump_file(seg, DumpOptions())))
    assert codes_of(entries) == {"KAFKA_ZERO_TAIL"}
    assert [e["kind"] for e in entries] == ["file", "finding"]
    assert peak < MEMORY_BOUND
    rep, peak = peak_memory(lambda: load_replica(zero_partition))
    assert not rep.log and "KAFKA_ZERO_TAIL" in {f.code for f in rep.findings}
    assert peak < MEMORY_BOUND


def test_64mib_zero_filled_log_doctor(zero_partition: Path) -> None:
    diagnose = pytest.importorskip("replog.recovery.doctor").diagnose
    report, peak = peak_memory(lambda: diagnose([zero_partition]))
    assert "KAFKA_ZERO_TAIL" in {f.code for f in report.findings}
    assert peak < MEMORY_BOUND


def test_rocketmq_commitlog_total_size_2_31_minus_1(tmp_path: Path) -> None:
    from replog.formats.rocketmq import commitlog
    msg = bytearray(commitlog.build_message(topic="t", body=b"x"))
    struct.pack_into(">i", msg, 0, 2**31 - 1)
    path = tmp_path / "commitlog" / SEG
    path.parent.mkdir()
    path.write_bytes(bytes(msg) + bytes(1024))
    entries, peak = peak_memory(lambda: list(dump_file(path, DumpOptions(deep=True))))
    assert codes_of(entries) and "message" not in {e["kind"] for e in entries}
    assert peak < 1 << 20
