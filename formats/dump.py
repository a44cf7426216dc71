"""`dump`: decode any broker file into a stream of JSON-able entries, each with a `kind`.

This is the library behind `replog dump` (kafka-dump-log parity plus every
other file replog knows). Entries follow the shapes in CLI-CONTRACT.md.
Damage met on the way is an entry of kind `finding`, never an exception.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from replog.formats.discovery import FileKind, classify_file
from replog.formats.errors import FormatError, UnreadableInput
from replog.formats.fileio import mapped
from replog.formats.findings import Finding, finding, from_error
from replog.formats.kafka import batch as v2
from replog.formats.kafka import codecs, control, names
from replog.formats.kafka.segment import BatchInfo, SegmentWalk, batch_records
from replog.formats.render import render_bytes

Entry = dict[str, Any]
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
    from_offset: int | None = None
    to_offset: int | None = None
    max_bytes: int | None = None
    verify_index_only: bool = False
    index_sanity_check: bool = False

    @property
    def records(self) -> bool:
        """Record-level output: asked for directly or implied by a data option."""
        return (self.deep or self.print_data or self.offsets_decoder or self.txn_decoder
                or self.metadata_decoder)


def expand_paths(paths: list[str | os.PathLike[str]]) -> list[Path]:
    """Files to dump: files as given, directories walked in name order."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(sorted(f for f in p.rglob("*") if f.is_file()))
        elif p.exists():
            out.append(p)
        else:
            raise UnreadableInput(f"{p}: no such file or directory")
    return out


def dump_paths(paths: list[str | os.PathLike[str]], options: DumpOptions,
               progress: Progress | None = None) -> Iterator[Entry]:
    for path in expand_paths(paths):
        yield from dump_file(path, options, progress)


def dump_file(path: str | os.PathLike[str], options: DumpOptions,
              progress: Progress | None = None) -> Iterator[Entry]:
    """Entries for one file: a `file` header entry, then its contents."""
    kind = classify_file(path)
    size = os.path.getsize(path)
    yield {"kind": "file", "path": str(path), "file_kind": kind.value, "size": size}
    dumper = _DUMPERS.get(kind)
    if dumper is None:
        yield _finding_entry(finding("UNKNOWN_FILE", str(path), message="not a file kind replog decodes"))
        return
    try:
        yield from dumper(Path(path), options, progress)
    except FormatError as e:
        yield _finding_entry(from_error(e, str(path)))
    except UnreadableInput as e:
        yield _finding_entry(finding("UNREADABLE_FILE", str(path), message=str(e)))


def _finding_entry(f: Finding) -> Entry:
    return {"kind": "finding", **f.to_dict()}


# --- segments (.log, KRaft .checkpoint) -------------------------------------------------


def _segment_base(path: Path) -> int | None:
    seg = names.parse_segment_file_name(path.name)
    return seg.base_offset if seg and seg.kind == "log" else None


def _dump_segment(path: Path, opts: DumpOptions, progress: Progress | None) -> Iterator[Entry]:
    with mapped(path) as buf:
        walk = SegmentWalk(buf, str(path), _segment_base(path), opts.max_bytes)
        reported = 0
        for info in walk.batches():
            while reported < len(walk.findings):
                yield _finding_entry(walk.findings[reported])
                reported += 1
            if progress:
                progress(info.end, len(buf))
            if not _in_range(info, opts):
                continue
            yield batch_entry(str(path), info)
            if opts.records:
                yield from _record_entries(buf, str(path), info, opts)
        for f in walk.findings[reported:]:
            yield _finding_entry(f)


def _in_range(info: BatchInfo, opts: DumpOptions) -> bool:
    if opts.from_offset is not None and info.last_offset < opts.from_offset:
        return False
    return opts.to_offset is None or info.base_offset <= opts.to_offset


def batch_entry(path: str, b: BatchInfo) -> Entry:
    """The contract's `batch` entry for one batch."""
    last_sequence = (v2.increment_sequence(b.base_sequence, b.last_offset - b.base_offset)
                     if b.base_sequence >= 0 else -1)
    return {
        "kind": "batch", "path": path, "position": b.position, "base_offset": b.base_offset,
        "last_offset": b.last_offset, "count": b.count, "partition_leader_epoch": b.partition_leader_epoch,
        "magic": b.magic, "codec": codecs.CODEC_NAMES.get(b.codec, f"unknown({b.codec})"),
        "crc": b.crc, "crc_valid": b.crc_valid, "size": b.size,
        "first_timestamp": b.first_timestamp, "max_timestamp": b.max_timestamp,
        "timestamp_type": v2.TIMESTAMP_TYPE_NAMES[b.timestamp_type],
        "producer_id": b.producer_id, "producer_epoch": b.producer_epoch,
        "base_sequence": b.base_sequence, "last_sequence": last_sequence,
        "is_transactional": b.is_transactional, "is_control": b.is_control,
        "delete_horizon_ms": b.first_timestamp if b.has_delete_horizon else None,
    }


