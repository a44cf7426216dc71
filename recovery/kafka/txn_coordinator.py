"""What the transaction coordinators believe, from `__transaction_state`: one record per transactional id.

The coordinator keeps, per transactional id, the last `TransactionLogValue` it
wrote; a tombstone means the id expired (core `TransactionStateManager.loadTransactionMetadata`).
States follow `TransactionState` (core `TransactionMetadata.scala`): a transaction's partitions are
listed while it is Ongoing or Prepare*; once Complete* (markers written and acknowledged) the list
is emptied. So a partition holding an open transaction of a producer whose coordinator record is
not Ongoing/Prepare* with that partition has no marker coming: the transaction hangs.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from replog.formats.kafka.internal.transaction_state import decode_transaction_state
from replog.recovery.kafka.internal_topics import (
    TRANSACTION_STATE,
    coordinator_records,
    decoded_or_skipped,
    partition_copies,
)

# The states in which the coordinator still owes the transaction's partitions their markers.
IN_FLIGHT = frozenset({"Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"})


@dataclass(frozen=True)
class CoordinatorTxn:
    transactional_id: str
    producer_id: int
    previous_producer_id: int
    producer_epoch: int
    state: str
    partitions: frozenset[tuple[str, int]]
    last_update_timestamp: int
    timeout_ms: int
    source: str

    def owes_marker(self, topic: str, partition: int) -> bool:
        """Whether the coordinator will still write a marker to this partition."""
        return self.state in IN_FLIGHT and (topic, partition) in self.partitions

    def to_dict(self) -> dict[str, object]:
        return {"transactional_id": self.transactional_id, "producer_id": self.producer_id,
                "producer_epoch": self.producer_epoch, "state": self.state,
                "partitions": sorted(f"{t}-{p}" for t, p in self.partitions),
                "last_update_timestamp": self.last_update_timestamp, "source": self.source}


@dataclass
class CoordinatorState:
    """The coordinators' latest record per transactional id, found by producer id."""

    by_producer: dict[int, CoordinatorTxn] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    latest_update: int = -1       # the latest transition any record shows: the coordinators' clock

    def of(self, producer_id: int) -> CoordinatorTxn | None:
        return self.by_producer.get(producer_id)


def read_coordinator_state(log_dirs: Sequence[str | os.PathLike[str]]) -> CoordinatorState:
    """The `__transaction_state` partitions under `log_dirs`, each from the copy a coordinator would load."""
    out = CoordinatorState()
    latest: dict[str, CoordinatorTxn | None] = {}
    for path, rec in coordinator_records(log_dirs, TRANSACTION_STATE, out.sources, out.skipped):
        if rec.key is None:
            continue
        decoded = decoded_or_skipped(path, rec, decode_transaction_state, out.skipped)
        if decoded is None or "data" not in decoded["key"]:
            continue
        tid, value = decoded["key"]["data"]["transactionalId"], decoded["value"]
        if value is None:
            latest[tid] = None
        elif "data" in value:
            latest[tid] = _txn(tid, value["data"], path)
    # a producer id rolled over (epoch exhausted) is still found under its previous id
    for txn in latest.values():
        if txn is not None and txn.previous_producer_id >= 0:
            out.by_producer.setdefault(txn.previous_producer_id, txn)
    for txn in latest.values():
        if txn is not None:
            out.by_producer[txn.producer_id] = txn
            out.latest_update = max(out.latest_update, txn.last_update_timestamp)
    return out


def _txn(tid: str, v: dict, source: str) -> CoordinatorTxn:
    parts = frozenset((p["topic"], pid) for p in (v.get("transactionPartitions") or []) for pid in p["partitionIds"])
    return CoordinatorTxn(tid, v["producerId"], v.get("previousProducerId", -1), v["producerEpoch"],
                          v["transactionState"], parts, v["transactionLastUpdateTimestampMs"],
                          v["transactionTimeoutMs"], source)


def log_dir_coordinator(log_dir: str | os.PathLike[str]) -> CoordinatorState | None:
    """`read_coordinator_state` of one log dir (None: it holds no `__transaction_state`), read once while its
    files stay as they are: `doctor` asks for it once per partition ending in an open transaction."""
    return _cached_state(str(Path(log_dir).resolve()), _signature(Path(log_dir)))


def _signature(log_dir: Path) -> tuple[tuple[str, int, int], ...]:
    """Name, size and modification time of every file of the log dir's `__transaction_state` copies."""
    out = []
    for copies in partition_copies([log_dir], TRANSACTION_STATE).values():
        for pdir in copies:
            for f in sorted(pdir.iterdir()):
                st = f.stat()
                out.append((str(f), st.st_size, st.st_mtime_ns))
    return tuple(out)


@lru_cache(maxsize=8)
def _cached_state(log_dir: str, signature: tuple[tuple[str, int, int], ...]) -> CoordinatorState | None:
    return read_coordinator_state([log_dir]) if signature else None
