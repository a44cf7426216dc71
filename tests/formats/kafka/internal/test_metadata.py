"""KRaft metadata record and control value decoders/encoders, on generated records and real metadata logs."""
from __future__ import annotations

import json
import struct
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replog.formats.errors import FormatError
from replog.formats.kafka.internal.metadata import (
    CONTROL_VALUES,
    METADATA_RECORDS,
    decode_control_value,
    decode_metadata_record,
    encode_config_record,
    encode_control_value,
    encode_feature_level_record,
    encode_metadata_record,
    encode_partition_change_record,
    encode_partition_record,
    encode_register_broker_record,
    encode_topic_record,
)
from replog.formats.kafka.internal.protocol import parse_versions
from replog.formats.kafka.segment import SegmentWalk, batch_records
from tests.formats.kafka.internal.test_protocol import message_values
from tests.mutate import damage
from tests.realdata import REALDATA

TOPIC_ID = "gSnfpEbtQfSDpxM2lhEn9A"


@st.composite
def metadata_records(draw) -> tuple[int, int, dict]:
    api_key = draw(st.sampled_from(sorted(METADATA_RECORDS)))
    low, high = parse_versions(METADATA_RECORDS[api_key].valid)
    version = draw(st.integers(low, high))
    return api_key, version, draw(message_values(METADATA_RECORDS[api_key], version))


@settings(max_examples=300, deadline=None)
@given(metadata_records())
def test_round_trip(record: tuple[int, int, dict]) -> None:
    api_key, version, data = record
    decoded = decode_metadata_record(encode_metadata_record(api_key, data, version))
    assert decoded == {"type": METADATA_RECORDS[api_key].name, "version": version, "data": data}
    json.dumps(decoded)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(sorted(CONTROL_VALUES)).flatmap(
    lambda t: st.tuples(st.just(t), message_values(CONTROL_VALUES[t], 0))))
def test_control_round_trip(control: tuple[int, dict]) -> None:
    control_type, data = control
    decoded = decode_control_value(control_type, encode_control_value(control_type, data))
    assert decoded == {"type": CONTROL_VALUES[control_type].name, "version": data["version"], "data": data}


@settings(max_examples=400, deadline=None)
@given(metadata_records(), st.data())
def test_mutations_raise_only_format_error(record: tuple[int, int, dict], data) -> None:
    buf = bytearray(encode_metadata_record(record[0], record[2], record[1]))
    damage(buf, data)
    try:
        json.dumps(decode_metadata_record(bytes(buf)))
    except FormatError as exc:
        assert exc.code == "KAFKA_RECORDS_UNDECODABLE"


def test_topic_record_bytes() -> None:
    raw = encode_topic_record("t", TOPIC_ID)
    # frame 1, type 2, version 0, compact "t", 16-byte uuid, no tagged fields
    assert raw[:5] == b"\x01\x02\x00\x02t" and len(raw) == 5 + 16 + 1 and raw[-1] == 0
    assert decode_metadata_record(raw) == {"type": "TopicRecord", "version": 0,
                                           "data": {"name": "t", "topicId": TOPIC_ID}}


def test_helpers_and_tagged_defaults() -> None:
    assert decode_metadata_record(encode_feature_level_record("metadata.version", 19))["data"] == {
        "name": "metadata.version", "featureLevel": 19}
    assert decode_metadata_record(encode_config_record(2, "t", "cleanup.policy", None))["data"]["value"] is None
    change = decode_metadata_record(encode_partition_change_record({"partitionId": 3, "topicId": TOPIC_ID,
                                                                    "leader": 1}))["data"]
    assert change["leader"] == 1 and change["isr"] is None and change["leaderRecoveryState"] == -1
    part = decode_metadata_record(encode_partition_record({"topicId": TOPIC_ID, "replicas": [1]}, 2))
    assert part["data"]["eligibleLeaderReplicas"] is None and part["data"]["leaderRecoveryState"] == 0
    broker = decode_metadata_record(encode_register_broker_record({"brokerId": 7, "logDirs": [TOPIC_ID]}, 3))
    assert broker["data"]["fenced"] is True and broker["data"]["logDirs"] == [TOPIC_ID]


def test_unknown_type_or_version_is_raw() -> None:
    assert decode_metadata_record(b"\x01\x63\x00\xab") == {"type": 99, "version": 0, "raw": "ab"}
    assert decode_metadata_record(b"\x01\x02\x05\xcd") == {"type": "TopicRecord", "version": 5, "raw": "cd"}
    assert decode_control_value(9, b"\x01") == {"type": 9, "raw": "01"}


@pytest.mark.parametrize("raw, why", [
    (b"\x00\x02\x00", "frame version 0 (KRaft 2.8 preview)"),
    (b"\x02\x02\x00", "unknown frame version"),
    (b"\x01\xff\xff\x03\x00", "type above int16"),
    (b"\x01", "truncated header"),
    (encode_feature_level_record("x", 1) + b"\x00", "garbage after the record"),
])
def test_bad_frames(raw: bytes, why: str) -> None:
    with pytest.raises(FormatError):
        decode_metadata_record(raw)


# --- real broker files --------------------------------------------------------------