def _record_entries(buf: memoryview, path: str, info: BatchInfo, opts: DumpOptions) -> Iterator[Entry]:
    if info.magic == 2 and info.size < v2.HEADER_SIZE:
        return
    try:
        records = batch_records(buf, info)
    except FormatError as e:
        yield _finding_entry(finding(e.code, path, position=info.position, offset=info.base_offset,
                                     message=e.message))
        return
    for rec in records:
        if opts.from_offset is not None and rec.offset < opts.from_offset:
            continue
        if opts.to_offset is not None and rec.offset > opts.to_offset:
            break
        yield record_entry(path, info, rec, opts)


def record_entry(path: str, info: BatchInfo, rec: v2.Record, opts: DumpOptions) -> Entry:
    """The contract's `record` entry; internal-topic decoders replace key/value with their JSON."""
    entry: Entry = {
        "kind": "record", "path": path, "offset": rec.offset, "position": info.position,
        "timestamp": rec.timestamp, "timestamp_type": v2.TIMESTAMP_TYPE_NAMES[info.timestamp_type],
        "key_size": -1 if rec.key is None else len(rec.key),
        "value_size": -1 if rec.value is None else len(rec.value),
        "sequence": rec.sequence, "is_control": info.is_control,
        "key": render_bytes(rec.key, opts.key_decoder),
        "value": render_bytes(rec.value, opts.value_decoder),
        "headers": [{"key": k, "value": render_bytes(v, opts.value_decoder)} for k, v in rec.headers],
    }
    if info.is_control:
        entry.update(_control_fields(rec))
    decoded = _decode_internal(rec, info, opts)
    if isinstance(decoded, dict) and decoded.keys() == {"key", "value"}:
        entry["key"], entry["value"] = decoded["key"], decoded["value"]  # offsets / transaction decoders
    elif decoded is not None:
        entry["value"] = decoded  # a metadata record or KRaft control value
    return entry


def _control_fields(rec: v2.Record) -> Entry:
    try:
        key = control.parse_control_key(rec.key)
        out: Entry = {"control_type": key.name}
        if key.type in (control.ABORT, control.COMMIT):
            out["coordinator_epoch"] = control.parse_end_txn_marker(rec.value).coordinator_epoch
        return out
    except FormatError as e:
        return {"control_type": "INVALID", "control_error": e.message}


def _decode_internal(rec: v2.Record, info: BatchInfo, opts: DumpOptions) -> Any:
    """Decoded internal-topic payload when a decoder option asks for it."""
    from replog.formats.kafka import internal
    try:
        if opts.metadata_decoder:
            return internal.decode_metadata_entry(rec.key, rec.value, info.is_control)
        if opts.offsets_decoder and not info.is_control:
            return internal.decode_consumer_offsets(rec.key, rec.value)
        if opts.txn_decoder and not info.is_control:
            return internal.decode_transaction_state(rec.key, rec.value)
    except FormatError as e:
        return {"error": e.message}
    return None


def _kafka_dumpers() -> dict[FileKind, Callable[[Path, DumpOptions, Progress | None], Iterator[Entry]]]:
    from replog.formats import dump_kafka as k
    from replog.formats import dump_rocketmq as r
    return {
        FileKind.KAFKA_SEGMENT: _dump_segment,
        FileKind.KAFKA_KRAFT_SNAPSHOT: _dump_segment,
        FileKind.KAFKA_OFFSET_INDEX: lambda p, o, _: k.index_entries(
            p, o.verify_index_only, o.index_sanity_check),
        FileKind.KAFKA_TIME_INDEX: lambda p, o, _: k.index_entries(
            p, o.verify_index_only, o.index_sanity_check),
        FileKind.KAFKA_TXN_INDEX: lambda p, o, _: k.txn_index_entries(p),
        FileKind.KAFKA_PRODUCER_SNAPSHOT: lambda p, o, _: k.snapshot_entries(p),
        FileKind.KAFKA_OFFSET_CHECKPOINT: lambda p, o, _: k.checkpoint_entries(p),
        FileKind.KAFKA_EPOCH_CHECKPOINT: lambda p, o, _: k.checkpoint_entries(p),
        FileKind.KAFKA_PARTITION_METADATA: lambda p, o, _: k.metadata_entry(p),
        FileKind.KAFKA_META_PROPERTIES: lambda p, o, _: k.metadata_entry(p),
        FileKind.KAFKA_QUORUM_STATE: lambda p, o, _: k.metadata_entry(p),
        FileKind.KAFKA_CLEAN_SHUTDOWN: lambda p, o, _: k.metadata_entry(p),
        FileKind.ROCKETMQ_COMMITLOG: lambda p, o, _: r.commitlog_entries(p, o.value_decoder, o.records),
        FileKind.ROCKETMQ_CONSUMEQUEUE: lambda p, o, _: r.consumequeue_entries(p),
        FileKind.ROCKETMQ_INDEX: lambda p, o, _: r.index_file_entries(p),
        FileKind.ROCKETMQ_CHECKPOINT: lambda p, o, _: r.store_file_entry(p),
        FileKind.ROCKETMQ_EPOCH: lambda p, o, _: r.store_file_entry(p),
        FileKind.ROCKETMQ_CONFIG: lambda p, o, _: r.store_file_entry(p),
    }


_DUMPERS = _kafka_dumpers()
