"""doctor on one log dir: transactions open at a partition's end that no marker will close."""
from __future__ import annotations

import struct
from pathlib import Path

from crc32c import crc32c

from replog.recovery.doctor import diagnose
from tests.recovery.kafka.internal_records import (
    TS,
    batch,
    high_watermarks,
    marker,
    partition_dir,
    txn_key,
    txn_value,
)

MINUTE = 60_000


def _txn(base: int, pid: int, ts: int) -> bytes:
    return batch(base, 2, pid=pid, producer_epoch=0, seq=0, transactional=True, ts=ts)


def _txn_findings(log_dir: Path) -> dict[str, tuple[str, int | None]]:
    return {Path(f.path).name: (f.code, f.offset) for f in diagnose([log_dir]).findings if "_TXN_" in f.code}


def test_open_transactions_judged_by_the_coordinators_records(tmp_path: Path) -> None:
    d = tmp_path / "broker"
    partition_dir(d, "t-0", [_txn(0, 300, TS + 5 * MINUTE)], [(0, 0)])         # written after the coordinator closed
    partition_dir(d, "t-1", [_txn(0, 301, TS)], [(0, 0)])                      # closed after: lag, or a lost marker
    partition_dir(d, "t-2", [_txn(0, 302, TS)], [(0, 0)])                      # the coordinator still owes a marker
    partition_dir(d, "t-3", [_txn(0, 303, TS), marker(2, 303, ts=TS + 10)], [(0, 0)])   # closed: nothing to say
    partition_dir(d, "__transaction_state-0", [
        batch(0, [(txn_key("a"), txn_value(300, "CompleteCommit", {}, TS + MINUTE))]),
        batch(1, [(txn_key("b"), txn_value(301, "CompleteAbort", {}, TS + MINUTE))]),
        batch(2, [(txn_key("c"), txn_value(302, "Ongoing", {"t": [2]}, TS))]),
        batch(3, [(txn_key("d"), txn_value(303, "CompleteCommit", {}, TS + 20))])], [(0, 0)])
    high_watermarks(d, {"t-0": 2, "t-1": 2, "t-2": 2, "t-3": 3, "__transaction_state-0": 4})
    assert _txn_findings(d) == {"t-0": ("KAFKA_TXN_HANGING", 0), "t-1": ("KAFKA_TXN_MARKER_MISSING", 0)}


def test_without_coordinator_records_only_long_open_transactions_are_reported(tmp_path: Path) -> None:
    d = tmp_path / "broker"
    partition_dir(d, "u-0", [_txn(0, 400, TS), batch(2, 3, pid=401, producer_epoch=0, seq=0, ts=TS + 20 * MINUTE)],
                  [(0, 0)])
    partition_dir(d, "u-1", [_txn(0, 402, TS), batch(2, 3, pid=403, producer_epoch=0, seq=0, ts=TS + MINUTE)],
                  [(0, 0)])
    high_watermarks(d, {"u-0": 5, "u-1": 5})
    assert _txn_findings(d) == {"u-0": ("KAFKA_TXN_OPEN_LONG", 0)}


def _emptied_marker(offset: int, pid: int) -> bytes:
    """A marker batch the cleaner emptied: its 61-byte header kept, no record (count 0), CRC-32C redone."""
    raw = bytearray(marker(offset, pid)[:61])
    struct.pack_into(">i", raw, 8, 61 - 12)
    struct.pack_into(">i", raw, 57, 0)
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    return bytes(raw)


def test_a_control_batch_the_cleaner_emptied_opens_no_transaction(tmp_path: Path) -> None:
    d = tmp_path / "broker"
    partition_dir(d, "v-0", [_emptied_marker(0, 500), batch(1, 3, pid=501, producer_epoch=0, seq=0,
                                                            ts=TS + 20 * MINUTE)], [(0, 0)])
    high_watermarks(d, {"v-0": 4})
    assert _txn_findings(d) == {}
