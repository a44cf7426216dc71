"""Doctor's index checks fed block by block give what the list-based checks give for the whole walk."""
from __future__ import annotations

import struct
from pathlib import Path
from typing import NamedTuple

import pytest

from replog.formats.fileio import mapped
from replog.formats.kafka import fastwalk, index_check, offset_index, time_index
from replog.formats.kafka.blocks import BatchBlock
from replog.formats.kafka.fastwalk import FastWalk
from replog.formats.kafka.segment import SegmentWalk
from replog.recovery.evidence import Evidence
from replog.recovery.kafka import checks_indexes
from tests.recovery.kafka.log_dirs import build_log_dir, seg_path


class _Held(NamedTuple):
    """A segment's walk held whole, as the list-based checks take it."""

    base_offset: int
    size: int
    batches: list


def reference(seg, paths: dict[str, Path], active: bool) -> list[dict]:
    """`check_indexes` as it was before the streaming checks: list readers, list checks."""
    out = []
    for kind in ("index", "timeindex"):
        if kind not in paths:
            continue
        data = paths[kind].read_bytes()
        if kind == "index":
            read = offset_index.read_offset_index(data, seg.base_offset, path=str(paths[kind]))
            found = read.findings + index_check.check_offset_index(
                seg.batches, read.entries, base_offset=seg.base_offset, log_size=seg.size, path=str(paths[kind]))
        else:
            read = time_index.read_time_index(data, seg.base_offset, path=str(paths[kind]))
            found = read.findings + index_check.check_time_index(
                seg.batches, read.entries, base_offset=seg.base_offset, path=str(paths[kind]))
        out += [checks_indexes._tail_severity(f, active) for f in found]
    return [f.to_dict() for f in out]


def damage(pdir: Path, base: int) -> None:
    """Entries off a batch start and past the end in the .index; a wrong timestamp and a zero tail in
    the .timeindex."""
    idx, tidx = seg_path(pdir, base, "index"), seg_path(pdir, base, "timeindex")
    data = bytearray(idx.read_bytes())
    rel, pos = struct.unpack_from(">ii", data, 8)
    struct.pack_into(">ii", data, 8, rel, pos + 5)
    struct.pack_into(">ii", data, len(data) - 8, rel + 1000, 10**6)
    idx.write_bytes(bytes(data))
    tdata = bytearray(tidx.read_bytes())
    ts, trel = struct.unpack_from(">qi", tdata, 0)
    struct.pack_into(">qi", tdata, 0, ts - 1, trel)
    tidx.write_bytes(bytes(tdata) + bytes(12 * 3))


@pytest.mark.parametrize("chunk", [1, 2, 7, 1 << 16])
@pytest.mark.parametrize("damaged", [False, True])
def test_fed_blocks_give_the_list_checks_findings(tmp_path: Path, chunk: int, damaged: bool) -> None:
    pdir, bases = build_log_dir(tmp_path)
    if damaged:
        damage(pdir, bases[0])
    ev = Evidence(hash_files=False)
    for base in bases:
        log = seg_path(pdir, base)
        paths = {k: seg_path(pdir, base, k) for k in ("index", "timeindex")}
        active = base == bases[-1]
        with mapped(log) as buf:
            seg = _Held(base, len(buf), list(SegmentWalk(buf, str(log), base).batches()))
            checks = checks_indexes.SegmentIndexChecks(ev, paths, base_offset=base, log_size=len(buf), active=active)
            walk = FastWalk(buf, str(log), base)
            for block in walk.blocks(chunk) if fastwalk.HAVE_NUMBA else [BatchBlock.from_infos(seg.batches)]:
                checks.feed(block)
        want = reference(seg, paths, active)
        assert [f.to_dict() for f in checks.finish()] == want
        if damaged and base == bases[0]:
            assert {f["code"] for f in want} >= {"KAFKA_INDEX_BAD_ENTRY", "KAFKA_INDEX_OUT_OF_RANGE",
                                                 "KAFKA_TIMEINDEX_MISMATCH", "KAFKA_INDEX_ZERO_TAIL"}
    ev.close()


def test_an_unreadable_index_is_reported_and_not_checked(tmp_path: Path) -> None:
    pdir, bases = build_log_dir(tmp_path)
    missing = seg_path(pdir, bases[0], "index").with_name("gone.index")
    ev = Evidence(hash_files=False)
    checks = checks_indexes.SegmentIndexChecks(ev, {"index": missing}, base_offset=bases[0], log_size=100,
                                               active=False)
    checks.feed(BatchBlock.empty())
    [f] = checks.finish()
    assert (f.code, f.path) == ("INPUT_VANISHED", str(missing))  # listed, gone when opened
    ev.close()
