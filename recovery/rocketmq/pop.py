"""POP consumption on disk: the revive log's checkpoints and acks, and which popped messages the broker re-delivers.

Rules (apache/rocketmq 5.3.3):
* A POP request hands out messages and records a checkpoint (`PopCheckPoint`, fastjson body with the short names
  `so` start offset, `n` count, `bm` bitmap of the acks merged in memory, `d` queue-offset diffs, `pt` pop time, `it`
  invisible time, `t` topic, `c` group, `q` queue id, `bn` broker name) in the revive topic
  `rmq_sys_REVIVE_LOG_<cluster>` (`PopAckConstants.REVIVE_TOPIC`), tag "ck" (`CK_TAG`). Acks the buffer could not
  merge are their own revive messages: tag "ack" (`AckMsg`: `ao` acked offset, `so`, `c`, `t`, `q`, `pt`, `bn`) or
  "bAck" (`BatchAckMsg`: `aol` acked offsets).
* `PopReviveService#consumeReviveMessage` reads the revive queue from its consumed offset (group
  `CID_RMQ_SYS_REVIVE_GROUP`, the consumer offset of the revive topic), keys each checkpoint by topic + group + queue
  id + start offset + pop time + broker name and sets the bit of each ack with the same key (`indexOfAck`; an ack's
  blank broker name is the broker's own). `#reviveMsgFromCk` re-delivers (to the retry topic) every offset whose bit is
  not set, once pop time + invisible time has passed (`PopCheckPoint#getReviveTime`); offsets are
  `ackOffsetByIndex`: start offset + diff[i] (start offset + i in the old form without diffs).
* Every checkpoint and ack is written with a deliver time (`PopMessageProcessor#buildCkMsg`: revive time - 1 s,
  `AckMessageProcessor#appendAck`: pop time + invisible time); with `timerWheelEnable` the timer holds it in
  `rmq_sys_wheel_timer` (REAL_TOPIC the revive topic, REAL_QID its queue) until then, so a store stopped within the
  invisible time has its checkpoints and acks there, not in the revive topic (a real 5.3.3 store, tests/brokers/
  rocketmq_pop_bcq.py). A held one is still to be processed unless the revive topic already has its copy (then that
  copy's revive offset decides).
* So a lost ack means the message is delivered again; a lost checkpoint means its un-acked messages are never
  revived (the group's offset moved past them at pop time).
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from replog.formats.shape import Shape
from replog.recovery.rocketmq.store_model import REVIVE_PREFIX, TIMER_TOPIC, MessageRef

CK_TAG, ACK_TAG, BATCH_ACK_TAG = "ck", "ack", "bAck"
REVIVE_GROUP = "CID_RMQ_SYS_REVIVE_GROUP"
Key = tuple[str, str, int, int, int]     # topic, group, queue id, start offset, pop time


@dataclass
class Checkpoint:
    """One popped batch: where it was popped and which of its offsets are not acked (the broker revives those)."""

    topic: str
    group: str
    queue_id: int
    start_offset: int
    pop_time: int
    invisible_time: int
    broker_name: str
    revive_queue: int
    revive_offset: int                   # queue offset of the checkpoint in its revive queue
    offsets: tuple[int, ...]             # every popped offset (ackOffsetByIndex)
    acked: frozenset[int]                # bitmap bits and acks merged

    @property
    def key(self) -> Key:
        return (self.topic, self.group, self.queue_id, self.start_offset, self.pop_time)

    @property
    def unacked(self) -> tuple[int, ...]:
        return tuple(o for o in self.offsets if o not in self.acked)

    @property
    def revive_time(self) -> int:
        return self.pop_time + self.invisible_time


def _json(m: MessageRef) -> dict[str, object] | None:
    try:
        doc = json.loads(m.field("body") or "")
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def _int(doc: dict[str, object], *names: str) -> int:
    for name in names:
        v = doc.get(name)
        if isinstance(v, int) and not isinstance(v, bool):
            return v
    return 0


def _str(doc: dict[str, object], *names: str) -> str:
    for name in names:
        v = doc.get(name)
        if isinstance(v, str):
            return v
    return ""


def checkpoint_of(m: MessageRef, doc: dict[str, object]) -> Checkpoint | None:
    """`PopCheckPoint` from a "ck" body; None without topic or group (the revive service skips those). A
    timer-held one has its revive queue in REAL_QID and no revive offset yet (-1)."""
    topic, group = _str(doc, "t"), _str(doc, "c")
    if not topic or not group:
        return None
    start, num, bitmap = _int(doc, "so"), _int(doc, "n"), _int(doc, "bm")
    diffs = doc.get("d")
    if isinstance(diffs, list) and diffs and all(isinstance(x, int) for x in diffs):
        offsets = tuple(start + int(x) for x in diffs[:num])
    else:
        offsets = tuple(start + i for i in range(num))
    acked = frozenset(o for i, o in enumerate(offsets) if bitmap >> i & 1)
    if m.topic == TIMER_TOPIC:
        qid = m.field("REAL_QID") or ""
        revive_queue, revive_offset = (int(qid) if qid.isdigit() and len(qid) < 10 else -1), -1
    else:
        revive_queue, revive_offset = m.queue_id, m.queue_offset
    return Checkpoint(topic, group, _int(doc, "q"), start, _int(doc, "pt"), _int(doc, "it"), _str(doc, "bn"),
                      revive_queue, revive_offset, offsets, acked)


def _acks(doc: dict[str, object], tag: str) -> tuple[Key, list[int], str]:
    key = (_str(doc, "t", "topic"), _str(doc, "c", "consumerGroup"), _int(doc, "q", "queueId"),
           _int(doc, "so", "startOffset"), _int(doc, "pt", "popTime"))
    if tag == BATCH_ACK_TAG:
        listed = doc.get("aol", doc.get("ackOffsetList"))
        offsets = [int(x) for x in listed if isinstance(x, int)] if isinstance(listed, list) else []
    else:
        offsets = [_int(doc, "ao", "ackOffset")]
    return key, offsets, _str(doc, "bn", "brokerName")


def _held(m: MessageRef) -> bool:
    """A revive message the timer still holds (see the module docstring)."""
    return m.topic == TIMER_TOPIC and (m.field("REAL_TOPIC") or "").startswith(REVIVE_PREFIX)


def checkpoints(messages: Iterable[MessageRef], consumed: dict[tuple[str, int], int] | None = None
                ) -> dict[Key, Checkpoint]:
    """The checkpoints the revive service has still to process (at or past `consumed`, the revive group's offset
    per (revive topic, revive queue), or still held by the timer with no copy in the revive topic), each with the
    acks of the log (in the revive topic or held) merged in, as `PopReviveService#consumeReviveMessage` merges
    them."""
    consumed = consumed or {}
    cks: dict[Key, Checkpoint] = {}
    held: dict[Key, Checkpoint] = {}
    delivered: set[Key] = set()
    acks: list[tuple[Key, list[int], str]] = []
    for m in messages:
        in_revive = m.topic.startswith(REVIVE_PREFIX)
        if not in_revive and not _held(m):
            continue
        tag, doc = m.field("TAGS"), _json(m)
        if doc is None:
            continue
        if tag == CK_TAG:
            ck = checkpoint_of(m, doc)
            if ck is None:
                continue
            if not in_revive:
                held[ck.key] = ck
                continue
            delivered.add(ck.key)
            if m.queue_offset >= consumed.get((m.topic, m.queue_id), 0):
                cks[ck.key] = ck
        elif tag in (ACK_TAG, BATCH_ACK_TAG) and (not in_revive
                                                  or m.queue_offset >= consumed.get((m.topic, m.queue_id), 0)):
            acks.append(_acks(doc, tag))
    cks.update({key: ck for key, ck in held.items() if key not in delivered})
    for key, offsets, broker in acks:
        ck = cks.get(key)
        if ck is not None and (not broker or not ck.broker_name or broker == ck.broker_name):
            ck.acked = ck.acked | frozenset(o for o in offsets if o in ck.offsets)
    return cks


ACK_LOST, CHECKPOINT_LOST = "ack_lost", "checkpoint_lost"


def compare(before: dict[Key, Checkpoint], after: dict[Key, Checkpoint]
            ) -> list[tuple[Checkpoint, str, tuple[int, ...]]]:
    """(checkpoint, classification, offsets) for every checkpoint a replay changes: one it loses with offsets still
    un-acked (never revived), one whose acks it loses (those offsets are delivered again)."""
    out = []
    for key, ck in before.items():
        now = after.get(key)
        if now is None:
            if ck.unacked:
                out.append((ck, CHECKPOINT_LOST, ck.unacked))
            continue
        again = tuple(o for o in now.unacked if o in ck.acked)
        if again:
            out.append((now, ACK_LOST, again))
    return out


@dataclass
class PopImpact:
    store: str
    group: str
    topic: str
    queue_id: int
    start_offset: int
    pop_time: int
    revive_time: int
    revive_queue: int
    classification: str
    offsets: list[int]
    explanation: str


POP_IMPACT = Shape("store", "group", "topic", "queue_id", "start_offset", "pop_time", "revive_time", "revive_queue",
                   "classification", "offsets", "explanation")
_WHY = {CHECKPOINT_LOST: "its checkpoint is gone: these popped, un-acked messages are never revived (the group's "
                         "offset moved past them when they were popped)",
        ACK_LOST: "their acks are gone: the revive service delivers these messages again at the revive time"}


def pop_impact(store: str, before: dict[Key, Checkpoint], after: dict[Key, Checkpoint]) -> list[PopImpact]:
    return [PopImpact(store, ck.group, ck.topic, ck.queue_id, ck.start_offset, ck.pop_time, ck.revive_time,
                      ck.revive_queue, what, list(offsets), _WHY[what])
            for ck, what, offsets in compare(before, after)]
