"""RocketMQ 5.x timer messages (`timerWheelEnable`) across a crash and a `replog recover`/`repair`.

A lone 5.3.3 master with the timer wheel on (the lab's STORE_5X turns it off: overridden here) gets SHORT timer
messages due in SHORT_MS and LONG ones due in LONG_MS (`Message#setDelayTimeMs`, tests/brokers/java/
RmqTimerSend.java). Once the broker delivered the short ones (read with a pull consumer from the topic's min offset,
RmqTimerCount.java) it is killed (`kill -9`) with the long ones pending; the store is copied, replog writes a
recovered store from the copy, and a broker of the same version and settings is started on replog's output.
What it delivers is then read with the same consumer: every timer message must be in its topic exactly once (the
short ones from before the crash, the long ones from the broker started on the output).

Premise: one broker, no slave; the crash comes after the timer checkpoint's flush (timerFlushIntervalMs, 1 s) has
recorded the short deliveries (the scenario waits CHECKPOINT_WAIT first); nothing is sent after the crash.
"""
from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.brokers.kafka_lab import wait_until
from tests.brokers.rocketmq_lab import GROUP, RmqCluster, RmqSpec, running_rocketmq

VERSION = "5.3.3"
SPEC = RmqSpec(VERSION, broker_config={"timerWheelEnable": "true"})
TOPIC, QUEUES = "TimerLab", 2
SHORT, LONG = 10, 20                 # seq 0..9 due in SHORT_MS, 10..29 due in LONG_MS
SHORT_MS, LONG_MS = 2_000, 50_000
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


def timers_across_crash(root: Path, write: Any) -> TimerOutcome:
    """The module's scenario; `write(copy, dest) -> Path` runs replog and returns the store to start on."""
    with running_rocketmq(SPEC, root / "cluster") as c:
        c.create_topic(TOPIC, QUEUES)
        send_timers(c, 0, SHORT, SHORT_MS)
        send_timers(c, SHORT, LONG, LONG_MS)
        before = wait_delivered(c, set(range(SHORT)), 90)
        time.sleep(CHECKPOINT_WAIT)
        stats = c.inspect("n0", {}).stats
        before = delivered(c)
        c.brokers["n0"].kill()
        copy = c.copy_store("n0", root / "crashed")
        output = write(copy, root / "replog")
        c.use_store("n0", output)
        c.start_broker("n0")
        after = wait_delivered(c, set(range(SHORT + LONG)), LONG_MS / 1000 + 120)
        time.sleep(CHECKPOINT_WAIT)
        after = delivered(c)
        log = c.brokers["n0"].output_since_start()
    assert "timerCongestNum" in stats, f"no timer figures in the broker's runtime stats: {sorted(stats)}"
    metrics = {k: v for k, v in stats.items() if k.startswith("timer")}
    return TimerOutcome(copy, output, before, int(stats["timerCongestNum"]), metrics, after, log)
