"""recover against real RocketMQ brokers: a store a broker wrote (crashed or cleanly stopped), damaged on a copy;
`replog recover` predicts from that copy, a broker of the same version is then started on another copy of it,
and what the broker serves through its admin API must be what replog wrote: the commit log's end and every
consume-queue unit of every queue (index, physical offset, size).

Premise (stated): the broker restarts from the copy and nothing is sent to it; `abort` present (crash) means the
broker's abnormal recovery, absent (clean stop) its normal recovery.
"""
from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.brokers.rocketmq_scenarios import DAMAGES, QUEUES, TOPIC, Base, damaged_copy, start_on, write_base
from tests.toolkit.test_cli import replog_json

pytestmark = pytest.mark.brokers
FULL = pytest.mark.brokers_full

VERSIONS = ("4.9.7", "5.3.3")
STOPS = {"crash": True, "clean": False}
Unit = tuple[int, int, int]   # queue index, physical offset, size


def cases(*ci: str) -> list[Any]:
    """Every version x stop x damage; the labels named run in `make test`, the rest in `make test-brokers`."""
    out = []
    for version in VERSIONS:
        for stop, crashed in STOPS.items():
            for damage in DAMAGES:
                label = f"{version}-{stop}-{damage}"
                out.append(pytest.param(version, crashed, damage, id=label, marks=() if label in ci else FULL))
    return out


@pytest.fixture(scope="module")
def base_store(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, bool], Base]:
    """One base store per version and stop, written once per module run."""
    made: dict[tuple[str, bool], Base] = {}

    def get(version: str, crashed: bool) -> Base:
        if (version, crashed) not in made:
            root = tmp_path_factory.mktemp(f"rmq-base-{version}-{'crash' if crashed else 'clean'}")
            made[(version, crashed)] = write_base(version, root, crashed)
        return made[(version, crashed)]
    return get



def written_units(store: Path, topic: str, queue: int) -> list[Unit]:
    """The units of one consume queue replog wrote, read as the broker's file walk reads them (20-byte units up to
    the first with offset < 0 or size <= 0), each with its queue index."""
    d = store / "consumequeue" / topic / str(queue)
    if not d.is_dir():
        return []
    out: list[Unit] = []
    for path in sorted(d.iterdir(), key=lambda p: int(p.name)):
        data = path.read_bytes()
        for pos in range(0, len(data) - 19, 20):
            offset, size = struct.unpack_from(">qi", data, pos)
            if offset < 0 or size <= 0:
                return out
            out.append(((int(path.name) + pos) // 20, offset, size))
    return out


@pytest.mark.parametrize(("version", "crashed", "damage"), cases("5.3.3-clean-queues-behind"))
def test_recover_matches_broker(base_store: Callable[[str, bool], Base], tmp_path: Path, version: str,
                                crashed: bool, damage: str) -> None:
    base = base_store(version, crashed)
    damaged = damaged_copy(base, damage, tmp_path / "damaged")
    predicted = replog_json("recover", str(damaged), "--out", str(tmp_path / "out"), "--broker-version", version)
    broker = start_on(version, damaged, tmp_path / "broker")
    seen = broker.inspection
    assert predicted["truncated_to"] == seen.max_offset, (
        f"commit-log end: replog {predicted['truncated_to']}, broker {seen.max_offset} (scan from "
        f"{predicted['scan_start']}, {predicted['recovery']})")
    out = Path(predicted["output"])
    for q in range(QUEUES):
        theirs = [(i, off, size) for i, off, size, _ in seen.units.get((TOPIC, q), [])]
        ours = written_units(out, TOPIC, q)
        first = next((k for k, (a, b) in enumerate(zip(ours, theirs, strict=False)) if a != b),
                     min(len(ours), len(theirs)))
        assert ours == theirs, (
            f"queue {q}: replog keeps {len(ours)} units, the broker {len(theirs)} "
            f"(range {seen.queues.get((TOPIC, q))});"
            f" first difference at #{first}: replog {ours[first:first + 2]}, broker {theirs[first:first + 2]}; "
            f"replog queues {predicted['rebuilt'].get('queues')}")
