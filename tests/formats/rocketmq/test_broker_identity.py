"""A RocketMQ store's identity from `brokerIdentity` and `config/broker.properties`."""
from __future__ import annotations

from replog.formats.rocketmq.broker_identity import (
    StoreIdentity,
    parse_broker_identity,
    parse_properties,
    store_identity,
)

PROPERTIES = b"""# written by the broker
brokerClusterName = east
brokerName:broker-a
brokerId\t1
brokerRole=SLAVE
storePathRootDir=/data/rocketmq/store\\
    /east
namesrvAddr=10.0.0.1\\:9876;10.0.0.2\\:9876
motto=caf\\u00e9 \\
  au lait
"""


def test_java_properties() -> None:
    props = parse_properties(PROPERTIES)
    assert props["brokerClusterName"] == "east" and props["brokerName"] == "broker-a"
    assert props["brokerId"] == "1" and props["brokerRole"] == "SLAVE"
    assert props["storePathRootDir"] == "/data/rocketmq/store/east"
    assert props["namesrvAddr"] == "10.0.0.1:9876;10.0.0.2:9876"
    assert props["motto"] == "café au lait"


def test_identity_file_wins_and_role_follows_the_id() -> None:
    assert parse_broker_identity(b"east#broker-a#0") == StoreIdentity("east", "broker-a", 0)
    assert parse_broker_identity(b"east#broker-a") is None and parse_broker_identity(b"e#b#x") is None
    both = store_identity(b"west#broker-b#2", b"brokerName=broker-a\nbrokerId=0\n")
    assert (both.cluster, both.broker_name, both.broker_id, both.role) == ("west", "broker-b", 2, "slave")
    master = store_identity(None, b"brokerName=broker-a\nbrokerId=0\n")
    assert (master.cluster, master.role) == ("DefaultCluster", "master")   # the broker's defaults
    assert store_identity(None, PROPERTIES).role == "slave"
    assert store_identity(None, b"brokerRole=SYNC_MASTER\nbrokerName=x\nbrokerId=3").role == "master"
    assert store_identity(None, b"# nothing\n") is None and store_identity(None, None) is None
