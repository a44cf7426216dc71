"""CLI through typer's runner and through a real process: exit codes, JSON shapes, no tracebacks."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from replog.recovery.kafka.writer import write_partition
from replog.toolkit.cli import app
from tests.formats.kafka.segments import data_batch, simple_segment
from tests.recovery.kafka.replicas import replica_dir

runner = CliRunner()
BATCH_FIELDS = {"path", "position", "base_offset", "last_offset", "count", "partition_leader_epoch", "magic", "codec",
                "crc", "crc_valid", "size", "first_timestamp", "max_timestamp", "timestamp_type", "producer_id",
                "producer_epoch", "base_sequence", "is_transactional", "is_control"}
RECORD_FIELDS = {"offset", "position", "timestamp", "key", "value", "headers", "is_control"}


def lines(output: str) -> list[dict]:
    return [json.loads(line) for line in output.splitlines() if line.strip()]


def run_replog(*args: str, env: dict[str, str] | None = None, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    """`replog ARGS` in a real process, stdout and stderr pipes (not terminals); `env` adds to the environment."""
    exe = Path(sys.executable).parent / "replog"
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=timeout,
                          env=None if env is None else {**os.environ, **env})


def replog_json(*args: str) -> Any:
    """The JSON document of `replog ARGS --format json` run in a real process; a failing exit (other than 1, the
    findings exit) fails the caller with the command and the end of its stderr."""
    done = run_replog(*args, "--format", "json")
    assert done.returncode in (0, 1), f"replog {' '.join(args)} exited {done.returncode}:\n{done.stderr[-3000:]}"
    return json.loads(done.stdout)


@pytest.fixture
def partition(tmp_path: Path) -> Path:
    write_partition(tmp_path / "logs" / "orders-0", [data_batch(i * 3, 3, codec=i % 5) for i in range(12)],
                    segment_bytes=500, interval=100)
    return tmp_path / "logs" / "orders-0"


def test_dump_segment_jsonl_has_contract_fields(partition: Path) -> None:
    seg = sorted(partition.glob("*.log"))[0]
    res = runner.invoke(app, ["dump", str(seg), "--deep", "--format", "jsonl"])
    assert res.exit_code == 0, res.output
    entries = lines(res.output)
    batches = [e for e in entries if e["kind"] == "batch"]
    records = [e for e in entries if e["kind"] == "record"]
    assert batches and BATCH_FIELDS <= batches[0].keys()
    assert records and RECORD_FIELDS <= records[0].keys()
    assert records[0]["key"] == "k0" and records[0]["offset"] == 0


def test_dump_decoders_render_hex_and_base64(partition: Path) -> None:
    seg = sorted(partition.glob("*.log"))[0]
    res = runner.invoke(app, ["dump", str(seg), "--print-data", "--key-decoder", "hex", "--value-decoder",
                              "base64", "--format", "jsonl", "--to-offset", "0"])
    rec = next(e for e in lines(res.output) if e["kind"] == "record")
    assert rec["key"] == b"k0".hex() and rec["value"] == "dnZ2dnZ2dnZ2dg=="


def test_dump_damaged_segment_exits_1_with_finding(tmp_path: Path) -> None:
    buf, positions = simple_segment(3, 2)
    bad = bytearray(buf)
    bad[positions[1] + 64] ^= 1
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(bytes(bad))
    res = runner.invoke(app, ["dump", str(seg), "--format", "jsonl"])
    assert res.exit_code == 1
    [f] = [e for e in lines(res.output) if e["kind"] == "finding"]
    assert (f["code"], f["position"], f["offset"]) == ("KAFKA_BATCH_CRC_MISMATCH", positions[1], 2)


def test_dump_index_verification(partition: Path) -> None:
    idx = sorted(partition.glob("*.index"))[0]
    res = runner.invoke(app, ["dump", str(idx), "--verify-index-only", "--format", "jsonl"])
    assert res.exit_code == 0 and [e["kind"] for e in lines(res.output)] == ["file"]
    res = runner.invoke(app, ["dump", str(idx), "--format", "jsonl"])
    assert any(e["kind"] == "index_entry" for e in lines(res.output))


def test_missing_input_exits_2_without_traceback(tmp_path: Path) -> None:
    res = runner.invoke(app, ["dump", str(tmp_path / "nope.log")])
    assert res.exit_code == 2 and "Traceback" not in res.output


def test_ls_json(partition: Path) -> None:
    res = runner.invoke(app, ["ls", str(partition.parent), "--format", "json"])
    assert res.exit_code == 0, res.output
    [row] = json.loads(res.output)
    assert (row["topic"], row["partition"], row["log_end_offset"]) == ("orders", 0, 36)
    assert row["segments"] > 1 and row["flags"] == []


def test_replay_json_shape(tmp_path: Path) -> None:
    a = replica_dir(tmp_path, "A", [(0, 0), (1, 0)], hw=2)
    b = replica_dir(tmp_path, "B", [(0, 0), (1, 1)], hw=1)
    res = runner.invoke(app, ["replay", f"A={a}", f"B={b}", "--leader", "B", "--format", "json"])
    assert res.exit_code == 1, res.output  # A loses a record: exit 1 by the contract
    out = json.loads(res.output)
    assert out["system"] == "kafka" and out["leader"] == "B" and out["protocol"] == "epoch"
    ra = next(r for r in out["replicas"] if r["name"] == "A")
    assert {"name", "path", "log_end_offset_before", "high_watermark_before", "truncated_to", "log_end_offset_after",
            "high_watermark_after", "diverged_at", "lost"} <= ra.keys()
    assert ra["lost"]["records"] == 1 and ra["truncated_to"] == 1
    assert all({"step", "kind", "replica"} <= e.keys() for e in out["events"])


def test_real_process_dump_and_help(partition: Path) -> None:
    seg = sorted(partition.glob("*.log"))[0]
    proc = run_replog("dump", str(seg))
    assert proc.returncode == 0 and proc.stdout.startswith('{"kind": "file"')  # a pipe gets JSON lines
    proc = run_replog("--help")
    assert proc.returncode == 0 and "dump" in proc.stdout and "replay" in proc.stdout


def test_usage_errors_exit_2_with_a_usage_message(partition: Path) -> None:
    res = runner.invoke(app, ["dump", str(partition), "--key-decoder", "xml"])
    assert res.exit_code == 2 and "internal error" not in res.output and "key-decoder" in res.output
    res = runner.invoke(app, ["repair", f"a={partition}", f"b={partition}"])
    assert res.exit_code == 2 and "internal error" not in res.output and "--out" in res.output


def test_max_bytes_limits_the_log_dump_not_index_verification(partition: Path) -> None:
    res = runner.invoke(app, ["dump", str(partition), "--max-bytes", "150", "--format", "jsonl"])
    entries = lines(res.output)
    assert res.exit_code == 0 and not [e for e in entries if e["kind"] == "finding"]
    seg = sorted(partition.glob("*.log"))[0]
    assert max(e["position"] for e in entries if e["kind"] == "batch" and e["path"] == str(seg)) < 150
