"""recover: the broker's truncation rule, salvage past damage, safe outputs, verified results."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replog.formats.errors import UnsafeOutput
from replog.formats.kafka import checkpoint, names
from replog.recovery.doctor import diagnose
from replog.recovery.kafka.recover import COMPLETE_MARKER, recover_partition
from tests.recovery.kafka.log_dirs import batches_of, build_log_dir, flip, seg_path, set_checkpoint, tree_hashes


def out_batches(out: Path) -> list:
    pdir = out / "t-0"
    found = []
    for log in sorted(pdir.glob("*.log")):
        found += batches_of(log, int(log.stem))
    return found


def test_crc_damage_truncates_exactly_at_the_damaged_batch(tmp_path: Path) -> None:
    pdir, bases = build_log_dir(tmp_path / "in")
    log = seg_path(pdir, bases[1])
    target = batches_of(log, bases[1])[3]
    flip(log, target.position + 70)
    before = tree_hashes(tmp_path / "in")
    res = recover_partition(pdir, tmp_path / "out")
    assert tree_hashes(tmp_path / "in") == before
    assert (res.truncated_to, res.valid_bytes, res.truncated_segment) == (target.base_offset, target.position, str(log))
    assert res.dropped["segments"] == [names.segment_file_name(b, "log") for b in bases[2:]]
    assert res.dropped["first_offset"] == target.base_offset and res.dropped["last_offset"] == 199
    assert res.log_end_offset == target.base_offset and res.high_watermark == target.base_offset
    assert res.verified and res.verification["errors"] == 0
    kept = out_batches(tmp_path / "out")
    assert kept[-1].next_offset == target.base_offset
    assert seg_path(tmp_path / "out" / "t-0", bases[1]).read_bytes() == log.read_bytes()[:target.position]
    assert not seg_path(tmp_path / "out" / "t-0", bases[2]).exists()
    assert json.loads((tmp_path / "out" / COMPLETE_MARKER).read_text())["verified"] is True
    hw = checkpoint.parse_offset_checkpoint((tmp_path / "out" / names.REPLICATION_OFFSET_CHECKPOINT).read_bytes())
    assert hw == {("t", 0): target.base_offset}
    assert diagnose([tmp_path / "out"]).summary["errors"] == 0


def test_salvage_keeps_every_batch_after_the_damage(tmp_path: Path) -> None:
    pdir, bases = build_log_dir(tmp_path / "in")
    log = seg_path(pdir, bases[1])
    seg_batches = batches_of(log, bases[1])
    target = seg_batches[3]
    flip(log, target.position + 70)
    res = recover_partition(pdir, tmp_path / "out", salvage=True)
    assert [(s["first_offset"], s["position"]) for s in res.salvaged] == [(seg_batches[4].base_offset,
                                                                            seg_batches[4].position)]
    assert res.salvaged[0]["last_offset"] == seg_batches[-1].last_offset
    [hole] = res.dropped["holes"]
    assert (hole["position"], hole["end_position"]) == (target.position, target.end)
    assert [f.code for f in res.findings if f.code == "KAFKA_SALVAGE_RESYNC"] == ["KAFKA_SALVAGE_RESYNC"]
    kept = {b.base_offset for b in out_batches(tmp_path / "out")}
    every = {b.base_offset for base in bases for b in batches_of(seg_path(pdir, base), base)}
    assert kept == every - {target.base_offset}
    assert res.log_end_offset == 200 and res.verified


def test_salvage_resyncs_after_a_garbage_length_and_zero_tail(tmp_path: Path) -> None:
    pdir, bases = build_log_dir(tmp_path / "in", segment_bytes=1 << 20)
    log = seg_path(pdir, 0)
    bs = batches_of(log, 0)
    flip(log, bs[5].position + 9, 0x40)
    log.write_bytes(log.read_bytes() + bytes(1000))
    plain = recover_partition(pdir, tmp_path / "plain")
    assert plain.truncated_to == bs[5].base_offset and plain.verified
    res = recover_partition(pdir, tmp_path / "out", salvage=True)
    assert res.salvaged[0]["first_offset"] == bs[6].base_offset
    assert {b.base_offset for b in out_batches(tmp_path / "out")} == {b.base_offset for b in bs} - {bs[5].base_offset}
    assert res.verified


def test_torn_and_zero_tails_truncate_without_dropping_data(tmp_path: Path) -> None:
    pdir, bases = build_log_dir(tmp_path / "in")
    log = seg_path(pdir, bases[-1])
    last = batches_of(log, bases[-1])[-1]
    log.write_bytes(log.read_bytes()[: last.position + 20] + bytes(50))
    res = recover_partition(pdir, tmp_path / "out")
    assert (res.truncated_to, res.valid_bytes) == (last.base_offset, last.position)
    assert res.dropped["segments"] == [] and res.verified


def test_damage_below_the_recovery_point_is_not_scanned_like_the_broker(tmp_path: Path) -> None:
    pdir, bases = build_log_dir(tmp_path / "in")
    set_checkpoint(tmp_path / "in", names.RECOVERY_POINT_OFFSET_CHECKPOINT, bases[2] + 3)
    log = seg_path(pdir, bases[0])
    flip(log, batches_of(log, 0)[2].position + 70)
    res = recover_partition(pdir, tmp_path / "out")
    assert res.truncated_to is None and res.recovery_point == bases[2] + 3
    assert not res.verified  # the broker keeps the corrupt batch; doctor says so
    assert res.verification["errors"] >= 1


def test_wrong_epoch_checkpoint_and_malformed_hw_are_fixed(tmp_path: Path) -> None:
    pdir, bases = build_log_dir(tmp_path / "in")
    (pdir / names.LEADER_EPOCH_CHECKPOINT).write_bytes(checkpoint.build_leader_epoch_checkpoint([(0, 0), (1, 60)]))
    (tmp_path / "in" / names.REPLICATION_OFFSET_CHECKPOINT).write_bytes(b"0\n3\nt 0 9\n")
    res = recover_partition(pdir, tmp_path / "out")
    assert res.epochs == [(0, 0), (1, 50), (2, 100), (3, 150)]
    assert res.verified and res.verification["warnings"] == 0


def test_swap_file_completes_and_orphans_are_dropped(tmp_path: Path) -> None:
    pdir, bases = build_log_dir(tmp_path / "in")
    swap = pdir / (names.segment_file_name(bases[0], "log") + ".swap")
    swap.write_bytes(seg_path(pdir, bases[0]).read_bytes())
    (pdir / (names.segment_file_name(bases[1], "log") + ".deleted")).write_bytes(b"x")
    seg_path(pdir, bases[1], "index").unlink()
    res = recover_partition(pdir, tmp_path / "out")
    reasons = {d["file"]: d["reason"] for d in res.dropped["files"]}
    assert names.segment_file_name(bases[0], "log") in reasons and any(".deleted" in f for f in reasons)
    assert res.log_end_offset == 200 and res.verified
    assert seg_path(tmp_path / "out" / "t-0", bases[1], "index").exists()


def test_unsafe_outputs_are_refused(tmp_path: Path) -> None:
    pdir, bases = build_log_dir(tmp_path / "in")
    with pytest.raises(UnsafeOutput):
        recover_partition(pdir, pdir / "out")
    with pytest.raises(UnsafeOutput):
        recover_partition(pdir, tmp_path / "in" / "recovered")  # inside the log dir whose checkpoints it reads
    with pytest.raises(UnsafeOutput):
        recover_partition(pdir, tmp_path)  # contains the input
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "keep").write_text("x")
    with pytest.raises(UnsafeOutput):
        recover_partition(pdir, busy)
    with pytest.raises(UnsafeOutput):
        recover_partition(pdir, busy, force=True)  # not replog's: never deleted, even with --force
    assert (busy / "keep").read_text() == "x"
    done = tmp_path / "done"
    recover_partition(pdir, done)
    res = recover_partition(pdir, done, force=True)  # a previous replog output is replaced
    assert res.verified and (done / COMPLETE_MARKER).exists()
    assert not list(tmp_path.glob(".done.replog-*"))


def test_salvage_reports_the_first_regions_findings_up_to_its_damage_only(tmp_path: Path) -> None:
    """Past the first damaged batch the broker's reading stops: later defects are holes, not findings."""
    pdir, bases = build_log_dir(tmp_path / "in", segment_bytes=1 << 20)
    log = seg_path(pdir, 0)
    bs = batches_of(log, 0)
    flip(log, bs[3].position + 70)
    flip(log, bs[9].position + 70)
    res = recover_partition(pdir, tmp_path / "out", salvage=True)
    crc = [f for f in res.findings if f.code == "KAFKA_BATCH_CRC_MISMATCH"]
    assert [(f.position, f.offset) for f in crc] == [(bs[3].position, bs[3].base_offset)]
    assert [(h["position"], h["end_position"]) for h in res.dropped["holes"]] == [
        (bs[3].position, bs[3].end), (bs[9].position, bs[9].end)]
    kept = out_batches(tmp_path / "out")
    assert [b.base_offset for b in kept] == [b.base_offset for i, b in enumerate(bs) if i not in (3, 9)]
    data = log.read_bytes()
    assert seg_path(tmp_path / "out" / "t-0", 0).read_bytes() == b"".join(
        data[b.position:b.end] for i, b in enumerate(bs) if i not in (3, 9))


