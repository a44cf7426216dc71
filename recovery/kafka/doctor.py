"""Every defect of a Kafka log dir, partition dir or single file, located (`recovery.doctor` dispatches).

A log dir is its root files,
its checkpoints against its partitions, and every partition; a partition is
its inventory, every segment (walked and deep-decoded once), its indexes, its
leader-epoch checkpoint, producer snapshots and metadata files. Every file
read goes through `Evidence` (read-only, hashed); inputs are re-hashed at the
end and a change is reported.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Generator
from pathlib import Path

from replog.formats.discovery import FileKind, classify_file, is_partition_dir
from replog.formats.errors import FormatError, NotRegularFile, ReplogError, UnreadableInput
from replog.formats.fileio import EntryType, entry_type, is_regular
from replog.formats.findings import Finding, finding, from_error, from_unreadable
from replog.formats.kafka import checkpoint, names
from replog.formats.kafka.checkpoint import EpochEntry
from replog.formats.kafka.partition_files import is_live_segment
from replog.formats.kafka.partition_metadata import parse_partition_metadata
from replog.formats.kafka.producer_snapshot import parse_producer_snapshot
from replog.formats.kafka.quorum_state import parse_quorum_state
from replog.formats.kafka.txn_index import AbortedTxn
from replog.recovery.evidence import Evidence
from replog.recovery.kafka import checks_broker, checks_indexes, checks_segments, checks_state, segment_pass
from replog.recovery.kafka.checks_broker import PartitionOffsets
from replog.recovery.kafka.logdir import BrokerCheckpoints, SegmentSummary, use_fast_walk
from replog.recovery.kafka.producer_state import ProducerState
from replog.recovery.kafka.remote_index_cache import remote_index_cache_findings
from replog.recovery.kafka.segment_pass import RecordedWalk, Walked
from replog.recovery.kafka.tiered import log_start_findings, profile_beside, remote_log_snapshot_findings
from replog.recovery.kafka.transactions import hanging_findings, txn_view
from replog.recovery.kafka.txn_coordinator import log_dir_coordinator

PartitionStep = Walked | SegmentSummary   # a block of the pass, or the end of a segment's pass
# An earlier pass's record of a segment, when the caller has one it trusts: (base offset, path, active)
Recorded = Callable[[int, Path, bool], RecordedWalk | None]


def check_log_dir(ev: Evidence, log_dir: Path) -> tuple[list[Finding], list[PartitionOffsets]]:
    """A broker log dir: its root files and checkpoints, every partition, and membership."""
    cps = checks_broker.read_checkpoints(ev, log_dir)
    found = cps.findings + checks_broker.check_root_files(ev, log_dir)
    parts: list[PartitionOffsets] = []
    for name in sorted(os.listdir(log_dir)):
        if is_partition_dir(log_dir / name):
            try:
                offsets, more = check_partition(ev, log_dir / name, cps, log_dir)
            except UnreadableInput as e:  # one partition that cannot be listed does not end the check
                found.append(from_unreadable(e, str(log_dir / name)))
                continue
            parts.append(offsets)
            found += more
    return found + log_dir_checks(ev, log_dir, parts, cps), parts


def log_dir_checks(ev: Evidence, log_dir: Path, parts: list[PartitionOffsets],
                   cps: BrokerCheckpoints) -> list[Finding]:
    """The checks of a log dir as a whole, once its partitions are known: checkpoint membership, tiered
    storage's log starts (`tiered.log_start_findings`) and its remote index cache. `doctor` and the fleet
    scan's log-dir unit (`spark.tasks.log_dir_findings`) both run these, so both report the same."""
    return (checks_broker.check_membership(parts, cps, log_dir)
            + log_start_findings(parts, cps, log_dir, profile_beside(log_dir))
            + remote_index_cache_findings(ev, log_dir))


def check_partition_with_parent(ev: Evidence, pdir: Path) -> tuple[list[Finding], list[PartitionOffsets]]:
    """A partition alone; its broker checkpoints are used when the parent is a log dir."""
    parent = pdir.parent
    cps = None
    found: list[Finding] = []
    if any(is_regular(parent / n) for n in names.OFFSET_CHECKPOINT_NAMES):
        cps = checks_broker.read_checkpoints(ev, parent)
        found += cps.findings
    offsets, more = check_partition(ev, pdir, cps, parent)
    if cps is not None:
        more += log_start_findings([offsets], cps, parent, profile_beside(parent))
    return found + more, [offsets]


