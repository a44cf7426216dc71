"""Issue 29: `replog repair --protocol autoswitch` of `storeType=defaultRocksDB` stores, proven by a 5.3.3
controller-mode group started on replog's outputs (recovery/rocketmq/rocksdb_repair.py: no consume queue, the
`abort` marker so the broker re-dispatches, the config databases copied).

Premise: `unclean_with_offsets` with both brokers on RocksDB stores (an unclean election left two divergent
replicas, a consumer group committed offsets before the split, both brokers crashed, the controller cleared the
master and stopped), repaired by replog, restarted on replog's outputs with the controller's copied store
(`serve_controller`, the same store type); nothing is sent after the restart. The brokers are the oracle through
the same checks as the file-queue test (tests/brokers/test_rocketmq_repair.py). Offsets are read through the admin
API only: a RocksDB broker keeps them in its `config/consumerOffsets` database and leaves consumerOffset.json stale
(`RocksDBConsumerOffsetManager`, tag rocketmq-all-5.3.3), so the checks on that file (the slave's synced JSON before
the split and after the restart, `check_slave_offsets`) are skipped.

Seen failing once: the same copies repaired, the `abort` marker then removed from both outputs, served by the same
group: `check_served` failed with "served 139 != replog's kept 140; not served [0]" (without the marker the record
at commit-log offset 0 is never dispatched, recovery/rocketmq/rocksdb_repair.py).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.brokers.rocketmq_repair_scenarios import serve_controller, unclean_with_offsets
from tests.brokers.rocketmq_rocksdb import ROCKSDB
from tests.brokers.test_rocketmq_repair import (
    check_doctor,
    check_offsets,
    check_served,
    check_slave,
    lost_seqs,
    repaired,
)

pytestmark = [pytest.mark.brokers, pytest.mark.brokers_full]


def check_rocksdb_stores(copies: dict[str, Path]) -> None:
    """Premise: each broker ran a RocksDB store (its consume queue and offsets in databases, no queue files)."""
    for name, store in copies.items():
        assert (store / "consumequeue" / "CURRENT").is_file(), f"premise: {name} has no RocksDB consume queue"
        assert (store / "config" / "consumerOffsets").is_dir(), f"premise: {name} has no consumerOffsets database"


def check_rocksdb_outputs(result: dict[str, object], stores: dict[str, Path]) -> None:
    """What replog wrote for a RocksDB store: no consume queue, the `abort` marker, the config databases."""
    for name, store in stores.items():
        assert not (store / "consumequeue").exists(), f"{name}: repair wrote a consume queue for a RocksDB store"
        assert (store / "abort").is_file(), f"{name}: repair wrote no abort marker (the broker would not re-dispatch)"
        assert (store / "config" / "consumerOffsets").is_dir(), f"{name}: the consumerOffsets database not copied"


def test_controller_repair_of_rocksdb_stores_serves_what_replog_keeps(tmp_path: Path) -> None:
    """5.3.3 controller mode, RocksDB stores, after an unclean election: repair with `--protocol autoswitch`, the
    group restarted on the outputs with the controller's copied store, replog's master started first."""
    u = unclean_with_offsets(tmp_path / "unclean", ROCKSDB)
    d = u.decision
    check_rocksdb_stores(d.copies)
    result, stores = repaired(d.copies, "autoswitch", "5.3.3", tmp_path / "repaired")
    assert result["leader"] == "n1", f"master: replog {result['leader']}, the controller's last master n1"
    check_rocksdb_outputs(result, stores)
    served = serve_controller(stores, d.controller, "n1", tmp_path / "served", ROCKSDB)
    check_slave(result, served, "n0")
    check_served(d.seqs, result, served.messages, served.master)
    assert lost_seqs(result).get("n0") == set(range(100, 160)), (
        f"replog's lost {lost_seqs(result)}: n0's 60 own messages (seq 100..159) are what the election lost")
    check_offsets(u.committed, u.offsets_before, result, served.offsets)
    check_doctor(stores)
