"""Issue 29, two 5.3.3 `storeType=defaultRocksDB` cases read with the broker's own tools (premises in
tests/brokers/rocketmq_rocks_more.py): a BatchCQ topic inside a RocksDB store, and a controller-mode slave's own
consumer offsets, asked at the slave's own address after a restart, against what replog reads from its database.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from replog.recovery.rocketmq.impact import read_offsets
from replog.recovery.rocketmq.store_model import load_store
from tests.brokers.rocketmq_pop_bcq import BATCH_TOPIC, BATCHES
from tests.brokers.rocketmq_rocks_more import Served, rocks_batch_store, rocks_slave_offsets
from tests.brokers.rocketmq_rocksdb import CONSUMER, TOPIC
from tests.brokers.test_rocketmq_repair import repaired
from tests.recovery.rocketmq.stores import tree_digest
from tests.toolkit.test_cli import replog_json

pytestmark = [pytest.mark.brokers, pytest.mark.brokers_full]



def replog_offsets(store: Path) -> dict[tuple[str, int], int]:
    """The group's offsets replog reads from a store (its `config/consumerOffsets` database here)."""
    offsets, source = read_offsets(load_store(store), [])
    return {(TOPIC, q): o for q, o in offsets.get((TOPIC, CONSUMER), {}).items()}


def test_slave_own_rocksdb_offsets_after_restart(tmp_path: Path) -> None:
    """The slave restarted alone on its copy, then on replog's repair of the copies: the offsets it reports at its
    own address are the ones replog reads from that store, and they are the slave's (synced before it stopped),
    not its master's last ones."""
    outputs: dict[str, Any] = {}

    def on_copy(copies: dict[str, Path]) -> Path:
        outputs["copy_digest"] = tree_digest(copies["n1"])
        outputs["copy"] = replog_offsets(copies["n1"])
        return copies["n1"]

    def on_repair(copies: dict[str, Path]) -> Path:
        result, stores = repaired(copies, "autoswitch", "5.3.3", tmp_path / "repaired")
        outputs["repair"] = result
        outputs["repaired"] = replog_offsets(stores["n1"])
        return stores["n1"]

    run = rocks_slave_offsets(tmp_path / "lab", {"copy": on_copy, "repaired": on_repair})
    assert run.master_after != run.committed, f"premise: n0 moved on alone {run.master_after} vs {run.committed}"
    slave = run.own["copy"]
    assert slave == run.committed, f"the slave's own offsets {slave}, the commit it synced {run.committed}"
    assert outputs["copy"] == slave, f"replog reads {outputs['copy']} from the slave's database, it reports {slave}"
    assert outputs["repaired"] == run.own["repaired"], (
        f"replog reads {outputs['repaired']} from its repaired slave store, the slave restarted on it reports "
        f"{run.own['repaired']}")
    impact = replog_json("impact", f"n0={run.copies['n0']}", f"n1={run.copies['n1']}", "--protocol", "autoswitch")
    rows = {(r["store"], (r["topic"], r["queue_id"])): r["committed_offset"] for r in impact["consumer_groups"]
            if r["group"] == CONSUMER}
    for store, want in (("n1", slave), ("n0", run.master_after)):
        ours = {key: o for (s, key), o in rows.items() if s == store}
        assert ours == want, f"impact's committed offsets of {store} {ours}, {store} reported {want}"
    assert tree_digest(run.copies["n1"]) == outputs["copy_digest"], "the slave's copy did not change"


def broker_view(s: Served) -> tuple[dict[int, tuple[int, int]], dict[int, list[int]]]:
    """(queue -> (min, max) the admin API reports, queue -> offsets a pull consumer got), from the broker's tools."""
    ranges = {int(q): (int(lo), int(hi)) for q, lo, hi in
              re.findall(rf"^QUEUE {BATCH_TOPIC} (\d+) (-?\d+) (-?\d+)$", s.probe, re.M)}
    pulled: dict[int, list[int]] = {q: [] for q in BATCHES}
    for q, off in re.findall(rf"^MSG {BATCH_TOPIC} (\d+) (\d+) \d+ -?\d+$", s.dump, re.M):
        pulled[int(q)].append(int(off))
    return ranges, pulled


