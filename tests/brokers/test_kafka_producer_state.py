"""Producer state against the broker's own: after committed transactions a clean stop makes the broker write its
producer snapshot; `replog recover` of the same partition without any snapshot rebuilds one from the log. Both
are printed by the real kafka-dump-log and must read the same (epoch, sequence, offsets, coordinator epoch,
open transaction). On 4.4 (transactions v2, KIP-890) each marker carries the epoch + 1 and the broker forgets the
producer's sequence; on 3.9 (transactions v1) the epoch stays and the sequence is kept."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from replog.formats.kafka import txn_index
from tests.brokers import broker_view as view
from tests.brokers.kafka_lab import ClusterSpec, running_cluster
from tests.brokers.scenarios import committed_transactions
from tests.toolkit.test_cli import run_replog

pytestmark = pytest.mark.brokers


@pytest.mark.parametrize("spec", [
    pytest.param(ClusterSpec("3.9.1", "kraft"), id="3.9.1-transactions-v1", marks=pytest.mark.brokers_full),
    pytest.param(ClusterSpec("4.4.0", "kraft"), id="4.4.0-transactions-v2"),
])
def test_recovered_producer_snapshot_is_the_brokers(spec: ClusterSpec, tmp_path: Path) -> None:
    (tmp_path / "cluster").mkdir()
    with running_cluster(spec, tmp_path / "cluster") as cluster:
        partition = committed_transactions(cluster, tmp_path)
    broker = sorted(partition.glob("*.snapshot"))
    assert broker, "the broker wrote no producer snapshot at its clean stop"
    stripped = tmp_path / "stripped" / partition.name
    shutil.copytree(partition, stripped)
    for snapshot in stripped.glob("*.snapshot"):
        snapshot.unlink()
    done = run_replog("recover", str(stripped), "--out", str(tmp_path / "recovered"), "--format", "json")
    assert done.returncode == 0, f"replog recover exited {done.returncode}:\n{done.stderr}"
    ours = sorted((tmp_path / "recovered" / partition.name).glob("*.snapshot"))
    # the broker's clean stop writes one at the log end; a rebuild (`UnifiedLog.rebuildProducerState`) also writes
    # one at the last segment's base offset: compare the one at the log end
    assert ours and ours[-1].name == broker[-1].name, "the last snapshot's name (the log end offset)"
    dumped = view.dump_entries(spec.version, [broker[-1], ours[-1]])
    assert dumped[ours[-1]] == dumped[broker[-1]], "producer entries as kafka-dump-log prints them"
    assert dumped[broker[-1]], "the broker's snapshot holds no producer: the scenario tests nothing"
    check_transaction_index(spec.version, partition, tmp_path / "recovered" / partition.name)


def check_transaction_index(version: str, partition: Path, recovered: Path) -> None:
    """The broker's `.txnindex` (the aborted transaction): replog reads every entry kafka-dump-log prints, writes
    it back byte for byte, and `recover` rebuilds the same file."""
    index = sorted(partition.glob("*.txnindex"))
    assert index, "the broker wrote no .txnindex for the aborted transaction"
    data = index[-1].read_bytes()
    read = txn_index.read_txn_index(data)
    printed = [dict(view.FIELD.findall(line)) for line in view.dump_lines(version, [index[-1]])[index[-1]]
               if "producerId:" in line]
    assert [(e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset) for e in read.entries] == [
        (int(p["producerId"]), int(p["firstOffset"]), int(p["lastOffset"]), int(p["lastStableOffset"]))
        for p in printed], "entries replog reads vs kafka-dump-log's"
    assert read.entries, "no aborted transaction indexed: the scenario tests nothing"
    assert txn_index.write_txn_index(read.entries) == data, "replog's writer does not give the broker's bytes back"
    rebuilt = recovered / index[-1].name
    assert rebuilt.is_file(), "recover did not rebuild the .txnindex"
    assert rebuilt.read_bytes() == data, "recover's .txnindex differs from the broker's"
