"""`dump` as kafka-dump-log users expect it, through the real `replog` process.

The expected lines are written here by hand from Kafka's own rule (DumpLogSegments.printBatchLevel and
dumpLog, 3.6+), for batches built by kafka-python's builder, not by replog's writers.
"""
from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from replog.formats.kafka.control import build_marker_batch
from tests.realdata import real_files
from tests.toolkit.terminal import run_piped

TS = 1_700_000_000_000
FINDING_PREFIXES = ("error: ", "warning: ", "info: ")  # replog's findings, written to stderr in dump-log format
V0, V1 = b"v0" * 60, b"v1" * 60  # long enough that kafka-python keeps them gzipped


def kp_batch(base: int, records: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes]]]], *,
             codec: int = 0, producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
             transactional: bool = False, epoch: int = 0) -> bytes:
    """A v2 batch by kafka-python's builder, base offset and leader epoch patched in as a leader writes them."""
    builder_module = pytest.importorskip("kafka.record.default_records")
    builder = builder_module.DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=transactional, producer_id=producer_id,
        producer_epoch=producer_epoch, base_sequence=base_sequence, batch_size=1 << 20)
    for i, (key, value, headers) in enumerate(records):
        builder.append(i, timestamp=TS + base + i, key=key, value=value, headers=headers)
    raw = bytearray(builder.build())
    struct.pack_into(">q", raw, 0, base)
    struct.pack_into(">i", raw, 12, epoch)
    return bytes(raw)


def crc_of(batch: bytes) -> int:
    return struct.unpack_from(">I", batch, 17)[0]


@pytest.fixture
def segment(tmp_path: Path) -> tuple[Path, list[bytes]]:
    batches = [
        kp_batch(100, [(b"k0", V0, [("trace", b"t"), ("src", b"s")]), (None, V1, []), (b"k2", None, [])],
                 codec=1, producer_id=7, producer_epoch=2, base_sequence=10, transactional=True, epoch=3),
        build_marker_batch(offset=103, commit=True, producer_id=7, producer_epoch=2, coordinator_epoch=5,
                           timestamp=TS + 103, partition_leader_epoch=3),
        kp_batch(104, [(b"\xff\xfe", b'{"a": 1}', [])], epoch=4),
    ]
    seg = tmp_path / "00000000000000000100.log"
    seg.write_bytes(b"".join(batches))
    return seg, batches


def expected_lines(seg: Path, b: list[bytes], *, data: bool) -> list[str]:
    """kafka-dump-log.sh --deep-iteration [--print-data-log] of the fixture, by Kafka's rule."""
    p1, p2 = len(b[0]), len(b[0]) + len(b[1])
    key = (lambda k: f" key: {k}") if data else (lambda k: "")
    payload = (lambda v: f" payload: {v}") if data else (lambda v: "")
    return [
        f"Dumping {seg}",
        "Log starting offset: 100",
        ("baseOffset: 100 lastOffset: 102 count: 3 baseSequence: 10 lastSequence: 12 producerId: 7 "
        "producerEpoch: 2 partitionLeaderEpoch: 3 isTransactional: true isControl: false "
        f"deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: {TS + 102} size: {len(b[0])} magic: 2 "
        f"compresscodec: gzip crc: {crc_of(b[0])} isvalid: true"),
        f"| offset: 100 CreateTime: {TS + 100} keySize: 2 valueSize: 120 sequence: 10 headerKeys: [trace,src]"
        + key("k0") + payload(V0.decode()),
        f"| offset: 101 CreateTime: {TS + 101} keySize: -1 valueSize: 120 sequence: 11 headerKeys: []"
        + payload(V1.decode()),
        f"| offset: 102 CreateTime: {TS + 102} keySize: 2 valueSize: -1 sequence: 12 headerKeys: []" + key("k2"),
        ("baseOffset: 103 lastOffset: 103 count: 1 baseSequence: -1 lastSequence: -1 producerId: 7 "
        "producerEpoch: 2 partitionLeaderEpoch: 3 isTransactional: true isControl: true "
        f"deleteHorizonMs: OptionalLong.empty position: {p1} CreateTime: {TS + 103} size: {len(b[1])} magic: 2 "
        f"compresscodec: none crc: {crc_of(b[1])} isvalid: true"),
        (f"| offset: 103 CreateTime: {TS + 103} keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
        "endTxnMarker: COMMIT coordinatorEpoch: 5"),
        ("baseOffset: 104 lastOffset: 104 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 "
        "producerEpoch: -1 partitionLeaderEpoch: 4 isTransactional: false isControl: false "
        f"deleteHorizonMs: OptionalLong.empty position: {p2} CreateTime: {TS + 104} size: {len(b[2])} magic: 2 "
        f"compresscodec: none crc: {crc_of(b[2])} isvalid: true"),
        f"| offset: 104 CreateTime: {TS + 104} keySize: 2 valueSize: 8 sequence: -1 headerKeys: []"
        + key("\ufffd\ufffd") + payload('{"a": 1}'),  # Java's new String(bytes, UTF_8)
    ]


