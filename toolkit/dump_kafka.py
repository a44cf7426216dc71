"""`dump` entries for Kafka files other than segments: indexes, snapshots, checkpoints, metadata."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from replog.formats.fileio import mapped, read_small
from replog.formats.kafka import (
    checkpoint,
    clean_shutdown,
    meta_properties,
    names,
    offset_index,
    partition_metadata,
    producer_snapshot,
    quorum_state,
    time_index,
    txn_index,
)
from replog.formats.kafka.partition_files import is_live_segment
from replog.toolkit.dump_entries import Entry, finding_entry


def _base(path: Path) -> int:
    seg = names.parse_segment_file_name(path.name)
    return seg.base_offset if seg else 0


def _kind(path: Path) -> str:
    """"index" or "timeindex" (what dump dispatched on), whatever state suffix follows it
    (`.swap`, `.cleaned`, `.deleted`: files Kafka leaves while cleaning or deleting)."""
    seg = names.parse_segment_file_name(path.name)
    return seg.kind if seg else path.suffix.lstrip(".")


_INDEXES = {"index": (offset_index, "index_entry", ("offset", "position")),
            "timeindex": (time_index, "time_index_entry", ("timestamp", "offset"))}


def index_entries(path: Path, verify_only: bool, sanity: bool) -> Iterator[Entry]:
    """`.index` / `.timeindex`: entries, or only what contradicts the log, or the broker's sanity check."""
    from replog.formats.kafka.index_verify import verify_index
    module, kind, fields = _INDEXES[_kind(path)]
    base = _base(path)
    with mapped(path, live=is_live_segment(path)) as buf:
        if sanity:
            found = module.sanity_check(buf, base, path=str(path))
            yield from map(finding_entry, found)
            yield {"kind": "sanity_check", "path": str(path), "passed": not found}
            return
        read = (module.read_offset_index_columns if module is offset_index else module.read_time_index_columns)(
            buf, base, path=str(path))
    yield from map(finding_entry, read.findings)
    if not verify_only:
        for e in read.entries():
            yield {"kind": kind, "path": str(path), **dict(zip(fields, e, strict=True))}
    yield from map(finding_entry, verify_index(path, base, read))


def txn_index_entries(path: Path) -> Iterator[Entry]:
    with mapped(path, live=is_live_segment(path)) as buf:
        read = txn_index.read_txn_index(buf, _base(path), path=str(path))
    yield from map(finding_entry, read.findings)
    for e in read.entries:
        yield {"kind": "txn_entry", "path": str(path), "version": e.version, "producer_id": e.producer_id,
               "first_offset": e.first_offset, "last_offset": e.last_offset,
               "last_stable_offset": e.last_stable_offset}


def snapshot_entries(path: Path) -> Iterator[Entry]:
    snap = producer_snapshot.parse_producer_snapshot(read_small(path), check_crc=False)
    if not snap.crc_valid:
        from replog.formats.findings import finding
        yield finding_entry(finding("KAFKA_SNAPSHOT_CRC_MISMATCH", str(path), position=2,
                               message=f"stored crc {snap.crc:#010x} does not match the snapshot bytes"))
    for e in snap.entries:
        yield {"kind": "snapshot_entry", "path": str(path), **e._asdict(),
               "first_sequence": e.first_sequence}


def checkpoint_entries(path: Path) -> Iterator[Entry]:
    data = read_small(path)
    if path.name == names.LEADER_EPOCH_CHECKPOINT:
        for e in checkpoint.parse_leader_epoch_checkpoint(data):
            yield {"kind": "checkpoint_entry", "path": str(path), "epoch": e.epoch, "start_offset": e.start_offset}
        return
    for (topic, partition), offset in sorted(checkpoint.parse_offset_checkpoint(data).items()):
        yield {"kind": "checkpoint_entry", "path": str(path), "topic": topic, "partition": partition,
               "offset": offset}


def metadata_entry(path: Path) -> Iterator[Entry]:
    """One entry for the small metadata files, with every field they hold."""
    data = read_small(path)
    name = path.name
    if name == names.PARTITION_METADATA:
        pm = partition_metadata.parse_partition_metadata(data)
        yield {"kind": "partition_metadata", "path": str(path), "version": pm.version, "topic_id": pm.topic_id}
    elif name == names.META_PROPERTIES:
        mp = meta_properties.parse_meta_properties(data)
        yield {"kind": "meta_properties", "path": str(path), "version": mp.version, "cluster_id": mp.cluster_id,
               "node_id": mp.node_id, "directory_id": mp.directory_id, "properties": dict(mp.properties)}
    elif name == names.QUORUM_STATE:
        qs = quorum_state.parse_quorum_state(data)
        yield {"kind": "quorum_state", "path": str(path), "leader_id": qs.leader_id,
               "leader_epoch": qs.leader_epoch, "voted_id": qs.voted_id, "applied_offset": qs.applied_offset,
               "current_voters": qs.current_voters, "data_version": qs.data_version}
    else:
        cs = clean_shutdown.parse_clean_shutdown(data)
        yield {"kind": "clean_shutdown", "path": str(path), "version": cs.version, "broker_epoch": cs.broker_epoch}


def remote_log_snapshot_entries(path: Path) -> Iterator[Entry]:
    """A `remote_log_snapshot`: its header, then one entry per remote segment it caches (none for an empty file)."""
    from replog.formats.kafka.remote_log_snapshot import iter_entries, parse_header
    data = read_small(path)
    if not data:
        yield {"kind": "remote_log_snapshot", "path": str(path), "empty": True}
        return
    h = parse_header(data)
    yield {"kind": "remote_log_snapshot", "path": str(path), "empty": False, "version": h.version,
           "metadata_partition": h.metadata_partition, "metadata_partition_offset": h.metadata_partition_offset,
           "entries": h.entries}
    for pos, segment in iter_entries(data):
        yield {"kind": "remote_log_segment", "path": str(path), "position": pos, **segment}
