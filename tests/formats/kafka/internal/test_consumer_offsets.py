"""`__consumer_offsets` key/value decoders and encoders, on generated and real broker records."""
from __future__ import annotations

import json
import struct
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replog.formats.errors import FormatError
from replog.formats.kafka.internal.consumer_offsets import (
    CONSUMER_ASSIGNMENT,
    CONSUMER_SUBSCRIPTION,
    GROUP_METADATA_VALUE,
    KEY_TYPES,
    OFFSET_COMMIT_VALUE,
    decode_consumer_offsets,
    encode_consumer_protocol,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_key,
    encode_offset_commit_key,
    encode_offset_commit_value,
    encode_value,
)
from replog.formats.kafka.internal.group_values import GROUP_VALUES
from replog.formats.kafka.internal.protocol import Message
from replog.formats.kafka.segment import SegmentWalk, batch_records
from tests.formats.kafka.internal.test_protocol import message_values, struct_values
from tests.mutate import damage
from tests.realdata import REALDATA


def _key_data(version: int) -> st.SearchStrategy:
    return struct_values(KEY_TYPES[version][1], version, tags=False)


def _protocol_values(schema: Message) -> st.SearchStrategy:
    return st.integers(0, 5).flatmap(
        lambda v: message_values(schema, min(v, 3)).map(lambda d: {"version": v, **d}))


@st.composite
def group_metadata_values(draw, version: int) -> dict:
    data = draw(message_values(GROUP_METADATA_VALUE, version))
    data["protocolType"] = draw(st.sampled_from(["consumer", "connect", ""]))
    if data["protocolType"] == "consumer":
        for member in data["members"]:
            member["subscription"] = draw(_protocol_values(CONSUMER_SUBSCRIPTION))
            member["assignment"] = draw(_protocol_values(CONSUMER_ASSIGNMENT))
    return data


@st.composite
def records(draw) -> tuple[int, dict, int, dict]:
    key_version = draw(st.sampled_from([0, 1, 2, *sorted(GROUP_VALUES)]))
    key = draw(_key_data(key_version))
    if key_version == 2:
        version = draw(st.integers(0, 4))
        return key_version, key, version, draw(group_metadata_values(version))
    schema = OFFSET_COMMIT_VALUE if key_version < 2 else GROUP_VALUES[key_version]
    version = draw(st.integers(0, 4)) if key_version < 2 else 0
    return key_version, key, version, draw(message_values(schema, version))


@settings(max_examples=200, deadline=None)
@given(records())
def test_round_trip(record: tuple[int, dict, int, dict]) -> None:
    key_version, key, version, value = record
    decoded = decode_consumer_offsets(encode_key(key_version, key), encode_value(key_version, version, value))
    assert decoded == {"key": {"type": KEY_TYPES[key_version][0], "version": key_version, "data": key},
                       "value": {"version": version, "data": value}}
    json.dumps(decoded)


@settings(max_examples=300, deadline=None)
@given(records(), st.data())
def test_mutations_raise_only_format_error(record: tuple[int, dict, int, dict], data) -> None:
    key_version, key, version, value = record
    bufs = [bytearray(encode_key(key_version, key)), bytearray(encode_value(key_version, version, value))]
    target = bufs[data.draw(st.integers(0, 1))]
    damage(target, data)
    try:
        json.dumps(decode_consumer_offsets(bytes(bufs[0]), bytes(bufs[1])))
    except FormatError as exc:
        assert exc.code == "KAFKA_RECORDS_UNDECODABLE"


def test_offset_commit_helpers_match_kafka_layout() -> None:
    key = encode_offset_commit_key("g", "t", 3)
    assert key == b"\x00\x01" + b"\x00\x01g" + b"\x00\x01t" + b"\x00\x00\x00\x03"
    value = encode_offset_commit_value(42, "m", 1000, leader_epoch=5)
    assert value == (b"\x00\x03" + (42).to_bytes(8, "big") + (5).to_bytes(4, "big") + b"\x00\x01m"
                     + (1000).to_bytes(8, "big"))
    assert decode_consumer_offsets(key, value)["value"] == {
        "version": 3, "data": {"offset": 42, "leaderEpoch": 5, "metadata": "m", "commitTimestamp": 1000}}
    v1 = decode_consumer_offsets(key, encode_offset_commit_value(1, expire_timestamp=9, version=1))
    assert v1["value"]["data"]["expireTimestamp"] == 9


