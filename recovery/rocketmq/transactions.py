"""Transactional messages on disk: half messages, op messages and the committed messages they become.

Rules (apache/rocketmq 5.3.3, broker/.../transaction/queue and broker/.../processor/EndTransactionProcessor.java):
* A prepared message is stored as a half message in `RMQ_SYS_TRANS_HALF_TOPIC` queue 0, with its real topic and
  queue in the properties `REAL_TOPIC` / `REAL_QID`, its transaction id in `__transactionId__` (the client's
  UNIQ_KEY) and the sys flag reset to NOT_TYPE, so it is dispatched to the half queue
  (`TransactionalMessageBridge#parseHalfMessageInner`).
* A commit writes the real message (sys flag COMMIT, its PREPARED TRANSACTION OFFSET field = the half message's
  commit-log offset, the half's properties, UNIQ_KEY included) and then marks the half removed; a rollback only marks
  it removed (`EndTransactionProcessor#processRequest`, `#endMessageTransaction`).
* "Removed" is an op message in `RMQ_SYS_TRANS_OP_HALF_TOPIC` (the half's queue id), tag "d"
  (`TransactionalMessageUtil.REMOVE_TAG`), body: half queue offsets each followed by "," (one or several, batched by
  `TransactionalOpBatchService`; `TransactionalMessageServiceImpl#deletePrepareMessage`, `#getOpMessage`). The check
  service reads the op bodies back the same way (`#fillOpRemoveMap`: split on ",", any other tag is illegal).
* A half message no op message removes is checked back: after `transactionTimeOut` the check service asks the
  producer group (`TransactionalMessageCheckService`, every `transactionCheckInterval`), re-putting the half message
  (same properties, a new queue offset) while the answer is awaited, up to `transactionCheckMax` times. A COMMIT
  answer runs the commit again: the real message is written a second time.
Every copy of a half message (the first and the check's re-puts) carries the same transaction id, so a transaction is
resolved when an op message removes any of its copies.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from replog.formats.rocketmq.commitlog import TRANSACTION_MASK
from replog.formats.shape import Shape
from replog.recovery.rocketmq.store_model import HALF_TOPIC, OP_TOPIC, MessageRef

TRANSACTION_COMMIT = 0x08          # MessageSysFlag.TRANSACTION_COMMIT_TYPE
REMOVE_TAG = "d"
COMMITTED, ROLLED_BACK = "committed", "rolled_back"
COMMIT_OP_LOST, UNRESOLVED, GONE = "commit_op_lost", "unresolved", "gone"


@dataclass
class Transaction:
    """One transaction as the store holds it: its half message copies, whether an op message removes one, and the
    committed message it became (if any)."""

    transaction_id: str
    real_topic: str
    real_queue_id: int
    half_queue_offsets: list[int] = field(default_factory=list)
    half_commitlog_offset: int = 0           # the first copy's
    removed: bool = False
    committed_at: int | None = None          # commit-log offset of the committed real message

    @property
    def state(self) -> str:
        if self.removed:
            return COMMITTED if self.committed_at is not None else ROLLED_BACK
        return COMMIT_OP_LOST if self.committed_at is not None else UNRESOLVED


def removed_offsets(messages: Iterable[MessageRef]) -> set[tuple[int, int]]:
    """(half queue id, half queue offset) every op message marks removed."""
    out: set[tuple[int, int]] = set()
    for m in messages:
        if m.topic != OP_TOPIC or m.field("TAGS") != REMOVE_TAG:
            continue
        for part in (m.field("body") or "").split(","):
            if part.isdigit() and len(part) < 19:
                out.add((m.queue_id, int(part)))
    return out


def transactions(messages: list[MessageRef]) -> dict[str, Transaction]:
    """Every transaction whose half message the messages hold, by transaction id, in log order."""
    removed = removed_offsets(messages)
    commits_by_half = {m.prepared_offset: m for m in messages if m.transaction == TRANSACTION_COMMIT}
    commits_by_id = {m.field("UNIQ_KEY"): m for m in commits_by_half.values() if m.field("UNIQ_KEY")}
    out: dict[str, Transaction] = {}
    for m in messages:
        if m.topic != HALF_TOPIC or m.sys_flag & TRANSACTION_MASK:
            continue
        tid = m.field("__transactionId__") or m.field("UNIQ_KEY") or f"@{m.physical_offset}"
        qid = m.field("REAL_QID") or ""
        t = out.get(tid)
        if t is None:
            t = out[tid] = Transaction(tid, m.field("REAL_TOPIC") or "", int(qid) if qid.isdigit() else -1,
                                       half_commitlog_offset=m.physical_offset)
        t.half_queue_offsets.append(m.queue_offset)
        t.removed = t.removed or (m.queue_id, m.queue_offset) in removed
        commit = commits_by_half.get(m.physical_offset) or commits_by_id.get(tid)
        if commit is not None and t.committed_at is None:
            t.committed_at = commit.physical_offset
    return out


EXPLAIN = {
    COMMIT_OP_LOST: "committed (the real message is kept) but no op message removes its half message: the broker's "
                    "check service asks the producer group again, and a COMMIT answer writes the message a second "
                    "time (consumers may get it twice)",
    UNRESOLVED: "neither committed nor removed: the broker checks back the producer group (up to transactionCheckMax "
                "times, then discards it); a rollback whose op message was lost looks the same",
    GONE: "its half message is gone: an end-transaction request finds nothing and no check happens",
    COMMITTED: "committed and removed",
    ROLLED_BACK: "rolled back (removed, never committed)",
}


@dataclass
class TransactionImpact:
    store: str
    transaction_id: str
    real_topic: str
    real_queue_id: int
    half_queue_offsets: list[int]
    half_commitlog_offset: int
    state_before: str
    state_after: str
    explanation: str


TRANSACTION_IMPACT = Shape("store", "transaction_id", "real_topic", "real_queue_id", "half_queue_offsets",
                           "half_commitlog_offset", "state_before", "state_after", "explanation")
OPEN = (COMMIT_OP_LOST, UNRESOLVED)


def transaction_impact(store: str, before: list[MessageRef], after: list[MessageRef]) -> list[TransactionImpact]:
    """Each transaction the store leaves open after the replay (op message lost, or never ended) or whose state the
    replay changes, with what the broker does about it."""
    was, now = transactions(before), transactions(after)
    out = []
    for tid, t in {**was, **now}.items():
        state_before = was[tid].state if tid in was else GONE
        state_after = now[tid].state if tid in now else GONE
        if state_after in OPEN or state_after != state_before:
            out.append(TransactionImpact(store, tid, t.real_topic, t.real_queue_id, list(t.half_queue_offsets),
                                         t.half_commitlog_offset, state_before, state_after, EXPLAIN[state_after]))
    return out