def test_dump_log_format_matches_kafka_dump_log_line_by_line(segment: tuple[Path, list[bytes]]) -> None:
    seg, batches = segment
    res = run_piped(["dump", "--files", str(seg), "--print-data-log", "--format", "dump-log"])
    assert res.returncode == 0, res.stderr
    assert res.stdout.decode().splitlines() == expected_lines(seg, batches, data=True)
    res = run_piped(["dump", str(seg), "--deep-iteration", "--format", "dump-log"])
    assert res.stdout.decode().splitlines() == expected_lines(seg, batches, data=False)


def test_dump_log_shallow_and_skip_record_metadata(segment: tuple[Path, list[bytes]]) -> None:
    seg, batches = segment
    res = run_piped(["dump", str(seg), "--format", "dump-log"])
    full = expected_lines(seg, batches, data=True)
    assert res.stdout.decode().splitlines() == [full[i] for i in (0, 1, 2, 6, 8)]
    skip = ["dump", str(seg), "--print-data-log", "--skip-record-metadata", "--format", "dump-log"]
    # Kafka 3.9's spacing: "| key: .." when there is a key, " payload: .." alone when there is none,
    # an empty line for a control record; 4.4 starts every record with "| "
    res = run_piped([*skip, "--kafka-version", "3.9"])
    assert res.stdout.decode().splitlines()[3:8] == [f"| key: k0 payload: {V0.decode()}", f" payload: {V1.decode()}",
                                                     "| key: k2", full[6], ""]
    res = run_piped(skip)
    assert res.stdout.decode().splitlines()[4] == f"| payload: {V1.decode()}"


def test_files_option_and_comma_lists_take_several_files(segment: tuple[Path, list[bytes]], tmp_path: Path) -> None:
    seg, _ = segment
    other = tmp_path / "other" / "00000000000000000000.log"
    other.parent.mkdir()
    other.write_bytes(kp_batch(0, [(b"a", b"b", [])]))
    for args in (["--files", f"{seg},{other}"], [f"{seg},{other}"], [str(seg), "--files", str(other)]):
        res = run_piped(["dump", *args, "--format", "dump-log"])
        heads = [line for line in res.stdout.decode().splitlines() if line.startswith("Dumping ")]
        assert res.returncode == 0 and heads == [f"Dumping {seg}", f"Dumping {other}"]


def test_kafka_dump_log_option_names_are_accepted(segment: tuple[Path, list[bytes]]) -> None:
    seg, _ = segment
    for flag in ("--transaction-log-decoder", "--cluster-metadata-decoder"):
        res = run_piped(["dump", str(seg), flag, "--format", "jsonl", "--max-message-size", "1048576"])
        assert res.returncode in (0, 1) and b"Traceback" not in res.stderr
        assert [json.loads(line)["kind"] for line in res.stdout.splitlines()].count("record") == 5
    idx = seg.with_suffix(".index")
    idx.write_bytes(struct.pack(">ii", 4, len(kp_batch(100, [(b"k", b"v", [])]))))
    res = run_piped(["dump", str(idx), "--index-sanity-check", "--format", "dump-log"])
    assert res.stdout.decode().splitlines() == [f"Dumping {idx}", f"{idx} passed sanity check."]


