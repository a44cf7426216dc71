"""`__remote_log_metadata` decoding against values framed and packed from the storage module's specs by
`tests.brokers.remote_log_metadata_records` (not replog's encoder)."""
from __future__ import annotations

import pytest

from replog.formats.errors import FormatError
from replog.formats.kafka.internal.remote_log_metadata import decode_remote_log_metadata
from tests.brokers import remote_log_metadata_records as rlmm

TP = rlmm.TopicIdPartition("orders", "q1ReQqTpRxWGx3_gK4yH2A", 3)
SEG_ID = "Bd2Kr7cXSQWvCm8eWJ7K3A"


def test_each_kind_decodes() -> None:
    seg = rlmm.Segment(0, 99, 1, 5, 6, {0: 0, 2: 50}, 4096, b"\x01", 1, True)
    got = decode_remote_log_metadata(rlmm.segment_metadata(TP, SEG_ID, seg))
    assert got is not None and got["type"] == "RemoteLogSegmentMetadataRecord"
    d = got["data"]
    assert d["remoteLogSegmentId"] == {"topicIdPartition": {"name": "orders", "id": TP.topic_id, "partition": 3},
                                       "id": SEG_ID}
    assert d["segmentLeaderEpochs"] == [{"leaderEpoch": 0, "offset": 0}, {"leaderEpoch": 2, "offset": 50}]
    assert (d["customMetadata"], d["txnIndexEmpty"], d["remoteLogSegmentState"]) == ("01", True, 1)
    kinds = [decode_remote_log_metadata(v) for v in (
        rlmm.segment_update(TP, SEG_ID, 1, 9, None, 3), rlmm.partition_delete(TP, 1, 9, 2),
        rlmm.segment_snapshot(SEG_ID, seg))]
    assert [k["apiKey"] for k in kinds if k] == [1, 2, 3]
    assert kinds[0] is not None and kinds[0]["data"]["customMetadata"] is None


def test_frames_and_keys_it_does_not_know_are_kept_raw_and_trailing_bytes_reported() -> None:
    update = rlmm.segment_update(TP, SEG_ID, 1, 9, None, 3)
    assert decode_remote_log_metadata(b"\x00" + update[1:]) == {"frameVersion": 0, "raw": update[1:].hex()}
    unknown = decode_remote_log_metadata(rlmm.framed(9, b"\x00"))
    assert unknown == {"frameVersion": 1, "apiKey": 9, "version": 0, "raw": "00"}
    tail = decode_remote_log_metadata(update + b"xy")
    assert tail is not None and tail["trailingBytes"] == b"xy".hex()
    assert decode_remote_log_metadata(None) is None
    with pytest.raises(FormatError):
        decode_remote_log_metadata(update[:-3])
