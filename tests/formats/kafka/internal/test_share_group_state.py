"""`__share_group_state` decoding against values packed from the share coordinator's specs by
`tests.brokers.share_state_records` (not replog's encoder)."""
from __future__ import annotations

import pytest

from replog.formats.errors import FormatError
from replog.formats.kafka.internal.share_group_state import decode_share_group_state, json_data
from tests.brokers import share_state_records as share

TOPIC_ID = "q1ReQqTpRxWGx3_gK4yH2A"
BATCH = (10, 19, 2, 3)


def test_both_releases_read_their_own_layout() -> None:
    key = share.key(share.SNAPSHOT, "sg", TOPIC_ID, 4)
    new = decode_share_group_state(key, share.snapshot_value_44(70000, 2, 3, 10, 5, 6, [BATCH]), "4.4")
    assert new["key"] == {"type": "ShareSnapshotKey", "version": 0,
                          "data": {"groupId": "sg", "topicId": TOPIC_ID, "partition": 4}}
    assert new["value"]["data"]["snapshotEpoch"] == 70000 and new["value"]["data"]["writeTimestamp"] == 6
    assert new["value"]["data"]["stateBatches"] == [
        {"firstOffset": 10, "lastOffset": 19, "deliveryState": 2, "deliveryCount": 3}]
    old = decode_share_group_state(key, share.snapshot_value_40(65535, 2, 3, 10, [BATCH]), "4.0")
    assert old["value"]["data"]["snapshotEpoch"] == 65535 and "writeTimestamp" not in old["value"]["data"]


def test_the_tagged_delivery_complete_count_is_left_out_of_the_json_at_its_default() -> None:
    key = share.key(share.UPDATE, "sg", TOPIC_ID, 0)
    set_ = decode_share_group_state(key, share.update_value_44(1, 2, 3, [], 7), "4.4")["value"]["data"]
    unset = decode_share_group_state(key, share.update_value_44(1, 2, 3, []), "4.4")["value"]["data"]
    assert json_data(1, set_, "4.4")["deliveryCompleteCount"] == 7
    assert "deliveryCompleteCount" not in json_data(1, unset, "4.4")


def test_a_tombstone_and_the_other_releases_layout() -> None:
    key = share.key(share.UPDATE, "sg", TOPIC_ID, 0)
    assert decode_share_group_state(key, None)["value"] is None
    with pytest.raises(FormatError):
        decode_share_group_state(key, share.update_value_40(1, 2, 3, [BATCH]), "4.4")
