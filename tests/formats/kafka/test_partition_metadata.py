from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replog.formats.errors import FormatError
from replog.formats.kafka import partition_metadata as pm
from tests.mutate import rejected_mutations
from tests.realdata import real_files


@given(st.integers(0, 2**31 - 1), st.uuids(version=None).filter(lambda u: u.int != 0))
def test_round_trip(version, u):
    meta = pm.PartitionMetadata(version, pm.uuid_to_topic_id(u))
    data = pm.build_partition_metadata(meta)
    assert not data.endswith(b"\n")
    parsed = pm.parse_partition_metadata(data)
    assert parsed == meta and parsed.topic_id_uuid == u


def test_metadata_topic_id():
    meta = pm.parse_partition_metadata(b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ")
    assert meta.topic_id_uuid == uuid.UUID(int=1)
    assert pm.parse_partition_metadata(b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\n") == meta


@pytest.mark.parametrize("data, position", [
    (b"", 0), (b"version: 0", 10), (b"version:0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ", 0),
    (b"version: -1\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ", 0),
    (b"version: x\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ", 0),
    (b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", 11),   # all-zero UUID
    (b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAA", 11),    # 21 chars
    (b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAB", 11),   # stray low bits
    (b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAA+Q", 11),   # not base64url
    (b"version: 0\ntopicid: AAAAAAAAAAAAAAAAAAAAAQ", 11),
    (b"version: 0\n\xff", 11),
])
def test_defects(data, position):
    with pytest.raises(FormatError) as e:
        pm.parse_partition_metadata(data)
    assert e.value.code == "KAFKA_PARTITION_METADATA_INVALID"
    assert e.value.position == position


def test_builder_rejects_zero_uuid():
    with pytest.raises(ValueError):
        pm.build_partition_metadata(pm.PartitionMetadata(0, "AAAAAAAAAAAAAAAAAAAAAA"))


def test_mutations_only_raise_format_error():
    good = b"version: 0\ntopic_id: 3tZY1iwAzpFlSVBhblXsrQ"
    assert rejected_mutations(pm.parse_partition_metadata, good, seed=1, rounds=300, flips=3) > 0


def test_real_files():
    files = real_files("**/partition.metadata")
    for path in files:
        data = path.read_bytes()
        assert pm.build_partition_metadata(pm.parse_partition_metadata(data)) == data, path
