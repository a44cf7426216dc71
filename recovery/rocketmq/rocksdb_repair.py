"""What `recover` and `repair` write for a `storeType=defaultRocksDB` store besides its commit log and index.

The consume queue is left out and the `abort` marker written, so that the broker rebuilds every queue from the
commit log itself, as it provably does (tag rocketmq-all-5.3.3, docs/reference/rocketmq.md §14):

- With no `consumequeue/` database, RocksDB creates an empty one at start (`ConsumeQueueRocksDBStorage`,
  `RocksDBConsumeQueueStore#load`) and its offset table has no dispatch checkpoint, so
  `RocksDBConsumeQueueOffsetTable#getMaxPhyOffset` is 0.
- With `abort` present `DefaultMessageStore#load` runs `CommitLog#recoverAbnormally`: `isMappedFileMatchedRecover`
  (RocksDB branch) starts at the last file whose first record's physical offset is <= 0, the first file, and every
  record it validates is dispatched (`doDispatch = true`; `DefaultMessageStore#onCommitLogDispatch` ->
  `RocksDBConsumeQueueStore#putMessagePosition`: unit, max offset and dispatch checkpoint).
- Without `abort` (`CommitLog#recoverNormally`) a record is dispatched only when its offset is > that 0
  (`doDispatch = getCommitLogOffset() > maxPhyOffsetOfConsumeQueue`): the record at offset 0 would never get its
  unit, and the reput service then starts at the log's end (`DefaultMessageStore#start`: `getConfirmOffset`).
  In the lab a 5.3.3 broker started on such an output without the marker served no unit at all of the queue of
  that record (tests/brokers/test_rocketmq_rocks_repair.py, run once without it), hence the marker.

Written from the input, never rebuilt: the config databases (`config/consumerOffsets`, `topics`,
`subscriptionGroups`: `RocksDBConsumerOffsetManager` and siblings, which exist only in this store type,
`BrokerController#<init>`) are copied file by file, `LOCK` aside, as are the `config/*.json` (`copy_metadata`), so the
broker's choice between them (`RocksDBConsumerOffsetManager#merge`: the JSON only when its data version is newer)
stays the input's. Batch consume queues are not written: a RocksDB broker keeps every queue, BatchCQ topics too, in
the RocksDB consume queue (`RocksDBConsumeQueueStore#findOrCreateConsumeQueue` creates only `RocksDBConsumeQueue`).
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from replog.formats.fileio import atomic_file, atomic_write, open_regular
from replog.formats.rocketmq.abort import ABORT
from replog.formats.rocketmq.rocksdb_store import db_files
from replog.recovery.rocketmq.store_model import StoreModel

CQ_MODE = "broker-redispatch"   # the recover JSON's rebuilt.queues.mode for such a store


def copy_config_dbs(source: StoreModel, root: Path) -> list[str]:
    """Every regular file of each config database of `source` but `LOCK` (RocksDB's own open lock, taken again by
    the broker), copied byte for byte; returns the relative paths written."""
    written = []
    for name, d in sorted(source.layout.config_dbs.items()):
        dest = root / "config" / name
        dest.mkdir(parents=True, exist_ok=True)
        for p in db_files(d):
            if p.name != "LOCK":
                _copy(p, dest / p.name)
                written.append(f"config/{name}/{p.name}")
    return written


def _copy(source: Path, target: Path) -> None:
    """Streamed (an SST file can be large), through `atomic_file`."""
    with os.fdopen(open_regular(source), "rb") as src, atomic_file(target) as out:
        shutil.copyfileobj(src, out, 1 << 20)


def write_rocksdb_parts(source: StoreModel, root: Path) -> dict[str, Any]:
    """The config databases and the `abort` marker (module docstring); what was done, for the JSON's
    `rebuilt.rocksdb`."""
    copied = copy_config_dbs(source, root)
    atomic_write(root / ABORT, b"")
    return {"consume_queue": "left out: the broker rebuilds it from the commit log at start",
            "abort_marker": True, "config_dbs": copied,
            "batch_consume_queues": "not written: a RocksDB broker keeps BatchCQ topics in the RocksDB consume queue"}
