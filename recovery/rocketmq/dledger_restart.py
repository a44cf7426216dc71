"""What a DLedger peer's abnormal restart does to its own consume queues on RocketMQ 5.2.0 and later.

Read in apache/rocketmq `store/src/main/java/org/apache/rocketmq/store/dledger/DLedgerCommitLog.java`
(`dledgerRecoverAbnormally`, added by #7599 "fix dledger recover abnormally may lost consume queue of tail", first
tagged rocketmq-all-5.2.0, unchanged at 5.3.3 and on develop): with an `abort` file the broker walks the data files
and ends the walk at `processOffset = fileFromOffset + Σ dispatchRequest.getMsgSize()` of the last file walked. The
sum counts each message's own size, not the entry's (`getBufferSize()`: size + DLedgerEntry.BODY_OFFSET, 48), so
`processOffset` falls 48 bytes short per entry of that file. It then calls `truncateDirtyLogicFiles(processOffset)`
only when the consume queues' maximum physical offset read before the walk reaches it
(`ConsumeQueue#truncateDirtyLogicFiles`: drops every unit whose physical offset is at or past it), and the reput
restarts at the log's end (`DefaultMessageStore#start`: `setReputFromOffset(commitLog.getConfirmOffset())`, which
`DLedgerCommitLog#getConfirmOffset` makes `getMaxOffset()`). The messages at or past `processOffset` stay in the
Raft log (and on every other peer) but this peer's consume queues no longer index them, and the next messages take
their queue slots (`[BUG]logic queue order maybe wrong`). 4.x (`DLedgerCommitLog#recover`) truncates at the data's
wrote position instead: no such gap. Seen in the lab: tests/brokers/test_rocketmq_lab5.py.
"""
from __future__ import annotations

from replog.formats.findings import Finding, finding
from replog.formats.rocketmq import dledger as dl
from replog.recovery.rocketmq.recovery_rule import version_tuple
from replog.recovery.rocketmq.store_model import MessageRef, StoreModel

SINCE = (5, 2, 0)      # rocketmq-all-5.2.0: the first tag holding #7599 (no version given: a 5.x abort file)


def process_offset(store: StoreModel) -> int | None:
    """Where `dledgerRecoverAbnormally` believes the log ends: the last data file's start plus its messages'
    sizes without their entry headers; None when the store has no DLedger entries."""
    log = store.dledger
    if log is None or not log.entries or not store.files:
        return None
    last_start = store.files[-1][0]
    in_last = [e for e in log.entries if e.pos >= last_start]
    return last_start + sum(e.size - dl.BODY_OFFSET for e in in_last)


def queue_max(store: StoreModel) -> int:
    """`maxPhyOffsetOfConsumeQueue` as the broker reads it before the walk (`ConsumeQueueStore#
    getMaxPhyOffsetInConsumeQueue`: the greatest offset + size of a queue's last unit): the truncation only runs
    when it reaches `processOffset`, so a peer whose queues stop short of it (an uncommitted tail, never
    dispatched) keeps every unit."""
    return max((q.max_physic_offset for q in store.queues.values()), default=0)


def _since_5_2(store: StoreModel) -> bool:
    """The broker version given, else the store's own word: a 5.x broker writes its PID into `abort`
    (`DefaultMessageStore#createTempFile`), 4.x leaves it empty, and no 4.x has the rule."""
    version = store.rule.version
    if version is not None:
        return version_tuple(version) >= SINCE
    return store.abort.pid is not None


def unindexed_on_restart(store: StoreModel) -> tuple[int, list[MessageRef]] | None:
    """(processOffset, the messages the peer's consume queues drop) when this peer restarts from its store after
    an abnormal stop on a 5.2.0+ broker; None when its restart keeps every unit."""
    if store.dledger is None or not store.abort.present or not _since_5_2(store):
        return None
    cut = process_offset(store)
    if cut is None or queue_max(store) < cut:
        return None
    dropped = [m for m in store.messages if m.physical_offset >= cut]
    return (cut, dropped) if dropped else None


def restart_findings(store: StoreModel) -> list[Finding]:
    """The hazard `unindexed_on_restart` finds, as a finding of the replica's replay outcome."""
    gap = unindexed_on_restart(store)
    if gap is None:
        return []
    cut, dropped = gap
    version = store.rule.version or "5.x"
    return [finding("ROCKETMQ_DLEDGER_RESTART_UNINDEXED", store.path, offset=cut,
                    message=f"{store.name} restarts after an abnormal stop: a {version} broker's DLedger recovery "
                            f"ends at {cut} (48 bytes short per entry of the last data file) and drops its consume-"
                            f"queue units from there: {len(dropped)} messages stay in the log, unindexed on this "
                            f"peer (DLedgerCommitLog#dledgerRecoverAbnormally)",
                    process_offset=cut, unindexed=len(dropped), first_offset=dropped[0].physical_offset,
                    last_offset=dropped[-1].physical_offset)]
