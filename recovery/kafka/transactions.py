"""When an open transaction hangs: the rules `impact` and `doctor` share.

A partition's transaction stays open until a COMMIT or ABORT marker of its producer
(`ProducerAppendInfo.appendEndTxnMarker` closes whatever the producer has open) and pins the last
stable offset there, so read_committed consumers stop at it (`ProducerStateManager.firstUndecidedOffset`).
Only the transaction coordinator writes markers. The transaction hangs, and needs
`kafka-transactions.sh abort`, when no marker will come:
- the coordinator's record for the producer (`__transaction_state`) does not owe this partition a
  marker (it is not Ongoing/Prepare* with the partition: `txn_coordinator.CoordinatorTxn.owes_marker`);
- or the same producer completed a later transaction elsewhere: one producer runs one transaction at
  a time and the coordinator writes the markers of a transaction to all its partitions before the
  producer may begin the next (`TransactionCoordinator.handleEndTransaction`, CONCURRENT_TRANSACTIONS),
  so a marker newer than this transaction's last write means this partition's marker was lost;
- or, with no coordinator record to go by, the producer last wrote longer ago than any transaction
  may run (`transaction.max.timeout.ms`, default 15 minutes): the coordinator would have aborted it.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from replog.formats.findings import Finding, finding
from replog.recovery.kafka.producer_scan import OpenTxn, open_transactions
from replog.recovery.kafka.producer_state import ProducerState
from replog.recovery.kafka.txn_coordinator import CoordinatorState, CoordinatorTxn

MAX_TXN_TIMEOUT_MS = 900_000   # transaction.max.timeout.ms default (TransactionStateManagerConfig)


@dataclass(frozen=True)
class ClosedProducer:
    """A producer whose last batch in a partition was a marker: its epoch and the marker's time."""

    producer_epoch: int
    timestamp: int


@dataclass
class TxnView:
    """A partition's transactions at its log end: the open ones and the producers a marker closed."""

    topic: str
    partition: int
    path: str
    open: list[OpenTxn] = field(default_factory=list)
    closed: dict[int, ClosedProducer] = field(default_factory=dict)
    max_timestamp: int = -1


def txn_view(topic: str, partition: int, path: str, state: ProducerState, max_timestamp: int | None = None) -> TxnView:
    """The view of a partition from its producer state at the log end (`max_timestamp`: of its latest
    batch; by default its producers' latest write).

    A producer whose state saw a marker (coordinator epoch set) and has nothing open ended on that
    marker: a transactional producer writes nothing but transactions and markers."""
    closed = {pid: ClosedProducer(e.producer_epoch, e.timestamp) for pid, e in state.producers.items()
              if pid not in state.ongoing and e.coordinator_epoch >= 0}
    if max_timestamp is None:
        max_timestamp = max((e.timestamp for e in state.producers.values()), default=-1)
    return TxnView(topic, partition, path, open_transactions(state), closed, max_timestamp)


def coordinator_cause(txn: OpenTxn, coord: CoordinatorTxn | None, topic: str, partition: int) -> str | None:
    """Why the coordinator will write no marker for `txn` on this partition, or None (it will, or unknown)."""
    if coord is None:
        return None
    if coord.producer_id != txn.producer_id:
        return (f"the coordinator moved transactional id {coord.transactional_id!r} to producer id "
                f"{coord.producer_id}: no marker for producer id {txn.producer_id} will come")
    if coord.owes_marker(topic, partition):
        return None
    return (f"the coordinator's record for {coord.transactional_id!r} is {coord.state} (epoch "
            f"{coord.producer_epoch}) without {topic}-{partition}: it believes the transaction complete")


def later_marker_cause(txn: OpenTxn, here: TxnView, views: Sequence[TxnView]) -> str | None:
    """The first other partition where the same producer completed a transaction after this one's last write."""
    for other in views:
        closed = other.closed.get(txn.producer_id)
        if (other is not here and closed is not None and closed.producer_epoch >= txn.producer_epoch
                and closed.timestamp > txn.last_timestamp):
            return (f"producer {txn.producer_id} completed a later transaction on {other.topic}-{other.partition} "
                    f"(marker at {closed.timestamp}, after this transaction's last write at {txn.last_timestamp})")
    return None


def hanging_findings(views: Sequence[TxnView], coordinator: CoordinatorState | None,
                     timeout_ms: int = MAX_TXN_TIMEOUT_MS) -> list[Finding]:
    """`doctor`'s findings for the open transactions of one log dir's partitions."""
    latest = max((v.max_timestamp for v in views), default=-1)
    out: list[Finding] = []
    for view in views:
        for txn in view.open:
            coord = coordinator.of(txn.producer_id) if coordinator is not None else None
            cause = coordinator_cause(txn, coord, view.topic, view.partition) or (
                later_marker_cause(txn, view, views) if coord is None else None)
            where = (f"producer {txn.producer_id} (epoch {txn.producer_epoch}) has a transaction open from offset "
                     f"{txn.first_offset}")
            if cause is not None:
                out.append(finding("KAFKA_TXN_HANGING", view.path, offset=txn.first_offset,
                                   message=f"{where}: {cause}; it pins the last stable offset at "
                                           f"{txn.first_offset}"))
            elif coord is None and latest - txn.last_timestamp > timeout_ms:
                out.append(finding("KAFKA_TXN_OPEN_LONG", view.path, offset=txn.first_offset,
                                   message=f"{where}; its last write is {(latest - txn.last_timestamp) // 1000} s "
                                           f"older than the latest write in this log dir"))
    return out
