"""RocketMQ 5.x timer messages (`timerWheelEnable`) across a crash and a `replog recover`/`repair`.

A lone 5.3.3 master with the timer wheel on (the lab's STORE_5X turns it off: overridden here) gets SHORT timer
messages due in SHORT_MS and LONG ones due in LONG_MS (`Message#setDelayTimeMs`, tests/brokers/java/
RmqTimerSend.java). Once the broker delivered the short ones (read with a pull consumer from the topic's min offset,
RmqTimerCount.java) it is killed (`kill -9`) with the long ones pending; the store is copied, replog writes a
recovered store from the copy, and a broker of the same version and settings is started on replog's output.
With a damage, LATE ones (due in LATE_MS) are sent last, just before the crash. What the broker delivers is then
read with the same consumer: every timer message must be in its topic exactly once (the short ones from before the
crash, the others from the broker started on the output). With a damage (`cut_late`) the copy loses the last CUT
late timer messages to the broker's own recovery: a broker started on the damaged copy itself says which deliveries
are lost.

Premise: one broker, no slave; the crash comes after the timer checkpoint's flush (timerFlushIntervalMs, 1 s) has
recorded the short deliveries and enqueued the late ones (the scenario waits CHECKPOINT_WAIT before and after the
late sends); nothing is sent after the crash.
"""
from __future__ import annotations

import re
import struct
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.brokers.kafka_lab import wait_until
from tests.brokers.rocketmq_lab import GROUP, RmqCluster, RmqSpec, running_rocketmq
from tests.brokers.rocketmq_scenarios import last_file_with_messages, messages_in, patch

VERSION = "5.3.3"
SPEC = RmqSpec(VERSION, broker_config={"timerWheelEnable": "true"})
TOPIC, QUEUES = "TimerLab", 2
SHORT, LONG, LATE = 10, 20, 5       # seq 0..9 due in SHORT_MS, 10..29 in LONG_MS, 30..34 (sent last) in LATE_MS
SHORT_MS, LONG_MS, LATE_MS = 2_000, 60_000, 40_000   # the crash comes ~25 s after the long sends: 2x margin
CUT = 3                              # `cut_late` damages the third-last message: the last CUT late ones are lost
CHECKPOINT_WAIT = 4.0
BODY = 200


@dataclass
class TimerOutcome:
    """What the brokers reported: before the crash (deliveries, `timerCongestNum`), after the restart on replog's
    output (deliveries); the crashed copy and replog's output."""
    copy: Path
    output: Path
    delivered_before: Counter[int]
    congest_before: int
    metrics_before: dict[str, str]
    delivered_after: Counter[int]
    restart_log: str
    delivered_own: Counter[int] | None = None   # a broker started on the (damaged) copy itself, when damaged


def send_timers(c: RmqCluster, first: int, count: int, delay_ms: int) -> list[str]:
    out = c.java_source("RmqTimerSend.java", c.namesrv_addr, TOPIC, GROUP, ",".join(map(str, range(QUEUES))),
                        str(first), str(count), str(BODY), str(delay_ms))
    sent = re.findall(r"^SENT (\d+) (\S+) ", out, re.M)
    assert len(sent) == count and all(s[1] == "SEND_OK" for s in sent), f"timer sends failed:\n{out[-2000:]}"
    return [s[0] for s in sent]


def delivered(c: RmqCluster) -> Counter[int]:
    """Every message of the topic, by sequence number, as the broker serves it (pull from each queue's min)."""
    out = c.java_source("RmqTimerCount.java", c.namesrv_addr, TOPIC, GROUP, str(QUEUES))
    assert "MAX 0" in out, f"no queue range from the broker:\n{out[-2000:]}"
    return Counter(int(s) for s in re.findall(r"^GOT (\d+) ", out, re.M))


