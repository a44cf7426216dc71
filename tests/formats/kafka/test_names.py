from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replog.formats.kafka import names as nm
from tests.realdata import REALDATA

TOPICS = st.text("abcXYZ019._-", min_size=1, max_size=40).filter(nm.is_valid_topic_name)


def test_segment_file_name():
    assert nm.segment_file_name(368769, "log") == "00000000000000368769.log"
    assert nm.segment_file_name(0, ".index") == "00000000000000000000.index"
    with pytest.raises(ValueError):
        nm.segment_file_name(-1, "log")


@given(st.integers(0, 2**63 - 1), st.sampled_from(nm.SEGMENT_KINDS),
       st.sampled_from((None, *nm.TRANSIENT_SUFFIXES)))
def test_segment_round_trip(base, kind, transient):
    name = nm.segment_file_name(base, kind) + (f".{transient}" if transient else "")
    assert nm.parse_segment_file_name(name) == (base, kind, transient)


@pytest.mark.parametrize("name", [
    "0.log", "000000000000000000001.log", "00000000000000000000.logx", "00000000000000000000.log.tmp",
    "leader-epoch-checkpoint", "99999999999999999999.log", "00000000000000000000.checkpoint",
    "0000000000000000000a.log", "00000000000000000000.index.deleted.swap",
])
def test_not_segment_names(name):
    assert nm.parse_segment_file_name(name) is None


def test_segment_like():
    assert nm.is_segment_like("123.log") and not nm.is_segment_like("00000000000000000123.log")
    assert not nm.is_segment_like("meta.properties")


@given(st.integers(0, 2**63 - 1), st.integers(0, 2**31 - 1))
def test_kraft_snapshot_round_trip(end_offset, epoch):
    name = nm.kraft_snapshot_file_name(end_offset, epoch)
    assert nm.parse_kraft_snapshot_name(name) == (end_offset, epoch, "complete")
    assert nm.parse_kraft_snapshot_name(name + ".part").state == "partial"
    assert nm.parse_kraft_snapshot_name(name + ".deleted").state == "deleted"


def test_kraft_snapshot_names():
    assert nm.parse_kraft_snapshot_name("00000000000000000712-0000000006.checkpoint") == (712, 6, "complete")
    assert nm.parse_kraft_snapshot_name("bootstrap.checkpoint") is None
    assert nm.parse_kraft_snapshot_name("00000000000000000712-6.checkpoint") is None


@given(TOPICS, st.integers(0, 2**31 - 1), st.sampled_from(("live", "delete", "future", "stray")))
def test_partition_dir_round_trip(topic, partition, state):
    uuid = None if state == "live" else "0123456789abcdef0123456789abcdef"
    name = nm.partition_dir_name(topic, partition, state, uuid)
    assert nm.parse_partition_dir(name) == (topic, partition, state, uuid)


@pytest.mark.parametrize("name, expected", [
    ("orders-0", ("orders", 0, "live", None)),
    ("my-topic-12", ("my-topic", 12, "live", None)),
    ("__consumer_offsets-49", ("__consumer_offsets", 49, "live", None)),
    ("t.x-3.abcdef-delete", ("t.x", 3, "delete", "abcdef")),
    ("foo-1.0123456789abcdef0123456789abcdef-future", ("foo", 1, "future", "0123456789abcdef0123456789abcdef")),
    ("foo-+1", ("foo", 1, "live", None)),  # Integer.parseInt accepts a sign
    ("foo", None), ("", None), ("-1", None), ("foo-", None), ("foo-x", None), ("foo-1-delete", None),
    ("foo-2147483648", None), ("foo-1.-delete", None),
])
def test_partition_dir_broker_rules(name, expected):
    assert nm.parse_partition_dir(name) == expected


def test_topic_validation():
    assert nm.is_valid_topic_name("a.b_c-D9")
    for bad in ("", ".", "..", "../x", "a/b", "a b", "x" * 250, "é"):
        assert not nm.is_valid_topic_name(bad)


def test_checkpoint_names():
    assert nm.is_checkpoint_name("leader-epoch-checkpoint") and not nm.is_checkpoint_name("bootstrap.checkpoint")
    assert nm.is_checkpoint_tmp_name("replication-offset-checkpoint.tmp")
    assert {nm.META_PROPERTIES, nm.CLEAN_SHUTDOWN, nm.LOCK_FILE, nm.BOOTSTRAP_CHECKPOINT} == nm.ROOT_FILE_NAMES


def test_real_names():
    if not REALDATA.is_dir():
        pytest.skip("no real data")
    for path in REALDATA.glob("**/*"):
        if path.suffix in (".log", ".index", ".timeindex", ".snapshot") and "rocketmq" not in str(path):
            parsed = nm.parse_segment_file_name(path.name)
            assert parsed is not None and nm.segment_file_name(parsed.base_offset, parsed.kind) == path.name
        if path.is_dir() and path.parent.name.startswith("kafka-logs"):
            assert nm.parse_partition_dir(path.name) is not None, path
    assert nm.parse_partition_dir("__consumer_offsets-6") == ("__consumer_offsets", 6, "live", None)
