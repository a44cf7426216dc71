"""Which broker a RocketMQ store belongs to: cluster, broker name, broker id and role.

Two files in a store may say so:
- `brokerIdentity` at the store root, written in controller mode
  (`store/.../ha/autoswitch/BrokerMetadata.java`, path from
  `MessageStoreConfig.getStorePathBrokerIdentity`): `clusterName#brokerName#brokerId` (docs/reference/rocketmq.md §6.4).
- `config/broker.properties`: the broker's configuration as `Configuration.persist` writes it, Java
  properties text. Its default path (`broker/.../BrokerPathConfigHelper.java`, `~/store/config/
  broker.properties`) is under the default store root; keys `brokerClusterName`, `brokerName`,
  `brokerId` (`common/.../BrokerIdentity.java`) and `brokerRole` (`store/.../config/MessageStoreConfig.java`).
`brokerIdentity` wins where both name a field (in controller mode the controller assigns the id).
A properties file without `brokerClusterName` means the broker ran in `DefaultCluster`, its default
(`BrokerIdentity.DEFAULT_CLUSTER_NAME`); `Configuration.persist` (remoting/.../Configuration.java)
writes every field, defaults included.
The role is `brokerRole` (ASYNC_MASTER, SYNC_MASTER, SLAVE) when given, else the broker id's:
0 is the master (`MixAll.MASTER_ID`), any other id a slave.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

IDENTITY_FILE = "brokerIdentity"
PROPERTIES_FILE = "config/broker.properties"
MASTER_ID = 0
DEFAULT_CLUSTER = "DefaultCluster"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_SEPARATOR = re.compile(r"(?<!\\)(?:\s*[=:]\s*|\s+)")


@dataclass(frozen=True)
class StoreIdentity:
    cluster: str | None = None
    broker_name: str | None = None
    broker_id: int | None = None
    broker_role: str | None = None   # as configured, when it is

    @property
    def role(self) -> str | None:
        """"master" or "slave" (None when neither a role nor an id is known)."""
        if self.broker_role:
            return "slave" if self.broker_role.upper() == "SLAVE" else "master"
        if self.broker_id is None:
            return None
        return "master" if self.broker_id == MASTER_ID else "slave"


def parse_broker_identity(data: bytes) -> StoreIdentity | None:
    """`clusterName#brokerName#brokerId` (`BrokerMetadata.decodeFromStr`); None when it does not parse."""
    parts = data.decode("utf-8", "replace").strip().split("#")
    if len(parts) < 3 or not parts[0] or not parts[1]:
        return None
    try:
        broker_id = int(parts[2])
    except ValueError:
        return None
    return StoreIdentity(parts[0], parts[1], broker_id)


def parse_properties(data: bytes) -> dict[str, str]:
    """Java properties text (`java.util.Properties.load`): `#`/`!` comments, `=`, `:` or blanks between
    key and value, a trailing backslash continues a line, backslash escapes (`\\t`, `\\uXXXX`, ...)."""
    out: dict[str, str] = {}
    lines = data.decode("latin-1").splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].lstrip()
        i += 1
        if not line or line[0] in "#!":
            continue
        while _continued(line) and i < len(lines):
            line = line[:-1] + lines[i].lstrip()
            i += 1
        parts = _SEPARATOR.split(line, maxsplit=1)
        out[_unescape(parts[0])] = _unescape(parts[1]) if len(parts) > 1 else ""
    return out


def _continued(line: str) -> bool:
    """An odd number of trailing backslashes continues the line."""
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2:i + 6]):
                out.append(chr(int(text[i + 2:i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def store_identity(identity_file: bytes | None, properties: bytes | None) -> StoreIdentity | None:
    """The store's identity from whichever of the two files exist (None when neither names a broker)."""
    props = parse_properties(properties) if properties is not None else {}
    ident = parse_broker_identity(identity_file) if identity_file is not None else None
    broker_id: int | None = None
    try:
        broker_id = int(props["brokerId"]) if "brokerId" in props else None
    except ValueError:
        broker_id = None
    merged = StoreIdentity(
        cluster=ident.cluster if ident else props.get("brokerClusterName", DEFAULT_CLUSTER),
        broker_name=ident.broker_name if ident else props.get("brokerName"),
        broker_id=ident.broker_id if ident else broker_id,
        broker_role=props.get("brokerRole"))
    return merged if merged.broker_name else None