def test_undecodable_bytes_are_marked_hex_not_replaced(segment: tuple[Path, list[bytes]]) -> None:
    seg, _ = segment
    res = run_piped(["dump", str(seg), "--print-data", "--key-decoder", "utf8", "--value-decoder", "json",
                     "--format", "jsonl"])
    records = [e for e in map(json.loads, res.stdout.splitlines()) if e["kind"] == "record"]
    last = records[-1]
    assert last["key"] == {"undecodable": "utf8", "hex": "fffe"} and last["value"] == {"a": 1}
    assert records[0]["value"] == {"undecodable": "json", "hex": V0.hex()}  # text, but not JSON
    assert "\ufffd" not in res.stdout.decode()
    res = run_piped(["dump", str(seg), "--print-data", "--format", "table"])
    text = res.stdout.decode()
    assert "key: <hex:fffe>" in text and "\ufffd" not in text


@pytest.mark.parametrize("args, message", [
    (["--from-offset", "10", "--to-offset", "5"], "--from-offset 10 is after --to-offset 5"),
    (["--max-bytes", "-1"], "--max-bytes"),
    (["--max-message-size", "0"], "--max-message-size"),
])
def test_impossible_ranges_are_usage_errors(segment: tuple[Path, list[bytes]], args: list[str],
                                            message: str) -> None:
    seg, _ = segment
    res = run_piped(["dump", str(seg), *args])
    assert res.returncode == 2 and res.stdout == b""
    assert message in " ".join(res.stderr.decode().replace("│", " ").split())
    assert b"Traceback" not in res.stderr


def test_deep_dump_reports_non_consecutive_offsets_on_stderr_newest_first(tmp_path: Path) -> None:
    """`DumpLogSegments.main` prints each file's pairs, newest first (dumpLog prepends to its list)."""
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(kp_batch(0, [(b"a", b"1", []), (b"b", b"2", [])]) + kp_batch(5, [(b"c", b"3", [])])
                    + kp_batch(9, [(b"d", b"4", [])]))
    res = run_piped(["dump", str(seg), "--deep-iteration", "--format", "dump-log"])
    assert res.returncode == 0, res.stderr
    kafka_lines = [line for line in res.stderr.decode().splitlines() if not line.startswith(FINDING_PREFIXES)]
    assert kafka_lines == [f"Non-consecutive offsets in {seg.absolute()}", "  5 is followed by 9",
                           "  1 is followed by 5"]
    shallow = run_piped(["dump", str(seg), "--format", "dump-log"])  # Kafka checks records only when deep
    assert all(line.startswith(FINDING_PREFIXES) for line in shallow.stderr.decode().splitlines())


def test_an_offset_index_without_an_entry_is_empty(tmp_path: Path) -> None:
    idx = tmp_path / "00000000000000000000.index"
    idx.write_bytes(b"\0" * 7)  # `dumpIndex`: entries = length / 8 = 0
    res = run_piped(["dump", str(idx), "--format", "dump-log"])
    assert res.stdout.decode().splitlines() == [f"Dumping {idx}", f"{idx} is empty."]
    notes = res.stderr.decode().splitlines()  # replog's own findings: beside kafka-dump-log's text, not in it
    assert notes and all(line.startswith(FINDING_PREFIXES) for line in notes)


