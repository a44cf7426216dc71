"""recover against the broker's own startup recovery: partitions a real broker wrote are damaged (torn tail,
flipped byte, zero-filled region, indexes removed) after a crash; the broker starts on them, recovers, and stops
cleanly; `replog recover` of the same damaged copies must keep exactly the batches the broker kept (both read
back with the real kafka-dump-log)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.brokers import broker_view as view
from tests.brokers.kafka_lab import ClusterSpec, running_cluster
from tests.brokers.scenarios import startup_recovery
from tests.toolkit.test_cli import run_replog

pytestmark = pytest.mark.brokers

SPECS = [
    pytest.param(ClusterSpec("3.9.1", "kraft"), id="3.9.1-kraft", marks=pytest.mark.brokers_full),
    pytest.param(ClusterSpec("4.0.2", "kraft"), id="4.0.2-kraft"),
    pytest.param(ClusterSpec("4.4.0", "kraft"), id="4.4.0-kraft", marks=pytest.mark.brokers_full),
]


@pytest.mark.parametrize("spec", SPECS)
def test_recover_keeps_what_the_broker_keeps(spec: ClusterSpec, tmp_path: Path) -> None:
    (tmp_path / "cluster").mkdir()
    with running_cluster(spec, tmp_path / "cluster") as cluster:
        outcome = startup_recovery(cluster, tmp_path)
    for topic in outcome.topics:
        out = tmp_path / "recovered" / topic
        done = run_replog("recover", str(outcome.damaged / f"{topic}-0"), "--out", str(out), "--format", "json")
        assert done.returncode in (0, 1), f"{topic}: replog recover exited {done.returncode}:\n{done.stderr}"
        report = json.loads(done.stdout)
        dumped = view.replica_batches(spec.version, {"broker": outcome.final / f"{topic}-0",
                                                     "replog": out / f"{topic}-0"})
        assert dumped["broker"], f"{topic}: the broker kept nothing: the scenario tests nothing"
        assert dumped["replog"] == dumped["broker"], f"{topic}: recovered batches differ from the broker's"
        assert report["truncated_to"] == view.log_end(dumped["broker"]) or report["truncated_to"] is None, \
            f"{topic}: truncated_to"