def test_salvage_drops_batches_already_kept_and_writes_the_rest_range_by_range(tmp_path: Path) -> None:
    """After a hole, batches at or below what was kept are dropped (here a stray repeat of offsets
    150..154), so the segment's output is several ranges of its file, copied as they are."""
    from tests.formats.kafka.segments import data_batch
    extra = [data_batch(200, 5, epoch=3), data_batch(205, 5, epoch=3), data_batch(150, 5, epoch=3),
             data_batch(210, 5, epoch=3)]
    pdir, bases = build_log_dir(tmp_path / "in", extra=extra)
    last = seg_path(pdir, bases[-1])
    bs = batches_of(last, bases[-1])
    damaged = next(i for i, b in enumerate(bs) if b.base_offset == 195)
    flip(last, bs[damaged].position + 70)
    res = recover_partition(pdir, tmp_path / "out", salvage=True)
    assert [b.base_offset for b in out_batches(tmp_path / "out")][-5:] == [185, 190, 200, 205, 210]
    data = last.read_bytes()
    kept = [b for i, b in enumerate(bs) if i != damaged and b.base_offset != 150]
    assert seg_path(tmp_path / "out" / "t-0", bases[-1]).read_bytes() == b"".join(data[b.position:b.end] for b in kept)
    # 150 is below the segment's base offset (170): no index of this segment can hold it
    # (`LogSegment.ensureOffsetInRange`), so it is damage that ends a stretch, and salvage resumes after it
    stray = next(b for b in bs if b.base_offset == 150)
    assert res.salvaged == [{"first_offset": 200, "last_offset": 209, "position": bs[damaged].end,
                             "segment": str(last), "batches": 2},
                            {"first_offset": 210, "last_offset": 214, "position": stray.end,
                             "segment": str(last), "batches": 1}]
    assert res.log_end_offset == 215 and res.verified


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 60), st.integers(-1, 4), st.sampled_from([2, 2, 2, 1])), max_size=30),
       st.lists(st.tuples(st.integers(0, 5), st.integers(0, 70)), max_size=4), st.integers(0, 30),
       st.lists(st.integers(0, 30), max_size=3))
