"""recover: the broker's truncation rule, salvage past damage, safe outputs, verified results."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

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