def check_partition(ev: Evidence, pdir: Path, cps: BrokerCheckpoints | None,
                    log_dir: Path, deep: bool = True) -> tuple[PartitionOffsets, list[Finding]]:
    """All checks of one partition dir; `deep=False` leaves record decoding to someone else
    (a fleet scan splits a big partition and decodes its segments in other tasks)."""
    return segment_pass.drain(partition_pass(ev, pdir, cps, log_dir, deep))


def partition_pass(ev: Evidence, pdir: Path, cps: BrokerCheckpoints | None, log_dir: Path,
                   deep: bool | Callable[[int], bool] = True, *, fast_threshold: int | None = None,
                   recorded: Recorded | None = None,
                   ) -> Generator[PartitionStep, None, tuple[PartitionOffsets, list[Finding]]]:
    """`check_partition`, handing out every block of each segment's one pass (`Walked`), then that
    segment's `SegmentSummary` (none for a segment it cannot read): a fleet scan builds its summary
    and batch table from the very blocks the checks read.

    `deep` may say per segment (by base offset) whether its records are decoded here; segments above
    `fast_threshold` bytes take the compiled walk and record check (`use_fast_walk`; default: each
    its own threshold). `recorded` may give a segment's
    walk as an earlier pass recorded it: that segment is then reused (`segment_pass.reuse_blocks`),
    not read, and every check downstream of the walk runs on the reused blocks."""
    parsed = names.parse_partition_dir(pdir.name)
    if parsed is None:
        raise UnreadableInput(f"{pdir}: not a topic-partition directory name")
    inv = checks_segments.inventory(pdir)
    out = list(inv.findings)
    out += _metadata_files(ev, pdir)
    epochs, epoch_positions, epoch_ok = _epoch_checkpoint(ev, pdir, out)
    bases = list(inv.files.logs)
    ev.hash_ahead(inv.files.logs[base] for base in bases)
    lso_cp = (cps.log_start_offsets or {}).get((parsed.topic, parsed.partition)) if cps else None
    log_start = max(lso_cp or 0, bases[0] if bases else 0)
    state = checks_state.StateChecker(epochs if epoch_ok else None, str(pdir / names.LEADER_EPOCH_CHECKPOINT),
                                      epoch_positions, log_start, _snapshots(ev, inv, out))
    leo, prev = log_start, None
    for i, base in enumerate(bases):
        active = i == len(bases) - 1
        recorded_walk = recorded(base, inv.files.logs[base], active) if recorded is not None else None
        seg, found = yield from _segment(ev, inv, base, state, active=active,
                                         deep=deep(base) if callable(deep) else deep,
                                         fast_threshold=fast_threshold, recorded_walk=recorded_walk)
        out += found
        if seg is None:
            continue
        yield seg
        if prev is not None:
            out += segment_pass.check_continuity(prev, seg)
        leo = seg.valid_next_offset if seg.valid_next_offset is not None else base
        if seg.batch_count or prev is None:
            prev = seg
    out += [f for f in state.finish(leo) if not (f.code == "KAFKA_EPOCH_CHECKPOINT_MISMATCH"
                                                 and f.offset is None and not epoch_ok)]
    out += _hanging_transactions(pdir, parsed.topic, parsed.partition, state.producers, log_dir)
    offsets = PartitionOffsets(str(pdir), parsed.topic, parsed.partition, parsed.state,
                               bases[0] if bases else None, leo)
    if cps is not None:
        out += checks_broker.check_partition_offsets(offsets, cps, log_dir)
    return offsets, out


def _hanging_transactions(pdir: Path, topic: str, partition: int, producers: ProducerState,
                          log_dir: Path) -> list[Finding]:
    """Transactions open at the log end that no marker will close (`transactions.hanging_findings`), judged
    with the coordinators' records of the log dir's `__transaction_state`, read only when one is open."""
    view = txn_view(topic, partition, str(pdir), producers)
    if not view.open:
        return []
    try:
        coordinator = log_dir_coordinator(log_dir)
    except (ReplogError, OSError):
        coordinator = None   # its own partition pass reports what is wrong with it
    return hanging_findings(view, coordinator)


