"""A sample RocketMQ deployment: a master/slave pair whose slave diverged, and a damaged store.

Written under OUT/: `master/`, `slave/` (auto-switch HA: epochs 1 and 2; the
slave kept writing in epoch 1 after the master took epoch 2, so the
consistent point is where epoch 2 starts) and `damaged/` (a body byte flipped,
a dirty tail after the last message, an `abort` file), plus PLANTED.json.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from replog.formats.fileio import atomic_write
from replog.formats.rocketmq.commitlog import CommitLogWriter
from replog.formats.rocketmq.config_json import write_config
from replog.samples.rocketmq_stores import FILE_SIZE, Built, Written, append, build, spec

COMMON = 24        # messages both sides hold
MASTER_TAIL = 8    # written by the new master in epoch 2
SLAVE_TAIL = 6     # written by the old master (now slave) in epoch 1, never replicated


def _other(i: int) -> dict[str, Any]:
    return spec(i, body=f"epoch2-{i:04d}".encode() * 4, tag="TagB")


def _prefix_end(specs: list[dict[str, Any]]) -> int:
    w = CommitLogWriter(FILE_SIZE)
    out: list[Written] = []
    for s in specs:
        append(w, out, s)
    return w.max_offset


def _locate(root: Path, physical_offset: int) -> tuple[Path, int]:
    start = physical_offset // FILE_SIZE * FILE_SIZE
    return root / "commitlog" / f"{start:020d}", physical_offset - start


def _damage(store: Built) -> list[dict[str, Any]]:
    """Flip one body byte of a middle message and leave a dirty tail; returns what was planted."""
    victim = store.messages[len(store.messages) // 2]
    log, at = _locate(store.root, victim.offset)
    data = bytearray(log.read_bytes())
    body_at = data.index(spec(len(store.messages) // 2)["body"], at) + 3
    data[body_at] ^= 0x20
    atomic_write(log, bytes(data))
    end = store.messages[-1].offset + store.messages[-1].size
    tail_log, tail_at = _locate(store.root, end)
    tail = bytearray(tail_log.read_bytes())
    tail[tail_at:tail_at + 24] = b"\x7f" * 24
    atomic_write(tail_log, bytes(tail))
    atomic_write(store.root / "abort", b"")
    return [
        {"code": "ROCKETMQ_BODY_CRC_MISMATCH", "store": "damaged", "file": str(log.relative_to(store.root.parent)),
         "position": at, "offset": victim.offset, "changed_position": body_at,
         "description": "one body byte flipped"},
        {"code": "ROCKETMQ_DIRTY_TAIL", "store": "damaged", "file": str(tail_log.relative_to(store.root.parent)),
         "position": tail_at, "offset": end, "description": "24 bytes of garbage after the last message"},
        {"code": "ROCKETMQ_ABORT_PRESENT", "store": "damaged", "file": "damaged/abort", "position": None,
         "offset": None, "description": "the broker did not shut down cleanly"},
    ]


def _topic(name: str) -> dict[str, Any]:
    return {"topicName": name, "readQueueNums": 2, "writeQueueNums": 2, "perm": 6, "topicFilterType": "SINGLE_TAG",
            "topicSysFlag": 0, "order": False}


def _group(name: str) -> dict[str, Any]:
    return {"groupName": name, "consumeEnable": True, "consumeBroadcastEnable": True, "retryQueueNums": 1,
            "retryMaxTimes": 16, "brokerId": 0, "whichBrokerWhenConsumeSlowly": 1}


def _metadata(root: Path, topics: list[str], groups: list[str], offsets: dict[str, dict[int, int]],
              delay: dict[int, int]) -> None:
    """The store's `config/*.json` as the broker's config managers persist them (fastjson, int keys bare)."""
    version = {"counter": 3, "timestamp": 1_700_000_000_000}
    write_config(root / "config" / "topics.json", {"topicConfigTable": {t: _topic(t) for t in topics},
                                                   "dataVersion": version})
    write_config(root / "config" / "subscriptionGroup.json",
                 {"subscriptionGroupTable": {g: _group(g) for g in groups}, "dataVersion": version})
    write_config(root / "config" / "consumerOffset.json", {"offsetTable": offsets, "dataVersion": version})
    write_config(root / "config" / "delayOffset.json", {"offsetTable": delay})


def _impact() -> dict[str, Any]:
    """What `impact` must find: billing read the slave's lost messages (queue offsets 12..14), audit did not;
    the slave's metadata differs from the master's where the old master was changed after the failover."""
    return {"slave_groups": {("orders@billing", 0): "consumed_lost", ("orders@billing", 1): "consumed_lost",
                             ("orders@audit", 0): "unaffected", ("orders@audit", 1): "unaffected"},
            "messages_consumed_lost": 5,
            "metadata_differences": {"topics.json": ["legacy-orders", "payments"],
                                     "subscriptionGroup.json": ["old-reporting"],
                                     "consumerOffset.json": ["orders@audit", "orders@billing"],
                                     "delayOffset.json": ["1", "3"]}}


def generate_rocketmq_samples(out: Path) -> dict[str, Any]:
    """Write the three stores and PLANTED.json under `out` (which must not exist or be empty)."""
    common = [spec(i) for i in range(COMMON)]
    point = _prefix_end(common)
    build(out / "master", common + [_other(i) for i in range(COMMON, COMMON + MASTER_TAIL)],
          epochs=[(1, 0), (2, point)])
    build(out / "slave", common + [spec(i) for i in range(COMMON, COMMON + SLAVE_TAIL)], epochs=[(1, 0)])
    per_queue = COMMON // 2
    _metadata(out / "master", ["orders", "payments"], ["billing", "audit"],
              {"orders@billing": {0: per_queue + MASTER_TAIL // 2, 1: per_queue + MASTER_TAIL // 2},
               "orders@audit": {0: per_queue, 1: per_queue}}, {1: 8, 3: 2})
    _metadata(out / "slave", ["orders", "legacy-orders"], ["billing", "audit", "old-reporting"],
              {"orders@billing": {0: per_queue + 3, 1: per_queue + 2}, "orders@audit": {0: 10, 1: 11}}, {1: 6})
    damaged = build(out / "damaged", [spec(i) for i in range(30)])
    planted = {
        "generator": "replog samples (rocketmq)",
        "divergences": [{"kind": "divergence", "master": "master", "slave": "slave", "protocol": "autoswitch",
                         "consistent_point": point, "slave_messages_lost": SLAVE_TAIL,
                         "description": "the slave kept writing in epoch 1 after the master took epoch 2; group "
                                        "billing had consumed messages there that are lost",
                         "impact": {"slave_groups": {f"{k}/{q}": v for (k, q), v in _impact()["slave_groups"].items()},
                                    **{k: v for k, v in _impact().items() if k != "slave_groups"}}}],
        "damage": _damage(damaged),
    }
    atomic_write(out / "PLANTED.json", json.dumps(planted, indent=2).encode())
    return planted
