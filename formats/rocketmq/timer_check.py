"""The timer checkpoint `config/timercheck` and the timer metrics `config/timermetrics` (RocketMQ 5.x).

`TIMER_CHECKPOINT` (construct) is the source of truth for `timercheck` (`store/timer/TimerCheckpoint.java`, tag
rocketmq-all-5.3.3; docs/reference/rocketmq.md §16.3): a 4 KiB mapped page (`OS_PAGE_SIZE`) whose first 56 bytes
are seven i64: `lastReadTimeMs` (the wheel has delivered every slot before it), `lastTimerLogFlushPos` (timer-log
bytes flushed), `lastTimerQueueOffset` (next `rmq_sys_wheel_timer` queue offset to move into the timer log),
`masterTimerQueueOffset`, then the `DataVersion` (stateVersion, timestamp, counter). `timermetrics` is
`TimerMetrics`' ConfigManager JSON: `timingCount` (real topic -> {count: pending timer messages, timeStamp}) and
`dataVersion` (§16.4).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import construct as cs

from replog.formats.errors import FormatError
from replog.formats.findings import Finding
from replog.formats.layout import FixedPage
from replog.formats.rocketmq import config_json

TIMER_CHECKPOINT = cs.Struct(
    "last_read_time_ms" / cs.Int64sb,
    "last_timer_log_flush_pos" / cs.Int64sb,
    "last_timer_queue_offset" / cs.Int64sb,
    "master_timer_queue_offset" / cs.Int64sb,
    "state_version" / cs.Int64sb,
    "data_version_timestamp" / cs.Int64sb,
    "data_version_counter" / cs.Int64sb,
)
FILE_SIZE = 4096                       # DefaultMappedFile.OS_PAGE_SIZE
MIN_SIZE = 32                          # the four offsets; dataVersion was added later ("new add")
CHECK_NAME, METRICS_NAME = "timercheck", "timermetrics"   # BrokerPathConfigHelper, under config/
_CODE = "ROCKETMQ_TIMER_CHECKPOINT_INVALID"


@dataclass(frozen=True, slots=True)
class TimerCheckpoint:
    last_read_time_ms: int = 0
    last_timer_log_flush_pos: int = 0
    last_timer_queue_offset: int = 0
    master_timer_queue_offset: int = 0
    state_version: int = 0
    data_version_timestamp: int = 0
    data_version_counter: int = 0


PAGE = FixedPage(TIMER_CHECKPOINT, TimerCheckpoint, FILE_SIZE, MIN_SIZE, _CODE, "timer checkpoint")
FIELDS = PAGE.fields
# built, the page `TimerCheckpoint#flush` leaves
parse_timer_checkpoint, build_timer_checkpoint, read_timer_checkpoint = PAGE.parse, PAGE.build, PAGE.read


def check_timer_checkpoint(data: bytes | memoryview, path: str = "") -> Iterator[Finding]:
    """The file itself: size, negative positions."""
    yield from PAGE.check(data, path, tuple(f.name for f in dataclasses.fields(TimerCheckpoint))[:4])


@dataclass(frozen=True)
class TimerMetrics:
    """`timingCount`: real topic -> (pending count, time stamp); the data version as written."""

    timing_count: dict[str, tuple[int, int]]
    data_version: dict[str, Any]

    @property
    def pending(self) -> int:
        return sum(count for count, _ in self.timing_count.values())


def parse_timer_metrics(data: bytes) -> TimerMetrics:
    """Raises `FormatError` (ROCKETMQ_CONFIG_INVALID) for text that is not the ConfigManager JSON."""
    doc = config_json.loads(data)
    if not isinstance(doc, dict):
        raise FormatError("ROCKETMQ_CONFIG_INVALID", "timer metrics are not a JSON object", position=0)
    table = doc.get("timingCount") or {}
    if not isinstance(table, dict):
        raise FormatError("ROCKETMQ_CONFIG_INVALID", "timingCount is not an object", position=0)
    counts: dict[str, tuple[int, int]] = {}
    for topic, metric in table.items():
        if not isinstance(metric, dict) or not isinstance(metric.get("count", 0), int):
            raise FormatError("ROCKETMQ_CONFIG_INVALID", f"timingCount[{topic}] is not {{count, timeStamp}}",
                              position=0)
        counts[str(topic)] = (int(metric.get("count", 0)), int(metric.get("timeStamp", 0) or 0))
    version = doc.get("dataVersion")
    return TimerMetrics(counts, version if isinstance(version, dict) else {})


def build_timer_metrics(metrics: TimerMetrics) -> bytes:
    doc = {"dataVersion": metrics.data_version,
           "timingCount": {t: {"count": c, "timeStamp": ts} for t, (c, ts) in metrics.timing_count.items()}}
    return config_json.dumps(doc).encode("utf-8")
