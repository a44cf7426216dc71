"""The contract's `batch` and `record` entries of `dump` (docs/CLI-CONTRACT.md), and the options that shape them.

One function builds each entry from plain values, so the reference walk (a
`BatchInfo` and a `Record` per batch and record) and the columnar walk (rows of
a `BatchBlock`, record columns) give the same dicts by construction.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from replog.formats.errors import FormatError
from replog.formats.findings import Finding
from replog.formats.kafka import batch as v2
from replog.formats.kafka import codecs, control
from replog.formats.kafka.segment import BatchInfo
from replog.toolkit.decoders import render_bytes
from replog.toolkit.documents import JsonObject

Entry = JsonObject
"""A `dump` entry of any kind: its members depend on the kind (and a record's on its decoder); the kinds the
terminal reads member by member are declared in `documents` (`BatchEntry`, `RecordEntry`, ...)."""
Progress = Callable[[int, int], None]  # (done bytes, total bytes)


@dataclass(frozen=True)
class DumpOptions:
    deep: bool = False
    print_data: bool = False
    key_decoder: str = "utf8"
    value_decoder: str = "utf8"
    offsets_decoder: bool = False
    txn_decoder: bool = False
    metadata_decoder: bool = False
    share_state_decoder: bool = False
    share_state_release: str = "4.4"  # whose `__share_group_state` value schemas (share_group_state.VALUES)
    remote_log_metadata_decoder: bool = False
    from_offset: int | None = None
    to_offset: int | None = None
    max_bytes: int | None = None
    verify_index_only: bool = False
    index_sanity_check: bool = False

    @property
    def records(self) -> bool:
        """Record-level output: asked for directly or implied by a data option."""
        return self.deep or self.print_data or self.internal

    @property
    def internal(self) -> bool:
        """An internal-topic decoder is asked for."""
        return (self.offsets_decoder or self.txn_decoder or self.metadata_decoder or self.share_state_decoder
                or self.remote_log_metadata_decoder)


def finding_entry(f: Finding) -> Entry:
    return {"kind": "finding", **f.to_dict()}


# --- batches ------------------------------------------------------------------------


def batch_entry(path: str, b: BatchInfo) -> Entry:
    """The contract's `batch` entry for one batch."""
    return _batch(path, *b)


def batch_row_entry(path: str, row: Sequence[int]) -> Entry:
    """`batch_entry` of one row of a `BatchBlock`'s columns (`block.cols.T.tolist()`): no `BatchInfo` made."""
    return _batch(path, *row)


def _batch(path: str, position: int, size: int, magic: int, base_offset: int, last_offset: int, count: int,
           partition_leader_epoch: int, crc: int, crc_valid: int, _attributes: int, codec: int,
           timestamp_type: int, first_timestamp: int, max_timestamp: int, producer_id: int, producer_epoch: int,
           base_sequence: int, is_transactional: int, is_control: int, has_delete_horizon: int) -> Entry:
    """A `batch` entry from `BatchInfo`'s fields in their order (flags as bools or 0/1)."""
    last_sequence = (v2.increment_sequence(base_sequence, last_offset - base_offset)
                     if base_sequence >= 0 else -1)
    return {
        "kind": "batch", "path": path, "position": position, "base_offset": base_offset,
        "last_offset": last_offset, "count": count, "partition_leader_epoch": partition_leader_epoch,
        "magic": magic, "codec": codecs.CODEC_NAMES.get(codec, f"unknown({codec})"),
        "crc": crc, "crc_valid": bool(crc_valid), "size": size,
        "first_timestamp": first_timestamp, "max_timestamp": max_timestamp,
        "timestamp_type": v2.TIMESTAMP_TYPE_NAMES[timestamp_type],
        "producer_id": producer_id, "producer_epoch": producer_epoch,
        "base_sequence": base_sequence, "last_sequence": last_sequence,
        "is_transactional": bool(is_transactional), "is_control": bool(is_control),
        "delete_horizon_ms": first_timestamp if has_delete_horizon else None,
    }


# --- records ------------------------------------------------------------------------


def record_entry(path: str, batch: BatchInfo, offset: int, timestamp: int, sequence: int, key: bytes | None,
                 value: bytes | None, headers: Iterable[tuple[str, bytes | None]], opts: DumpOptions,
                 crc: tuple[int, bool] | None = None) -> Entry:
    """The contract's `record` entry of a record of `batch` (a walk's `BatchInfo`, or a block's row of it:
    `BatchBlock.row`); internal-topic decoders replace key/value with their JSON. A v0/v1
    message's own `crc` (and whether it checks) is kept: inside a compressed wrapper it is not the batch's."""
    entry: Entry = {
        "kind": "record", "path": path, "offset": offset, "position": batch.position,
        "timestamp": timestamp, "timestamp_type": v2.TIMESTAMP_TYPE_NAMES[batch.timestamp_type],
        "key_size": -1 if key is None else len(key),
        "value_size": -1 if value is None else len(value),
        "sequence": sequence, "is_control": batch.is_control,
        "key": render_bytes(key, opts.key_decoder),
        "value": render_bytes(value, opts.value_decoder),
        "headers": [{"key": k, "value": render_bytes(v, opts.value_decoder)} for k, v in headers],
    }
    if crc is not None:
        entry["crc"], entry["crc_valid"] = crc
    if batch.is_control:
        entry.update(_control_fields(key, value))
    if not opts.internal:
        return entry
    decoded = _decode_internal(key, value, batch.is_control, opts)
    if isinstance(decoded, dict) and decoded.keys() == {"key", "value"}:
        entry["key"], entry["value"] = decoded["key"], decoded["value"]  # offsets / transaction / share decoders
    elif decoded is not None:
        entry["value"] = decoded  # a metadata record, KRaft control value or remote log metadata record
    return entry


def _control_fields(key: bytes | None, value: bytes | None) -> Entry:
    try:
        parsed = control.parse_control_key(key)
        out: Entry = {"control_type": parsed.name}
        if parsed.type in (control.ABORT, control.COMMIT):
            out["coordinator_epoch"] = control.parse_end_txn_marker(value).coordinator_epoch
        elif parsed.type in _KRAFT_CONTROL and value is not None:
            out["control_value"] = _kraft_control_value(parsed.type, value)
        return out
    except FormatError as e:
        return {"control_type": "INVALID", "control_error": e.message}


_KRAFT_CONTROL = (control.LEADER_CHANGE, control.SNAPSHOT_HEADER, control.SNAPSHOT_FOOTER, control.KRAFT_VERSION,
                  control.KRAFT_VOTERS)


def _kraft_control_value(control_type: int, value: bytes) -> JsonObject | None:
    """The fields of a KRaft snapshot/voters control record (kafka-dump-log prints them as JSON); None if damaged."""
    from replog.formats.kafka.internal.metadata import decode_control_value
    try:
        return decode_control_value(control_type, value)["data"]
    except FormatError:
        return None


def _decode_internal(key: bytes | None, value: bytes | None, is_control: bool, opts: DumpOptions) -> Any:
    """Decoded internal-topic payload when a decoder option asks for it."""
    from replog.formats.kafka import internal
    try:
        if opts.metadata_decoder:
            return internal.decode_metadata_entry(key, value, is_control)
        if opts.offsets_decoder and not is_control:
            return internal.decode_consumer_offsets(key, value)
        if opts.txn_decoder and not is_control:
            return internal.decode_transaction_state(key, value)
        if opts.share_state_decoder and not is_control:
            return internal.decode_share_group_state(key, value, opts.share_state_release)
        if opts.remote_log_metadata_decoder and not is_control:
            return internal.decode_remote_log_metadata(value)
    except FormatError as e:
        return {"error": e.message}
    return None
