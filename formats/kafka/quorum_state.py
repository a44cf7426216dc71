"""KRaft `quorum-state` (`__cluster_metadata-0/quorum-state`): the election state.

One JSON object: the fields of `QuorumStateData` (camelCase, as Kafka's JSON
converter writes them) plus `data_version` added by `FileQuorumStateStore`.
Version 0 carries clusterId, appliedOffset and currentVoters; later versions
may drop them and add votedDirectoryId, so every field but the election
triple is optional. Unknown keys are kept so a rewrite loses nothing.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from replog.formats.errors import FormatError

CODE = "KAFKA_QUORUM_STATE_INVALID"
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
_MISSING = object()


@dataclass(frozen=True)
class QuorumState:
    data_version: int
    leader_id: int = -1
    leader_epoch: int = -1
    voted_id: int = -1
    applied_offset: int | None = None
    current_voters: tuple[int, ...] | None = None
    cluster_id: str | None = None
    voted_directory_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # keys this module does not know


_INT_FIELDS = (("leaderId", "leader_id", _INT32), ("leaderEpoch", "leader_epoch", _INT32),
               ("votedId", "voted_id", _INT32))


def _int(obj: dict[str, Any], key: str, bounds: tuple[int, int], default: Any) -> Any:
    value = obj.get(key, _MISSING)
    if value is _MISSING:
        return default
    if type(value) is not int or not bounds[0] <= value <= bounds[1]:
        raise FormatError(CODE, f"{key} must be an integer in range, got {str(value)[:40]!r}")
    return value


def _voters(obj: dict[str, Any]) -> tuple[int, ...] | None:
    raw = obj.get("currentVoters")
    if raw is None:
        return None
    if not isinstance(raw, list) or not all(isinstance(v, dict) for v in raw):
        raise FormatError(CODE, "currentVoters must be a list of {\"voterId\": n}")
    return tuple(_int(v, "voterId", _INT32, None) for v in raw)


def _str(obj: dict[str, Any], key: str) -> str | None:
    value = obj.get(key)
    if value is not None and not isinstance(value, str):
        raise FormatError(CODE, f"{key} must be a string")
    return value


def parse_quorum_state(data: bytes) -> QuorumState:
    """The quorum state of a KRaft metadata log dir; `FormatError` on any defect."""
    try:
        obj = json.loads(bytes(data).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise FormatError(CODE, f"not a JSON document: {e}", position=getattr(e, "pos", None)) from None
    if not isinstance(obj, dict):
        raise FormatError(CODE, "quorum-state must be a JSON object")
    data_version = _int(obj, "data_version", _INT32, None)
    if data_version is None or data_version < 0:
        raise FormatError(CODE, "data_version missing or negative")
    ints = {attr: _int(obj, key, bounds, -1) for key, attr, bounds in _INT_FIELDS}
    known = {"data_version", "leaderId", "leaderEpoch", "votedId", "appliedOffset",
             "currentVoters", "clusterId", "votedDirectoryId"}
    return QuorumState(data_version, **ints,
                       applied_offset=_int(obj, "appliedOffset", _INT64, None),
                       current_voters=_voters(obj), cluster_id=_str(obj, "clusterId"),
                       voted_directory_id=_str(obj, "votedDirectoryId"),
                       extra={k: v for k, v in obj.items() if k not in known})


def build_quorum_state(state: QuorumState) -> bytes:
    """Compact JSON in Kafka's field order; absent optional fields are left out."""
    obj: dict[str, Any] = {}
    if state.cluster_id is not None:
        obj["clusterId"] = state.cluster_id
    obj.update(leaderId=state.leader_id, leaderEpoch=state.leader_epoch, votedId=state.voted_id)
    if state.voted_directory_id is not None:
        obj["votedDirectoryId"] = state.voted_directory_id
    if state.applied_offset is not None:
        obj["appliedOffset"] = state.applied_offset
    if state.current_voters is not None:
        obj["currentVoters"] = [{"voterId": v} for v in state.current_voters]
    obj.update(state.extra)
    obj["data_version"] = state.data_version
    return json.dumps(obj, separators=(",", ":")).encode("utf-8")
