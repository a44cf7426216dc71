"""RocketMQ stores written byte by byte from the broker's layout, without replog's writers.

For tests that compare replog with what the broker does: the inputs must not come from the code
under test. Layouts, from apache/rocketmq (store/src/main/java/org/apache/rocketmq/store/):
- a message: `MessageExtEncoder#encode` (fields 1-17, big-endian) with its length from
  `MessageExtEncoder#calMsgLength`; V1 magic 0xDAA320A7, IPv4 hosts (8 bytes each), the topic
  length one byte; BODYCRC = crc32(body) & 0x7FFFFFFF (`UtilAll#crc32`); PHYSICALOFFSET and
  QUEUEOFFSET filled in by `CommitLog.DefaultAppendMessageCallback#doAppend`;
- the end of a file: when a message + 8 does not fit, `doAppend` writes TOTALSIZE = the bytes
  left and magic BLANK 0xCBD43194, and the message goes to the next file (named by its offset);
- a consume queue unit: `ConsumeQueue#putMessagePositionInfo`, 20 bytes (offset i64, size i32,
  tags code i64 = Java `String.hashCode` of TAGS), file named by its CQ byte offset;
- the checkpoint: `StoreCheckpoint#flush`, a 4 KiB page with physic, logics and index timestamps
  at 0, 8, 16 (i64), master flushed offset at 24, confirm offset at 32;
- `abort`: present after an unclean shutdown (`DefaultMessageStore#createTempFile`).
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path

MAGIC_V1, MAGIC_BLANK = -626843481, -875286124
T0 = 1_700_000_000_000
BORN_HOST = bytes([127, 0, 0, 1]) + struct.pack(">i", 0)
STORE_HOST = bytes([10, 0, 0, 1]) + struct.pack(">i", 10911)


def java_hash(text: str) -> int:
    """`String.hashCode` as a Java int (the tag code of the consume queue)."""
    raw, h = text.encode("utf-16-be"), 0
    for i in range(0, len(raw), 2):
        h = (31 * h + int.from_bytes(raw[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def message(topic: str, queue_id: int, queue_offset: int, physical_offset: int, body: bytes, *,
            store_ts: int, tags: str, keys: str | None = None, props: dict[str, str] | None = None,
            sys_flag: int = 0, prepared: int = 0) -> bytes:
    """`props` are written after TAGS and KEYS (`MessageDecoder#messageProperties2String`: key 0x01 value 0x02);
    `sys_flag` and `prepared` (PREPARED TRANSACTION OFFSET) as given."""
    text = f"TAGS\x01{tags}\x02" + (f"KEYS\x01{keys}\x02" if keys else "") \
        + "".join(f"{k}\x01{v}\x02" for k, v in (props or {}).items())
    raw_topic, raw_props = topic.encode(), text.encode()
    total = 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + 8 + 8 + 8 + 4 + 8 + 4 + len(body) + 1 + len(raw_topic) + 2 \
        + len(raw_props)
    return (struct.pack(">iiiiiqqiq", total, MAGIC_V1, zlib.crc32(body) & 0x7FFFFFFF, queue_id, 0, queue_offset,
                        physical_offset, sys_flag, store_ts - 1) + BORN_HOST + struct.pack(">q", store_ts) + STORE_HOST
            + struct.pack(">iqi", 0, prepared, len(body)) + body + struct.pack(">b", len(raw_topic)) + raw_topic
            + struct.pack(">h", len(raw_props)) + raw_props)


@dataclass
class Sent:
    """Where one message landed."""

    topic: str
    queue_id: int
    queue_offset: int
    offset: int
    size: int
    store_ts: int
    tags: str


@dataclass
class Store:
    """A commit log laid out file by file as the broker appends, and what the broker would have on disk."""

    file_size: int
    files: dict[int, bytearray] = field(default_factory=dict)
    sent: list[Sent] = field(default_factory=list)
    end: int = 0

    def append(self, topic: str, queue_id: int, body: bytes, tags: str = "TagA", *,
               props: dict[str, str] | None = None, sys_flag: int = 0, prepared: int = 0,
               queue_offset: int | None = None) -> Sent:
        """`queue_offset` None: the queue's next (one per message already sent to it)."""
        if queue_offset is None:
            queue_offset = sum(1 for s in self.sent if (s.topic, s.queue_id) == (topic, queue_id))
        ts = T0 + len(self.sent) * 1000
        size = len(message(topic, queue_id, 0, 0, body, store_ts=ts, tags=tags, props=props))
        start = self.end - self.end % self.file_size
        left = start + self.file_size - self.end
        if size + 8 > left:
            self._file(start)[self.end - start:self.end - start + 8] = struct.pack(">ii", left, MAGIC_BLANK)
            self.end = start + self.file_size
            start = self.end
        data = message(topic, queue_id, queue_offset, self.end, body, store_ts=ts, tags=tags, props=props,
                       sys_flag=sys_flag, prepared=prepared)
        self._file(start)[self.end - start:self.end - start + size] = data
        sent = Sent(topic, queue_id, queue_offset, self.end, size, ts, tags)
        self.sent.append(sent)
        self.end += size
        return sent

    def _file(self, start: int) -> bytearray:
        return self.files.setdefault(start, bytearray(self.file_size))

    def corrupt_body(self, s: Sent) -> None:
        """Flip the body CRC field: the record fails the check recovery runs (CRC on by default)."""
        f = self.files[s.offset - s.offset % self.file_size]
        pos = s.offset % self.file_size + 8
        f[pos:pos + 4] = struct.pack(">i", struct.unpack_from(">i", f, pos)[0] ^ 0x1)

    def write(self, root: Path, *, queues: dict[tuple[str, int], list[Sent]] | None = None, cq_file_size: int = 2000,
              checkpoint: tuple[int, int, int] | None = None, abort: bool = False) -> Path:
        """The store under `root`: commitlog/, consumequeue/ for `queues` (default: every message),
        checkpoint (default: the newest store timestamp for all three), abort when asked."""
        (root / "commitlog").mkdir(parents=True)
        for start, data in self.files.items():
            (root / "commitlog" / f"{start:020d}").write_bytes(bytes(data))
        if queues is None:
            queues = {}
            for s in self.sent:
                queues.setdefault((s.topic, s.queue_id), []).append(s)
        for (topic, qid), sents in queues.items():
            write_queue(root, topic, qid, sents, cq_file_size)
        newest = max((s.store_ts for s in self.sent), default=0)
        physic, logics, index = checkpoint or (newest, newest, newest)
        (root / "checkpoint").write_bytes(struct.pack(">qqqqq", physic, logics, index, 0, 0).ljust(4096, b"\0"))
        if abort:
            (root / "abort").write_bytes(b"")
        return root


def write_queue(root: Path, topic: str, queue_id: int, sents: list[Sent], file_size: int) -> None:
    """`consumequeue/topic/queueId/` holding the units of `sents` at their queue offsets."""
    d = root / "consumequeue" / topic / str(queue_id)
    d.mkdir(parents=True)
    files: dict[int, bytearray] = {}
    for s in sents:
        pos = s.queue_offset * 20
        start = pos - pos % file_size
        files.setdefault(start, bytearray(file_size))[pos - start:pos - start + 20] = struct.pack(
            ">qiq", s.offset, s.size, java_hash(s.tags))
    for start, data in files.items():
        (d / f"{start:020d}").write_bytes(bytes(data))


def units(root: Path, topic: str, queue_id: int) -> list[tuple[int, int, int]]:
    """(offset, size, tags code) of every non-zero unit of one queue, in order (read by struct alone)."""
    out = []
    for p in sorted((root / "consumequeue" / topic / str(queue_id)).iterdir()):
        data = p.read_bytes()
        out += [struct.unpack_from(">qiq", data, i) for i in range(0, len(data) - 19, 20) if any(data[i:i + 20])]
    return out