def test_epoch_spans_decide_as_every_batch_would(rows: list[tuple[int, int, int]], entries: list[tuple[int, int]],
                                                 log_start: int, cuts: list[int]) -> None:
    """`EpochSpans` (an offset span per epoch) agrees with checking every batch against the cache."""
    from replog.formats.kafka.blocks import BatchBlock
    from replog.formats.kafka.segment import BatchInfo
    from replog.recovery.kafka.epoch_cache import EpochCache
    from replog.recovery.kafka.recover_epochs import EpochSpans
    infos = [BatchInfo(0, 70, magic, base, base, 1, epoch, 0, True, 0, 0, 0, 0, 0, -1, -1, -1, False, False, False)
             for base, epoch, magic in rows]
    cache = EpochCache(entries)
    every = all(cache.epoch_for_offset(b.base_offset) == b.partition_leader_epoch for b in infos
                if b.magic == 2 and b.partition_leader_epoch >= 0 and b.base_offset >= log_start)
    spans = EpochSpans(log_start)
    block = BatchBlock.from_infos(infos)
    edges = [0, *sorted(c % (len(infos) + 1) for c in cuts), len(infos)]
    for a, b in zip(edges, edges[1:], strict=False):
        spans.feed(block[a:b])
    assert spans.consistent_with(cache) == every
