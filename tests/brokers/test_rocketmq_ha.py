"""Issue 29: `replog replay --protocol classic` against real 4.9.7 brokers after a manual failover
(`rocketmq_ha_scenarios.classic_failover`). replog reads the copies taken at the restart and predicts what the
master streams and where HA stops; the brokers then run and say what they did: the master's "master transfer data
from N" and (4.9.7) "request offset=S greater than local commitLog offset=M" lines, the slave's "offset not equal"
lines, both commit-log ends through the admin API, and the slave's commit-log bytes after the run.

Premise: the group restarts from the copied stores (both brokers stopped cleanly); nothing is sent afterwards.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.brokers.rocketmq_ha_scenarios import (
    ClassicFailover,
    classic_failover,
    commitlog_bytes,
    master_transfers,
    offset_not_equal,
    request_beyond,
)
from tests.toolkit.test_cli import run_replog

pytestmark = pytest.mark.brokers
FULL = pytest.mark.brokers_full


def replay(outcome: ClassicFailover, version: str) -> dict[str, Any]:
    args = [f"{name}={path}" for name, path in outcome.copies.items()]
    done = run_replog("replay", *args, "--protocol", "classic", "--broker-version", version, "--format", "json")
    assert done.returncode in (0, 1), f"replay exited {done.returncode}:\n{done.stderr}"
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def decided(result: dict[str, Any], slave: str) -> int:
    found = [e["transfer_from"] for e in result["events"] if e.get("kind") == "decide" and e.get("to") == slave]
    assert found, f"replay has no transfer decision for {slave}"
    return int(found[0])


# one cluster, several checks: 4.9.7 slave ahead runs in `make test`, the rest in `make test-brokers`
@pytest.mark.parametrize(("version", "master_own"), [
    pytest.param("4.9.7", 0, id="4.9.7-ahead"), pytest.param("4.9.7", 50, id="4.9.7-ahead-diverged", marks=FULL),
    pytest.param("5.3.3", 0, id="5.3.3-ahead", marks=FULL)])
def test_slave_ahead_after_failover(tmp_path: Path, version: str, master_own: int) -> None:
    """The slave holds 100 messages the master never had (with `master_own`, the master 50 others at the same
    offsets): replog says the master starts at the slave's offset, sends nothing, the slave stays as it is
    (stalled, slave ahead), and whether the master closes the connection at each report (4.9.3-4.9.x) or keeps it
    open (5.x); the brokers' logs and ends must agree."""
    out = classic_failover(tmp_path, version, master_own)
    assert out.slave_end > out.master_end, f"premise: slave {out.slave_end} ahead of master {out.master_end}"
    result = replay(out, version)
    n1 = next(r for r in result["replicas"] if r["name"] == "n1")
    assert result["leader"] == "n0", f"master: replog {result['leader']}, brokers n0 (brokerId 0)"
    transfers = master_transfers(out.master_log)
    assert transfers, "the master logged no transfer position"
    assert decided(result, "n1") == transfers[0], (
        f"transfer position: replog {decided(result, 'n1')}, master's log {transfers}")
    assert n1["status"] == "stalled", f"n1 status: replog {n1['status']}"
    assert n1["stall"]["cause"] == "slave_ahead", f"n1 stall cause: {n1['stall']}"
    assert n1["log_end_offset_after"] == out.slave_end_after == out.slave_end, (
        f"n1 end: replog {n1['log_end_offset_after']}, broker {out.slave_end_after} (was {out.slave_end})")
    assert out.master_end_after == out.master_end, f"master end moved: {out.master_end} -> {out.master_end_after}"
    assert n1["fetched"]["bytes"] == 0, f"replog says {n1['fetched']} fetched; the slave's end did not move"
    closes = request_beyond(out.master_log)
    predicted = [(e["reported_offset"], e["master_max_offset"]) for e in result["events"]
                 if e.get("kind") == "disconnect" and e.get("repeats")]
    assert (n1["stall"]["connection"] == "closed_at_each_report") == bool(closes), (
        f"connection: replog {n1['stall']['connection']}, master's log closes {closes[:3]}")
    assert set(predicted) == set(closes), (
        f"closes: replog {predicted}, master's log 'request offset=S greater than ... offset=M' {set(closes)}")
    assert (len(transfers) > 1) == bool(closes), f"connections {transfers}: reconnects iff the master closes"
    if master_own:
        assert n1["diverged_at"] == out.common_end, f"diverged at: replog {n1['diverged_at']}, {out.common_end}"
    assert not offset_not_equal(out.slave_log), (
        "the slave logged 'offset not equal': replog predicts heartbeats at the slave's own end")


@pytest.mark.parametrize("version", [pytest.param("4.9.7", marks=FULL)])
def test_slave_diverged_behind_after_failover(tmp_path: Path, version: str) -> None:
    """The slave holds 100 messages of its own past the common 200, the master 150 others at the same offsets:
    replog says the master streams from the slave's end onto the slave's own bytes (mixed content, flagged), and
    the slave ends at the master's end; the slave's bytes after the run must be its own below that offset and the
    master's above it."""
    out = classic_failover(tmp_path, version, master_own=150)
    assert out.master_end > out.slave_end > out.common_end, f"premise: ends {out}"
    result = replay(out, version)
    n1 = next(r for r in result["replicas"] if r["name"] == "n1")
    transfers = master_transfers(out.master_log)
    assert transfers, "the master logged no transfer position"
    assert decided(result, "n1") == transfers[0] == out.slave_end, (
        f"transfer position: replog {decided(result, 'n1')}, master's log {transfers}, slave end {out.slave_end}")
    assert n1["log_end_offset_after"] == out.slave_end_after == out.master_end, (
        f"n1 end: replog {n1['log_end_offset_after']}, broker {out.slave_end_after}, master {out.master_end}")
    assert n1["diverged_at"] == out.common_end, f"diverged at: replog {n1['diverged_at']}, common {out.common_end}"
    codes = [f["code"] for f in n1["findings"]]
    assert "ROCKETMQ_HA_MIXED_CONTENT" in codes, f"replog flags no mixed content: {codes}"
    own = commitlog_bytes(out.copies["n1"], 0, out.slave_end)
    assert commitlog_bytes(out.slave_store_after, 0, out.slave_end) == own, "the slave's own bytes changed"
    theirs = commitlog_bytes(out.copies["n0"], out.slave_end, out.master_end)
    assert commitlog_bytes(out.slave_store_after, out.slave_end, out.master_end) == theirs, (
        "the slave's bytes past its old end are not the master's")
    assert commitlog_bytes(out.copies["n0"], out.common_end, out.slave_end) != own[out.common_end:], (
        "premise: the two hold different bytes at the same offsets")
