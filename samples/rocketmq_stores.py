"""RocketMQ stores built with the format writers only (never with recovery code): the
building blocks of the sample master/slave pair and of the tests' stores.

Small geometry on purpose (1 KiB commitlog files, 10-entry consume queue files,
32 hash slots) so that rolling, fillers and chains all happen with a few messages.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from replog.formats.rocketmq.checkpoint import Checkpoint, write_checkpoint
from replog.formats.rocketmq.commitlog import CommitLogWriter, tags_code
from replog.formats.rocketmq.consumequeue import write_queue
from replog.formats.rocketmq.epoch_file import EpochEntry, write_epoch_file
from replog.formats.rocketmq.index_file import IndexWriter, message_keys

FILE_SIZE = 1024
CQ_FILE_SIZE = 200       # 10 entries per CQ file
SLOTS, INDEX_NUM = 32, 128
T0 = 1_700_000_000_000


@dataclass
class Written:
    offset: int
    size: int
    topic: str
    queue_id: int
    queue_offset: int
    tags: str
    keys: str
    store_timestamp: int


@dataclass
class Built:
    root: Path
    writer: CommitLogWriter
    messages: list[Written] = field(default_factory=list)

    @property
    def max_offset(self) -> int:
        return self.writer.max_offset


def spec(i: int, topic: str = "orders", queues: int = 2, tag: str = "TagA", body: bytes | None = None,
         ts: int | None = None) -> dict:
    return {"topic": topic, "queue_id": i % queues, "body": body if body is not None else f"body-{i:04d}".encode() * 3,
            "tags": tag, "keys": f"k{i}", "ts": ts if ts is not None else T0 + i * 1000}


def append(w: CommitLogWriter, out: list[Written], s: dict) -> None:
    props = {"TAGS": s["tags"], "KEYS": s["keys"], "UNIQ_KEY": f"U{s['keys']}"}
    a = w.append(topic=s["topic"], body=s["body"], queue_id=s["queue_id"], properties=props,
                 born_timestamp=s["ts"] - 5, store_timestamp=s["ts"])
    out.append(Written(a.physical_offset, a.size, s["topic"], s["queue_id"], a.queue_offset, s["tags"], s["keys"],
                       s["ts"]))


def build(root: Path, specs: list[dict], *, cq: bool = True, index: bool = True, checkpoint: bool = True,
          abort: bool = False, epochs: list[tuple[int, int]] | None = None, confirm: int = 0,
          writer: CommitLogWriter | None = None) -> Built:
    w = writer or CommitLogWriter(FILE_SIZE)
    b = Built(root, w)
    for s in specs:
        append(w, b.messages, s)
    finish(b, cq=cq, index=index, checkpoint=checkpoint, abort=abort, epochs=epochs, confirm=confirm)
    return b


def finish(b: Built, *, cq: bool = True, index: bool = True, checkpoint: bool = True, abort: bool = False,
           epochs: list[tuple[int, int]] | None = None, confirm: int = 0) -> None:
    root = b.root
    b.writer.write_to(root / "commitlog")
    if cq:
        queues: dict[tuple[str, int], list[Written]] = {}
        for m in b.messages:
            queues.setdefault((m.topic, m.queue_id), []).append(m)
        for (topic, qid), ms in queues.items():
            write_queue(root, topic, qid, [(m.offset, m.size, tags_code(m.tags)) for m in ms],
                        file_size=CQ_FILE_SIZE, start_queue_offset=ms[0].queue_offset)
    if index and b.messages:
        iw = IndexWriter(hash_slot_num=SLOTS, index_num=INDEX_NUM)
        for m in b.messages:
            for key in message_keys(m.topic, {"KEYS": m.keys, "UNIQ_KEY": f"U{m.keys}"}):
                if not iw.put_key(key, m.offset, m.store_timestamp):
                    raise ValueError("sample index file is full")
        (root / "index").mkdir(parents=True, exist_ok=True)
        (root / "index" / "20231114221320000").write_bytes(iw.to_bytes())
    if checkpoint:
        last = max((m.store_timestamp for m in b.messages), default=0)
        write_checkpoint(root / "checkpoint", Checkpoint(last, last, last, 0, confirm))
    if abort:
        (root / "abort").write_bytes(b"4242")
    if epochs:
        write_epoch_file(root / "epochFileCheckpoint", [EpochEntry(e, s) for e, s in epochs])
    (root / "config").mkdir(exist_ok=True)
    (root / "config" / "topics.json").write_text('{"topicConfigTable":{},"dataVersion":{"counter":1}}')
