"""A DLedger group (RocketMQ 4.9.7, dledger 0.3.1.2) restarted on the stores `replog repair --protocol dledger`
wrote from damaged copies.

Premise: `uncommitted_tail` (tests/brokers/rocketmq_dledger.py) runs its group and takes copies while the old
leader is down (its uncommitted tail on disk, the two others paused for their copy). The copies are then damaged
offline: the follower that is not the replay's leader gets one body byte flipped in a middle entry (dledger's
recover keeps it: it never checks a body CRC), the old leader gets its `index/` zeroed from one entry on (its
recover stops there and truncates). `replog repair` writes the three stores; a NEW group of three brokers is started
on them (every store replaced by its repaired copy, nothing else carried over), and what it serves is read with the
brokers' admin API (RmqInspect) once every broker serves the same end. The group is stopped cleanly.
"""
from __future__ import annotations

import json
import shutil
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.brokers.rocketmq_dledger import QUEUES, TOPIC, _caught_up, uncommitted_tail
from tests.brokers.rocketmq_lab import Inspection, RmqSpec, running_rocketmq
from tests.toolkit.test_cli import run_replog


@dataclass(frozen=True)
class RepairOutcome:
    damaged: dict[str, Path]                # the damaged copies replog repaired
    repaired: Path                          # replog's output (DIR/NAME/)
    report: dict[str, Any]                  # replog repair's JSON
    flipped: tuple[str, int]                # (peer, entry index) whose body byte was flipped
    zeroed: tuple[str, int]                 # (peer, entry index) from which its index was zeroed
    leader: str                             # the leader the restarted group elected
    inspections: dict[str, Inspection]      # every broker once caught up
    offsets_before: dict[str, dict[str, object]]   # consumerOffset.json's offsetTable put in each damaged copy
    offsets_after: dict[str, dict[str, object]]    # the offsetTable each broker persisted when stopped
    log: str                                # the restarted brokers' output (for the evidence)


def _entries(peer_dir: Path) -> list[tuple[Path, int, int]]:
    """(file, position, index) of each entry, read with struct (DLedgerEntryCoder's header)."""
    out = []
    for f in sorted((peer_dir / "data").iterdir()):
        raw = f.read_bytes()
        at = 0
        while at + 48 <= len(raw):
            magic, size, index = struct.unpack_from(">iiq", raw, at)
            if magic != 1 or size <= 48:
                break
            out.append((f, at, index))
            at += size
    return out


def flip_body(store: Path, index: int) -> None:
    """Flip the 11th byte of entry `index`'s message body (its BODYCRC no longer matches: 4.9.7's CRC covers the
    body only, so the entry's last byte, in the properties, would not do: a first run flipped it and no CRC
    check saw it). The body starts 88 bytes into the message (MessageDecoder's v4 layout), after the entry's
    48-byte header."""
    peer = next(store.rglob("dledger-*"))
    f, at, _ = next(e for e in _entries(peer) if e[2] == index)
    raw = bytearray(f.read_bytes())
    raw[at + 48 + 88 + 10] ^= 0xFF
    f.write_bytes(bytes(raw))


def zero_index(store: Path, index: int) -> None:
    """Zero the `index/` records from entry `index` on."""
    peer = next(store.rglob("dledger-*"))
    for f in sorted((peer / "index").iterdir()):
        start = int(f.name)
        raw = bytearray(f.read_bytes())
        cut = max(0, index * 32 - start)
        raw[cut:] = bytes(len(raw) - cut)
        f.write_bytes(bytes(raw))


def repaired_group(root: Path, version: str = "4.9.7") -> RepairOutcome:
    first = uncommitted_tail(root / "first", version)
    damaged = {}
    for name, copy in first.copies.items():
        damaged[name] = root / "damaged" / name
        damaged[name].parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(copy, damaged[name], symlinks=True)
    survivors = [n for n in first.copies if n != first.returning]
    replay = json.loads(run_replog("replay", *[f"{n}={p}" for n, p in damaged.items()], "--protocol", "dledger",
                                   "--format", "json").stdout)
    follower = next(n for n in survivors if n != replay["leader"])
    flipped, zeroed = (follower, 40), (first.returning, 120)
    offsets = {n: put_offsets(p, {0: 7 + i, 1: 11 + i}) for i, (n, p) in enumerate(damaged.items())}
    flip_body(damaged[follower], flipped[1])
    zero_index(damaged[first.returning], zeroed[1])
    out = root / "repaired"
    done = run_replog("repair", *[f"{n}={p}" for n, p in damaged.items()], "--protocol", "dledger", "--out",
                      str(out), "--format", "json")
    assert done.returncode in (0, 1), f"replog repair exit {done.returncode}: {done.stderr[-2000:]}"
    report = json.loads(done.stdout)
    with running_rocketmq(RmqSpec(version, brokers=3, dledger=True), root / "second", start=False) as c:
        for name in c.brokers:
            c.use_store(name, out / name)
        c.start()
        leader, _ = c.dledger_leader()
        inspections = _caught_up(c, list(c.brokers), timeout=240)
        log = "\n".join(c.brokers[n].output_since_start()[-4000:] for n in c.brokers)
        for name in reversed(list(c.brokers)):
            c.stop(name)
        after = {n: offset_table(c.store(n)) for n in c.brokers}
    return RepairOutcome(damaged, out, report, flipped, zeroed, leader, inspections, offsets, after, log)


def offset_table(store: Path) -> dict[str, object]:
    """consumerOffset.json's offsetTable (fastjson writes int keys bare: read them with a regex-free fix-up)."""
    path = store / "config" / "consumerOffset.json"
    text = path.read_text() if path.is_file() else "{}"
    doc = json.loads(_quote_int_keys(text))
    table = doc.get("offsetTable", {})
    return {k: {str(q): int(o) for q, o in v.items()} for k, v in table.items()}


def _quote_int_keys(text: str) -> str:
    import re
    return re.sub(r'([{,]\s*)(-?\d+)(\s*:)', r'\1"\2"\3', text)


def put_offsets(store: Path, offsets: dict[int, int]) -> dict[str, object]:
    """Write a committed offset for group G on each queue of the topic into the copy's consumerOffset.json."""
    path = store / "config" / "consumerOffset.json"
    doc = json.loads(_quote_int_keys(path.read_text())) if path.is_file() else {}
    doc.setdefault("offsetTable", {})[f"{TOPIC}@G"] = {str(q): o for q, o in offsets.items()}
    path.write_text(json.dumps(doc))
    return offset_table(store)


__all__ = ["QUEUES", "TOPIC", "RepairOutcome", "repaired_group"]
