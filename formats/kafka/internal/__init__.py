"""Decoders and encoders of Kafka's internal topics' record keys and values.

`consumer_offsets` (``__consumer_offsets``), `transaction_state`
(``__transaction_state``), `metadata` (``__cluster_metadata`` and KRaft
snapshots, plus KRaft control values), `share_group_state`
(``__share_group_state``) and `remote_log_metadata` (``__remote_log_metadata``):
what kafka-dump-log's ``--offsets-decoder``, ``--transaction-log-decoder``,
``--cluster-metadata-decoder``, ``--share-group-state-decoder`` and
``--remote-log-metadata-decoder`` show, as JSON-able dicts. All share the
schema DSL of `protocol`.
"""
from __future__ import annotations

from typing import Any

from replog.formats.kafka.internal.consumer_offsets import decode_consumer_offsets
from replog.formats.kafka.internal.metadata import decode_control_value, decode_metadata_record
from replog.formats.kafka.internal.remote_log_metadata import decode_remote_log_metadata
from replog.formats.kafka.internal.share_group_state import decode_share_group_state
from replog.formats.kafka.internal.transaction_state import decode_transaction_state

__all__ = ["decode_consumer_offsets", "decode_transaction_state", "decode_metadata_record",
           "decode_control_value", "decode_metadata_entry", "decode_share_group_state",
           "decode_remote_log_metadata"]


def decode_metadata_entry(key: bytes | None, value: bytes | None, is_control: bool) -> dict[str, Any] | None:
    """A `__cluster_metadata` record: a KRaft control value or a metadata record."""
    if is_control:
        from replog.formats.kafka.control import parse_control_key
        ctype = parse_control_key(key).type
        return None if value is None else decode_control_value(ctype, value)
    return None if value is None else decode_metadata_record(value)
