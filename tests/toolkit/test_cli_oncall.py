"""What an on-call engineer expects of the command line, through a real process on the sample fleet:
exit codes of replay and repair, help and --version, replica names, output in a pipe."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.toolkit.test_cli import run_replog

COMMANDS = [[], ["dump"], ["ls"], ["doctor"], ["recover"], ["replay"], ["repair"], ["samples"],
            ["samples", "generate"], ["fleet"], ["fleet", "scan"], ["fleet", "report"]]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """The sample fleet, written by `replog samples generate`; (its root, nothing yet)."""
    root = tmp_path_factory.mktemp("oncall") / "samples"
    proc = run_replog("samples", "generate", str(root))
    assert proc.returncode == 0, proc.stderr
    return root, {}


def kafka(fleet: tuple[Path, dict], broker: int, partition: str) -> str:
    return str(fleet[0] / "kafka" / f"broker-{broker}" / partition)


# --- exit codes of replay and repair (contract: 1 when a replica loses records or would fail) ------------


def test_kafka_replay_that_loses_records_exits_1(fleet: tuple[Path, dict]) -> None:
    proc = run_replog("replay", *(f"b{i}={kafka(fleet, i, 'orders-2')}" for i in (1, 2, 3)), "--format", "json")
    assert proc.returncode == 1, proc.stderr
    lost = {r["name"]: r["lost"]["records"] for r in json.loads(proc.stdout)["replicas"]}
    assert lost["b3"] > 0 and lost["b1"] == lost["b2"] == 0


def test_kafka_replay_without_loss_exits_0(fleet: tuple[Path, dict]) -> None:
    proc = run_replog("replay", kafka(fleet, 1, "orders-0"), kafka(fleet, 2, "orders-0"), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert all(r["lost"]["records"] == 0 for r in json.loads(proc.stdout)["replicas"])


def test_kafka_repair_exits_1_when_a_replica_loses_records_even_if_verified(fleet: tuple[Path, dict],
                                                                          tmp_path: Path) -> None:
    specs = [f"b{i}={kafka(fleet, i, 'orders-2')}" for i in (1, 2, 3)]
    proc = run_replog("repair", *specs, "--out", str(tmp_path / "lossy"), "--format", "json")
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert all(r["identical_to_leader"] and not r["problems"] for r in doc["repaired"])
    assert any(r["lost"]["records"] for r in doc["replicas"])
    clean = run_replog("repair", kafka(fleet, 1, "orders-0"), kafka(fleet, 2, "orders-0"),
                       "--out", str(tmp_path / "clean"), "--format", "json")
    assert clean.returncode == 0, clean.stderr


def test_rocketmq_replay_and_repair_that_lose_messages_exit_1(fleet: tuple[Path, dict], tmp_path: Path) -> None:
    rmq = fleet[0] / "rocketmq"
    specs = [f"master={rmq / 'master'}", f"slave={rmq / 'slave'}", "--protocol", "autoswitch"]
    proc = run_replog("replay", *specs, "--format", "json")
    assert proc.returncode == 1, proc.stderr
    slave = next(r for r in json.loads(proc.stdout)["replicas"] if r["name"] == "slave")
    assert slave["lost"]["records"] > 0 and slave["stall"] is None   # lost, not stalled: the loss alone decides
    assert run_replog("repair", *specs, "--out", str(tmp_path / "out"), "--format", "json").returncode == 1
    twin = tmp_path / "twin" / "master"
    shutil.copytree(rmq / "master", twin)
    same = run_replog("replay", f"a={rmq / 'master'}", f"b={twin}", "--protocol", "autoswitch", "--format", "json")
    assert same.returncode == 0, same.stderr
