"""What an on-call engineer expects of the command line, through a real process on the sample fleet:
exit codes of replay and repair, help and --version, replica names, output in a pipe."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.toolkit.test_cli import run_replog

COMMANDS = [[], ["dump"], ["ls"], ["doctor"], ["recover"], ["replay"], ["repair"], ["impact"], ["samples"],
            ["samples", "generate"], ["fleet"], ["fleet", "scan"], ["fleet", "report"]]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """The sample fleet, written by `replog samples generate` in a pipe; (its root, the JSON summary printed)."""
    root = tmp_path_factory.mktemp("oncall") / "samples"
    proc = run_replog("samples", "generate", str(root))
    assert proc.returncode == 0, proc.stderr
    return root, json.loads(proc.stdout)


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


# --- --version and help -----------------------------------------------------------------------------------


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(flag: str) -> None:
    from importlib.metadata import version

    proc = run_replog(flag)
    assert proc.returncode == 0 and proc.stdout == f"replog {version('replog')}\n"


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "replog")
def test_help_shows_metavars_not_python_types(command: list[str]) -> None:
    proc = run_replog(*command, "--help", env={"COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr
    for artefact in ("list[", "Path]", "<bool>", "<str>", "<path>", "<int>"):
        assert artefact not in proc.stdout, f"{artefact!r} in `replog {' '.join(command)} --help`"
    assert not re.search(r"\{[a-z_]+\}", proc.stdout), f"a {{name}} metavar in `replog {' '.join(command)} --help`"
    assert "Usage: replog" in proc.stdout


def test_help_names_what_each_argument_takes() -> None:
    usage = {c: run_replog(c, "--help", env={"COLUMNS": "200"}).stdout for c in ("replay", "doctor", "recover")}
    assert "replog replay [OPTIONS] [NAME=]PATH..." in usage["replay"] and "NAME " in usage["replay"]
    assert "replog doctor [OPTIONS] PATH..." in usage["doctor"]
    assert "--out" in usage["recover"] and " DIR " in usage["recover"]


# --- replica names ----------------------------------------------------------------------------------------


def test_one_name_for_two_replicas_is_a_usage_error(fleet: tuple[Path, dict]) -> None:
    proc = run_replog("replay", f"a={kafka(fleet, 1, 'orders-2')}", f"a={kafka(fleet, 2, 'orders-2')}")
    assert proc.returncode == 2 and proc.stdout == ""
    assert "NAME a given to more than one replica" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("command", ["replay", "repair"])
def test_the_same_replica_twice_is_a_usage_error(fleet: tuple[Path, dict], tmp_path: Path, command: str) -> None:
    one = kafka(fleet, 1, "orders-2")
    again = str(fleet[0] / "kafka" / "broker-2" / ".." / "broker-1" / "orders-2")
    out = ["--out", str(tmp_path / "out")] if command == "repair" else []
    proc = run_replog(command, f"a={one}", f"b={again}", *out)
    assert proc.returncode == 2, proc.stdout
    assert "same replica" in proc.stderr and not (tmp_path / "out").exists()


def test_replicas_of_one_broker_id_get_readable_distinct_names(fleet: tuple[Path, dict], tmp_path: Path) -> None:
    """Two copies of broker 1's log dir (Monday's and Tuesday's evidence) and broker 2's."""
    for day in ("mon", "tue"):
        shutil.copytree(fleet[0] / "kafka" / "broker-1", tmp_path / day / "kafka-logs")
    paths = [str(tmp_path / d / "kafka-logs" / "orders-2") for d in ("mon", "tue")] + [kafka(fleet, 2, "orders-2")]
    proc = run_replog("replay", *paths, "--format", "json")
    assert proc.returncode in (0, 1), proc.stderr
    names = [r["name"] for r in json.loads(proc.stdout)["replicas"]]
    assert names == ["broker-1.mon", "broker-1.tue", "broker-2"]
    assert not any(re.fullmatch(r"broker-1-\d+", n) for n in names)   # nothing that reads as a partition


def test_rocketmq_stores_in_folders_of_one_name(fleet: tuple[Path, dict], tmp_path: Path) -> None:
    rmq = fleet[0] / "rocketmq"
    for site in ("east", "west"):
        shutil.copytree(rmq / "master", tmp_path / site / "store")
    proc = run_replog("replay", str(tmp_path / "east" / "store"), str(tmp_path / "west" / "store"),
                      "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert [r["name"] for r in json.loads(proc.stdout)["replicas"]] == ["store.east", "store.west"]


# --- output in a pipe -------------------------------------------------------------------------------------


def test_samples_generate_prints_its_summary_as_json_in_a_pipe(fleet: tuple[Path, dict]) -> None:
    root, summary = fleet
    assert summary["output"] == str(root) and summary["kafka"]["path"] == str(root / "kafka")
    assert [b["broker"] for b in summary["kafka"]["brokers"]] == ["broker-1", "broker-2", "broker-3"]
    planted = json.loads((root / "kafka" / "PLANTED.json").read_text())
    assert summary["kafka"]["damage"] == len(planted["damage"]) and summary["rocketmq"]["damage"] > 0


def test_an_error_message_stays_one_line_in_a_pipe(tmp_path: Path) -> None:
    missing = tmp_path / ("a-rather-long-folder-name-" * 4) / "orders-0"
    proc = run_replog("replay", f"a={missing}", f"b={missing}x", env={"COLUMNS": "80"})
    assert proc.returncode == 2
    [line] = proc.stderr.splitlines()
    assert len(line) > 80 and line.startswith("replog:") and str(missing) in line


# --- tables on narrow terminals: what identifies a row is never cut -------------------------------------------


def whole_on_a_line(names: set[str], output: str) -> set[str]:
    """The names that no line of `output` holds whole (empty when every one is readable)."""
    return {n for n in names if not any(n in line for line in output.splitlines())}


def table_and_json(args: list[str], columns: int) -> tuple[str, dict | list]:
    """`replog ARGS` as a table at COLUMNS and as JSON; every table line fits the width."""
    table = run_replog(*args, "--format", "table", env={"COLUMNS": str(columns)})
    assert table.returncode in (0, 1), table.stderr
    too_wide = [line for line in table.stdout.splitlines() if len(line) > columns]
    assert not too_wide, too_wide
    return table.stdout, json.loads(run_replog(*args, "--format", "json").stdout)


@pytest.mark.parametrize("columns", [80, 100])
def test_ls_keeps_partition_names_whole(fleet: tuple[Path, dict], columns: int) -> None:
    for broker in ("broker-1", "broker-3"):
        table, rows = table_and_json(["ls", str(fleet[0] / "kafka" / broker)], columns)
        names = {f"{r['topic']}-{r['partition']}" for r in rows}
        assert "__consumer_offsets-0" in names and whole_on_a_line(names, table) == set()


@pytest.mark.parametrize("columns", [80, 100])
def test_doctor_keeps_partition_and_file_names_whole(fleet: tuple[Path, dict], columns: int) -> None:
    for broker in ("broker-2", "broker-3"):
        table, doc = table_and_json(["doctor", str(fleet[0] / "kafka" / broker)], columns)
        assert isinstance(doc, dict) and doc["findings"]
        files = {Path(f["path"]).name for f in doc["findings"]}
        partitions = {Path(f["path"]).parent.name for f in doc["findings"] if Path(f["path"]).parent.name != broker}
        assert any(len(name) == 24 for name in files)          # a 20-digit segment file name among them
        assert whole_on_a_line(files | partitions, table) == set()


@pytest.mark.parametrize("columns", [80, 100])
def test_replay_keeps_replica_names_whole(fleet: tuple[Path, dict], tmp_path: Path, columns: int) -> None:
    for day in ("monday", "tuesday"):
        shutil.copytree(fleet[0] / "kafka" / "broker-3", tmp_path / day / "kafka-logs")
    specs = [kafka(fleet, 1, "orders-2"), kafka(fleet, 2, "orders-2"),
             *(str(tmp_path / day / "kafka-logs" / "orders-2") for day in ("monday", "tuesday"))]
    table, doc = table_and_json(["replay", *specs], columns)
    assert isinstance(doc, dict)
    names = {r["name"] for r in doc["replicas"]}
    rows = "\n".join(line for line in table.splitlines() if line.startswith("│"))  # the table, not the transcript
    assert "broker-3.tuesday" in names and whole_on_a_line(names, rows) == set()


def test_a_usage_error_in_a_pipe_is_one_plain_line() -> None:
    """typer's own usage errors too (a missing argument), not only replog's: no panel wrapped at 80 columns."""
    proc = run_replog("replay", "--leader", "x", env={"COLUMNS": "40"})
    assert proc.returncode == 2
    assert "Error: Missing argument '[NAME=]PATH...'." in proc.stderr.splitlines()
    assert "╭" not in proc.stderr and "│" not in proc.stderr
