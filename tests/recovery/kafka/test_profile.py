"""The cluster profile read from a KRaft metadata log written from the schemas (independent_metadata.py), and the
options that state what no log says."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from replog.formats.errors import ReplogError
from replog.formats.kafka.internal.metadata import decode_metadata_record
from replog.recovery.kafka.profile import ClusterProfile, read_profile, stated
from tests.recovery.kafka import independent_metadata as md

TOPIC, BROKER = 2, 4


def records() -> list[bytes]:
    """Feature levels; topic t sets min ISR 2 then 3; the cluster default turns unclean elections on; broker 2's
    own min ISR (not the cluster's); topic u's cleanup policy set, then deleted (null)."""
    return [md.feature_level("metadata.version", 27), md.feature_level("eligible.leader.replicas.version", 1),
            md.config(TOPIC, "t", "min.insync.replicas", "2"), md.config(TOPIC, "t", "min.insync.replicas", "3"),
            md.config(BROKER, "", "unclean.leader.election.enable", "true"),
            md.config(BROKER, "2", "min.insync.replicas", "5"),
            md.config(TOPIC, "u", "cleanup.policy", "compact"), md.config(TOPIC, "u", "cleanup.policy", None),
            md.config(TOPIC, "t", "retention.ms", "1000")]


def test_the_schema_encoders_agree_with_the_decoder() -> None:
    """The test's encoders and replog's decoder read the three record types the same way."""
    assert decode_metadata_record(md.feature_level("metadata.version", 27))["data"] == {
        "name": "metadata.version", "featureLevel": 27}
    assert decode_metadata_record(md.config(TOPIC, "t", "min.insync.replicas", None))["data"] == {
        "resourceType": 2, "resourceName": "t", "name": "min.insync.replicas", "value": None}
    assert decode_metadata_record(md.clear_elr(""))["data"] == {"topicName": ""}


def test_features_and_configs_from_the_log(tmp_path: Path) -> None:
    meta = md.write_metadata_log(tmp_path, records(), per_batch=3)
    got = read_profile(meta)
    assert got.features == {"metadata.version": 27, "eligible.leader.replicas.version": 1}, "feature levels"
    assert got.topic_configs == {"t": {"min.insync.replicas": "3"}, "u": {}}, "topic configs (last value wins)"
    assert got.cluster_configs == {"unclean.leader.election.enable": "true"}, "cluster default, not broker 2's"
    assert got.topic_config("t", "min.insync.replicas") == "3", "topic config"
    assert got.topic_config("u", "unclean.leader.election.enable") == "true", "cluster default for another topic"
    assert got.topic_config("u", "cleanup.policy") is None, "a deleted config is not in the log"
    assert got.min_insync_replicas("t") == 3, "min ISR of t"
    assert got.min_insync_replicas("u") == 1, "Kafka's default where the log is silent"
    assert got.elr_enabled, "ELR from the feature level"
    d = got.to_dict("t")
    assert d["read"] == ["min.insync.replicas", "unclean.leader.election.enable", "eligible.leader.replicas"], \
        "keys read"
    assert d["assumed"] == ["cleanup.policy", "remote.storage.enable"], "keys assumed"
    assert d["settings"]["cleanup.policy"]["source"] == "default", "source of an assumed value"


def test_options_fill_what_the_log_does_not_say_and_may_not_contradict_it(tmp_path: Path) -> None:
    meta = md.write_metadata_log(tmp_path, records())
    assert read_profile(meta, stated(min_insync_replicas=2)).setting("u", "min.insync.replicas").source == "option", \
        "an option where the log is silent"
    with pytest.raises(ReplogError, match="contradicts"):
        read_profile(meta, stated(min_insync_replicas=2)).min_insync_replicas("t")
    with pytest.raises(ReplogError, match="contradicts"):
        read_profile(meta, stated(elr=False)).elr()
    without = md.write_metadata_log(tmp_path / "x", [md.feature_level("metadata.version", 21)])
    assert not read_profile(without).elr_enabled, "no ELR feature record: ELR off (3.9)"


def test_without_a_log_values_are_stated_or_assumed() -> None:
    assumed = ClusterProfile()
    assert (assumed.min_insync_replicas("t"), assumed.elr().source) == (1, "default"), "Kafka's defaults"
    given = ClusterProfile(assumed=stated(min_insync_replicas=2, elr=True))
    assert (given.min_insync_replicas("t"), given.elr_enabled) == (2, True), "stated by options"
    assert given.to_dict("t")["read"] == [], "nothing read without a log"
    with pytest.raises(ReplogError, match="at least 1"):
        stated(min_insync_replicas=0)


def test_cli_states_the_profile(tmp_path: Path) -> None:
    """replay's JSON carries the profile; an option contradicting the metadata log exits 2."""
    from tests.recovery.kafka.test_controller import brokers, history
    from tests.toolkit.test_cli import run_replog

    reps = brokers(tmp_path)
    md.write_metadata_log(tmp_path / "d1", history() + [md.config(TOPIC, "t", "min.insync.replicas", "2")])
    specs = [str(p) for p in reps.values()]
    proc = run_replog("replay", *specs, "--metadata", str(tmp_path / "d1"), "--no-elr", "--format", "json")
    d = json.loads(proc.stdout)
    assert d["profile"]["settings"]["min.insync.replicas"] == {
        "value": "2", "source": "metadata", "where": f"topic config in {tmp_path / 'd1' / '__cluster_metadata-0'}"}, \
        proc.stderr
    assert d["profile"]["settings"]["eligible.leader.replicas"]["value"] == "false", "ELR off: no feature record"
    bad = run_replog("replay", *specs, "--metadata", str(tmp_path / "d1"), "--min-insync-replicas", "3")
    assert bad.returncode == 2 and "contradicts" in bad.stderr, bad.stderr
    stated_only = json.loads(run_replog("replay", *specs, "--min-insync-replicas", "3", "--elr",
                                        "--format", "json").stdout)
    assert stated_only["profile"]["settings"]["min.insync.replicas"]["source"] == "option", "stated by option"
    table = run_replog("replay", *specs, "--metadata", str(tmp_path / "d1"), "--format", "table").stdout
    assert "profile: read min.insync.replicas=2" in table, table