def _segment(ev: Evidence, inv: checks_segments.Inventory, base: int, state: checks_state.StateChecker,
             active: bool, deep: bool = True, fast_threshold: int | None = None,
             recorded_walk: RecordedWalk | None = None,
             ) -> Generator[Walked, None, tuple[SegmentSummary | None, list[Finding]]]:
    """One pass over a segment: its walk, records, epochs and producers, and indexes (its blocks handed
    out); from `recorded_walk` (the walk and record decode an earlier pass recorded) instead of the bytes."""
    path = inv.files.logs[base]
    kinds = {k: inv.files.indexes[(base, k)] for k in ("index", "timeindex", "txnindex")
             if (base, k) in inv.files.indexes}
    if recorded_walk is not None:
        indexes = checks_indexes.SegmentIndexChecks(ev, kinds, base_offset=base, log_size=recorded_walk.size,
                                                    active=active)
        seg = yield from segment_pass.reuse_blocks(recorded_walk, path, base, checks=[indexes], state=state)
        found = seg.findings + seg.record_findings
    else:
        try:
            with ev.mapped(path, live=inv.files.live(path), windows=True) as buf:
                indexes = checks_indexes.SegmentIndexChecks(ev, kinds, base_offset=base, log_size=len(buf),
                                                            active=active)
                fast = use_fast_walk(len(buf), fast_threshold, buf)
                records = checks_segments.RecordCheck(buf, str(path), fast if fast_threshold is not None else None) \
                    if deep else None
                checks: list[segment_pass.BlockCheck] = [indexes] if records is None else [records, indexes]
                seg = yield from segment_pass.segment_blocks(buf, path, base, compiled=fast, checks=checks,
                                                             state=state)
                seg.record_findings = records.finish() if records is not None else []
                found = seg.findings + seg.record_findings
        except UnreadableInput as e:
            return None, [from_unreadable(e, str(path))]
    found.sort(key=lambda f: (f.position if f.position is not None else -1))
    if not seg.batch_count and not found:
        found.append(finding("KAFKA_SEGMENT_EMPTY", str(path), position=0, offset=base))
    found += indexes.finish() + _txn_index(ev, kinds.get("txnindex"), path, base, seg.aborted)
    return seg, found


def _txn_index(ev: Evidence, txn_path: Path | None, log: Path, base: int, aborted: list[AbortedTxn]) -> list[Finding]:
    """The segment's `.txnindex` against the ABORT markers its walk met (nothing when neither exists)."""
    if txn_path is None and not aborted:
        return []
    return checks_indexes.txn_index_findings(ev, txn_path, log_path=log, base_offset=base, expected_aborts=aborted)


# `CheckpointFileWithFailureHandler.read` (storage/.../checkpoint/CheckpointFileWithFailureHandler.java) turns the
# IOException of `CheckpointFile`'s "Malformed line" into `LogDirFailureChannel.maybeAddOfflineLogDir`; with its
# last log dir offline `LogManager` halts the broker ("Shutdown broker because all log dirs ... have failed").
# Seen on 3.9.1 and 4.4.0 in the broker lab (tests/brokers/test_kafka_recover.py).
LOG_DIR_FAILS = ("the broker fails the whole log dir holding it at load and shuts down if that was its last one; "
                 "`replog recover` rebuilds the checkpoint from the batches")


def _epoch_checkpoint(ev: Evidence, pdir: Path, out: list[Finding]) -> tuple[list[EpochEntry] | None, list[int], bool]:
    """(entries or None when absent, line positions, parsed ok)."""
    path = pdir / names.LEADER_EPOCH_CHECKPOINT
    if not is_regular(path):
        return None, [], True
    try:
        data = ev.read_small(path)
        entries = checkpoint.parse_leader_epoch_checkpoint(data)
    except FormatError as e:
        out.append(finding(e.code, str(path), position=e.position, message=f"{e.message}; {LOG_DIR_FAILS}"))
        return None, [], False
    except UnreadableInput as e:
        out.append(from_unreadable(e, str(path)))
        return None, [], False
    positions = checks_state.epoch_line_positions(data)
    order = checks_state.check_epoch_checkpoint_order(entries, positions, str(path))
    out += order
    return entries, positions, not order


def _snapshots(ev: Evidence, inv: checks_segments.Inventory, out: list[Finding]) -> dict:
    parsed = {}
    for offset, path in inv.files.snapshots.items():
        try:
            snap = parse_producer_snapshot(ev.read_small(path))
        except FormatError as e:
            out.append(finding(e.code, str(path), position=e.position, offset=offset,
                               message=f"{e.message} (the broker deletes this snapshot and uses an older one)"))
            continue
        except UnreadableInput as e:
            out.append(from_unreadable(e, str(path)))
            continue
        parsed[offset] = (str(path), snap.entries)
    return parsed