def test_tombstone_and_group_metadata_helpers() -> None:
    assert decode_consumer_offsets(encode_group_metadata_key("g"), None) == {
        "key": {"type": "group_metadata", "version": 2, "data": {"group": "g"}}, "value": None}
    member = {"memberId": "m-1", "groupInstanceId": None, "clientId": "c", "clientHost": "/10.0.0.1",
              "rebalanceTimeout": 300000, "sessionTimeout": 45000,
              "subscription": {"version": 1, "topics": ["t"], "userData": None, "ownedPartitions": []},
              "assignment": {"version": 1, "assignedPartitions": [{"topic": "t", "partitions": [0, 1]}],
                             "userData": None}}
    data = {"protocolType": "consumer", "generation": 4, "protocol": "range", "leader": "m-1",
            "currentStateTimestamp": 17, "members": [member]}
    decoded = decode_consumer_offsets(encode_group_metadata_key("g"), encode_group_metadata_value(data))
    assert decoded["value"] == {"version": 3, "data": data}


def test_unparsable_subscription_stays_hex() -> None:
    member = {"memberId": "m", "clientId": "c", "clientHost": "h", "sessionTimeout": 1,
              "subscription": "0000ffff", "assignment": ""}
    data = {"protocolType": "consumer", "generation": 1, "protocol": None, "leader": None, "members": [member]}
    out = decode_consumer_offsets(encode_group_metadata_key("g"), encode_group_metadata_value(data, 0))
    assert out["value"]["data"]["members"][0]["subscription"] == "0000ffff"
    assert out["value"]["data"]["members"][0]["assignment"] == ""


def test_newer_subscription_version_read_as_highest_known() -> None:
    sub = {"version": 7, "topics": ["a"], "userData": None, "ownedPartitions": [], "generationId": 2,
           "rackId": "r1", "unparsedTail": "beef"}
    raw = encode_consumer_protocol(CONSUMER_SUBSCRIPTION, sub)
    member = {"memberId": "m", "clientId": "c", "clientHost": "h", "sessionTimeout": 1,
              "subscription": raw.hex(), "assignment": ""}
    data = {"protocolType": "consumer", "generation": 1, "protocol": "p", "leader": "m", "members": [member]}
    out = decode_consumer_offsets(encode_group_metadata_key("g"), encode_group_metadata_value(data, 1))
    assert out["value"]["data"]["members"][0]["subscription"] == sub


def _compact(s: str) -> bytes:
    """A flexible-version string: uvarint length + 1, then the bytes (all lengths here are below 127)."""
    return bytes([len(s) + 1]) + s.encode()


