"""Issue 29, `replog repair` end to end in 5.3.3 controller mode: the unclean election of
`rocketmq_ha_scenarios.controller_decision` with a consumer group that committed offsets before the split, repaired
by replog (`--protocol autoswitch`) and restarted on replog's outputs with the controller's store as it was copied.
What the restarted group serves is read with the brokers' own tools: consumer pull (RmqDump, sequence numbers), the
admin API (RmqInspect: commit-log ends and every CQ unit of master and slave), examineConsumeStats (RmqCommit
progress), the returning slave's log (`truncateOffset is N`), the controller (`mqadmin getSyncStateSet`) and the
slave's consumerOffset.json as it wrote it after a clean stop.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tests.brokers.kafka_lab import wait_until
from tests.brokers.rocketmq_ha_scenarios import Decision, controller_decision, restart_on_copies
from tests.brokers.rocketmq_lab import GROUP, Inspection, RmqCluster, RmqSpec, running_rocketmq
from tests.brokers.rocketmq_repair import (
    CONSUMED,
    CONSUMER,
    SYNCED,
    Offsets,
    file_offsets,
    progress,
    synced_offsets,
)
from tests.brokers.rocketmq_scenarios import QUEUES, TOPIC, wait_caught_up, wait_sync_state

VERSION_5 = "5.3.3"


@dataclass(frozen=True)
class Unclean:
    """The decision's copies (both brokers down, the controller's store copied) and the group's commits."""
    decision: Decision
    committed: dict[tuple[str, int], int]   # RmqCommit's synchronous commits on n0 (the first master)
    offsets_before: Offsets                 # the group's offsets the master reported right after
    slave_synced: dict[tuple[str, int], int]   # what n1 wrote to its consumerOffset.json before the split ({}: RocksDB)


def json_offsets(broker_config: dict[str, str] | None) -> bool:
    """Whether the brokers' `config/consumerOffset.json` holds their offsets: not with `storeType=defaultRocksDB`,
    whose `RocksDBConsumerOffsetManager` persists to the `config/consumerOffsets` database and leaves the JSON stale
    (tag rocketmq-all-5.3.3); there the offsets are read through the admin API only."""
    return (broker_config or {}).get("storeType") != "defaultRocksDB"


def unclean_with_offsets(root: Path, broker_config: dict[str, str] | None = None) -> Unclean:
    """`controller_decision` (n0 master, 100 common messages, n1 frozen out of the SyncStateSet, n0 alone takes 60
    and crashes, n1 elected uncleanly takes 40 and crashes, the controller clears the master) with, once both hold
    the common messages, a consumer group that pulls CONSUMED per queue from n0 and commits synchronously; n1 is
    given the time to sync the offsets from n0 (`Update slave consumer offset from master` in its log, after the
    commit). Premise: nothing runs at the copy; the group restarts from (repaired) copies and the controller copy.
    `broker_config` goes to both brokers; n1's consumerOffset.json is read only where it holds offsets
    (`json_offsets`)."""
    found: dict[str, object] = {}

    def commit(c: RmqCluster) -> None:
        c.create_topic(f"%RETRY%{CONSUMER}", 1, "n0")
        mark = len(c.brokers["n1"].output())
        out = c.java_source("RmqCommit.java", "consume", c.namesrv_addr, CONSUMER, TOPIC, GROUP,
                            ",".join(map(str, range(QUEUES))), str(CONSUMED))
        found["committed"] = {(t, int(q)): int(o) for t, q, o in re.findall(r"^COMMIT (\S+) (\d+) (\d+)$", out, re.M)}
        found["before"] = progress(c)
        wait_until(lambda: SYNCED in c.brokers["n1"].output()[mark:], 120, "n1 did not sync the offsets", every=1.0)

    decision = controller_decision(root, VERSION_5, on_common=commit, broker_config=broker_config)
    synced = (file_offsets(decision.copies["n1"] / "config" / "consumerOffset.json", CONSUMER)
              if json_offsets(broker_config) else {})
    committed, before = found["committed"], found["before"]
    assert isinstance(committed, dict) and isinstance(before, dict), "the commit hook did not run"
    return Unclean(decision, committed, before, synced)


@dataclass(frozen=True)
class ServedGroup:
    """A controller-mode group on repaired stores, once the slave caught up and both are in the SyncStateSet."""
    master: Inspection                                  # the master's end and every CQ unit (admin API)
    slave: Inspection                                   # the slave's end and every CQ unit (admin API)
    truncate_offset: int                                # "truncateOffset is N" in the slave's log
    messages: list[tuple[int, int, int, int]]           # (queue, queue offset, commit-log offset, seq): RmqDump
    offsets: Offsets                                    # the group's offsets (examineConsumeStats, the master)
    slave_offsets: dict[tuple[str, int], int]           # the slave's consumerOffset.json after a clean stop ({}:
                                                        # RocksDB, `json_offsets`)
    slave_log: str


def serve_controller(stores: dict[str, Path], controller: Path, master: str, root: Path,
                     broker_config: dict[str, str] | None = None) -> ServedGroup:
    """A new name server on the copied controller store, `master`'s broker on its repaired store first (the
    controller finds the recorded master gone and elects it), then the other one on its repaired store: it
    becomes the slave, compares epoch files with the master and truncates. Read once the slave caught up and the
    controller lists both in the SyncStateSet. Premise: restart from the repaired copies; nothing sent.
    `broker_config` goes to both brokers (the same as the stores were written with)."""
    other = next(n for n in stores if n != master)
    spec = RmqSpec(VERSION_5, mode="controller", brokers=2, broker_config=dict(broker_config or {}))
    with running_rocketmq(spec, root, start=False) as c:
        found = restart_on_copies(c, controller, stores, master, other)
        wait_caught_up(c, other, master)
        wait_sync_state(c, master, 2)
        c.wait_dispatched(master)
        c.wait_dispatched(other)
        inspections = c.inspect(master, {TOPIC: QUEUES}), c.inspect(other, {TOPIC: QUEUES})
        out = c.java_source("RmqDump.java", c.namesrv_addr, GROUP, f"{TOPIC}:{QUEUES}")
        offsets = progress(c)
        slave_log = c.brokers[other].output_since_start()
        slave_offsets = synced_offsets(c, other) if json_offsets(broker_config) else {}
    messages = [(int(q), int(qo), int(off), int(seq)) for q, qo, off, seq in
                re.findall(r"^MSG \S+ (\d+) (\d+) (\d+) (-?\d+)$", out, re.M)]
    return ServedGroup(*inspections, int(found.group(1)), messages, offsets, slave_offsets, slave_log)
