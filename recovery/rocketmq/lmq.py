"""LMQ (light message queue) multi-dispatch: one commit-log record, several consume queues.

Rules (apache/rocketmq 5.3.3):
* A message whose `INNER_MULTI_DISPATCH` property lists queue names (comma-separated, `MixAll.LMQ_DISPATCH_SEPARATOR`)
  gets, when the broker has `enableLmq`, the property `INNER_MULTI_QUEUE_OFFSET` with the next queue offset of each
  `%LMQ%` name (`MixAll.LMQ_PREFIX`), in the same order (`LmqDispatch#wrapLmqDispatch`, called from
  `CommitLog.DefaultAppendMessageCallback#handlePropertiesForLmqMsg`; only when `MixAll.topicAllowsLMQ(topic)`:
  not a retry (`%RETRY%`), system (`rmq_sys_`) or schedule topic).
* With `enableMultiDispatch`, after the message's own consume-queue unit the dispatcher writes one unit to each listed
  queue at the offset the property names (`ConsumeQueue#multiDispatchLmqQueue`; `MultiDispatchUtils
  #checkMultiDispatchQueue` skips messages without both properties or of the excluded topics). A `%LMQ%` queue's
  queue id is always 0 (`MixAll.LMQ_QUEUE_ID`); names with a path separator are skipped; lists of different
  lengths are skipped whole ("[bug] queues.length!=queueOffsets.length"). The unit is the message's own: its
  commit-log offset, size and tag code.
* Consumer offsets of LMQ groups (names starting `%LMQ%`) live in `config/lmqConsumerOffset.json`
  (`LmqConsumerOffsetManager`, `BrokerPathConfigHelper#getLmqConsumerOffsetPath`), member `lmqOffsetTable`
  ("topic@group" -> offset of queue 0); with `enableLmq` the same file's `offsetTable` holds every other group's
  offsets, in place of `consumerOffset.json`.
"""
from __future__ import annotations

from collections.abc import Mapping

LMQ_PREFIX = "%LMQ%"
LMQ_QUEUE_ID = 0
SEPARATOR = ","
MULTI_DISPATCH, MULTI_QUEUE_OFFSET = "INNER_MULTI_DISPATCH", "INNER_MULTI_QUEUE_OFFSET"
_EXCLUDED_PREFIXES = ("%RETRY%", "rmq_sys_")
_SCHEDULE_TOPIC = "SCHEDULE_TOPIC_" + "X" * 4


def is_lmq(name: str) -> bool:
    """`MixAll.isLmq`."""
    return name.startswith(LMQ_PREFIX)


def topic_allows_lmq(topic: str) -> bool:
    """`MixAll.topicAllowsLMQ` / `MultiDispatchUtils.isNeedHandleMultiDispatch`."""
    return not topic.startswith(_EXCLUDED_PREFIXES) and topic != _SCHEDULE_TOPIC


def lmq_targets(topic: str, properties: Mapping[str, str]) -> tuple[tuple[str, int], ...]:
    """The (LMQ queue name, queue offset) units the dispatcher writes for a message (empty when none)."""
    names, offsets = properties.get(MULTI_DISPATCH), properties.get(MULTI_QUEUE_OFFSET)
    if not names or not offsets or not names.strip() or not topic_allows_lmq(topic):
        return ()
    queues, values = names.split(SEPARATOR), offsets.split(SEPARATOR)
    if len(queues) != len(values):
        return ()
    out = []
    for name, value in zip(queues, values, strict=True):
        if "/" in name or not is_lmq(name) or not _is_long(value):
            continue
        out.append((name, int(value)))
    return tuple(out)


def _is_long(text: str) -> bool:
    """`Long.parseLong` accepts it: an optional sign, ASCII digits, within a Java long."""
    body = text[1:] if text[:1] in "+-" else text
    return body.isascii() and body.isdigit() and len(body) <= 19 and -(2**63) <= int(text) < 2**63
