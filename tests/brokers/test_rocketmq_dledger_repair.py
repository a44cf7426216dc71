"""A real DLedger group (RocketMQ 4.9.7, dledger 0.3.1.2) started on the stores `replog repair --protocol dledger`
wrote from damaged copies (rocketmq_dledger_repair) elects a leader and serves exactly what replog wrote: every
broker's commit-log end is the leader's written end, every consume-queue unit (RmqInspect) is one replog wrote for
a message of the repaired log, and the consumer offsets are the ones the stores carried."""
from __future__ import annotations

from pathlib import Path

import pytest

from replog.recovery.rocketmq.store_model import load_store
from tests.brokers.rocketmq_dledger_repair import QUEUES, TOPIC, repaired_group

pytestmark = [pytest.mark.brokers, pytest.mark.brokers_full]


def test_group_starts_on_repaired_stores(tmp_path: Path) -> None:
    o = repaired_group(tmp_path)
    peers = {r["name"]: r for r in o.report["repaired"]}
    assert all(r["problems"] == [] for r in peers.values()), f"replog's own verification: {peers}"
    assert "CRC" in (peers[o.flipped[0]]["cut"] or ""), f"{o.flipped[0]} was not cut at the flip: {peers}"
    leader = load_store(o.repaired / o.report["leader"], "leader")
    ends = {n: i.max_offset for n, i in o.inspections.items()}
    assert set(ends.values()) == {leader.max_offset}, f"brokers serve {ends}, replog wrote {leader.max_offset}"
    want = {(m.queue_id, m.queue_offset, m.physical_offset, m.size) for m in leader.messages if m.topic == TOPIC}
    for name, ins in o.inspections.items():
        got = {(q, idx, off, size) for (t, q), units in ins.units.items() if t == TOPIC
               for idx, off, size, _ in units}
        assert got == want, (f"{name}: {len(got - want)} units replog did not write, {len(want - got)} missing; "
                             f"queues {QUEUES}")
    # Each copy carried different offsets; a follower takes the leader's (SlaveSynchronize#syncConsumerOffset,
    # every 10 s: a first run expected each broker to keep its own and saw a follower hold the leader's).
    group = f"{TOPIC}@G"
    want_offsets = o.offsets_before[o.leader][group]
    for name, after in o.offsets_after.items():
        assert after.get(group) == want_offsets, \
            f"{name}: consumer offsets {after.get(group)} after restart, the leader {o.leader} carried {want_offsets}"
