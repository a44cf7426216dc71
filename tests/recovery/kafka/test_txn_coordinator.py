"""The coordinators' transaction records, read from `__transaction_state` written by independent encoders."""
from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from replog.formats.kafka.internal.transaction_state import (
    decode_transaction_state,
    encode_transaction_log_key,
    encode_transaction_log_value,
)
from replog.recovery.kafka.txn_coordinator import read_coordinator_state
from tests.recovery.kafka.internal_records import STATES, TS, batch, high_watermarks, partition_dir, txn_key, txn_value


def test_latest_record_per_transactional_id_found_by_producer_id(tmp_path: Path) -> None:
    records = [(txn_key("a"), txn_value(10, "Ongoing", {"t": [0, 1]}, TS)),
               (txn_key("b"), txn_value(11, "Ongoing", {"t": [2]}, TS + 1)),
               (txn_key("a"), txn_value(10, "PrepareCommit", {"t": [0, 1]}, TS + 2)),
               (txn_key("b"), None),                                       # expired
               (txn_key("c"), txn_value(12, "CompleteAbort", {}, TS + 3, epoch=4))]
    partition_dir(tmp_path, "__transaction_state-3", [batch(i, [r]) for i, r in enumerate(records)], [(0, 0)])
    high_watermarks(tmp_path, {"__transaction_state-3": len(records)})
    state = read_coordinator_state([tmp_path])
    assert set(state.by_producer) == {10, 12} and state.of(11) is None
    a = state.of(10)
    assert a is not None and a.state == "PrepareCommit" and a.owes_marker("t", 1) and not a.owes_marker("t", 2)
    c = state.of(12)
    assert c is not None and (c.producer_epoch, c.partitions, c.owes_marker("t", 0)) == (4, frozenset(), False)
    assert state.latest_update == TS + 3 and state.sources == [str(tmp_path / "__transaction_state-3")]


@settings(max_examples=60, deadline=None)
@given(tid=st.text(min_size=1, max_size=20), pid=st.integers(0, 2**62), epoch=st.integers(0, 2**15 - 1),
       state=st.sampled_from(sorted(STATES)), updated=st.integers(1000, 2**62),
       parts=st.dictionaries(st.text(min_size=1, max_size=8), st.lists(st.integers(0, 2**31 - 1), max_size=3),
                             max_size=3))
def test_transaction_log_codec_matches_the_independent_layout(tid: str, pid: int, epoch: int, state: str,
                                                               updated: int, parts: dict[str, list[int]]) -> None:
    key, value = txn_key(tid), txn_value(pid, state, parts, updated, epoch=epoch)
    data = {"producerId": pid, "producerEpoch": epoch, "transactionTimeoutMs": 60_000,
            "transactionStatus": STATES[state], "transactionPartitions": [
                {"topic": t, "partitionIds": ids} for t, ids in parts.items()],
            "transactionLastUpdateTimestampMs": updated, "transactionStartTimestampMs": updated - 1000}
    assert encode_transaction_log_key(tid) == key and encode_transaction_log_value(data) == value
    decoded = decode_transaction_state(key, value)
    assert decoded["key"]["data"]["transactionalId"] == tid
    assert decoded["value"]["data"]["transactionState"] == state
