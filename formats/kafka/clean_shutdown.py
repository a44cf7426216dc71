"""`.kafka_cleanshutdown` (reference §8.8): the clean-shutdown marker of a log dir.

Its presence is what matters (no recovery of segments above the recovery
point). Kafka <= 3.5 wrote an empty file; >= 3.6 writes
`{"version":0,"brokerEpoch":N}` (KIP-966).
"""
from __future__ import annotations

import json
from typing import NamedTuple

from replog.formats.errors import FormatError

CODE = "KAFKA_CLEAN_SHUTDOWN_INVALID"
CURRENT_VERSION = 0


class CleanShutdown(NamedTuple):
    version: int | None        # None: the legacy empty marker
    broker_epoch: int | None


def parse_clean_shutdown(data: bytes) -> CleanShutdown:
    """Marker contents; `FormatError` when neither empty nor the KIP-966 JSON."""
    raw = bytes(data)
    if not raw:
        return CleanShutdown(None, None)
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise FormatError(CODE, f"not a JSON document: {e}", position=getattr(e, "pos", None)) from None
    if not isinstance(obj, dict):
        raise FormatError(CODE, "clean shutdown marker must be a JSON object")
    version, epoch = obj.get("version", 0), obj.get("brokerEpoch")
    if type(version) is not int or type(epoch) is not int or not -(2**63) <= epoch < 2**63:
        raise FormatError(CODE, "version and brokerEpoch must be integers")
    return CleanShutdown(version, epoch)


def build_clean_shutdown(marker: CleanShutdown) -> bytes:
    """Empty for the legacy marker, else Jackson's compact JSON."""
    if marker.broker_epoch is None:
        return b""
    version = CURRENT_VERSION if marker.version is None else marker.version
    return json.dumps({"version": version, "brokerEpoch": marker.broker_epoch},
                      separators=(",", ":")).encode("utf-8")
