"""recover of a file-queue store holding a BatchCQ topic: the topic's units go to `batchconsumequeue/` as the 46
bytes `BatchConsumeQueue#putBatchMessagePositionInfo` lays out (packed here with struct, not by replog's writer),
and no `consumequeue/<topic>/` is written for it (the 5.3.3 broker refuses to load a topic's queues from the wrong
tree: `ConsumeQueueStore#queueTypeShouldBe`). Stores built by the independent writer."""
from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from tests.recovery.rocketmq.independent import Sent, Store, java_hash
from tests.recovery.rocketmq.stores import tree_digest
from tests.toolkit.test_cli import run_replog

INNER_BATCH = 0x80
UNIT = 46
TOPICS = {"topicConfigTable": {
    "B": {"topicName": "B", "readQueueNums": 1, "writeQueueNums": 1, "attributes": {"queue.type": "BatchCQ"}},
    "plain": {"topicName": "plain", "readQueueNums": 1, "writeQueueNums": 1, "attributes": {}}}}


def unit(s: Sent, base: int, num: int) -> bytes:
    return struct.pack(">qiqqqhii", s.offset, s.size, java_hash(s.tags), s.store_ts, base, num, -1, 0)


def batch_store(root: Path, *, topics: bool = True) -> tuple[Path, list[tuple[Sent, int, int]], Sent]:
    """Batches of 3, 2 and 4 messages on B/0 (the third torn), a plain message between them; topics.json says B is
    BatchCQ (when `topics`); the input's batch queue in 2-unit files."""
    s = Store(file_size=8192)
    batches = []
    plain = None
    for base, num in ((0, 3), (3, 2), (5, 4)):
        m = s.append("B", 0, b"batch" * 10, props={"INNER_NUM": str(num), "INNER_BASE": str(base)},
                     sys_flag=INNER_BATCH, queue_offset=base)
        batches.append((m, base, num))
        plain = plain or s.append("plain", 0, b"p" * 40)
    s.corrupt_body(batches[2][0])
    s.write(root, queues={("plain", 0): [plain]})
    d = root / "batchconsumequeue" / "B" / "0"
    d.mkdir(parents=True)
    data = b"".join(unit(*b) for b in batches)
    (d / f"{0:020d}").write_bytes(data[:2 * UNIT])
    (d / f"{2 * UNIT:020d}").write_bytes(data[2 * UNIT:].ljust(2 * UNIT, b"\0"))
    (root / "config").mkdir()
    if topics:
        (root / "config" / "topics.json").write_text(json.dumps(TOPICS))
    return root, batches, plain


@pytest.mark.parametrize("mode", [[], ["--rebuild-queues"]], ids=["broker-queues", "rebuild-queues"])
def test_recover_writes_batch_queues_not_file_queues(tmp_path: Path, mode: list[str]) -> None:
    """Before: the broker-queue mode wrote no batch queue (the topic's messages lost to its consumers), and
    --rebuild-queues wrote consumequeue/B/, which the broker refuses to load."""
    root, batches, _ = batch_store(tmp_path / "store")
    before = tree_digest(root)
    out = tmp_path / "out"
    done = run_replog("recover", str(root), "--out", str(out), *mode, "--format", "json")
    assert done.returncode in (0, 1), f"recover exit {done.returncode}: {done.stderr}"
    doc = json.loads(done.stdout)
    assert doc["truncated_to"] == batches[2][0].offset, f"the log ends at the rotten third batch: {doc}"
    assert doc["rebuilt"]["batch_consume_queues"] == 1, f"one batch queue written: {doc['rebuilt']}"
    assert not (out / "consumequeue" / "B").exists(), "no file consume queue for the BatchCQ topic"
    assert (out / "consumequeue" / "plain" / "0").is_dir(), "the plain topic keeps its file consume queue"
    d = out / "batchconsumequeue" / "B" / "0"
    files = sorted(p.name for p in d.iterdir())
    assert files == [f"{0:020d}"], f"two units fit the input's 2-unit file: {files}"
    data = (d / files[0]).read_bytes()
    assert len(data) == 2 * UNIT, f"the input's file size {2 * UNIT}, not {len(data)}"
    assert data == unit(*batches[0]) + unit(*batches[1]), "the kept batches' units, byte for byte"
    assert doc["verification"]["summary"]["errors"] == 0, f"doctor on the output: {doc['verification']}"
    assert tree_digest(root) == before, "the input did not change"


def test_without_topic_config_every_topic_is_simple(tmp_path: Path) -> None:
    """No topics.json: the broker takes every topic as SimpleCQ (`QueueTypeUtils#getCQType`), so does recover."""
    root, _, _ = batch_store(tmp_path / "store", topics=False)
    out = tmp_path / "out"
    done = run_replog("recover", str(root), "--out", str(out), "--format", "json")
    assert done.returncode in (0, 1), f"recover exit {done.returncode}: {done.stderr}"
    assert json.loads(done.stdout)["rebuilt"]["batch_consume_queues"] == 0, "no batch queue"
    assert not (out / "batchconsumequeue").exists(), "no batchconsumequeue/ written"