def test_4x_group_record_values_decode_from_hand_packed_bytes() -> None:
    """Values of types 16, 17 and 23 packed by hand from the 4.4.0 jar's `*Value.json` (flexible version 0: compact
    arrays and strings, an empty tagged-field section after each struct)."""
    regex = struct.pack(">h", 0) + b"\x03" + _compact("orders-1") + _compact("orders-2") \
        + struct.pack(">qq", 7, 1_700_000_000_000) + b"\x00"
    out = decode_consumer_offsets(struct.pack(">h", 16) + struct.pack(">h", 1) + b"g" + struct.pack(">h", 2) + b"o.",
                                  regex)
    assert out["value"] == {"version": 0, "data": {"topics": ["orders-1", "orders-2"], "version": 7,
                                                   "timestamp": 1_700_000_000_000}}, out
    tagged = b"\x01" + b"\x00" + b"\x04" + struct.pack(">i", 5)  # one tagged field: tag 0, size 4, int32 5
    meta = struct.pack(">h", 0) + struct.pack(">iq", 3, -2) + tagged
    out = decode_consumer_offsets(struct.pack(">h", 17) + struct.pack(">h", 3) + b"app", meta)
    data = out["value"]["data"]
    assert (data["epoch"], data["metadataHash"], data["validatedTopologyEpoch"]) == (3, -2, 5), data
    assert data["lastAssignmentConfigs"] is None, data
    changelog = _compact("app-store-changelog") + struct.pack(">ih", 0, 3) + b"\x02" + _compact("k") \
        + _compact("v") + b"\x00" + b"\x00"
    copartition = b"\x02" + b"\x02" + struct.pack(">h", 0) + b"\x01" + b"\x01" + b"\x00"
    sub = _compact("0") + b"\x02" + _compact("in") + b"\x01" + b"\x02" + changelog + b"\x01" + b"\x01" \
        + copartition + b"\x00"
    topology = struct.pack(">h", 0) + struct.pack(">i", 4) + b"\x02" + sub + b"\x00"
    out = decode_consumer_offsets(struct.pack(">h", 23) + struct.pack(">h", 3) + b"app", topology)
    (subtopology,) = out["value"]["data"]["subtopologies"]
    assert subtopology["sourceTopics"] == ["in"], subtopology
    assert subtopology["stateChangelogTopics"] == [{"name": "app-store-changelog", "partitions": 0,
                                                    "replicationFactor": 3,
                                                    "topicConfigs": [{"key": "k", "value": "v"}]}], subtopology
    assert subtopology["copartitionGroups"] == [{"sourceTopics": [0], "sourceTopicRegex": [],
                                                 "repartitionSourceTopics": []}], subtopology
    assert "trailingBytes" not in out["value"], out


def test_unknown_versions_are_raw_not_errors() -> None:
    assert decode_consumer_offsets(b"\x00\x63abc", b"\x00\x00xy") == {
        "key": {"type": "unknown", "version": 99, "raw": "616263"}, "value": {"version": 0, "raw": "7879"}}
    key = encode_offset_commit_key("g", "t", 0)
    assert decode_consumer_offsets(key, b"\x00\x09\x01")["value"] == {"version": 9, "raw": "01"}
    share_key = b"\x00\x09\x00\x01g"  # ShareGroupPartitionMetadata: no value schema in 4.4
    assert decode_consumer_offsets(share_key, b"\x00\x00\x01\x02") == {
        "key": {"type": "share_group_partition_metadata", "version": 9, "data": {"groupId": "g"}},
        "value": {"version": 0, "raw": "0102"}}


def test_early_access_kip848_value_degrades_to_raw() -> None:
    out = decode_consumer_offsets(b"\x00\x03\x00\x01g", b"\x00\x00\x01")  # epoch needs 4 bytes
    assert out["value"]["raw"] == "01" and "error" in out["value"]


def test_trailing_bytes_are_shown() -> None:
    out = decode_consumer_offsets(encode_offset_commit_key("g", "t", 0) + b"\x99",
                                  encode_offset_commit_value(1) + b"\x01\x02")
    assert out["key"]["trailingBytes"] == "99"
    assert out["value"]["trailingBytes"] == "0102"


def test_missing_key_and_short_buffers() -> None:
    with pytest.raises(FormatError):
        decode_consumer_offsets(None, b"")
    with pytest.raises(FormatError):
        decode_consumer_offsets(b"\x00", None)
    with pytest.raises(FormatError):
        decode_consumer_offsets(encode_offset_commit_key("g", "t", 0), b"\x00")


# --- real broker files --------------------------------------------------------------

def _decode_log(path: Path) -> list[dict]:
    buf = path.read_bytes()
    walk = SegmentWalk(buf, str(path))
    out = []
    for info in walk.batches():
        assert not info.is_control
        out += [decode_consumer_offsets(r.key, r.value) for r in batch_records(buf, info)]
    assert all(f.severity.value == "info" for f in walk.findings)  # compaction gaps only
    return out


