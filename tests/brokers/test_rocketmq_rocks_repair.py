"""`replog recover` on a damaged 5.3.3 `storeType=defaultRocksDB` store, proven by a broker started on its output
(premises in tests/brokers/rocketmq_rocks_repair.py: the store stopped cleanly, copied, one body byte flipped; a
broker of the same store type started on a copy of replog's output, nothing sent to it).

One input, several checks, each against what the broker reports through its admin API (not replog's parsers):
recover cuts the log at the rotten message and says the queues are left to the broker; the broker started on the
output serves exactly the messages replog keeps, every unit of every queue (`queryConsumeQueue`), each queue's
range, and the consumer group's offsets are the ones committed before the damage (`examineConsumeStats`).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from replog.recovery.rocketmq.store_model import load_store
from tests.brokers.rocketmq_pop_bcq import BATCH_TOPIC, BATCHES
from tests.brokers.rocketmq_rocks_repair import (
    MESSAGES,
    damaged_batch_store,
    damaged_rocks_store,
    serve,
    serve_batches,
)
from tests.brokers.rocketmq_rocksdb import QUEUES, TOPIC
from tests.recovery.rocketmq.stores import tree_digest
from tests.toolkit.test_cli import run_replog

pytestmark = [pytest.mark.brokers, pytest.mark.brokers_full]


def recovered(store: Path, rotten_at: int, out: Path) -> dict[str, Any]:
    """`replog recover` of a damaged lab store into `out`: its JSON, the log cut at the rotten record
    (`rotten_at`), the input unchanged."""
    before = tree_digest(store)
    done = run_replog("recover", str(store), "--out", str(out), "--format", "json")
    assert done.returncode in (0, 1), f"replog recover exited {done.returncode}:\n{done.stderr}"
    doc: dict[str, Any] = json.loads(done.stdout)
    assert doc["truncated_to"] == rotten_at, \
        f"recover cuts the log at the rotten record {rotten_at}, not {doc['truncated_to']}"
    assert tree_digest(store) == before, "the input did not change"
    return doc


def test_broker_on_recovered_rocksdb_store_serves_what_replog_keeps(tmp_path: Path) -> None:
    damaged = damaged_rocks_store(tmp_path / "lab")
    out = tmp_path / "recovered"
    doc = recovered(damaged.store, damaged.flipped_at, out)
    assert doc["rebuilt"]["queues"]["mode"] == "broker-redispatch", f"who builds the queues: {doc['rebuilt']}"

    kept = load_store(out)
    ours = {key: [(m.queue_offset, m.physical_offset, m.size) for m in msgs]
            for key, msgs in kept.queue_heads().items() if key[0] == TOPIC}
    assert sum(map(len, ours.values())) < 2 * MESSAGES, f"the damage drops messages: {ours}"

    served = serve(out, tmp_path / "serve")
    theirs = {key: [(i, off, size) for i, off, size, _ in units] for key, units in served.inspection.units.items()}
    assert theirs == ours, f"units the broker serves from replog's output {theirs}, the messages replog keeps {ours}"
    for q in range(QUEUES):
        expected = (0, len(ours.get((TOPIC, q), [])))
        got = served.inspection.queues[(TOPIC, q)]
        assert got == expected, f"{TOPIC}/{q}: the broker's range {got}, replog's kept queue {expected}"
    assert served.inspection.max_offset == damaged.flipped_at, \
        f"the broker's log ends at {served.inspection.max_offset}, replog's at {damaged.flipped_at}"
    offsets = {key: consumer for key, (_, consumer) in served.progress.items()}
    assert offsets == damaged.committed, \
        f"consumer offsets the broker reports on the output {offsets}, committed before the damage {damaged.committed}"


def test_broker_on_recovered_batch_store_serves_the_batches_replog_keeps(tmp_path: Path) -> None:
    """A file-queue store with a BatchCQ topic, one batch record rotten: recover writes the topic's batch consume
    queue (not a file consume queue, which the broker refuses to load); the broker started on the output serves
    exactly the batches replog keeps (base offset, batch size, commit-log offset, size per unit) and each queue's
    message range."""
    damaged = damaged_batch_store(tmp_path / "lab")
    out = tmp_path / "recovered"
    recovered(damaged.store, damaged.flipped_at, out)
    kept = [(m.queue_id, m.queue_offset, m.batch_size, m.physical_offset, m.size)
            for m in load_store(out).messages if m.topic == BATCH_TOPIC]
    before_damage = [(u.queue, u.base_offset, u.batch_size, u.physical_offset, u.size) for u in damaged.units]
    assert kept == before_damage[:len(kept)] and len(kept) == len(before_damage) - 2, \
        f"premise: replog keeps all but the last two batches {before_damage}: {kept}"

    ranges, units, log = serve_batches(out, tmp_path / "serve")
    served = [(u.queue, u.base_offset, u.batch_size, u.physical_offset, u.size) for u in units]
    assert served == kept, f"batches the broker serves from replog's output {served}, replog keeps {kept}; its log:" \
                           + log[-3000:]
    for q in BATCHES:
        expected = (0, sum(n for queue, _, n, _, _ in kept if queue == q))
        assert ranges.get(q) == expected, f"{BATCH_TOPIC}/{q}: the broker's range {ranges.get(q)}, replog's {expected}"
