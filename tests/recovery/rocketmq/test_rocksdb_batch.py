"""A BatchCQ topic in a `storeType=defaultRocksDB` store, built here byte by byte the way the 5.3.3 broker lays it
out (recovery/rocketmq/rocksdb_batch.py, seen in tests/brokers/test_rocketmq_rocks_more.py): one inner-batch record
per batch, one RocksDB unit per batch keyed at its base offset, the other keys empty; the offset table's max is the
last base, its min wherever the broker's binary search put it."""
from __future__ import annotations

from pathlib import Path

from replog.recovery.rocketmq.doctor import diagnose_store
from replog.recovery.rocketmq.rocksdb_batch import BatchQueue
from replog.recovery.rocketmq.store_model import load_store
from replog.toolkit.rocketmq_views import store_rows
from tests.recovery.rocketmq.independent import Store
from tests.recovery.rocketmq.stores import tree_digest
from tests.recovery.rocketmq.test_rocksdb import be, codes, offset_key, unit_key, unit_value, write_db

INNER_BATCH_FLAG = 0x80   # MessageSysFlag.INNER_BATCH_FLAG
BATCHES = (3, 1, 5, 2)     # bases 0, 3, 4, 9; the queue's next offset 11


def batch_rocks_store(root: Path, served_min: int, *, skew: int = 0) -> Path:
    """BATCHES on B/0 as inner-batch records and their units; `skew` moves the third unit's key off its base."""
    s = Store(file_size=8192)
    base, units = 0, {}
    for i, n in enumerate(BATCHES):
        m = s.append("B", 0, b"batch" * 20, props={"INNER_NUM": str(n), "INNER_BASE": str(base)},
                     sys_flag=INNER_BATCH_FLAG, queue_offset=base)
        units[unit_key("B", 0, base + (skew if i == 2 else 0))] = unit_value(m)
        last, base = m, base + n
    s.write(root, queues={})
    offsets = {offset_key("B", "max", 0): be(last.offset, 8) + be(last.queue_offset, 8),
               offset_key("B", "min", 0): be(0, 8) + be(served_min, 8),
               offset_key("CHECKPOINT_TOPIC", "max", 0): be(s.end, 8)}
    write_db(root / "consumequeue", {"default": units, "offset": offsets})
    return root


def test_the_brokers_batch_layout_is_no_damage_and_its_reach_is_told(tmp_path: Path) -> None:
    root = batch_rocks_store(tmp_path / "store", served_min=0)
    before = tree_digest(root)
    found = codes(diagnose_store(root)[0])
    assert not [m for c, m in found if c == "ROCKETMQ_CQ_INVALID"], f"the broker's own layout is not malformed: {found}"
    batch = [m for c, m in found if c == "ROCKETMQ_ROCKSDB_BATCH_CQ"]
    assert len(batch) == 1, f"one finding for B/0: {found}"
    assert "from the served min offset 0 gets 3 messages (1 units) and 8 are unreachable" in batch[0], batch[0]
    assert "next offset is 10" in batch[0] and "offsets 10..10 again" in batch[0], f"the restart's reuse: {batch[0]}"
    assert tree_digest(root) == before, "the input did not change"


def test_a_served_min_inside_the_queue_is_where_consumers_start(tmp_path: Path) -> None:
    """The broker's min entry 9 (its binary search over sparse keys): ls shows it, doctor reaches from it."""
    root = batch_rocks_store(tmp_path / "store", served_min=9)
    _, rows = store_rows(load_store(root))
    assert [(r["cq_min_offset"], r["cq_max_offset"]) for r in rows] == [(9, 10)], f"ls's range: {rows}"
    batch = [m for c, m in codes(diagnose_store(root)[0]) if c == "ROCKETMQ_ROCKSDB_BATCH_CQ"]
    assert batch and "served min offset 9 gets 2 messages (1 units) and 9 are unreachable" in batch[0], batch


def test_a_gap_that_is_not_a_batch_is_still_malformed(tmp_path: Path) -> None:
    root = batch_rocks_store(tmp_path / "store", served_min=0, skew=1)
    found = codes(diagnose_store(root)[0])
    assert any(c == "ROCKETMQ_CQ_INVALID" and "unit 5 follows 3" in m for c, m in found), \
        f"key 5 after the 1-message batch at 3 is a real gap: {found}"


def test_reach_stops_at_the_first_missing_key() -> None:
    q = BatchQueue("B", 0, 2)
    for key, n in ((0, 2), (2, 1), (3, 3), (6, 1)):
        q.add(key, n)
    assert (q.reached_units, q.reached, q.messages) == (2, 4, 7), f"keys 2 and 3 follow each other, 4 is empty: {q}"
    below = BatchQueue("B", 0, 1)
    below.add(0, 2)
    below.add(2, 1)
    assert below.reached == 0, f"a served min on an empty key reaches nothing: {below}"