def wait_delivered(c: RmqCluster, seqs: set[int], timeout: float) -> Counter[int]:
    last: list[Counter[int]] = [Counter()]

    def done() -> bool:
        last[0] = delivered(c)
        return seqs <= set(last[0])
    wait_until(done, timeout, f"the broker has not delivered {sorted(seqs - set(last[0]))}", every=3.0)
    return last[0]


def body_position(path: Path, pos: int) -> int:
    """Where a message's body starts: the fixed fields, then the born and store hosts (8 bytes each, 20 when the
    sysFlag's BORNHOST_V6_FLAG 1<<4 / STOREHOSTADDRESS_V6_FLAG 1<<5 says IPv6), reconsume times, prepared offset,
    body length (MessageDecoder)."""
    with path.open("rb") as f:
        f.seek(pos + 36)
        (sys_flag,) = struct.unpack(">i", f.read(4))
    born = 20 if sys_flag & (1 << 4) else 8
    store = 20 if sys_flag & (1 << 5) else 8
    return pos + 40 + 8 + born + 8 + store + 4 + 8 + 4


def cut_late(store: Path) -> None:
    """One body byte of the third-last commit-log message flipped (bit rot): the broker's abnormal recovery ends
    the log there (body CRC), dropping the last CUT late timer messages (the last messages written before the
    crash). Located with the format's size, magic and flag fields only."""
    path = last_file_with_messages(store)
    msgs = messages_in(path)
    assert len(msgs) >= CUT, f"{path}: fewer than {CUT} messages"
    at = body_position(path, msgs[-CUT][0]) + 5
    with path.open("rb") as f:
        f.seek(at)
        byte = f.read(1)[0]
    patch(path, at, bytes([byte ^ 0x5A]))


def timers_across_crash(root: Path, write: Any, damage: Callable[[Path], None] | None = None) -> TimerOutcome:
    """The module's scenario; `write(copy, dest) -> Path` runs replog on the (damaged) crashed copy and returns the
    store to start on. With `damage`, a broker is first started on the damaged copy itself (its own recovery)."""
    late = LATE if damage else 0
    expected = set(range(SHORT + LONG + late)) - set(range(SHORT + LONG + late - CUT, SHORT + LONG + late) if late
                                                     else ())
    with running_rocketmq(SPEC, root / "cluster") as c:
        c.create_topic(TOPIC, QUEUES)
        send_timers(c, 0, SHORT, SHORT_MS)
        send_timers(c, SHORT, LONG, LONG_MS)
        wait_delivered(c, set(range(SHORT)), 90)
        time.sleep(CHECKPOINT_WAIT)
        if late:
            send_timers(c, SHORT + LONG, late, LATE_MS)
            time.sleep(CHECKPOINT_WAIT)
        stats = c.inspect("n0", {}).stats
        before = delivered(c)
        c.brokers["n0"].kill()
        copy = c.copy_store("n0", root / "crashed")
        own = None
        if damage is not None:
            damage(copy)
            c.use_store("n0", copy)
            c.start_broker("n0")
            own = settled(c, expected)
            c.stop("n0")
        output = write(copy, root / "replog")
        c.use_store("n0", output)
        c.start_broker("n0")
        after = settled(c, expected)
        log = c.brokers["n0"].output_since_start()
    assert "timerCongestNum" in stats, f"no timer figures in the broker's runtime stats: {sorted(stats)}"
    metrics = {k: v for k, v in stats.items() if k.startswith("timer")}
    return TimerOutcome(copy, output, before, int(stats["timerCongestNum"]), metrics, after, log, own)


def settled(c: RmqCluster, expected: set[int]) -> Counter[int]:
    """What the broker delivered once every expected message is there and CHECKPOINT_WAIT more has passed (the
    lost late messages were due with the kept late ones, the last expected)."""
    wait_delivered(c, expected, max(LONG_MS, LATE_MS) / 1000 + 150)
    time.sleep(CHECKPOINT_WAIT)
    return delivered(c)
