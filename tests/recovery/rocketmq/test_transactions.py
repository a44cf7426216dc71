"""Transactional messages (`recovery.rocketmq.transactions`) on stores written byte by byte: half messages
(`TransactionalMessageBridge#parseHalfMessageInner`), committed messages (`EndTransactionProcessor
#endMessageTransaction`: COMMIT sys flag, PREPARED TRANSACTION OFFSET = the half's offset) and op messages (tag "d",
body "offset," per half, `TransactionalMessageServiceImpl#deletePrepareMessage`)."""
from __future__ import annotations

from pathlib import Path

from replog.recovery.rocketmq.store_model import load_store
from replog.recovery.rocketmq.transactions import transaction_impact, transactions
from tests.recovery.rocketmq.independent import Store

HALF, OP = "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC"
COMMIT = 0x08


def txn_store(tmp_path: Path, *, ops: str, name: str = "store") -> Path:
    """Four transactions on T: 0 and 1 commit, 2 rolls back, 3 is still open; one op message with body `ops`."""
    st = Store(file_size=8192)
    for i in range(4):
        tid = f"TID{i}"
        half = st.append(HALF, 0, f"t{i}".encode(), props={"REAL_TOPIC": "T", "REAL_QID": str(i % 2), "UNIQ_KEY": tid,
                                                           "__transactionId__": tid, "TRAN_MSG": "true"})
        if i < 2:
            st.append("T", i % 2, f"t{i}".encode(), props={"UNIQ_KEY": tid, "TRAN_MSG": "true"}, sys_flag=COMMIT,
                      prepared=half.offset)
    st.append(OP, 0, ops.encode(), tags="d")
    return st.write(tmp_path / name)


def states(root: Path) -> dict[int, str]:
    return {t.half_queue_offsets[0]: t.state for t in transactions(load_store(root).messages).values()}


def test_states_from_halves_ops_and_commits(tmp_path: Path) -> None:
    assert states(txn_store(tmp_path, ops="0,1,2,")) == {
        0: "committed", 1: "committed", 2: "rolled_back", 3: "unresolved"}, "op removes 0-2; 3 has no op"


def test_an_op_lost_leaves_a_committed_transaction_open(tmp_path: Path) -> None:
    assert states(txn_store(tmp_path, ops="2,")) == {
        0: "commit_op_lost", 1: "commit_op_lost", 2: "rolled_back", 3: "unresolved"}, "only 2 removed"


def test_impact_lists_open_and_changed_transactions(tmp_path: Path) -> None:
    before = load_store(txn_store(tmp_path, ops="0,1,2,", name="a")).messages
    after = load_store(txn_store(tmp_path, ops="2,", name="b")).messages
    got = {(t.half_queue_offsets[0], t.state_before, t.state_after) for t in transaction_impact("s", before, after)}
    assert got == {(0, "committed", "commit_op_lost"), (1, "committed", "commit_op_lost"),
                   (3, "unresolved", "unresolved")}, f"open or changed only: {got}"
    gone = transaction_impact("s", before, [m for m in after if m.topic != HALF])
    assert {(t.state_before, t.state_after) for t in gone} >= {("rolled_back", "gone")}, \
        f"a half message the replay loses is 'gone': {gone}"