def test_kraft_snapshot_control_records_print_their_json(tmp_path: Path) -> None:
    """A SnapshotHeader control record, bytes laid out here from SnapshotHeaderRecord.json and the v2 batch
    format: kafka-dump-log prints ` SnapshotHeader {"version":0,"lastContainedLogTimestamp":T}`."""
    crc32c = pytest.importorskip("crc32c")
    key = struct.pack(">hh", 0, 3)                 # ControlRecordType key: version 0, type 3
    value = struct.pack(">hq", 0, TS) + b"\x00"    # version, lastContainedLogTimestamp, no tagged fields
    record = (b"\x00" + b"\x00" + b"\x00"          # attributes, timestampDelta 0, offsetDelta 0 (varints)
              + bytes([len(key) * 2]) + key + bytes([len(value) * 2]) + value + b"\x00")
    record = bytes([len(record) * 2]) + record
    body = struct.pack(">hiqqqhii", 0x20, 0, TS, TS, -1, -1, -1, 1) + record  # attributes: control bit
    head = struct.pack(">qiib", 0, 4 + 1 + 4 + len(body), 2, 2)
    batch = head + struct.pack(">I", crc32c.crc32c(body)) + body
    snap = tmp_path / "00000000000000000010-0000000002.checkpoint"
    snap.write_bytes(batch)
    res = run_piped(["dump", str(snap), "--deep-iteration", "--format", "dump-log"])
    lines = res.stdout.decode().splitlines()
    assert lines[:2] == [f"Dumping {snap}", "Snapshot end offset: 10, epoch: 2"], res.stderr
    assert lines[3].endswith(f'headerKeys: [] SnapshotHeader {{"version":0,"lastContainedLogTimestamp":{TS}}}')


def test_a_real_bootstrap_snapshot_prints_like_kafka_dump_log() -> None:
    """Real KRaft `bootstrap.checkpoint` (read in place): header line, then the header/footer JSON."""
    snap = real_files("niloufar-ldi-kraft/bootstrap.checkpoint")[0]
    lines = run_piped(["dump", str(snap), "--deep-iteration", "--format", "dump-log"]).stdout.decode().splitlines()
    assert lines[:2] == [f"Dumping {snap}", "KRaft bootstrap snapshot"]
    assert any(' SnapshotHeader {"version":0,"lastContainedLogTimestamp":' in line for line in lines)
    assert lines[-1].endswith(' SnapshotFooter {"version":0}')


def _share_segment(tmp_path: Path) -> Path:
    """A `__share_group_state` segment of a 4.4 snapshot and update (packed by `share_state_records`)."""
    from tests.brokers import share_state_records as share
    batches = [(5, 9, 2, 1)]
    part = tmp_path / "__share_group_state-3"
    part.mkdir()
    seg = part / "00000000000000000000.log"
    seg.write_bytes(kp_batch(0, [
        (share.key(share.SNAPSHOT, "sg", "q1ReQqTpRxWGx3_gK4yH2A", 2), share.snapshot_value_44(4, 1, 0, 5, TS, TS,
                                                                                                batches), []),
        (share.key(share.UPDATE, "sg", "q1ReQqTpRxWGx3_gK4yH2A", 2), share.update_value_44(4, 0, -1, [], 9), [])]))
    return seg


def test_share_group_state_decoder_reads_the_emulated_releases_schemas(tmp_path: Path) -> None:
    """4.4's value layout reads with 4.4's schemas; 4.0's schemas (uint16 SnapshotEpoch, no timestamps) cannot
    read it, and the record says so where kafka-dump-log 4.0 prints its error."""
    seg = _share_segment(tmp_path)
    res = run_piped(["dump", str(seg), "--share-group-state-decoder", "--format", "jsonl"])
    records = [e for e in map(json.loads, res.stdout.splitlines()) if e["kind"] == "record"]
    assert [r["key"]["data"]["partition"] for r in records] == [2, 2]
    assert records[0]["value"]["data"]["writeTimestamp"] == TS
    assert records[0]["value"]["data"]["stateBatches"] == [
        {"firstOffset": 5, "lastOffset": 9, "deliveryState": 2, "deliveryCount": 1}]
    assert records[1]["value"]["data"]["deliveryCompleteCount"] == 9
    res = run_piped(["dump", str(seg), "--share-group-state-decoder", "--format", "dump-log",
                     "--kafka-version", "4.0"])
    lines = [line for line in res.stdout.decode().splitlines() if line.startswith("| offset:")]
    assert len(lines) == 2 and all(" key: Error at offset " in line for line in lines), lines


