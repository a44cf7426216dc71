"""replog against a real RocketMQ 5.3.3 broker with `storeType=defaultRocksDB` (premise in
`rocketmq_rocksdb.rocksdb_broker`: messages sent, a group commits offsets, the broker reports what it serves through
its admin API, then stops cleanly; replog reads the stopped store in place).

One cluster, several checks: the store type is detected, every CQ unit replog reads from the RocksDB consume queue
is the unit the broker served (`queryConsumeQueue`), each queue's range is the broker's, doctor verifies the units
against the commit log with no error and no "no entry yet", the consumer offsets impact reads are the broker's
(`examineConsumeStats`), and no byte or file of the store changed.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from replog.formats.rocketmq.rocksdb_store import RocksCQUnit, cq_entries
from replog.recovery.rocketmq.impact import read_offsets
from replog.recovery.rocketmq.store_model import load_store
from tests.brokers.rocketmq_rocksdb import CONSUMER, QUEUES, TOPIC, RocksRun, rocksdb_broker, rocksdb_crash
from tests.toolkit.test_cli import run_replog

pytestmark = pytest.mark.brokers


def tree(root: Path) -> dict[str, tuple[int, str]]:
    """Every file and directory under `root` with its size and SHA-256 (directories: their entry names)."""
    out: dict[str, tuple[int, str]] = {}
    for folder, dirs, files in os.walk(root):
        out[folder + "/"] = (len(dirs) + len(files), ",".join(sorted(dirs + files)))
        for name in files:
            p = Path(folder) / name
            out[str(p)] = (p.stat().st_size, hashlib.sha256(p.read_bytes()).hexdigest())
    return out


def replog_json(*args: str) -> tuple[int, dict[str, Any]]:
    done = run_replog(*args, "--format", "json")
    assert done.returncode in (0, 1), f"replog {' '.join(args)} exited {done.returncode}:\n{done.stderr}"
    result: dict[str, Any] = json.loads(done.stdout)
    return done.returncode, result


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> RocksRun:
    return rocksdb_broker(tmp_path_factory.mktemp("rmq-rocksdb"))


def test_rocksdb_store_matches_broker(run: RocksRun) -> None:
    store = run.store
    before = tree(store)
    assert (store / "consumequeue" / "CURRENT").is_file(), "the broker keeps its consume queues in RocksDB"

    served = {key: [(i, off, size, tags) for i, off, size, tags in units]
              for key, units in run.inspection.units.items()}
    ours: dict[tuple[str, int], list[tuple[int, int, int, int]]] = {}
    for u in cq_entries(store / "consumequeue"):
        assert isinstance(u, RocksCQUnit), f"a CQ pair replog could not decode: {u}"
        if u.topic == TOPIC:
            ours.setdefault((u.topic, u.queue_id), []).append((u.queue_offset, u.commitlog_offset, u.size,
                                                              u.tags_code))
    assert ours == served, f"CQ units: replog read {ours}, the broker served {served}"

    model = load_store(store)
    assert model.layout.store_type == "defaultRocksDB", "store type detected"
    for q in range(QUEUES):
        state = model.queues[(TOPIC, q)]
        ours_range, broker_range = (state.min_offset, state.kv_max_offset), run.inspection.queues[(TOPIC, q)]
        assert ours_range == broker_range, f"{TOPIC}/{q}: replog's range {ours_range}, the broker's {broker_range}"

    rc, doctor = replog_json("doctor", str(store))
    bad = [f for f in doctor["findings"] if f["severity"] != "info" or "no consume-queue entry" in f["message"]]
    assert rc == 0 and not bad, f"doctor on the clean RocksDB store: rc {rc}, {bad}"
    assert any(f["code"] == "ROCKETMQ_ROCKSDB_STORE" for f in doctor["findings"]), "doctor names the store type"
    dbs = [str(store / d) + "/" for d in ("consumequeue", "config/consumerOffsets", "config/topics",
                                          "config/subscriptionGroups")]
    unknown = [f["path"] for f in doctor["findings"]
               if f["code"] == "UNKNOWN_FILE" and any(f["path"].startswith(d) for d in dbs)]
    assert not unknown, f"RocksDB files doctor did not read: {unknown}"

    rc, ls = replog_json("ls", str(store))
    assert ls["store"]["store_type"] == "defaultRocksDB", f"ls names the store type: {ls['store']}"

    offsets, source = read_offsets(model, [])
    committed = {(TOPIC, q): c for (_, q), (_, c) in run.progress.items()}
    ours_committed = {(TOPIC, q): o for q, o in offsets.get((TOPIC, CONSUMER), {}).items()}
    assert ours_committed == committed, f"consumer offsets: replog {ours_committed} ({source}), broker {committed}"
    assert committed == run.committed, f"the broker reports the offsets the consumer committed: {run.committed}"

    assert tree(store) == before, "no byte or file of the store changed while replog read it"


@pytest.mark.brokers_full
def test_rocksdb_crash_matches_restarted_broker(tmp_path: Path) -> None:
    """After a kill, the units on disk are a prefix of what a restarted broker serves, the messages replog finds in
    the recovered log are exactly those units (the broker dispatches the rest at start, doctor says so and no
    error at all: the all-zero pre-allocated commit-log file the kill leaves is the broker's normal shape), and
    the offsets replog reads are the ones the restarted broker reports."""
    crash = rocksdb_crash(tmp_path)
    before = tree(crash.crashed)
    model = load_store(crash.crashed)
    served = {key: [(i, off, size) for i, off, size, _ in units] for key, units in crash.restarted.units.items()}
    heads = {key: [(m.queue_offset, m.physical_offset, m.size) for m in msgs]
             for key, msgs in model.queue_heads().items() if key[0] == TOPIC}
    assert heads == served, f"replog's recovered queues {heads}, the restarted broker's {served}"
    on_disk: dict[tuple[str, int], list[tuple[int, int, int]]] = {}
    for u in cq_entries(crash.crashed / "consumequeue"):
        assert isinstance(u, RocksCQUnit), f"a CQ pair replog could not decode: {u}"
        if u.topic == TOPIC:
            on_disk.setdefault((u.topic, u.queue_id), []).append((u.queue_offset, u.commitlog_offset, u.size))
    for key, units in on_disk.items():
        assert units == served[key][:len(units)], f"{key}: units on disk {units} are not a prefix of the served"
    rc, doctor = replog_json("doctor", str(crash.crashed))
    errors = [f for f in doctor["findings"] if f["severity"] == "error"]
    assert not errors, f"doctor on the killed store the restarted broker serves in full (issue 29): {errors}"
    cq = [f for f in doctor["findings"] if f["code"].startswith("ROCKETMQ_CQ")]
    not_info = [f for f in cq if f["severity"] != "info"]
    assert not not_info, f"doctor on the killed RocksDB store, its consume queues: {not_info}"
    missing = sum(len(served[k]) - len(on_disk.get(k, [])) for k in served)
    told = sum(f.get("details", {}).get("messages", 0) if "details" in f else 0 for f in cq)
    behind = [f["message"] for f in cq if "no consume-queue entry yet" in f["message"]]
    assert bool(behind) == (missing > 0), f"{missing} units the broker dispatched at start; doctor said {behind} {told}"
    offsets, source = read_offsets(model, [])
    ours = {(TOPIC, q): o for q, o in offsets.get((TOPIC, CONSUMER), {}).items()}
    theirs = {(TOPIC, q): c for (_, q), (_, c) in crash.progress.items()}
    assert ours == theirs, f"offsets: replog {ours} ({source}), the restarted broker {theirs}"
    assert tree(crash.crashed) == before, "no byte or file of the store changed while replog read it"