def test_real_niloufar_consumer_offsets_6() -> None:
    path = REALDATA / "niloufar-ldi-kraft/__consumer_offsets-6/00000000000000000000.log"
    if not path.exists():
        pytest.skip("real data absent")
    decoded = _decode_log(path)
    assert len(decoded) == 13
    kinds = Counter(d["key"]["type"] for d in decoded)
    assert kinds == {"group_metadata": 6, "offset_commit": 7}
    assert {d["key"]["data"]["group"] for d in decoded} == {"DEVSmileCDR"}
    commits = [d for d in decoded if d["key"]["type"] == "offset_commit"]
    patient = [d["value"]["data"]["offset"] for d in commits
               if d["key"]["data"]["topic"] == "TestTopicPatient"]
    assert patient == [0, 1, 2, 3]  # the topic's log end offset is 3; last commit = 3
    first = decoded[0]["value"]
    assert first["version"] == 3 and first["data"]["protocolType"] == "consumer"
    assert first["data"]["protocol"] == "range"
    member = first["data"]["members"][0]
    assert member["clientId"].startswith("consumer-DEVSmileCDR-")
    assert member["subscription"]["version"] == 3 and member["subscription"]["topics"]
    assert isinstance(member["assignment"], dict)
    empty = decoded[4]["value"]["data"]
    assert empty["generation"] == 3 and empty["members"] == [] and empty["leader"] is None


def test_real_records_re_encode_byte_exact() -> None:
    paths = sorted(REALDATA.glob("*/**/__consumer_offsets-*/*.log")) if REALDATA.exists() else []
    if not paths:
        pytest.skip("real data absent")
    count = 0
    for path in paths:
        buf = path.read_bytes()
        for info in SegmentWalk(buf, str(path)).batches():
            for r in batch_records(buf, info):
                d = decode_consumer_offsets(r.key, r.value)
                assert encode_key(d["key"]["version"], d["key"]["data"]) == r.key
                if d["value"] is not None:
                    value = encode_value(d["key"]["version"], d["value"]["version"], d["value"]["data"])
                    assert value == r.value
                count += 1
    assert count > 6000


def test_real_zookeeper_era_consumer_offsets_all_decode() -> None:
    paths = sorted(REALDATA.glob("*/**/__consumer_offsets-*/*.log")) if REALDATA.exists() else []
    if not paths:
        pytest.skip("real data absent")
    versions = Counter()
    for path in paths:
        for d in _decode_log(path):
            versions[(d["key"]["type"], None if d["value"] is None else d["value"]["version"])] += 1
            assert "raw" not in d["key"] and (d["value"] is None or "raw" not in d["value"])
    # several value versions and tombstones of real groups
    assert versions[("offset_commit", 1)] > 0 and versions[("offset_commit", 3)] > 0
    assert versions[("group_metadata", None)] > 0


def test_4x_group_record_keys_decode() -> None:
    """Record types 16-23 of 4.4 (regular expressions, Streams groups): keys packed by hand (int16 type, int16-length
    strings); 18 and 24 are no 4.4 type and stay unknown."""
    def text(s: str) -> bytes:
        return struct.pack(">h", len(s)) + s.encode()
    regex = decode_consumer_offsets(struct.pack(">h", 16) + text("g") + text("orders-.*"), None)
    assert regex["key"] == {"type": "consumer_group_regular_expression", "version": 16,
                            "data": {"groupId": "g", "regularExpression": "orders-.*"}}, regex
    member = decode_consumer_offsets(struct.pack(">h", 22) + text("app") + text("m-1"), None)
    assert member["key"]["type"] == "streams_group_current_member_assignment", member
    assert member["key"]["data"] == {"groupId": "app", "memberId": "m-1"}, member
    topology = decode_consumer_offsets(struct.pack(">h", 23) + text("app"), b"\x00\x00\x01")
    assert topology["key"]["type"] == "streams_group_topology", topology
    assert topology["value"]["raw"] == "01", "a value too short for its schema stays raw"
    for unused in (18, 24):
        assert decode_consumer_offsets(struct.pack(">h", unused) + text("g"), None)["key"]["type"] == "unknown", unused
