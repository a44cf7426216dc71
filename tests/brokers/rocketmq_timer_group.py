"""Issue 29, timer messages across `replog repair --protocol autoswitch` of a 5.3.3 controller-mode group.

`rocketmq_ha_scenarios.controller_decision` (n0 master, n1 in sync; n1 frozen out of the SyncStateSet, n0 alone
takes messages and crashes; n1 elected uncleanly takes others and crashes; the controller clears the master) with
the timer wheel ON on both brokers (`timerWheelEnable`, which the lab's STORE_5X turns off) and timer messages
(`Message#setDelayTimeMs`, tests/brokers/java/RmqTimerSend.java, bodies "seq-<n>", keys "k<n>") in topic TimerLab:

- SHORT (seq 1000..) due in SHORT_MS, sent while both are in sync: delivered by n0 before the split (their
  deliveries are in the common log both hold);
- LONG (seq 1010..) due in PENDING_MS, sent while both are in sync: pending at the copy (in both stores' timer
  queue, the timer wheel of n0 and of n1);
- ALONE0 (seq 1020..) due in PENDING_MS, sent to n0 alone: only in n0's divergent suffix, which the election loses;
- ALONE1 (seq 1030..) due in PENDING_MS, sent to n1 once it is master alone: pending at the copy, n1 only.

What the brokers delivered is read with a pull consumer from each queue's min offset (RmqTimerCount.java): before
the split (from n0), at each lone master's end (just before its crash), and from the group restarted on replog's
repair outputs with the controller's copied store: n1 (the controller's last master) started first, n0 returning
as its slave (it truncates); once SHORT and LONG are delivered, n1 is killed and the controller elects n0, which
must deliver ALONE1 from ITS timer files (the slave's timerlog, timerwheel and timercheck as replog wrote them).
Premise: both brokers crashed (kill -9) with the timer checkpoint flushed (`timerFlushIntervalMs`, 1 s:
CHECKPOINT_WAIT before each crash); the restart is from the repaired copies and the failover comes before ALONE1 is
due; nothing is sent after the restart.
"""
from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tests.brokers.rocketmq_ha_scenarios import Decision, controller_decision, restart_on_copies
from tests.brokers.rocketmq_lab import RmqCluster, RmqSpec, running_rocketmq
from tests.brokers.rocketmq_scenarios import wait_caught_up, wait_sync_state
from tests.brokers.rocketmq_timers import QUEUES, TOPIC, delivered, send_timers, wait_delivered

VERSION = "5.3.3"
TIMERS_ON = {"timerWheelEnable": "true"}
SHORT, LONG, ALONE0, ALONE1 = (range(1000 + 10 * i, 1010 + 10 * i) for i in range(4))
SHORT_MS = 2_000
PENDING_MS = 300_000          # the decision took 2 min 41 s after the LONG sends (seen): still pending at n1's crash
CHECKPOINT_WAIT = 4.0         # timerFlushIntervalMs 1 s; the slave syncs the master's timer checkpoint every 3 s


@dataclass
class TimerGroupRun:
    """What the brokers delivered at each step (sequence number -> times) and the copies."""
    decision: Decision | None = None
    before_split: Counter[int] = field(default_factory=Counter)    # n0, both in sync, SHORT due
    n1_at_crash: Counter[int] = field(default_factory=Counter)     # n1 (master alone) just before its crash
    n0_at_crash: Counter[int] = field(default_factory=Counter)     # n0 (master alone) just before its crash


def timer_decision(root: Path) -> TimerGroupRun:
    """The decision with the timer sends of the module docstring; the premises asserted by the caller."""
    run = TimerGroupRun()

    def on_common(c: RmqCluster) -> None:
        c.create_topic(TOPIC, QUEUES, "n0")
        send_timers(c, SHORT.start, len(SHORT), SHORT_MS)
        send_timers(c, LONG.start, len(LONG), PENDING_MS)
        run.before_split = wait_delivered(c, set(SHORT), 90)
        wait_caught_up(c, "n1", "n0")
        time.sleep(CHECKPOINT_WAIT)

    def on_alone(c: RmqCluster, name: str) -> None:
        if name == "n1":
            c.create_topic(TOPIC, QUEUES, "n1")
        send_timers(c, (ALONE0 if name == "n0" else ALONE1).start, 10, PENDING_MS)
        time.sleep(CHECKPOINT_WAIT)
        if name == "n0":
            run.n0_at_crash = delivered(c)
        else:
            run.n1_at_crash = delivered(c)

    run.decision = controller_decision(root, VERSION, on_common=on_common, broker_config=TIMERS_ON,
                                       on_alone=on_alone)
    return run


@dataclass(frozen=True)
class TimerServed:
    """The group restarted on repaired stores: the deliveries read from the restarted master once the group is in
    sync and the FIRST ones are delivered, then from the other broker once it took over (the restarted master
    killed) and the LATER ones are due; each broker's timer figures (admin API runtime stats `timer*`)."""
    restarted: Counter[int]
    failed_over: Counter[int]
    master_stats: dict[str, str]
    slave_stats: dict[str, str]
    logs: dict[str, str]


def serve_timers(stores: dict[str, Path], controller: Path, master: str, root: Path, first: set[int],
                 later: set[int]) -> TimerServed:
    """A new name server on the copied controller store, `master` on its repaired store first, the other as its
    slave (it compares epochs and truncates). Once the slave caught up and both are in the SyncStateSet, the
    deliveries are read until every `first` one is there; the master is then killed (before the `later` ones are
    due), the controller elects the slave, and the deliveries are read until every `later` one is there; each read
    again 3 x CHECKPOINT_WAIT later (nothing more must come). A wait that ends short is not a failure here: what
    was (not) delivered is the outcome the test checks. Premise: restart from the repaired copies; nothing sent."""
    other = next(n for n in stores if n != master)
    spec = RmqSpec(VERSION, mode="controller", brokers=2, broker_config=dict(TIMERS_ON))
    with running_rocketmq(spec, root, start=False) as c:
        restart_on_copies(c, controller, stores, master, other)
        wait_caught_up(c, other, master)
        wait_sync_state(c, master, 2)
        restarted = settled(c, first)
        stats = [{k: v for k, v in c.inspect(n, {}).stats.items() if k.startswith("timer")} for n in (master, other)]
        time.sleep(CHECKPOINT_WAIT)      # the slave syncs the master's timer checkpoint every 3 s
        c.brokers[master].kill()
        wait_sync_state(c, other, 1)
        failed_over = settled(c, later)
        logs = {n: c.brokers[n].output_since_start() for n in (master, other)}
    return TimerServed(restarted, failed_over, stats[0], stats[1], logs)


def settled(c: RmqCluster, expected: set[int]) -> Counter[int]:
    """The deliveries once every `expected` one is there (or PENDING_MS + 150 s passed), then 3 x CHECKPOINT_WAIT
    more."""
    try:
        wait_delivered(c, expected, PENDING_MS / 1000 + 150)
    except AssertionError:
        pass
    time.sleep(3 * CHECKPOINT_WAIT)
    return delivered(c)