def check_store(store: Path, s: Served, label: str) -> dict[int, dict[str, Any]]:
    """ls's queue range is the broker's; doctor's finding per queue says how many messages a consumer gets (the
    pull consumer's count) and how many it cannot; no unit is called malformed. Returns the findings' details."""
    ranges, pulled = broker_view(s)
    ls = replog_json("ls", str(store))
    ours = {q["queue_id"]: (q["cq_min_offset"], q["cq_max_offset"]) for q in ls["queues"] if q["topic"] == BATCH_TOPIC}
    assert ours == ranges, f"{label}: ls's (min, max) {ours}, the broker's queryConsumeQueue {ranges}"
    doctor = replog_json("doctor", str(store))
    invalid = [f["message"] for f in doctor["findings"] if f["code"] == "ROCKETMQ_CQ_INVALID"]
    assert not invalid, f"{label}: the broker's own batch layout called malformed: {invalid}"
    found = {int(m[1]): {"served_min_offset": int(m[2]), "reachable": int(m[3]),
                         "next_offset_after_restart": int(m[4]) if m[4] else None}
             for f in doctor["findings"] if f["code"] == "ROCKETMQ_ROCKSDB_BATCH_CQ"
             for m in [re.match(rf"{BATCH_TOPIC}/(\d+): .* served min offset (\d+) gets (\d+) messages"
                                r"(?:.* next offset is (\d+))?", f["message"])] if m}
    assert set(found) == set(BATCHES), f"{label}: doctor's BatchCQ findings for queues {sorted(found)}"
    for q, got in pulled.items():
        d = found[q]
        assert d["reachable"] == len(got), f"{label} {q}: doctor: {d['reachable']} reachable, the consumer got {got}"
        assert d["served_min_offset"] == ranges[q][0], f"{label} {q}: served min {d['served_min_offset']}, {ranges[q]}"
    return found


def test_batch_topic_in_rocksdb_store(tmp_path: Path) -> None:
    """A BatchCQ topic in a RocksDB store, its stopped store read by replog against what the broker served: the
    ranges, the messages a consumer reaches, the offset a restarted broker gives the next batch; `recover` keeps
    every batch and a broker started on its output is read again the same way."""
    outputs: dict[str, Any] = {}

    def recover(store: Path) -> Path:
        before = tree_digest(store)
        out = tmp_path / "recovered"
        outputs["recover"] = replog_json("recover", str(store), "--out", str(out))
        assert tree_digest(store) == before, "recover changed its input"
        return out

    run = rocks_batch_store(tmp_path / "lab", recover)
    assert all(st == "SEND_OK" for _, _, st, _ in run.sent + run.sent_again), f"premise: sends {run.sent}"
    errors = re.findall(rf"^ERR {BATCH_TOPIC} \d+ \d+ .*NullPointerException", run.first.probe, re.M)
    assert errors, "premise: the broker's queryConsumeQueue fails at the empty keys (NullPointerException)"
    found = check_store(run.store, run.first, "stopped")
    for q, _, _, offset in run.sent_again:
        want = found[q]["next_offset_after_restart"]
        assert offset == want, f"queue {q}: the restarted broker gave the next batch offset {offset}, replog {want}"
    check_store(run.later, run.again, "restarted")
    rec = outputs["recover"]
    assert rec["rebuilt"]["messages"] == sum(len(v) for v in BATCHES.values()), f"recover kept {rec['rebuilt']}"
    assert rec["rebuilt"]["queues"]["mode"] == "broker-redispatch", f"who builds the queues: {rec['rebuilt']}"
    check_store(run.output_stopped, run.on_output, "on recover's output")
