"""The batch consume queues (`batchconsumequeue/<topic>/<queueId>/`) `recover` and `repair` write for file-queue stores.

Which tree a topic's queues live in is its topic config's `queue.type` attribute (`QueueTypeUtils#getCQType`, tag
rocketmq-all-5.3.3: SimpleCQ when absent): the broker dispatches a BatchCQ topic into a `BatchConsumeQueue` under
`batchconsumequeue/` (`ConsumeQueueStore#findOrCreateConsumeQueue`), and refuses to load at all when a topic's queue
directory sits in the other tree (`ConsumeQueueStore#loadConsumeQueues` -> `queueTypeShouldBe` throws "The queue
type of topic: T should be SimpleCQ, but is BatchCQ"). So a BatchCQ topic gets no file consume queue, and its batch
queues are rebuilt from the kept messages, one 46-byte unit per (inner-batch) record as
`BatchConsumeQueue#putBatchMessagePositionInfo` writes it (`formats/rocketmq/batch_consumequeue.py`), units numbered
from the first file. What the broker's own `BatchConsumeQueue#recover` keeps of a consistent input is the same units.
A `storeType=defaultRocksDB` store has none (`rocksdb_repair`).
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from replog.formats.errors import FormatError, UnreadableInput
from replog.formats.fileio import atomic_write
from replog.formats.rocketmq.batch_consumequeue import DEFAULT_FILE_SIZE, UNIT_SIZE, build_file
from replog.formats.rocketmq.config_json import load_config
from replog.formats.rocketmq.offset_names import file_name
from replog.formats.rocketmq.store import BATCH_CONSUME_QUEUE
from replog.recovery.rocketmq.store_model import MessageRef, StoreModel

QUEUE_TYPE, BATCH_CQ = "queue.type", "BatchCQ"     # TopicAttributes.QUEUE_TYPE_ATTRIBUTE, CQType.BatchCQ


def batch_topics(model: StoreModel) -> frozenset[str]:
    """Topics whose `config/topics.json` entry (or its `.bak`, as `TopicConfigManager` falls back) says
    `queue.type` BatchCQ; none when the file is absent or unreadable (the broker then takes every topic as
    SimpleCQ)."""
    path = model.layout.root / "config" / "topics.json"
    if not path.exists() and not path.with_name(path.name + ".bak").exists():
        return frozenset()
    try:
        doc, _ = load_config(path)
    except (FormatError, UnreadableInput):
        return frozenset()
    table = doc.get("topicConfigTable") if isinstance(doc, dict) else None
    if not isinstance(table, dict):
        return frozenset()
    return frozenset(str(name) for name, cfg in table.items()
                     if isinstance(cfg, dict) and isinstance(cfg.get("attributes"), dict)
                     and cfg["attributes"].get(QUEUE_TYPE) == BATCH_CQ)


def batch_file_size(model: StoreModel) -> int:
    """The input's batch consume-queue file size (`mapperFileSizeBatchConsumeQueue`), else the broker's default."""
    sizes = Counter(p.stat().st_size for files in model.layout.batch_consume_queues.values() for p in files)
    fitting = [s for s, _ in sizes.most_common() if s > 0 and s % UNIT_SIZE == 0]
    return fitting[0] if fitting else DEFAULT_FILE_SIZE


def write_batch_queues(root: Path, messages: list[MessageRef], topics: frozenset[str], file_size: int) -> int:
    """Every dispatched record of `topics`, in log order, as units of its queue's batch consume queue; a record
    whose base offset is below the queue's next offset is already there and skipped. Returns the queues written."""
    queues: dict[tuple[str, int], list[MessageRef]] = {}
    for m in messages:
        if not m.dispatched or m.topic not in topics:
            continue
        units = queues.setdefault((m.topic, m.queue_id), [])
        if units and m.queue_offset < units[-1].queue_offset + units[-1].batch_size:
            continue
        units.append(m)
    per_file = file_size // UNIT_SIZE
    for (topic, qid), units in queues.items():
        d = root / BATCH_CONSUME_QUEUE / topic / str(qid)
        d.mkdir(parents=True, exist_ok=True)
        for i in range(0, len(units), per_file):
            rows = ((m.physical_offset, m.size, m.cq_tags_code, m.store_timestamp, m.queue_offset, m.batch_size)
                    for m in units[i:i + per_file])
            atomic_write(d / file_name(i * UNIT_SIZE), build_file(rows, file_size=file_size))
    return len(queues)
