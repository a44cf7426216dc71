"""RocketMQ 5.3.3 lab scenarios of issue 29's last gaps (the 5.3.3 DLedger cases reuse rocketmq_dledger's).

`fresh_controller`: a controller-mode group repaired by replog (`rocketmq_repair_scenarios.unclean_with_offsets`,
`repair --protocol autoswitch`) started on replog's outputs under a NEW controller (an empty controller store, not
the copied one). The brokers keep what their stores say: the broker id the old controller granted
(`ReplicasManager#register`: `config`'s broker identity file, `BrokerMetadata`) and their epoch files; the fresh
controller knows neither. What the group does is read from the controller (`mqadmin getSyncStateSet`), the
brokers' logs and, when a master serves, its admin API and a pull consumer (RmqDump).

Premise: the old controller's store is lost (or not copied); the brokers restart from replog's outputs; nothing is
sent after the restart.
"""
from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.brokers.rocketmq_lab import GROUP, Inspection, RmqSpec, running_rocketmq
from tests.brokers.rocketmq_repair_scenarios import VERSION_5
from tests.brokers.rocketmq_scenarios import QUEUES, TOPIC, sync_state

SETTLE = 90.0          # seconds each broker gets to register and be elected (heartbeats every 1 s in the lab)
_REGISTER = re.compile(r"(Confirm now register state: \w+|Register state change to[^\n]*|"
                       r"Broker-set: \S+ hasn't been registered in controller|[^\n]*[Cc]hange to (?:master|slave)"
                       r"[^\n]*)")


@dataclass(frozen=True)
class FreshOutcome:
    """What a group on repaired stores did under a fresh controller."""
    master_addr: str                               # the controller's master ('' when none)
    in_sync: int                                   # its SyncStateSet size
    addresses: dict[str, str]                      # broker -> its address
    master: Inspection | None                      # what the master serves (admin API), when one is elected
    messages: list[tuple[int, int, int, int]]      # (queue, queue offset, commit-log offset, seq): RmqDump
    logs: dict[str, list[str]]                     # each broker's register / role lines (distinct, in order)


def fresh_controller(stores: dict[str, Path], first: str, root: Path) -> FreshOutcome:
    """The name server with an empty controller store, `first`'s broker started on its repaired store, then the
    other: each is given SETTLE seconds to register and be elected; then the controller and the master are read."""
    with running_rocketmq(RmqSpec(VERSION_5, mode="controller", brokers=2), root, start=False) as c:
        for name, store in stores.items():
            c.use_store(name, store)
        c.start_namesrv()
        for name in [first, *(n for n in stores if n != first)]:
            c.start_broker(name)
            _settle(lambda: sync_state(c)[0] != "")
        addr, members = sync_state(c)
        addresses = {n: c.broker_addr(n) for n in stores}
        master = next((n for n, a in addresses.items() if a == addr), None)
        inspection = c.inspect(master, {TOPIC: QUEUES}) if master else None
        out = c.java_source("RmqDump.java", c.namesrv_addr, GROUP, f"{TOPIC}:{QUEUES}") if master else ""
        logs = {n: list(dict.fromkeys(_REGISTER.findall(c.brokers[n].output_since_start()))) for n in stores}
    messages = [(int(q), int(qo), int(off), int(seq)) for q, qo, off, seq in
                re.findall(r"^MSG \S+ (\d+) (\d+) (\d+) (-?\d+)$", out, re.M)]
    return FreshOutcome(addr, members, addresses, inspection, messages, logs)


def _settle(done: Callable[[], bool], timeout: float = SETTLE) -> None:
    """Wait until `done()` or `timeout`, whichever first: the outcome, not a premise, so no failure here."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if done():
            return
        time.sleep(2.0)
