"""The sample fleet: deterministic, laid out as described, and damaged exactly where PLANTED.json says."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from replog.formats.errors import UnsafeOutput
from replog.formats.kafka import checkpoint, control, offset_index, time_index
from replog.formats.kafka.clean_shutdown import parse_clean_shutdown
from replog.formats.kafka.internal.consumer_offsets import decode_consumer_offsets
from replog.formats.kafka.meta_properties import parse_meta_properties
from replog.formats.kafka.partition_metadata import parse_partition_metadata
from replog.formats.kafka.segment import BatchInfo, SegmentWalk, batch_records
from replog.recovery.kafka.logdir import flags, summarize_log_dir
from replog.samples.kafka_fleet import generate_kafka_fleet
from replog.samples.kafka_topics import TXN_PRODUCER_ID
from replog.samples.manifest import is_manifest

BROKERS = ("broker-1", "broker-2", "broker-3")
PARTITIONS = ("orders-0", "orders-1", "orders-2", "payments-0", "users-0", "legacy-events-0",
              "__consumer_offsets-0", "__transaction_state-0")
SEGMENT_CODES = {"KAFKA_BATCH_CRC_MISMATCH", "KAFKA_TORN_TAIL", "KAFKA_ZERO_TAIL", "KAFKA_ORPHAN_TEMP_FILE"}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("fleet") / "kafka"
    generate_kafka_fleet(root)
    return root, json.loads((root / "PLANTED.json").read_text())


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def replica_batches(part: Path) -> list[tuple[bytes, BatchInfo]]:
    """(segment bytes, batch) for every batch of every .log of a replica, in offset order."""
    out = []
    for log in sorted(part.glob("*.log")):
        data = log.read_bytes()
        out += [(data, b) for b in SegmentWalk(data, str(log), int(log.stem)).batches()]
    return out


def test_generation_is_deterministic_and_seeded(tmp_path: Path, fleet: tuple[Path, dict]) -> None:
    root, _ = fleet
    generate_kafka_fleet(tmp_path / "again")
    assert tree(tmp_path / "again") == tree(root)
    generate_kafka_fleet(tmp_path / "other", seed=8)
    assert tree(tmp_path / "other")["broker-1/orders-0/00000000000000000000.log"] != \
        tree(root)["broker-1/orders-0/00000000000000000000.log"]


def test_layout_and_broker_files(fleet: tuple[Path, dict]) -> None:
    root, manifest = fleet
    assert sum(len(v) for v in tree(root).values()) < 20 << 20
    assert is_manifest((root / "PLANTED.json").read_bytes()) and (root / "README.txt").is_file()
    topic_ids = {t["name"]: t["topic_id"] for t in manifest["topics"]}
    for i, broker in enumerate(BROKERS, start=1):
        d = root / broker
        assert sorted(p.name for p in d.iterdir() if p.is_dir()) == sorted(PARTITIONS)
        meta = parse_meta_properties((d / "meta.properties").read_bytes())
        assert (meta.version, meta.node_id, meta.cluster_id) == (0, i, manifest["cluster_id"])
        assert (d / ".kafka_cleanshutdown").exists() == manifest["clean_shutdown"][broker]
        if manifest["clean_shutdown"][broker]:
            assert parse_clean_shutdown((d / ".kafka_cleanshutdown").read_bytes()).version == 0
        for name in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint",
                     "log-start-offset-checkpoint"):
            cp = checkpoint.parse_offset_checkpoint((d / name).read_bytes())
            assert sorted(f"{t}-{p}" for t, p in cp) == sorted(PARTITIONS)
        assert ("users", 0) in checkpoint.parse_offset_checkpoint((d / "cleaner-offset-checkpoint").read_bytes())
        for part in PARTITIONS:
            pm = parse_partition_metadata((d / part / "partition.metadata").read_bytes())
            assert pm.topic_id == topic_ids[part.rsplit("-", 1)[0]]
        assert len(list((d / "orders-0").glob("*.log"))) >= 2 and list((d / "payments-0").glob("*.txnindex"))
        legacy_epochs = (d / "legacy-events-0" / "leader-epoch-checkpoint").read_bytes()
        assert checkpoint.parse_leader_epoch_checkpoint(legacy_epochs) == []
    assert len(list((root / "broker-1/orders-1").glob("*.log"))) >= 3


def test_topics_hold_what_the_readme_promises(fleet: tuple[Path, dict]) -> None:
    root = fleet[0] / "broker-1"
    orders = [b for p in ("orders-0", "orders-1", "orders-2") for b in replica_batches(root / p)]
    assert {b.codec for _, b in orders} == {0, 1, 2, 3, 4}
    assert len({b.partition_leader_epoch for _, b in orders}) >= 4
    assert all(r.headers for buf, b in orders[:20] for r in batch_records(buf, b))
    markers = [control.parse_control_key(batch_records(buf, b)[0].key).name
               for buf, b in replica_batches(root / "payments-0") if b.is_control]
    assert {"COMMIT", "ABORT"} <= set(markers)
    users = replica_batches(root / "users-0")
    recs = {b.base_offset: batch_records(buf, b) for buf, b in users}
    assert any(b.count == 0 for _, b in users) and any(b.has_delete_horizon for _, b in users)
    assert any(b.count and len(recs[b.base_offset]) < b.last_offset - b.base_offset + 1 for _, b in users)
    assert any(r.value is None for rs in recs.values() for r in rs)
    legacy = replica_batches(root / "legacy-events-0")
    assert {b.magic for _, b in legacy} == {0, 1} and any(b.codec for _, b in legacy)
    for buf, b in replica_batches(root / "__consumer_offsets-0"):
        for r in batch_records(buf, b):
            assert decode_consumer_offsets(r.key, r.value)["key"]["type"] == "offset_commit"


def test_every_batch_decodes_and_only_planted_damage_is_found(fleet: tuple[Path, dict]) -> None:
    root, manifest = fleet
    planted = {(d["code"], d["file"], d["position"]) for d in manifest["damage"] if d["code"] in SEGMENT_CODES}
    crc_batches = {(d["file"], d["position"]) for d in manifest["damage"] if d["code"] == "KAFKA_BATCH_CRC_MISMATCH"}
    found = set()
    for broker in BROKERS:
        summary = summarize_log_dir(root / broker)
        found |= {(f.code, Path(f.path).relative_to(root).as_posix(), f.position)
                  for p in summary.partitions for f in p.all_findings() if f.severity.value != "info"}
        for log in [*(root / broker).rglob("*.log"), *(root / broker).rglob("*.swap")]:
            data, rel = log.read_bytes(), log.relative_to(root).as_posix()
            for b in SegmentWalk(data, rel).batches():
                if (rel, b.position) in crc_batches:
                    assert not b.crc_valid
                    continue
                assert b.crc_valid
                assert len(batch_records(data, b)) == b.count
    assert found == planted


def _walk_findings(root: Path, rel: str) -> set[tuple[str, int | None, int | None]]:
    data = (root / rel).read_bytes()
    walk = SegmentWalk(data, rel, int(Path(rel).name.split(".")[0])).walk()
    return {(f.code, f.position, f.offset) for f in walk.findings}


def test_each_planted_damage_is_where_the_manifest_says(fleet: tuple[Path, dict]) -> None:
    root, manifest = fleet
    seen = set()
    for d in manifest["damage"]:
        seen.add(d["code"])
        path = root / d["file"]
        data = path.read_bytes() if path.is_file() else b""
        if d["code"] in ("KAFKA_BATCH_CRC_MISMATCH", "KAFKA_TORN_TAIL", "KAFKA_ZERO_TAIL"):
            assert (d["code"], d["position"], d["offset"]) in _walk_findings(root, d["file"])
        if d["code"] == "KAFKA_BATCH_CRC_MISMATCH":
            size = int.from_bytes(data[d["position"] + 8:d["position"] + 12], "big") + 12
            assert d["position"] + 61 <= d["changed_position"] < d["position"] + size
        elif d["code"] == "KAFKA_TORN_TAIL":
            assert len(data) == d["changed_position"] + d["changed_length"]
        elif d["code"] == "KAFKA_ZERO_TAIL":
            assert data[d["changed_position"]:] == bytes(d["changed_length"]) and d["changed_position"] > 0
        elif d["code"] == "KAFKA_INDEX_ZERO_TAIL":
            reader = offset_index.read_offset_index if path.suffix == ".index" else time_index.read_time_index
            read = reader(data, int(path.stem), path=d["file"])
            assert [(f.code, f.position) for f in read.findings] == [(d["code"], d["position"])]
            assert read.entries and data[d["changed_position"]:] == bytes(d["changed_length"])
        elif d["code"] == "KAFKA_ORPHAN_TEMP_FILE":
            findings = SegmentWalk(data, "swap", d["offset"]).walk().findings
            assert path.name.endswith(".log.swap") and data and {f.code for f in findings} <= {"KAFKA_OFFSET_GAP"}
        elif d["code"] == "KAFKA_INDEX_WITHOUT_LOG":
            assert not path.with_suffix(".log").exists() and int(path.stem) == d["offset"]
        elif d["code"] == "KAFKA_HW_ABOVE_LEO":
            line = data[d["position"]:].split(b"\n")[0].decode()
            assert line == f"legacy-events 0 {d['offset']}"
            part = next(p for p in summarize_log_dir(root / d["broker"]).partitions
                        if f"{p.topic}-{p.partition}" == d["partition"])
            assert part.high_watermark == d["offset"] > part.log_end_offset and "hw>leo" in flags(part)
        elif d["code"] == "KAFKA_TXN_MARKER_MISSING":
            last = [b for _, b in replica_batches(root / d["file"]) if b.producer_id == TXN_PRODUCER_ID][-1]
            assert last.is_transactional and not last.is_control and last.base_offset == d["offset"]
    assert seen == {"KAFKA_BATCH_CRC_MISMATCH", "KAFKA_TORN_TAIL", "KAFKA_ZERO_TAIL", "KAFKA_INDEX_ZERO_TAIL",
                    "KAFKA_ORPHAN_TEMP_FILE", "KAFKA_INDEX_WITHOUT_LOG", "KAFKA_HW_ABOVE_LEO",
                    "KAFKA_TXN_MARKER_MISSING"}


def test_high_watermarks_agree_and_stay_below_log_ends(fleet: tuple[Path, dict]) -> None:
    root, manifest = fleet
    for part in PARTITIONS:
        reps = [r for r in manifest["replicas"] if r["dir"] == part]
        in_sync = [r for r in reps if r["in_sync"]]
        assert min(r["log_end_offset"] for r in in_sync) in {r["high_watermark"] for r in in_sync}
        for r in reps:
            planted = part == "legacy-events-0" and r["broker"] == "broker-2"
            assert (r["high_watermark"] > r["log_end_offset"]) == planted
            assert r["log_start_offset"] <= r["high_watermark"]


def test_divergence_is_real(fleet: tuple[Path, dict]) -> None:
    root, manifest = fleet
    div = next(v for v in manifest["divergences"] if v["kind"] == "divergence")
    at = div["first_divergent_offset"]
    crcs = {b: {i.base_offset: i.crc for _, i in replica_batches(root / b / div["dir"])} for b in BROKERS}
    below = [{o: c for o, c in crcs[b].items() if o < at} for b in BROKERS]
    assert below[0] == below[1] == below[2] and below[0]
    assert crcs["broker-1"][at] == crcs["broker-2"][at] != crcs["broker-3"][at]
    assert div["diverged_replicas"] == ["broker-3"] and div["truncation_offset"] == at
    at_risk = sum(b.count for _, b in replica_batches(root / "broker-3" / div["dir"]) if b.base_offset >= at)
    assert at_risk == div["records_at_risk"] > 0
    epochs = {b: checkpoint.parse_leader_epoch_checkpoint((root / b / div["dir"] / "leader-epoch-checkpoint")
                                                           .read_bytes()) for b in BROKERS}
    assert tuple(epochs["broker-1"][-1]) == (div["leader_epoch"], at)
    assert epochs["broker-3"][-1].epoch == div["diverged_epoch"] == div["leader_epoch"] - 1
    lag = next(v for v in manifest["divergences"] if v["kind"] == "lag")
    logs = {b: b"".join(p.read_bytes() for p in sorted((root / b / lag["dir"]).glob("*.log")))
            for b in ("broker-1", "broker-2")}
    assert logs["broker-1"].startswith(logs["broker-2"]) and len(logs["broker-1"]) > len(logs["broker-2"])


def test_run_samples_refuses_what_it_did_not_generate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from replog.toolkit.commands import run_samples

    out = tmp_path / "samples"
    assert run_samples(out, 7, False) == 0
    assert "broker-3" in capsys.readouterr().out and (out / "kafka" / "PLANTED.json").is_file()
    with pytest.raises(UnsafeOutput):
        run_samples(out, 7, False)
    (out / "kafka" / "broker-1" / "stray").write_bytes(b"x")
    assert run_samples(out, 8, True) == 0 and not (out / "kafka" / "broker-1" / "stray").exists()
    other = tmp_path / "precious"
    (other / "kafka").mkdir(parents=True)
    (other / "kafka" / "PLANTED.json").write_text('{"generator": "someone else"}')
    with pytest.raises(UnsafeOutput):
        run_samples(other, 7, True)
    assert (other / "kafka" / "PLANTED.json").exists()


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "f").write_bytes(b"")
    with pytest.raises(UnsafeOutput):
        generate_kafka_fleet(tmp_path / "full")
    with pytest.raises(ValueError):
        generate_kafka_fleet(tmp_path / "x", brokers=4)
