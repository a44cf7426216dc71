"""`remote_log_snapshot` (Kafka 3.0-3.7's per-partition remote-log metadata cache): files framed here by hand from
RemoteLogMetadataSnapshotFile's layout with the records of `tests.brokers.remote_log_metadata_records` (not replog's
encoder), every way Kafka's `read` fails, and a property test of replog's writer against its parser."""
from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replog.formats.errors import FormatError
from replog.formats.kafka.remote_log_snapshot import build_remote_log_snapshot, parse_remote_log_snapshot
from tests.brokers import remote_log_metadata_records as rlmm

SEG_IDS = ("Bd2Kr7cXSQWvCm8eWJ7K3A", "q1ReQqTpRxWGx3_gK4yH2A")
SEGMENTS = (rlmm.Segment(0, 99, 1, 5, 6, {0: 0, 2: 50}, 4096, None, 1),
            rlmm.Segment(100, 149, 2, 7, 8, {2: 100}, 2048, b"\x07", 1))


def framed_file(entries: list[bytes], count: int | None = None, version: int = 0) -> bytes:
    """header <version:short><metadata-partition:int><metadata-partition-offset:long><entries-size:int>, then
    <entry-length:int><entry-bytes> per entry (RemoteLogMetadataSnapshotFile.write, branch 3.7)."""
    head = struct.pack(">hiqi", version, 7, 12345, len(entries) if count is None else count)
    return head + b"".join(struct.pack(">i", len(e)) + e for e in entries)


def snapshot_records() -> list[bytes]:
    return [rlmm.segment_snapshot(i, s) for i, s in zip(SEG_IDS, SEGMENTS, strict=True)]


def test_a_snapshot_file_decodes() -> None:
    snap = parse_remote_log_snapshot(framed_file(snapshot_records()))
    assert snap is not None, "a snapshot"
    h = snap.header
    assert (h.version, h.metadata_partition, h.metadata_partition_offset, h.entries) == (0, 7, 12345, 2), "header"
    assert [s["segmentId"] for s in snap.segments] == list(SEG_IDS), "segment ids"
    assert [(s["startOffset"], s["endOffset"]) for s in snap.segments] == [(0, 99), (100, 149)], "offsets"
    assert snap.segments[0]["segmentLeaderEpochs"] == [{"leaderEpoch": 0, "offset": 0},
                                                       {"leaderEpoch": 2, "offset": 50}], "epochs"


def test_an_empty_file_is_no_snapshot() -> None:
    """`read`: `metadataStoreFile.length() == 0` -> Optional.empty() (3.7 creates the file empty)."""
    assert parse_remote_log_snapshot(b"") is None


@pytest.mark.parametrize("data, why", [
    (framed_file(snapshot_records(), version=1), "version"),
    (framed_file(snapshot_records())[:10], "header"),
    (framed_file(snapshot_records()) + b"\x00\x00", "length"),
    (framed_file(snapshot_records())[:-3], "entry"),
    (framed_file(snapshot_records(), count=3), "count"),
    (framed_file([rlmm.segment_update(rlmm.TopicIdPartition("t", SEG_IDS[1], 0), SEG_IDS[0], 1, 2, None, 1)]),
     "not a snapshot record"),
    (framed_file([snapshot_records()[0] + b"x"]), "trailing bytes"),
    (framed_file([snapshot_records()[0][:-4]]), "cut record"),
])
def test_what_kafkas_read_refuses_is_a_format_error(data: bytes, why: str) -> None:
    with pytest.raises(FormatError) as raised:
        parse_remote_log_snapshot(data)
    assert raised.value.code == "KAFKA_REMOTE_LOG_SNAPSHOT_INVALID", why


def test_the_writer_writes_what_kafka_writes() -> None:
    """replog's writer against the hand-framed file, byte for byte."""
    segments = parse_remote_log_snapshot(framed_file(snapshot_records()))
    assert segments is not None
    assert build_remote_log_snapshot(7, 12345, segments.segments) == framed_file(snapshot_records())


_UUIDS = st.binary(min_size=16, max_size=16).filter(lambda b: any(b))
_SEGMENT = st.fixed_dictionaries({
    "segmentId": _UUIDS, "startOffset": st.integers(0, 2**62), "endOffset": st.integers(0, 2**62),
    "brokerId": st.integers(-(2**31), 2**31 - 1), "maxTimestampMs": st.integers(-1, 2**62),
    "eventTimestampMs": st.integers(-1, 2**62),
    "segmentLeaderEpochs": st.lists(st.fixed_dictionaries({"leaderEpoch": st.integers(0, 2**31 - 1),
                                                           "offset": st.integers(0, 2**62)}), max_size=4),
    "segmentSizeInBytes": st.integers(0, 2**31 - 1), "customMetadata": st.none() | st.binary(max_size=8),
    "remoteLogSegmentState": st.integers(0, 3), "txnIndexEmpty": st.booleans()})


@given(st.integers(0, 49), st.integers(-1, 2**62), st.lists(_SEGMENT, max_size=5))
def test_round_trip(partition: int, offset: int, segments: list[dict]) -> None:
    data = build_remote_log_snapshot(partition, offset, segments)
    snap = parse_remote_log_snapshot(data)
    assert snap is not None
    assert (snap.header.metadata_partition, snap.header.metadata_partition_offset, snap.header.entries) == \
        (partition, offset, len(segments)), "header"
    again = build_remote_log_snapshot(partition, offset, snap.segments)
    assert again == data, "decoded segments write the same bytes"


def test_dump_lists_the_header_and_each_cached_segment(tmp_path) -> None:
    import json

    from tests.toolkit.test_cli import run_replog
    path = tmp_path / "t-0" / "remote_log_snapshot"
    path.parent.mkdir()
    path.write_bytes(framed_file(snapshot_records()))
    done = run_replog("dump", str(path), "--format", "jsonl")
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["kind"] for r in rows] == ["file", "remote_log_snapshot", "remote_log_segment", "remote_log_segment"]
    assert rows[1]["metadata_partition_offset"] == 12345, "header"
    assert [r["segmentId"] for r in rows[2:]] == list(SEG_IDS), "segments"
