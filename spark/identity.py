"""Who a log dir or store is: its cluster, node and role, read from the files the broker writes there.

Kafka: `meta.properties` (`cluster.id`, and `node.id` or `broker.id`; docs/reference/kafka.md §8.7, the broker's
`MetaProperties.java`). RocketMQ: `brokerIdentity` or `config/broker.properties`
(`formats.rocketmq.broker_identity`).

A fleet forms replica sets within one cluster only, so every log dir gets a `cluster` key: its
cluster id when its files name one. A dir whose files do not (a ZooKeeper-era broker before
`cluster.id` existed, a copy without its meta.properties, a store without its config) is grouped
with the dirs named by the same inventory line, or held by the same folder, and flagged
`no-cluster-id`: the key then says which group stands in for the cluster.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from replog.formats.errors import FormatError, UnreadableInput
from replog.formats.fileio import is_regular, read_small
from replog.formats.kafka import names
from replog.formats.kafka.meta_properties import parse_meta_properties
from replog.formats.rocketmq import broker_identity
from replog.recovery.naming import broker_name
from replog.spark import remote

NO_CLUSTER_ID = "no-cluster-id"
SMALL = 1 << 20


@dataclass(frozen=True)
class Identity:
    cluster_id: str | None = None
    node_id: int | None = None        # Kafka node.id / broker.id, RocketMQ brokerId
    broker_name: str | None = None    # RocketMQ brokerName
    role: str | None = None           # RocketMQ: master | slave

    def default_broker(self, kind: str, folder: str) -> str:
        """The broker's name when no inventory line gives one: `broker-<node.id>` for Kafka
        (`naming.broker_name`), `<brokerName>:<brokerId>` for a store, else the folder's name."""
        if kind == "rocketmq":
            if self.broker_name is None:
                return folder
            return self.broker_name if self.node_id is None else f"{self.broker_name}:{self.node_id}"
        return broker_name(self.node_id, folder)

    def cluster(self, group: str) -> str:
        """The key replica sets are formed within: the cluster id, else `group` (what stands in for it)."""
        return self.cluster_id if self.cluster_id else group

    @property
    def flags(self) -> tuple[str, ...]:
        return () if self.cluster_id else (NO_CLUSTER_ID,)


def read_identity(kind: str, path: str, fs: Any = None) -> Identity:
    """The identity of a Kafka log dir (`kind` "kafka") or a RocketMQ store, local or behind `fs`;
    unreadable or malformed files give an identity without what they would have said."""
    if kind == "rocketmq":
        found = broker_identity.store_identity(_read(fs, path, broker_identity.IDENTITY_FILE),
                                               _read(fs, path, broker_identity.PROPERTIES_FILE))
        if found is None:
            return Identity()
        return Identity(found.cluster, found.broker_id, found.broker_name, found.role)
    data = _read(fs, path, names.META_PROPERTIES)
    if data is None:
        return Identity()
    try:
        meta = parse_meta_properties(data)
    except FormatError:
        return Identity()
    return Identity(meta.cluster_id or None, meta.node_id)


def _read(fs: Any, root: str, name: str) -> bytes | None:
    """A small file of a dir, or None when it is absent or cannot be read."""
    try:
        if fs is not None:
            return remote.read_small(fs, remote.join(root, name), SMALL)
        path = Path(root) / name
        return read_small(path, SMALL) if is_regular(path) else None
    except UnreadableInput:
        return None