def _metadata_files(ev: Evidence, pdir: Path) -> list[Finding]:
    out: list[Finding] = []
    for name, parse in ((names.PARTITION_METADATA, parse_partition_metadata),
                        (names.QUORUM_STATE, parse_quorum_state)):
        path = pdir / name
        if is_regular(path):
            out += ev.check_parses(path, parse)
    snapshot = pdir / names.REMOTE_LOG_SNAPSHOT
    if is_regular(snapshot):
        try:
            out += remote_log_snapshot_findings(ev.read_small(snapshot), str(snapshot))
        except UnreadableInput as e:
            out.append(from_unreadable(e, str(snapshot)))
    return out


def check_file(ev: Evidence, path: Path) -> list[Finding]:
    """One file on its own; an index is checked against its sibling `.log` when present.
    Raises `NotRegularFile` for a FIFO, device or the like: there is nothing to check."""
    entry = entry_type(path)
    if entry not in (EntryType.REGULAR, EntryType.INACCESSIBLE, EntryType.MISSING):
        raise NotRegularFile(str(path), entry.value)
    kind = classify_file(path)
    seg = names.parse_segment_file_name(path.name)
    try:
        if kind is FileKind.KAFKA_SEGMENT and seg is not None and not seg.transient:
            return _log_file(ev, path, seg.base_offset)
        if kind in (FileKind.KAFKA_OFFSET_INDEX, FileKind.KAFKA_TIME_INDEX, FileKind.KAFKA_TXN_INDEX) and seg:
            return _index_file(ev, path, seg)
        if kind is FileKind.KAFKA_PRODUCER_SNAPSHOT:
            parse_producer_snapshot(ev.read_small(path))
            return []
        if kind is FileKind.KAFKA_EPOCH_CHECKPOINT:
            out: list[Finding] = []
            _epoch_checkpoint(ev, path.parent, out)
            return out
        parser = {FileKind.KAFKA_OFFSET_CHECKPOINT: checkpoint.parse_offset_checkpoint,
                  FileKind.KAFKA_PARTITION_METADATA: parse_partition_metadata,
                  FileKind.KAFKA_QUORUM_STATE: parse_quorum_state}.get(kind)
        if parser is not None:
            parser(ev.read_small(path))
            return []
        if kind is FileKind.KAFKA_REMOTE_LOG_SNAPSHOT:
            return remote_log_snapshot_findings(ev.read_small(path), str(path))
        if kind in (FileKind.KAFKA_META_PROPERTIES, FileKind.KAFKA_CLEAN_SHUTDOWN):
            return [f for f in checks_broker.check_root_files(ev, path.parent) if f.path == str(path)]
    except FormatError as e:
        return [from_error(e, str(path))]
    raise UnreadableInput(f"{path}: not a Kafka file doctor can check ({kind.value})")


def _index_file(ev: Evidence, path: Path, name: names.SegmentFileName) -> list[Finding]:
    base, kind = name.base_offset, name.kind
    log = path.with_name(names.sibling_file_name(name, "log"))
    if not is_regular(log):
        from replog.formats.kafka import offset_index, time_index, txn_index
        data = ev.read_small(path, 1 << 30)
        readers: dict[str, Callable[..., offset_index.IndexRead | txn_index.TxnIndexRead]] = {
            "index": offset_index.read_offset_index, "timeindex": time_index.read_time_index,
            "txnindex": txn_index.read_txn_index}
        return readers[kind](data, base, path=str(path)).findings
    with ev.mapped(log, live=is_live_segment(log), windows=True) as buf:
        indexes = checks_indexes.SegmentIndexChecks(ev, {kind: path}, base_offset=base, log_size=len(buf),
                                                    active=True)
        state = checks_state.StateChecker(None, "", [], 0) if kind == "txnindex" else None
        seg = segment_pass.scan_segment(buf, log, base, compiled=use_fast_walk(len(buf), buf=buf), checks=[indexes],
                                        state=state)
    return indexes.finish() + _txn_index(ev, path if kind == "txnindex" else None, log, base, seg.aborted)


def _log_file(ev: Evidence, path: Path, base: int) -> list[Finding]:
    """A segment on its own: its walk and every record decoded."""
    with ev.mapped(path, live=is_live_segment(path), windows=True) as buf:
        records = checks_segments.RecordCheck(buf, str(path))
        seg = segment_pass.scan_segment(buf, path, base, compiled=use_fast_walk(len(buf), buf=buf), checks=[records])
        found = seg.findings + records.finish()
    return sorted(found, key=lambda f: (f.position if f.position is not None else -1))
