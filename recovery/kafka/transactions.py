"""When an open transaction hangs: the rules `impact` and `doctor` share.

A partition's transaction stays open until a COMMIT or ABORT marker of its producer
(`ProducerAppendInfo.appendEndTxnMarker` closes whatever the producer has open) and pins the last
stable offset there, so read_committed consumers stop at it (`ProducerStateManager.firstUndecidedOffset`).
Only the transaction coordinator writes markers: it owes a partition one while its record for the
producer (`__transaction_state`) is Ongoing/Prepare* with the partition
(`txn_coordinator.CoordinatorTxn.owes_marker`), and aborts a transaction that times out
(`abortTimedOutTransactions`). A record that owes this partition nothing (Complete*, Empty, or a newer
producer id of the transactional id) means:
- on the partition's leader (what `impact` sees after a replay), the transaction hangs: no marker will
  come and it needs `kafka-transactions.sh abort`;
- on one log dir alone (`doctor`), it hangs when its data was written after the coordinator's last
  record for the producer (a write outside any transaction the coordinator knows: adding a partition
  to a transaction makes a new record first); when the coordinator completed it later, this replica
  either lags behind a leader holding the marker or lost the marker to a truncation, which only the
  replicas together (`impact`) can tell.
With no record to go by, a transaction whose producer last wrote longer ago than any transaction may
run (`transaction.max.timeout.ms`, default 15 minutes) is reported as probably hanging; the time now is
the latest the partition and the coordinators' records know of.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from replog.formats.findings import Finding, finding
from replog.recovery.kafka.producer_scan import OpenTxn, open_transactions
from replog.recovery.kafka.producer_state import ProducerState
from replog.recovery.kafka.txn_coordinator import CoordinatorState, CoordinatorTxn

MAX_TXN_TIMEOUT_MS = 900_000   # transaction.max.timeout.ms default (TransactionStateManagerConfig)


@dataclass
class TxnView:
    """A partition's open transactions at its log end, and the latest time it knows of."""

    topic: str
    partition: int
    path: str
    open: list[OpenTxn] = field(default_factory=list)
    max_timestamp: int = -1


def txn_view(topic: str, partition: int, path: str, state: ProducerState) -> TxnView:
    """The view of a partition from its producer state at the log end (its latest time: the latest write
    of a producer with an id, which idempotent and transactional producers all have)."""
    latest = max((e.timestamp for e in state.producers.values()), default=-1)
    return TxnView(topic, partition, path, open_transactions(state), latest)


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


def hanging_findings(view: TxnView, coordinator: CoordinatorState | None,
                     timeout_ms: int = MAX_TXN_TIMEOUT_MS) -> list[Finding]:
    """`doctor`'s findings for the transactions open at a partition's log end (module docstring)."""
    now = max(view.max_timestamp, coordinator.latest_update if coordinator is not None else -1)
    out: list[Finding] = []
    for txn in view.open:
        coord = coordinator.of(txn.producer_id) if coordinator is not None else None
        cause = coordinator_cause(txn, coord, view.topic, view.partition)
        where = (f"producer {txn.producer_id} (epoch {txn.producer_epoch}) has a transaction open from offset "
                 f"{txn.first_offset}, last written at {txn.last_timestamp}")
        if coord is not None and cause is not None:
            late = coord.last_update_timestamp < txn.last_timestamp
            out.append(finding(
                "KAFKA_TXN_HANGING" if late else "KAFKA_TXN_MARKER_MISSING", view.path, offset=txn.first_offset,
                message=f"{where}: {cause} (record of {coord.last_update_timestamp}); "
                        + ("no marker will close it: it pins the last stable offset at " if late else
                           "this replica lags behind a leader holding the marker, or lost it (then it hangs, "
                           "pinning the last stable offset at ") + f"{txn.first_offset}" + ("" if late else ")")))
        elif coord is None and now - txn.last_timestamp > timeout_ms:
            out.append(finding("KAFKA_TXN_OPEN_LONG", view.path, offset=txn.first_offset,
                               message=f"{where}; that is {(now - txn.last_timestamp) // 1000} s before the latest "
                                       "write this partition records, and no coordinator record was found for it"))
    return out