def _decode_file(path: Path) -> list[tuple[int, dict]]:
    """(leader epoch, decoded) per record, control values decoded by their key's type."""
    if not path.exists():
        pytest.skip("real data absent")
    buf = path.read_bytes()
    walk = SegmentWalk(buf, str(path))
    out = []
    for info in walk.batches():
        for r in batch_records(buf, info):
            if info.is_control:
                decoded = decode_control_value(struct.unpack(">hh", r.key)[1], r.value)
            else:
                decoded = decode_metadata_record(r.value)
            assert "raw" not in decoded
            out.append((info.partition_leader_epoch, decoded))
    assert not walk.findings
    return out


def test_real_niloufar_cluster_metadata() -> None:
    records = _decode_file(REALDATA / "niloufar-ldi-kraft/__cluster_metadata-0/00000000000000000000.log")
    types = Counter(d["type"] for _, d in records)
    assert len(records) == 4929
    assert types == {"NoOpRecord": 4801, "PartitionRecord": 54, "PartitionChangeRecord": 54, "TopicRecord": 5,
                     "ConfigRecord": 3, "BrokerRegistrationChangeRecord": 3, "RegisterBrokerRecord": 2,
                     "LeaderChangeMessage": 1, "BeginTransactionRecord": 1, "FeatureLevelRecord": 1,
                     "ZkMigrationStateRecord": 1, "EndTransactionRecord": 1, "RegisterControllerRecord": 1,
                     "ProducerIdsRecord": 1}
    topics = {d["data"]["name"]: d["data"]["topicId"] for _, d in records if d["type"] == "TopicRecord"}
    # the same ids are in the partitions' partition.metadata files
    assert topics["__consumer_offsets"] == "gSnfpEbtQfSDpxM2lhEn9A"
    assert topics["TestTopicPatient"] == "B3_HiNPgSQ6oxG9ZZ6ED5A"
    # 54 partitions = the 54 entries of replication-offset-checkpoint; all on meta.properties' directory.id
    partitions = [d["data"] for _, d in records if d["type"] == "PartitionRecord"]
    assert len({(p["topicId"], p["partitionId"]) for p in partitions}) == 54
    assert {tuple(p["directories"]) for p in partitions} == {("XHhkr4tkSsD900pOQ8pPfg",)}
    feature = next(d for _, d in records if d["type"] == "FeatureLevelRecord")
    assert feature["data"] == {"name": "metadata.version", "featureLevel": 19}


def test_real_jeongrae_leader_changes_match_epochs() -> None:
    records = _decode_file(REALDATA / "jeongrae-kraft/c441d190/__cluster_metadata-0/00000000000000000000.log")
    assert len(records) == 3072
    changes = [(epoch, d["data"]["leaderId"]) for epoch, d in records if d["type"] == "LeaderChangeMessage"]
    assert changes == [(1, 1), (2, 1), (3, 1), (5, 1), (6, 1)]  # = leader-epoch-checkpoint, epoch 4 absent


@pytest.mark.parametrize("set_name, level", [("jeongrae-kraft/c441d190", 14), ("niloufar-ldi-kraft", 19)])
def test_real_bootstrap_checkpoint(set_name: str, level: int) -> None:
    records = [d for _, d in _decode_file(REALDATA / set_name / "bootstrap.checkpoint")]
    assert [d["type"] for d in records] == ["SnapshotHeaderRecord", "FeatureLevelRecord", "SnapshotFooterRecord"]
    assert records[1]["data"] == {"name": "metadata.version", "featureLevel": level}
    assert records[0]["data"]["version"] == 0


def test_real_records_re_encode_byte_exact() -> None:
    path = REALDATA / "niloufar-ldi-kraft/__cluster_metadata-0/00000000000000000000.log"
    if not path.exists():
        pytest.skip("real data absent")
    buf = path.read_bytes()
    seen = set()
    for info in SegmentWalk(buf, str(path)).batches():
        for r in batch_records(buf, info):
            if info.is_control:
                continue
            d = decode_metadata_record(r.value)
            if d["type"] not in seen:
                seen.add(d["type"])
                assert encode_metadata_record(d["type"], d["data"], d["version"]) == r.value
    assert len(seen) == 13


def test_json_data_is_kafkas_json_converter_view() -> None:
    """kafka-dump-log's --cluster-metadata-decoder JSON (measured against Kafka 3.9-4.4 by the broker lab): a tagged
    field at its default is left out, one set is kept, bytes are Base64."""
    from replog.formats.kafka.internal.metadata import decode_metadata_record, encode_metadata_record, json_data
    topic = "q1ReQqTpRxWGx3_gK4yH2A"
    change = decode_metadata_record(encode_metadata_record(
        "PartitionChangeRecord", {"partitionId": 0, "topicId": topic, "isr": [1], "leader": 1}))
    assert json_data(change) == {"partitionId": 0, "topicId": topic, "isr": [1], "leader": 1}
    scram = decode_metadata_record(encode_metadata_record("UserScramCredentialRecord", {
        "name": "a", "mechanism": 1, "salt": "0102ff", "storedKey": "", "serverKey": "aa", "iterations": 1}))
    assert json_data(scram) == {"name": "a", "mechanism": 1, "salt": "AQL/", "storedKey": "", "serverKey": "qg==",
                                "iterations": 1}
