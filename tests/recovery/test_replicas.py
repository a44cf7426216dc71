"""`recovery.replicas`: one way into Kafka replicas and RocketMQ stores, on hand-built inputs.

The outcomes must be what the systems' own entry points answer (the documents the contract fixes), the
options a system does not take must be usage errors before anything is read, and the replay is read once.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from replog.formats.errors import ReplogError
from replog.recovery.kafka.impact import read_impact
from replog.recovery.kafka.replay import replay_paths
from replog.recovery.replica_outcomes import Impacted, Repaired, Replayed
from replog.recovery.replicas import KafkaReplicas, ReplicaOptions, RocketStores, open_replicas
from replog.recovery.rocketmq.ha import replay_paths as rocket_replay_paths
from replog.recovery.rocketmq.impact import analyze_rocketmq_impact
from tests.recovery.kafka.test_impact import build_impact_fleet
from tests.recovery.rocketmq.stores import build, spec


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_impact_fleet(tmp_path_factory.mktemp("replicas"))


def _kafka(fleet: Path) -> list[str]:
    return [f"O={fleet / 'O' / 't-0'}", f"L={fleet / 'L' / 't-0'}"]


def _stores(root: Path) -> list[str]:
    master = build(root / "m", [spec(i) for i in range(20)])
    slave = build(root / "s", [spec(i) for i in range(8)])
    return [f"master={master.root}", f"slave={slave.root}"]


def test_the_system_is_detected_from_the_inputs(fleet: Path, tmp_path: Path) -> None:
    assert isinstance(open_replicas(_kafka(fleet)), KafkaReplicas), "partition dirs open as Kafka replicas"
    assert isinstance(open_replicas(_stores(tmp_path)), RocketStores), "stores open as RocketMQ stores"


@pytest.mark.parametrize("options", [ReplicaOptions(running=["a"]), ReplicaOptions(metadata="m"),
                                     ReplicaOptions(min_insync_replicas=2), ReplicaOptions(elr=True),
                                     ReplicaOptions(cleanup_policy="compact"), ReplicaOptions(remote_storage=False),
                                     ReplicaOptions(partition_state="p")])
def test_kafka_options_on_stores_are_usage_errors(tmp_path: Path, options: ReplicaOptions) -> None:
    with pytest.raises(ReplogError, match="are for Kafka replicas"):
        open_replicas(_stores(tmp_path), options)


def test_broker_version_on_kafka_is_a_usage_error_before_anything_is_read(tmp_path: Path) -> None:
    missing = [f"a={tmp_path / 'nowhere' / 't-0'}", f"b={tmp_path / 'nor-here' / 't-0'}"]
    with pytest.raises(ReplogError, match="--broker-version is for RocketMQ stores"):
        open_replicas(missing, ReplicaOptions(broker_version="4.9.7"))


def test_kafka_outcomes_are_what_the_kafka_entry_points_answer(fleet: Path, tmp_path: Path) -> None:
    offsets = [fleet / "coordinator"]
    replicas = open_replicas(_kafka(fleet), ReplicaOptions(offsets=offsets))
    direct = replay_paths(_kafka(fleet))
    replayed = replicas.replay()
    assert isinstance(replayed, Replayed), "replay gives a Replayed"
    expected_impact = read_impact(direct, offsets).to_dict()
    assert replayed.to_dict() == direct.to_dict() | {"impact": expected_impact}, "replay document differs"
    impacted = replicas.impact()
    assert isinstance(impacted, Impacted), "impact gives an Impacted"
    assert impacted.result is replayed.result, "the replay is read once for every command"
    assert impacted.to_dict() == expected_impact | {"premise": direct.to_dict()["premise"]}, "impact document differs"
    assert replayed.loses_or_fails == direct.loses_or_fails, "the exit follows the replay"
    assert replayed.roots[0] == Path(fleet / "O" / "t-0"), "the evidence starts at the first replica's dir"


def test_kafka_repair_document_and_verification(fleet: Path, tmp_path: Path) -> None:
    repaired = open_replicas(_kafka(fleet)).repair(tmp_path / "out")
    assert isinstance(repaired, Repaired), "repair gives a Repaired"
    doc = repaired.to_dict()
    assert list(doc)[-2:] == ["output", "repaired"], f"output and repaired close the document: {list(doc)}"
    assert [r["name"] for r in doc["repaired"]] == ["O", "L"], "every replica written"
    assert repaired.verified, f"the written replicas verify: {doc['repaired']}"
    assert repaired.page_doc(doc) is doc, "repair's page draws its own document"


def test_rocketmq_outcomes_are_what_the_rocketmq_entry_points_answer(tmp_path: Path) -> None:
    specs = _stores(tmp_path)
    replicas = open_replicas(specs, ReplicaOptions(protocol="autoswitch"))
    direct = rocket_replay_paths(specs, None, "autoswitch")
    impacted = replicas.impact()
    assert impacted.to_dict() == analyze_rocketmq_impact(direct).to_dict(), "impact document differs"
    assert "premise" not in impacted.to_dict(), "a RocketMQ impact carries no Kafka premise"
    assert impacted.page_doc(impacted.to_dict()) == direct.to_dict() | {"impact": impacted.to_dict()}, \
        "the impact page draws the replay with the impact"
    replayed = replicas.replay()
    assert replayed.to_dict() == direct.to_dict(), "a replay without offsets on disk carries no impact"
    assert replayed.roots == [Path(r.model.path) for r in direct.replicas], "the stores are the evidence"


def test_rocketmq_what_if_refuses_offsets(tmp_path: Path) -> None:
    with pytest.raises(ReplogError, match="--offsets is for Kafka replicas"):
        open_replicas(_stores(tmp_path), ReplicaOptions(offsets=[tmp_path])).what_if()


def test_what_if_ranks_and_its_page_is_the_recommended_replay(tmp_path: Path) -> None:
    compared = open_replicas(_stores(tmp_path), ReplicaOptions(protocol="autoswitch")).what_if()
    doc = compared.to_dict()
    page = compared.page_doc(doc)
    assert page["what_if"] is doc, "the page carries the choices side by side"
    assert page["leader"] == doc["recommended"]["leader"], "the page is the recommended master's replay"
    assert compared.loses_or_fails == compared.ranked.loses_or_fails, "the exit follows the best choice"
