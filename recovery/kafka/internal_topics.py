"""The records of an internal topic (`__consumer_offsets`, `__transaction_state`) found in broker log dirs.

A coordinator loads its partition of the internal topic from its own log, as the
broker's startup recovery leaves it, and replays every record in offset order
(group-coordinator `CoordinatorLoaderImpl`, core `TransactionStateManager.loadTransactionMetadata`).
Several log dirs may each hold a replica of the same partition: the one a controller
would elect (`election.elect`, the rule `replay` uses) stands for the coordinator's.
Records are decoded one by one, which is fine for these compacted, small topics.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from replog.formats.errors import FormatError, UnreadableInput
from replog.formats.fileio import mapped
from replog.formats.kafka import batch as v2
from replog.formats.kafka import control, names
from replog.formats.kafka.segment import BatchInfo, batch_records
from replog.recovery.kafka.election import Candidate, elect
from replog.recovery.kafka.replica import Replica, load_replica

CONSUMER_OFFSETS = "__consumer_offsets"
TRANSACTION_STATE = "__transaction_state"


@dataclass(frozen=True)
class InternalRecord:
    """One record of an internal topic, with what of its batch the coordinators' replay looks at."""

    offset: int
    key: bytes | None
    value: bytes | None
    producer_id: int          # -1: not written by a transactional producer
    is_transactional: bool
    marker: int | None        # control.COMMIT / control.ABORT for an end-transaction marker, else None
    timestamp: int


def partition_copies(log_dirs: Sequence[str | os.PathLike[str]], topic: str) -> dict[int, list[Path]]:
    """Every live `topic-N` dir under the log dirs, per partition number, in the order of the log dirs."""
    out: dict[int, list[Path]] = {}
    for log_dir in log_dirs:
        root = Path(log_dir)
        if not root.is_dir():
            raise UnreadableInput(f"{root}: not a directory")
        for entry in sorted(os.listdir(root)):
            parsed = names.parse_partition_dir(entry)
            if parsed is not None and parsed.topic == topic and parsed.state == "live" and (root / entry).is_dir():
                out.setdefault(parsed.partition, []).append(root / entry)
    return out


def coordinator_copy(copies: Sequence[Path]) -> Replica:
    """The copy of one partition a coordinator would load: the replica a controller would elect."""
    loaded = [load_replica(path, f"{i}") for i, path in enumerate(copies)]
    if len(loaded) == 1:
        return loaded[0]
    chosen = elect([Candidate(r.name, r.high_watermark, r.log_end_offset, r.epochs.latest_epoch) for r in loaded])
    return next(r for r in loaded if r.name == chosen.name)


def coordinator_records(log_dirs: Sequence[str | os.PathLike[str]], topic: str, sources: list[str],
                        skipped: list[str]) -> Iterator[tuple[str, InternalRecord]]:
    """(copy path, record) of every partition of `topic` under `log_dirs`, each read from the copy a coordinator
    would load (`coordinator_copy`, its path added to `sources` as it is read), in partition then offset order."""
    for _, copies in sorted(partition_copies(log_dirs, topic).items()):
        rep = coordinator_copy(copies)
        sources.append(rep.path)
        for rec in internal_records(rep, skipped):
            yield rep.path, rec


def decoded_or_skipped(path: str, rec: InternalRecord, decode: Callable[[bytes | None, bytes | None], dict],
                       skipped: list[str]) -> dict | None:
    """`decode(key, value)` of one record; None, with the reason in `skipped`, for a record it rejects (the
    coordinator would fail to load it)."""
    try:
        return decode(rec.key, rec.value)
    except FormatError as e:
        skipped.append(f"{path} offset {rec.offset}: {e.message}")
        return None


def internal_records(rep: Replica, skipped: list[str]) -> Iterator[InternalRecord]:
    """Every record of the replica's kept batches in offset order; a batch that cannot be decoded is
    described in `skipped` and passed over (the coordinator would fail to load it)."""
    for piece in rep.log.pieces:
        with mapped(piece.file) as buf:
            for block in piece.blocks():
                for info in block.rows():
                    yield from _batch(buf, info, skipped)


def _batch(buf: bytes | memoryview, info: BatchInfo, skipped: list[str]) -> Iterator[InternalRecord]:
    try:
        records = batch_records(buf, info)
    except FormatError as e:
        skipped.append(f"batch at offset {info.base_offset}: {e.message}")
        return
    pid = info.producer_id if info.magic == 2 else -1
    if info.is_control:
        marker = _marker(records)
        if marker is not None:
            yield InternalRecord(info.base_offset, None, None, pid, True, marker, info.max_timestamp)
        return
    for r in records:
        yield InternalRecord(r.offset, r.key, r.value, pid, info.is_transactional, None, r.timestamp)


def _marker(records: list[v2.Record]) -> int | None:
    """COMMIT or ABORT of an end-transaction marker; None for an emptied control batch or another kind."""
    if not records or records[0].key is None:
        return None
    try:
        kind = control.parse_control_key(records[0].key).type
    except FormatError:
        return None
    return kind if kind in (control.COMMIT, control.ABORT) else None
