"""The 5.2.0+ DLedger abnormal restart (recovery/rocketmq/dledger_restart.py) on hand-built peers: its recovery
ends 48 bytes short per entry of the last data file and the peer's consume queues drop the messages from there."""
from __future__ import annotations

import struct
from pathlib import Path

from replog.formats.rocketmq import dledger as dl
from replog.recovery.rocketmq.dledger_replay import replay_dledger
from replog.recovery.rocketmq.dledger_restart import process_offset, unindexed_on_restart
from replog.recovery.rocketmq.recovery_rule import rule_for
from replog.recovery.rocketmq.store_model import StoreModel, load_store
from tests.recovery.rocketmq.test_dledger_replay import store

ENTRIES = 40          # several 4 KiB data files (test_dledger_replay.FILE)


def peer(tmp_path: Path, name: str, version: str | None, crashed: bool = True, indexed: int = ENTRIES,
         abort: bytes = b"4590") -> StoreModel:
    """A peer of ENTRIES entries whose consume queue T/0 indexes the first `indexed` (what the reput dispatched);
    `abort` as a 5.x broker writes it (its PID; 4.x: empty)."""
    path = store(tmp_path, name, [(i, 1) for i in range(ENTRIES)], committed=ENTRIES - 1)
    if crashed:
        (path / "abort").write_bytes(abort)
    write_queue(path, load_store(path, name), indexed)
    return load_store(path, name, rule=rule_for(version))


def write_queue(path: Path, model: StoreModel, indexed: int) -> None:
    """consumequeue/T/0: a 20-byte unit (offset, size, tags code) per message, as the reput writes them."""
    units = b"".join(struct.pack(">qiq", m.physical_offset, m.size, 0) for m in model.messages[:indexed])
    queue = path / "consumequeue" / "T" / "0"
    queue.mkdir(parents=True)
    (queue / "00000000000000000000").write_bytes(units.ljust(20 * ENTRIES, b"\0"))


def test_recovery_end_counts_message_sizes_of_the_last_file(tmp_path: Path) -> None:
    m = peer(tmp_path, "n0", "5.3.3")
    assert m.dledger is not None and len(m.files) > 1, f"premise: several data files, got {len(m.files)}"
    last = m.files[-1][0]
    in_last = [e for e in m.dledger.entries if e.pos >= last]
    assert in_last, "premise: the last data file holds entries"
    expected = last + sum(e.size for e in in_last) - dl.BODY_OFFSET * len(in_last)
    assert process_offset(m) == expected, f"processOffset {process_offset(m)}, expected {expected}"
    gap = unindexed_on_restart(m)
    assert gap is not None, "a 5.3.3 peer restarting with abort drops nothing"
    cut, dropped = gap
    assert [x.physical_offset for x in dropped] == [x.physical_offset for x in m.messages
                                                    if x.physical_offset >= cut], "dropped messages are not the tail"
    assert dropped and dropped[-1].physical_offset == m.messages[-1].physical_offset, "the last message is kept"


def test_no_gap_on_4x_nor_after_a_clean_stop(tmp_path: Path) -> None:
    assert unindexed_on_restart(peer(tmp_path / "a", "n0", "4.9.7")) is None, "4.9.7 recovers to the wrote position"
    assert unindexed_on_restart(peer(tmp_path / "b", "n0", "5.1.4")) is None, "5.1.4 predates #7599"
    assert unindexed_on_restart(peer(tmp_path / "c", "n0", "5.3.3", crashed=False)) is None, \
        "a clean stop (no abort) recovers normally: no gap"
    assert unindexed_on_restart(peer(tmp_path / "d", "n0", None)) is not None, "a 5.x abort (a PID): the rule"
    assert unindexed_on_restart(peer(tmp_path / "e", "n0", None, abort=b"")) is None, \
        "no version and a 4.x abort (empty): a 4.x store, no gap"


def test_no_gap_when_the_queues_stop_short_of_the_recovery_end(tmp_path: Path) -> None:
    """An uncommitted tail was never dispatched: the queues end before processOffset, the broker truncates none
    (`if (maxPhyOffsetOfConsumeQueue >= processOffset)`)."""
    short = peer(tmp_path / "a", "n0", "5.3.3", indexed=ENTRIES - 8)
    assert unindexed_on_restart(short) is None, "queues short of processOffset: no unit dropped"
    full = peer(tmp_path / "b", "n0", "5.3.3")
    assert unindexed_on_restart(full) is not None, "queues past processOffset: the tail is dropped"


def test_replay_reports_each_crashed_peer(tmp_path: Path) -> None:
    stores = [peer(tmp_path, "n0", "5.3.3"), peer(tmp_path, "n1", "5.3.3", crashed=False)]
    result = replay_dledger(stores)
    codes = {r.model.name: [f.code for f in r.findings] for r in result.replicas}
    assert codes == {"n0": ["ROCKETMQ_DLEDGER_RESTART_UNINDEXED"], "n1": []}, f"findings {codes}"
    found = result.replicas[0].findings[0]
    assert found.offset == process_offset(stores[0]), f"finding offset {found.offset}"
