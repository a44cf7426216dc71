"""Live files read with pread (`fileview.PreadRegion`) give every walk the answers a map gives, hold a few
windows at a time, and survive a truncation; sparse files are read only where they hold data; reads
through symlinks out of the inputs are refused; /proc/locks is read for flock locks."""
from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np
import pytest

from replog.formats import fileio
from replog.formats.errors import FormatError
from replog.formats.fileio import all_zero, mapped
from replog.formats.fileview import PreadRegion, data_extents, readable, region_of
from replog.formats.kafka import batch as v2
from replog.formats.kafka.blocks import BatchBlock, walk_blocks
from replog.formats.kafka.fastwalk import HAVE_NUMBA
from replog.formats.kafka.hop import hop_blocks
from replog.recovery.kafka.checks_segments import RecordCheck
from tests.formats.kafka.segments import data_batch


def _segment(path: Path, size: int) -> None:
    """About `size` bytes of batches (every codec), with a CRC-damaged batch in the middle and a torn tail."""
    templates = [data_batch(0, 20, codec=c) for c in range(5)]
    out, offset = bytearray(), 0
    while len(out) < size:
        at = len(out)
        out += templates[(offset // 20) % 5]
        struct.pack_into(">q", out, at, offset)
        offset += 20
    middle = len(out) // 2
    out[middle] ^= 0xFF
    path.write_bytes(bytes(out) + data_batch(offset, 3)[:40])


def _walk(buf: memoryview, path: str, compiled: bool) -> tuple[np.ndarray, list, int]:
    walk, blocks = walk_blocks(buf, path, 0, compiled)
    check = RecordCheck(buf, path, fast=compiled)
    cols = []
    for block in blocks:
        check.feed(block)
        cols.append(block.cols.copy())
    return np.concatenate(cols, axis=1), [f.to_dict() for f in walk.findings + check.finish()], walk.valid_bytes


STEP = 1 << 20  # the walks' window, made small so that a 5 MiB segment spans several


@pytest.fixture
def small_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    from replog.formats import fileview
    from replog.formats.kafka import blocks, fastwalk, hop, segment
    for module in (fileio, segment, blocks, fastwalk, hop):
        monkeypatch.setattr(module, "RELEASE_STEP", STEP)
    monkeypatch.setattr(fileio, "READ_INSTEAD_OF_MAP", 0)
    monkeypatch.setattr(fileview, "CHUNK", STEP // 8)  # a region's unit, well under a window as in use


@pytest.mark.parametrize("compiled", [True, False] if HAVE_NUMBA else [False])
def test_a_live_view_walks_as_a_map_does_and_holds_a_few_windows(tmp_path: Path, compiled: bool,
                                                                 small_windows: None) -> None:
    path = tmp_path / "00000000000000000000.log"
    _segment(path, 5 * STEP + 12345)
    with mapped(path) as buf:
        assert region_of(buf) is None
        expected = _walk(buf, str(path), compiled)
        end = int(expected[0][0, -1] + expected[0][1, -1])  # the end of the last whole batch
        hopped = BatchBlock.concat(b.copy() for b in hop_blocks(buf, str(path), 0, end, compiled=compiled))
    with mapped(path, live=True, windows=True) as buf:
        region = region_of(buf)
        assert isinstance(region, PreadRegion)
        got = _walk(buf, str(path), compiled)
        assert sum(region._filled) * STEP // 8 <= 3 * STEP  # windows released behind the walk
        live_hops = BatchBlock.concat(b.copy() for b in hop_blocks(buf, str(path), 0, end, compiled=compiled))
    assert np.array_equal(got[0], expected[0]) and got[1:] == expected[1:]
    assert {f["code"] for f in got[1]} >= {"KAFKA_BATCH_CRC_MISMATCH", "KAFKA_TORN_TAIL"}
    assert np.array_equal(live_hops.cols, hopped.cols)


def test_a_live_file_cut_back_under_its_reader_reads_as_zeros(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(os.urandom(20 << 20))
    with mapped(path, live=True, windows=True) as buf:
        os.truncate(path, 1 << 20)               # a broker's truncation, under the reader
        readable(buf, 0, len(buf))
        assert bytes(buf[:1 << 20]) == path.read_bytes()
        assert all_zero(buf, 1 << 20, len(buf))  # what is gone reads as zeros: no SIGBUS


def test_holes_are_never_read(tmp_path: Path) -> None:
    path = tmp_path / "sparse"
    with open(path, "wb") as f:
        f.write(b"\x01" * 4096)
        f.seek(3 << 30)
        f.write(b"\x02" * 4096)
    with mapped(path) as buf:
        extents = list(data_extents(buf, 0, len(buf)))
        assert extents[0][0] == 0 and extents[-1][1] == len(buf)
        assert sum(hi - lo for lo, hi in extents) < 64 << 20  # 3 GiB apparent, two pages of data
        assert all_zero(buf, 1 << 20, 3 << 30) and not all_zero(buf, 1 << 20, len(buf))
    with mapped(path, live=True, windows=True) as buf:
        readable(buf, 0, len(buf))  # reads the two data pages, leaves the hole untouched
        assert sum(region_of(buf)._filled) == len(region_of(buf)._filled)  # type: ignore[union-attr]
        assert buf[len(buf) - 1] == 2 and buf[1 << 30] == 0


def test_proc_locks_lists_other_processes_locks_by_inode(tmp_path: Path) -> None:
    table = tmp_path / "locks"
    dev, ino = os.makedev(0xFD, 1), 1234567
    table.write_text(f"1: FLOCK  ADVISORY  WRITE 4242 fd:01:{ino} 0 EOF\n"
                     f"1: -> FLOCK  ADVISORY  WRITE 4343 fd:01:7654321 0 EOF\n"
                     f"2: POSIX  ADVISORY  WRITE {os.getpid()} fd:01:7654321 0 EOF\n")
    assert fileio._listed_lock(dev, ino, str(table))
    assert not fileio._listed_lock(dev, 7654321, str(table))  # waiting, or held by this process
    assert not fileio._listed_lock(dev, ino, str(tmp_path / "absent"))


def test_the_batch_bound_is_by_records_before_any_decompression() -> None:
    header = v2.read_header(data_batch(0, 3, codec=4), 0)
    v2.check_record_count(header)
    with pytest.raises(FormatError) as e:
        v2.check_record_count(header._replace(count=v2.MAX_BATCH_RECORDS + 1))
    assert e.value.code == "KAFKA_BATCH_TOO_MANY_RECORDS"
