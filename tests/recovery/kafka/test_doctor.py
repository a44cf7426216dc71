"""doctor: each planted defect is found with its code, position and offset; clean dirs are clean."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

from replog.formats.kafka import checkpoint, names, offset_index
from replog.formats.kafka.producer_snapshot import ProducerSnapshotEntry, build_producer_snapshot
from replog.recovery.doctor import diagnose
from replog.recovery.kafka.recover import recover_partition
from replog.recovery.kafka.writer import write_partition
from tests.realdata import REALDATA
from tests.recovery.kafka.log_dirs import (
    batches_of,
    build_log_dir,
    data_batch,
    flip,
    marker,
    seg_path,
    set_checkpoint,
    tree_hashes,
    txn_batch,
    undecodable_batch,
)


def codes(report, severity: str | None = None) -> list[str]:
    return [f.code for f in report.findings if severity is None or f.severity.value == severity]


def only(report, code: str):
    found = [f for f in report.findings if f.code == code]
    assert len(found) == 1, [f.to_dict() for f in report.findings]
    return found[0]


def test_clean_log_dir_has_no_findings_and_hashes_every_input(tmp_path: Path) -> None:
    pdir, bases = build_log_dir(tmp_path)
    report = diagnose([tmp_path])
    assert report.findings == [], [f.to_dict() for f in report.findings]
    assert report.summary == {"errors": 0, "warnings": 0, "infos": 0}
    read = {Path(i["path"]).name for i in report.inputs}
    assert {names.segment_file_name(b, k) for b in bases for k in ("log", "index", "timeindex")} <= read
    assert {names.REPLICATION_OFFSET_CHECKPOINT, names.LEADER_EPOCH_CHECKPOINT, names.PARTITION_METADATA} <= read
    assert all(len(i["sha256"]) == 64 and i["size"] >= 0 for i in report.inputs)


def test_files_no_check_reads_are_in_the_manifest_and_reported_once(tmp_path: Path) -> None:
    """A file of tiered storage's `remote-log-index-cache/` under a name the cache does not write (the segment id
    is no Uuid) is read by no check: hashed for the evidence manifest all the
    same, and reported once. A partition's `remote_log_snapshot` is read (and checked): in the manifest, named only
    by its own check."""
    import hashlib
    pdir, _ = build_log_dir(tmp_path)
    snapshot = pdir / "remote_log_snapshot"
    snapshot.write_bytes(b"\x00\x01snapshot")
    cached = tmp_path / names.REMOTE_INDEX_CACHE_DIR / "00000000000000000000_abc.index"
    cached.parent.mkdir()
    cached.write_bytes(bytes(16))
    report = diagnose([tmp_path])
    listed = {i["path"]: i["sha256"] for i in report.inputs}
    for path, codes in ((snapshot, ["KAFKA_REMOTE_LOG_SNAPSHOT_INVALID"]), (cached, ["UNKNOWN_FILE"])):
        assert listed.get(str(path)) == hashlib.sha256(path.read_bytes()).hexdigest(), f"{path.name}: manifest"
        named = [f.code for f in report.findings if f.path == str(path)]
        assert named == codes, f"{path.name}: findings naming it"


def test_a_remote_log_snapshot_is_read_and_checked(tmp_path: Path) -> None:
    """An empty `remote_log_snapshot` (3.7 creates one) and a valid one: read, in the manifest, no finding; one
    caching an impossible segment (end before start): KAFKA_REMOTE_LOG_SNAPSHOT_SEGMENT."""
    from replog.formats.kafka.remote_log_snapshot import build_remote_log_snapshot
    pdir, _ = build_log_dir(tmp_path)
    snapshot = pdir / names.REMOTE_LOG_SNAPSHOT
    seg = {"segmentId": b"\x01" * 16, "startOffset": 0, "endOffset": 9, "brokerId": 1, "maxTimestampMs": 1,
           "eventTimestampMs": 1, "segmentLeaderEpochs": [{"leaderEpoch": 0, "offset": 0}],
           "segmentSizeInBytes": 100, "customMetadata": None, "remoteLogSegmentState": 1}
    for data, codes in ((b"", []), (build_remote_log_snapshot(0, 5, [seg]), []),
                        (build_remote_log_snapshot(0, 5, [seg | {"endOffset": -3}]),
                         ["KAFKA_REMOTE_LOG_SNAPSHOT_SEGMENT"])):
        snapshot.write_bytes(data)
        report = diagnose([tmp_path])
        assert str(snapshot) in {i["path"] for i in report.inputs}, "in the manifest"
        assert [f.code for f in report.findings if f.path == str(snapshot)] == codes, f"findings for {data[:20]!r}"
        assert [f.code for f in diagnose([snapshot]).findings] == codes, "the file given alone"


def test_partition_dir_and_single_file_dispatch(tmp_path: Path) -> None:
    pdir, bases = build_log_dir(tmp_path)
    assert diagnose([pdir]).findings == []
    assert diagnose([seg_path(pdir, bases[1])]).findings == []
    assert diagnose([seg_path(pdir, bases[1], "index")]).findings == []


def test_record_bit_flip_is_a_crc_mismatch_at_the_batch(tmp_path: Path) -> None:
    pdir, bases = build_log_dir(tmp_path)
    log = seg_path(pdir, bases[1])
    target = batches_of(log, bases[1])[3]
    before = tree_hashes(tmp_path)
    flip(log, target.position + 70)  # inside the first record
    f = only(diagnose([tmp_path]), "KAFKA_BATCH_CRC_MISMATCH")
    assert (f.path, f.position, f.offset, f.severity.value) == (str(log), target.position, target.base_offset, "error")
    assert tree_hashes(tmp_path) != before  # the planted damage only; diagnose itself writes nothing
    after = tree_hashes(tmp_path)
    diagnose([tmp_path])
    assert tree_hashes(tmp_path) == after


def test_header_bit_flip_is_a_crc_mismatch(tmp_path: Path) -> None:
    pdir, bases = build_log_dir(tmp_path)
    log = seg_path(pdir, bases[0])
    target = batches_of(log, bases[0])[2]
    flip(log, target.position + 30, 0x01)  # base timestamp, covered by the CRC
    f = only(diagnose([pdir]), "KAFKA_BATCH_CRC_MISMATCH")
    assert (f.position, f.offset) == (target.position, target.base_offset)


def test_length_bit_flip_stops_the_walk_at_the_batch(tmp_path: Path) -> None:
    pdir, bases = build_log_dir(tmp_path)
    log = seg_path(pdir, bases[0])
    target = batches_of(log, bases[0])[1]
    flip(log, target.position + 9, 0x40)  # length field high byte: far past the end
    report = diagnose([pdir])
    errors = [f for f in report.findings if f.severity.value == "error" and f.path == str(log)]
    assert errors[0].code in ("KAFKA_TORN_TAIL", "KAFKA_BATCH_LENGTH_IMPOSSIBLE")
    assert (errors[0].position, errors[0].offset) == (target.position, target.base_offset)


def test_torn_tail_and_zero_tail(tmp_path: Path) -> None:
    pdir, bases = build_log_dir(tmp_path)
    log = seg_path(pdir, bases[-1])
    last = batches_of(log, bases[-1])[-1]
    log.write_bytes(log.read_bytes()[: last.position + 30])
    f = only(diagnose([pdir]), "KAFKA_TORN_TAIL")
    assert (f.position, f.offset) == (last.position, last.base_offset)
    log.write_bytes(log.read_bytes()[: last.position] + bytes(4096))
    report = diagnose([pdir])
    z = only(report, "KAFKA_ZERO_TAIL")
    assert (z.position, z.severity.value) == (last.position, "warning")
    # the index entries past the new end are reported, the zero tail itself is not an error
    assert "KAFKA_TORN_TAIL" not in codes(report)


def test_garbage_truncated_and_past_the_end_index(tmp_path: Path) -> None:
    pdir, bases = build_log_dir(tmp_path)
    idx = seg_path(pdir, bases[0], "index")
    entries = offset_index.read_offset_index(idx.read_bytes(), bases[0]).entries
    assert len(entries) >= 3
    data = bytearray(idx.read_bytes())
    struct.pack_into(">ii", data, 8, entries[1].offset - bases[0], entries[1].position + 5)  # not a batch start
    idx.write_bytes(bytes(data))
    f = only(diagnose([pdir]), "KAFKA_INDEX_BAD_ENTRY")
    assert (f.path, f.position, f.offset) == (str(idx), 8, entries[1].offset)
    size = seg_path(pdir, bases[0]).stat().st_size
    struct.pack_into(">ii", data, 8, entries[1].offset - bases[0], entries[1].position)
    struct.pack_into(">ii", data, len(data) - 8, entries[-1].offset - bases[0], size + 100)
    idx.write_bytes(bytes(data))
    f = only(diagnose([pdir]), "KAFKA_INDEX_OUT_OF_RANGE")
    assert (f.position, f.offset) == (len(data) - 8, entries[-1].offset)
    idx.write_bytes(bytes(data[:-3]))
    f = only(diagnose([pdir]), "KAFKA_INDEX_SIZE_NOT_MULTIPLE")
    assert f.position == (len(data) - 3) // 8 * 8


def test_preallocated_zero_tail_of_the_active_index_is_benign(tmp_path: Path) -> None:
    pdir, bases = build_log_dir(tmp_path)
    for kind, slot in (("index", 8), ("timeindex", 12)):
        p = seg_path(pdir, bases[-1], kind)
        p.write_bytes(p.read_bytes() + bytes(slot * 1000))
    report = diagnose([tmp_path])
    assert report.summary["errors"] == 0 and report.summary["warnings"] == 0
    assert codes(report) == ["KAFKA_INDEX_ZERO_TAIL"] * 2


def test_multi_batch_append_entry_is_accepted(tmp_path: Path) -> None:
    pdir, bases = build_log_dir(tmp_path, n=6, segment_bytes=1 << 20)
    log = seg_path(pdir, 0)
    bs = batches_of(log, 0)
    # an append of batches 2..4 written at once: entry (last offset of batch 4, position of batch 2)
    seg_path(pdir, 0, "index").write_bytes(offset_index.write_offset_index([(bs[4].last_offset, bs[2].position)], 0))
    assert diagnose([pdir]).findings == []
    seg_path(pdir, 0, "index").write_bytes(
        offset_index.write_offset_index([(bs[4].last_offset - 1, bs[2].position)], 0))
    f = only(diagnose([pdir]), "KAFKA_INDEX_BAD_ENTRY")
    assert f.offset == bs[4].last_offset - 1


def test_timeindex_mismatch(tmp_path: Path) -> None:
    pdir, bases = build_log_dir(tmp_path)
    p = seg_path(pdir, bases[0], "timeindex")
    data = bytearray(p.read_bytes())
    ts, rel = struct.unpack_from(">qi", data, 0)
    struct.pack_into(">qi", data, 0, ts + 1, rel)
    p.write_bytes(bytes(data))
    f = only(diagnose([pdir]), "KAFKA_TIMEINDEX_MISMATCH")
    assert (f.position, f.offset) == (0, bases[0] + rel)


def test_missing_index_orphan_swap_and_index_without_log(tmp_path: Path) -> None:
    pdir, bases = build_log_dir(tmp_path)
    seg_path(pdir, bases[1], "index").unlink()
    swap = pdir / (names.segment_file_name(bases[0], "log") + ".swap")
    swap.write_bytes(seg_path(pdir, bases[0]).read_bytes())
    orphan = seg_path(pdir, 10_000, "index")
    orphan.write_bytes(b"")
    report = diagnose([pdir])
    assert only(report, "KAFKA_INDEX_MISSING").offset == bases[1]
    assert only(report, "KAFKA_ORPHAN_TEMP_FILE").path == str(swap)
    assert only(report, "KAFKA_INDEX_WITHOUT_LOG").path == str(orphan)
    assert report.summary["errors"] == 0


def test_epoch_checkpoint_wrong_stale_and_at_log_end(tmp_path: Path) -> None:
    pdir, bases = build_log_dir(tmp_path)
    cp = pdir / names.LEADER_EPOCH_CHECKPOINT
    cp.write_bytes(checkpoint.build_leader_epoch_checkpoint([(0, 0), (1, 50), (2, 100), (3, 150), (4, 200)]))
    assert diagnose([pdir]).findings == []  # an epoch starting exactly at the log end is legal
    cp.write_bytes(checkpoint.build_leader_epoch_checkpoint([(0, 0), (1, 50), (2, 100), (3, 150), (4, 260)]))
    f = only(diagnose([pdir]), "KAFKA_EPOCH_BEYOND_LOG_END")
    assert (f.offset, f.severity.value, f.position) == (260, "warning", len(b"0\n5\n0 0\n1 50\n2 100\n3 150\n"))
    cp.write_bytes(checkpoint.build_leader_epoch_checkpoint([(0, 0), (1, 60), (2, 100), (3, 150)]))
    f = only(diagnose([pdir]), "KAFKA_EPOCH_CHECKPOINT_MISMATCH")
    assert f.offset == 50
    cp.write_bytes(checkpoint.build_leader_epoch_checkpoint([(0, 0), (2, 50), (1, 100)]))
    assert "KAFKA_EPOCH_CHECKPOINT_NOT_MONOTONIC" in codes(diagnose([pdir]), "error")


def test_broker_checkpoints(tmp_path: Path) -> None:
    pdir, bases = build_log_dir(tmp_path)
    (tmp_path / names.REPLICATION_OFFSET_CHECKPOINT).write_bytes(b"0\n2\nt 0 5\n")
    f = only(diagnose([tmp_path]), "KAFKA_CHECKPOINT_INVALID")
    assert f.path == str(tmp_path / names.REPLICATION_OFFSET_CHECKPOINT) and f.position == 2
    set_checkpoint(tmp_path, names.REPLICATION_OFFSET_CHECKPOINT, 250)
    set_checkpoint(tmp_path, names.RECOVERY_POINT_OFFSET_CHECKPOINT, 260)
    report = diagnose([tmp_path])
    assert only(report, "KAFKA_HW_ABOVE_LEO").offset == 250
    assert only(report, "KAFKA_RECOVERY_POINT_ABOVE_LEO").offset == 260
    set_checkpoint(tmp_path, names.REPLICATION_OFFSET_CHECKPOINT, 3, topic="gone")
    set_checkpoint(tmp_path, names.RECOVERY_POINT_OFFSET_CHECKPOINT, 0)
    (tmp_path / (names.RECOVERY_POINT_OFFSET_CHECKPOINT + ".tmp")).write_bytes(b"0\n")
    report = diagnose([tmp_path])
    assert only(report, "KAFKA_PARTITION_NOT_IN_CHECKPOINT").details["topic"] == "t"
    assert "gone-0" in only(report, "KAFKA_CHECKPOINT_WITHOUT_PARTITION").message
    assert only(report, "KAFKA_CHECKPOINT_TMP_LEFTOVER")
    (pdir / names.PARTITION_METADATA).write_bytes(b"version: 0\ntopic_id: nope")
    (tmp_path / names.META_PROPERTIES).write_bytes(b"version=7\n")
    report = diagnose([tmp_path])
    assert only(report, "KAFKA_PARTITION_METADATA_INVALID") and only(report, "KAFKA_META_PROPERTIES_INVALID")


def test_txnindex_against_abort_markers_and_snapshot(tmp_path: Path) -> None:
    batches = [data_batch(0, 3), txn_batch(3, 2, pid=7), marker(5, commit=False, pid=7),
               txn_batch(6, 2, pid=9), marker(8, commit=False, pid=9), data_batch(9, 2, pid=42)]
    pdir = tmp_path / "p-0"
    w = write_partition(pdir, batches)
    assert diagnose([pdir]).findings == []
    txn = seg_path(pdir, 0, "txnindex")
    txn.write_bytes(txn.read_bytes()[:34])
    f = only(diagnose([pdir]), "KAFKA_TXNINDEX_MISMATCH")
    assert (f.offset, f.position) == (8, 34)
    snap = seg_path(pdir, w.log_end_offset, "snapshot")
    flip(snap, 12)
    assert only(diagnose([pdir]), "KAFKA_SNAPSHOT_CRC_MISMATCH").path == str(snap)
    snap.write_bytes(build_producer_snapshot([ProducerSnapshotEntry(42, 0, 5, 10, 1, 0, -1, -1)]))
    f = only(diagnose([pdir]), "KAFKA_SNAPSHOT_MISMATCH")
    assert (f.offset, f.position) == (10, 10)


def test_undecodable_records_with_a_valid_crc(tmp_path: Path) -> None:
    pdir = tmp_path / "u-0"
    batches = [data_batch(0, 3), undecodable_batch(3), data_batch(6, 3)]
    write_partition(pdir, batches)
    f = only(diagnose([pdir]), "KAFKA_RECORDS_UNDECODABLE")
    assert (f.position, f.offset) == (len(batches[0]), 3)


def test_overlapping_segments(tmp_path: Path) -> None:
    pdir, bases = build_log_dir(tmp_path)
    dup = seg_path(pdir, bases[1] - 5)
    dup.write_bytes(seg_path(pdir, bases[1]).read_bytes())
    seg_path(pdir, bases[1]).rename(pdir / "x.keep")
    report = diagnose([pdir])
    f = only(report, "KAFKA_SEGMENT_OVERLAP")
    assert (f.path, f.offset) == (str(dup), bases[1])


@pytest.mark.parametrize("name", ["niloufar-ldi-kraft", "sagarrao-3broker/c8d7c180e/kafka-logs-2",
                                  "sagarrao-3broker/c030fc1ce/kafka-logs-1", "jeongrae-kraft/c441d190",
                                  "donaldy-kafka271-zk", "iechenyb-zk"])
def test_real_broker_dirs_have_no_errors(name: str) -> None:
    root = REALDATA / name
    if not root.is_dir():
        pytest.skip("real data not present")
    before = tree_hashes(root)
    report = diagnose([root])
    assert report.summary["errors"] == 0, [f.to_dict() for f in report.findings if f.severity.value == "error"]
    assert tree_hashes(root) == before
    assert {i["sha256"] for i in report.inputs} <= set(before.values())


def test_real_epoch_at_log_end_is_legal() -> None:
    pdir = REALDATA / "sagarrao-3broker/c8d7c180e/kafka-logs-2/my_topic-2"
    if not pdir.is_dir():
        pytest.skip("real data not present")
    report = diagnose([pdir])
    assert not [f for f in report.findings if "EPOCH" in f.code or "INDEX" in f.code]


def test_random_damage_never_crashes_doctor_or_recover(tmp_path: Path) -> None:
    import random
    rng = random.Random(3)
    pdir, bases = build_log_dir(tmp_path / "in", n=12)
    files = [p for p in pdir.iterdir() if p.suffix in (".log", ".index", ".timeindex", ".snapshot")]
    for round_ in range(15):
        p = rng.choice(files)
        data = bytearray(p.read_bytes())
        if data:
            for _ in range(rng.randint(1, 4)):
                data[rng.randrange(len(data))] = rng.randrange(256)
            if rng.random() < 0.3:
                data = data[: rng.randrange(len(data))]
        p.write_bytes(bytes(data))
        report = diagnose([tmp_path / "in"])
        assert all(f.code and f.path for f in report.findings)
        res = recover_partition(pdir, tmp_path / f"out{round_}", salvage=bool(round_ % 2))
        assert res.log_end_offset >= 0
