"""Who each scanned dir is: cluster, node and role from the broker's own files, and the group standing in
for a cluster id a dir does not have."""
from __future__ import annotations

import shutil
from pathlib import Path

from replog.spark.identity import NO_CLUSTER_ID
from replog.spark.inputs import discover, log_dirs_table
from tests.spark.fleet_builder import CLUSTERS, build_clusters


def test_clusters_from_meta_properties_and_groups_for_the_rest(tmp_path: Path) -> None:
    groups = build_clusters(tmp_path / "fleet")
    dirs, _ = discover([tmp_path / "fleet"])
    by_path = {Path(d.path): d for d in dirs}
    for group, cluster_id in CLUSTERS.items():
        for node, log_dir in enumerate(groups[group], 1):
            d = by_path[log_dir]
            assert (d.cluster_id, d.node_id, d.broker) == (cluster_id, node, f"broker-{node}")
            assert d.cluster == (cluster_id or f"folder {(tmp_path / 'fleet' / 'old').resolve()}")
            assert d.flags == (() if cluster_id else (NO_CLUSTER_ID,))
    table = log_dirs_table(dirs).to_pylist()
    assert len({(r["cluster"], r["broker"]) for r in table}) == 6   # one broker id, three clusters

    inventory = tmp_path / "inventory.txt"
    inventory.write_text(f"old1={groups['old'][0]}\n\n# a comment\nold2={groups['old'][1]}\n")
    listed, _ = discover([], inventory)
    assert [(d.broker, d.cluster) for d in listed] == [("old1", f"inventory {inventory}:1"),
                                                       ("old2", f"inventory {inventory}:4")]


def test_rocketmq_store_named_by_its_config(tmp_path: Path) -> None:
    from replog.samples.rocketmq_fleet import generate_rocketmq_samples

    generate_rocketmq_samples(tmp_path / "rmq")
    (tmp_path / "rmq" / "master" / "config" / "broker.properties").write_text(
        "brokerClusterName=east\nbrokerName=broker-a\nbrokerId=0\nbrokerRole=SYNC_MASTER\n")
    (tmp_path / "rmq" / "slave" / "brokerIdentity").write_text("east#broker-a#1")
    shutil.rmtree(tmp_path / "rmq" / "damaged")
    dirs, _ = discover([tmp_path / "rmq"])
    assert sorted((d.broker, d.cluster, d.role, d.flags) for d in dirs) == [
        ("broker-a:0", "east", "master", ()), ("broker-a:1", "east", "slave", ())]