def test_share_group_state_decoder_is_not_an_option_of_3_9(tmp_path: Path) -> None:
    """Kafka 3.9.1's kafka-dump-log rejects --share-group-state-decoder before dumping anything (joptsimple's
    UnrecognizedOptionException); replog emulating 3.9 refuses it too."""
    seg = _share_segment(tmp_path)
    res = run_piped(["dump", str(seg), "--share-group-state-decoder", "--format", "dump-log",
                     "--kafka-version", "3.9"])
    assert res.returncode == 2 and res.stdout == b""
    assert "has no such option" in " ".join(res.stderr.decode().replace("│", " ").split())


def test_a_files_list_longer_than_a_path_is_split(segment: tuple[Path, list[bytes]]) -> None:
    """--files with more than PATH_MAX (4096) bytes of comma-separated paths: each file is dumped (checking
    whether the whole list names one file must not fail with ENAMETOOLONG)."""
    seg, _ = segment
    many = ",".join([str(seg)] * (4200 // len(str(seg)) + 2))
    assert len(many) > 4200
    res = run_piped(["dump", "--files", many, "--format", "dump-log"])
    heads = [line for line in res.stdout.decode().splitlines() if line.startswith("Dumping ")]
    assert res.returncode == 0 and heads == [f"Dumping {seg}"] * (many.count(",") + 1), res.stderr.decode()[-500:]


def test_remote_log_metadata_decoder(tmp_path: Path) -> None:
    """Values framed as `RemoteLogMetadataSerde` frames them (packed by `remote_log_metadata_records`): jsonl
    carries the decoded fields; dump-log prints the metadata object's text, `txnIdxEmpty` from 4.0 on, and the
    error Kafka's constructor raises for a segment without leader epochs."""
    from tests.brokers import remote_log_metadata_records as rlmm
    tp = rlmm.TopicIdPartition("orders", "q1ReQqTpRxWGx3_gK4yH2A", 3)
    seg = rlmm.Segment(0, 9, 1, TS, TS, {4: 0, 1: 5}, 10, None, 1, True)
    part = tmp_path / "__remote_log_metadata-0"
    part.mkdir()
    log = part / "00000000000000000000.log"
    log.write_bytes(kp_batch(0, [(None, rlmm.segment_metadata(tp, "Bd2Kr7cXSQWvCm8eWJ7K3A", seg), []),
                                 (None, rlmm.segment_snapshot("Bd2Kr7cXSQWvCm8eWJ7K3A", rlmm.Segment(
                                     0, 9, 1, TS, TS, {}, 10, None, 1)), [])]))
    res = run_piped(["dump", str(log), "--remote-log-metadata-decoder", "--format", "jsonl"])
    first = [e for e in map(json.loads, res.stdout.splitlines()) if e["kind"] == "record"][0]["value"]
    assert first["type"] == "RemoteLogSegmentMetadataRecord" and first["data"]["txnIndexEmpty"] is True
    assert first["data"]["remoteLogSegmentId"]["topicIdPartition"]["name"] == "orders"
    for version, txn in (("3.9", ""), ("4.4", ", txnIdxEmpty=true")):
        res = run_piped(["dump", str(log), "--remote-log-metadata-decoder", "--format", "dump-log",
                         "--kafka-version", version])
        records = [line for line in res.stdout.decode().splitlines() if line.startswith("| offset:")]
        assert records[0].endswith("segmentLeaderEpochs={1=5, 4=0}, segmentSizeInBytes=10, "
                                   f"customMetadata=Optional.empty, state=COPY_SEGMENT_FINISHED{txn}}}")
        assert records[1].endswith("payload: Error at offset 1, skipping. segmentLeaderEpochs can not be null or "
                                   "empty")
