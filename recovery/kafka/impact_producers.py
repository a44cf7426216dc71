"""What a replay's truncation means for the producers that wrote the lost batches, and for transactions.

Producers: the lost batches of each producer id and epoch, with their sequence
ranges; then what the new leader does with that producer's next batch and with a
retry of its first lost batch, by the broker's rules for client appends:
- a batch whose epoch and first/last sequence match one of the producer's last five batches on the
  leader is a duplicate: answered with that batch's offset, nothing written
  (`ProducerStateEntry.findDuplicateBatch`, checked first by `UnifiedLog.analyzeAndValidateProducerState`);
- an epoch below the leader's is fenced: INVALID_PRODUCER_EPOCH (`ProducerAppendInfo.checkProducerEpoch`);
- a new epoch must start at sequence 0; in the same epoch the first sequence must follow the
  leader's last one, else OUT_OF_ORDER_SEQUENCE_NUMBER; a leader with no state for the producer
  accepts any sequence (`ProducerAppendInfo.checkSequence`, `inSequence`).
The producer's next batch is the one its client sends after the lost ones: in their epoch, at the
sequence after theirs; but when a transaction marker of a higher epoch closed them on the lost
replica (transactions v2, KIP-890: the coordinator ends every transaction by bumping the epoch, the
marker carries the bumped one and the EndTxn response hands it to the client), the client had
moved to that epoch, whose first batch starts at sequence 0 (`TransactionManager` resets its
sequences on an epoch bump). Transactions v1 markers keep the epoch: the sequences go on.

Transactions: those open on the partition after the replay (the leader's producer state at its log
end), each `open` or `hanging` (`transactions.coordinator_cause`, or its marker lost by truncation:
the lost replica had closed it, the leader never will), and those open on each replica before.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from replog.formats.kafka import batch as v2
from replog.formats.kafka import control
from replog.formats.shape import Field, Shape
from replog.recovery.kafka.impact_groups import LostLog
from replog.recovery.kafka.producer_scan import OpenTxn, ProducerScan
from replog.recovery.kafka.record_spans import marked_blocks
from replog.recovery.kafka.transactions import coordinator_cause
from replog.recovery.kafka.txn_coordinator import CoordinatorState

ACCEPTED, DUPLICATE, FENCED, OUT_OF_ORDER = "accepted", "duplicate", "fenced", "out_of_order_sequence"


@dataclass
class LostWrites:
    """The lost batches of one producer id and epoch on one replica."""

    producer_id: int
    producer_epoch: int
    replica: str
    records_lost: int = 0
    batches: int = 0
    first_offset: int = 0
    last_offset: int = 0
    first_sequence: int = -1          # of its lowest lost batch
    last_sequence: int = -1           # of its highest
    first_batch_last_sequence: int = -1
    transactional: bool = False
    acknowledged: bool = False        # a lost batch lay below the replica's high watermark
    leader_producer_epoch: int | None = None
    leader_last_sequence: int | None = None
    next_producer_epoch: int = -1     # of the producer's next batch (module docstring)
    next_sequence: int = -1
    next_append: str = ACCEPTED
    retry: str = ACCEPTED
    explanation: str = ""


PRODUCER_IMPACT = Shape("producer_id", "producer_epoch", "records_lost", "first_sequence", "last_sequence",
                        "first_offset", "last_offset", "batches", "replica", "transactional", "acknowledged",
                        "leader_producer_epoch", "leader_last_sequence", "next_producer_epoch", "next_sequence",
                        "next_append", "retry", "explanation")


@dataclass(frozen=True)
class LostMarker:
    replica: str
    producer_id: int
    producer_epoch: int
    offset: int
    kind: str              # COMMIT | ABORT


def lost_writes(lost: list[LostLog]) -> tuple[list[LostWrites], list[LostMarker]]:
    """Per replica and producer id/epoch, its lost data batches; and the lost transaction markers."""
    writes: dict[tuple[str, int, int], LostWrites] = {}
    found: list[LostMarker] = []
    for x in lost:
        for block, marks, _ in marked_blocks(x.log):
            for i, m in marks.items():
                if m is not None:
                    found.append(LostMarker(x.replica, int(block.producer_id[i]), int(block.producer_epoch[i]),
                                            int(block.base_offset[i]), control.CONTROL_TYPE_NAMES[m[0]]))
            rows = (block.producer_id >= 0) & (block.is_control == 0) & (block.magic == 2)
            cols = [block.column(n)[rows].tolist() for n in ("producer_id", "producer_epoch", "base_offset",
                                                             "last_offset", "count", "base_sequence",
                                                             "is_transactional")]
            for pid, epoch, base, last, count, seq, txn in zip(*cols, strict=True):
                _add(writes.setdefault((x.replica, pid, epoch), LostWrites(pid, epoch, x.replica, first_offset=base)),
                     base, last, count, seq, bool(txn), base < x.high_watermark)
    return sorted(writes.values(), key=lambda w: (w.producer_id, w.producer_epoch, w.replica)), found


def _add(w: LostWrites, base: int, last: int, count: int, seq: int, txn: bool, acked: bool) -> None:
    last_seq = v2.increment_sequence(seq, last - base) if seq >= 0 else -1
    if w.batches == 0 or base <= w.first_offset:
        w.first_offset, w.first_sequence, w.first_batch_last_sequence = base, seq, last_seq
    if w.batches == 0 or last >= w.last_offset:
        w.last_offset, w.last_sequence = last, last_seq
    w.batches += 1
    w.records_lost += count
    w.transactional = w.transactional or txn
    w.acknowledged = w.acknowledged or acked


def judge_producers(writes: list[LostWrites], after: ProducerScan, markers: Sequence[LostMarker] = ()) -> None:
    """Fill in what the leader does with each producer's next batch and with a retry of its first lost one;
    `markers`: the lost transaction markers (`lost_writes`), which tell the epoch the producer went on in."""
    for w in writes:
        entry = after.state.producers.get(w.producer_id)
        if entry is not None and entry.producer_epoch >= 0:
            w.leader_producer_epoch, w.leader_last_sequence = entry.producer_epoch, entry.last_sequence
        if w.first_sequence < 0:
            w.next_append = w.retry = ACCEPTED
            w.explanation = "not an idempotent producer: the broker checks no sequence"
            continue
        w.next_producer_epoch, w.next_sequence = next_batch(w, markers)
        w.next_append = _append(w, w.next_producer_epoch, w.next_sequence)
        kept = after.recent[w.producer_id].batches if w.producer_id in after.recent else ()
        duplicate = any(b.producer_epoch == w.producer_epoch and b.base_sequence == w.first_sequence
                        and b.last_sequence == w.first_batch_last_sequence for b in kept)
        w.retry = DUPLICATE if duplicate else _append(w, w.producer_epoch, w.first_sequence)
        w.explanation = _explain(w)


def next_batch(w: LostWrites, markers: Sequence[LostMarker]) -> tuple[int, int]:
    """(producer epoch, first sequence) of the producer's next batch after its lost ones (module docstring):
    the epoch of the first lost marker of its own that follows them when that is higher (transactions v2),
    at sequence 0; else their epoch, at the sequence after the last lost one."""
    closing = [m for m in markers if m.replica == w.replica and m.producer_id == w.producer_id
               and m.offset > w.last_offset]
    marker = min(closing, key=lambda m: m.offset, default=None)
    if marker is not None and marker.producer_epoch > w.producer_epoch:
        return marker.producer_epoch, 0
    return w.producer_epoch, v2.increment_sequence(w.last_sequence, 1)


def _append(w: LostWrites, epoch: int, first_seq: int) -> str:
    """The leader's answer to a batch of `epoch` starting at `first_seq` (`ProducerAppendInfo.checkProducerEpoch`,
    `checkSequence`)."""
    leader_epoch, leader_seq = w.leader_producer_epoch, w.leader_last_sequence
    if leader_epoch is None:
        return ACCEPTED
    if epoch < leader_epoch:
        return FENCED
    if epoch > leader_epoch:
        return ACCEPTED if first_seq == 0 else OUT_OF_ORDER
    in_sequence = leader_seq is not None and (first_seq == leader_seq + 1
                                              or (first_seq == 0 and leader_seq == v2.INT32_MAX))
    return ACCEPTED if in_sequence else OUT_OF_ORDER


def _explain(w: LostWrites) -> str:
    lost = f"sequences {w.first_sequence}..{w.last_sequence} are lost"
    if w.leader_producer_epoch is None:
        return (f"{lost}; the leader has no state for producer {w.producer_id}: it accepts any sequence, "
                "the gap goes unnoticed")
    where = f"the leader's last sequence for epoch {w.leader_producer_epoch} is {w.leader_last_sequence}"
    if w.next_producer_epoch != w.producer_epoch:
        where += (f"; a marker of epoch {w.next_producer_epoch} closed the lost batches (transactions v2), so its "
                  f"next batch starts that epoch at sequence 0")
    nxt = {OUT_OF_ORDER: "its next batch fails with OUT_OF_ORDER_SEQUENCE_NUMBER",
           FENCED: "it is fenced: INVALID_PRODUCER_EPOCH",
           ACCEPTED: "its next batch is accepted"}[w.next_append]
    retry = {DUPLICATE: "a retry of its first lost batch is answered as a duplicate and not written",
             OUT_OF_ORDER: "a retry of its first lost batch fails with OUT_OF_ORDER_SEQUENCE_NUMBER",
             FENCED: "a retry is fenced", ACCEPTED: "a retry of its first lost batch is written again"}[w.retry]
    return f"{lost}; {where}: {nxt}; {retry}"


@dataclass
class TxnImpact:
    producer_id: int
    producer_epoch: int
    first_offset: int
    state: str                       # open | hanging
    cause: str
    last_timestamp: int
    coordinator: dict[str, Any] | None = None


TXN_IMPACT = Shape("producer_id", "producer_epoch", "first_offset", "state", "cause", "last_timestamp", "coordinator")


@dataclass
class TxnBefore:
    replica: str
    open: list[OpenTxn] = field(default_factory=list)
    last_stable_offset: int = 0


OPEN_TXN = Shape("producer_id", "producer_epoch", "first_offset", "last_timestamp")
TXN_BEFORE = Shape("replica", "last_stable_offset", Field("open", shape=OPEN_TXN))


def judge_transactions(open_after: list[OpenTxn], lost_markers: list[LostMarker], coordinator: CoordinatorState | None,
                       topic: str, partition: int) -> list[TxnImpact]:
    """Each transaction open after the replay: hanging (and why) or open.

    A lost marker makes it hang unless the coordinator's record still owes this partition a marker
    (PrepareCommit/PrepareAbort): a coordinator that loads such a record sends its markers again
    (`TransactionStateManager.loadTransactionsForTxnTopicPartition` collects them as pending,
    `TransactionCoordinator.onElection` hands them to `TransactionMarkerChannelManager.addTxnMarkersToSend`),
    so the new leader gets the marker after all."""
    out = []
    for t in open_after:
        coord = coordinator.of(t.producer_id) if coordinator is not None else None
        marker = next((m for m in lost_markers if m.producer_id == t.producer_id and m.offset > t.first_offset), None)
        owed = coord is not None and coord.producer_id == t.producer_id and coord.owes_marker(topic, partition)
        cause = None
        if marker is not None and not owed:
            cause = (f"its {marker.kind} marker at offset {marker.offset} was lost when {marker.replica} truncated: "
                     "the coordinator had it written and will not write it again")
        cause = cause or coordinator_cause(t, coord, topic, partition)
        state = "hanging" if cause else "open"
        if cause is None:
            lost = (f"its {marker.kind} marker at offset {marker.offset} was lost when {marker.replica} truncated; "
                    if marker is not None else "no marker yet: ")
            cause = (f"{lost}read_committed consumers stop at offset {t.first_offset} until one comes"
                     + (f" (the coordinator, {coord.state}, still owes it and sends it again)" if coord is not None
                        else ""))
        out.append(TxnImpact(t.producer_id, t.producer_epoch, t.first_offset, state, cause, t.last_timestamp,
                             coord.to_dict() if coord is not None else None))
    return out
