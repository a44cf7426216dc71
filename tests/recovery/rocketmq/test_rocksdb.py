"""RocketMQ `storeType=defaultRocksDB` stores built here byte by byte: the commit log by the independent writer,
the RocksDB consume queue and config databases with rocksdict from keys and values encoded in this module (from
`RocksDBConsumeQueueTable`, `RocksDBConsumeQueueOffsetTable` and `RocksDBConsumerOffsetManager` of tag
rocketmq-all-5.3.3, not from replog's encoder). Every test checks that the input tree is unchanged."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from rocksdict import Options, Rdict

from replog.formats.errors import UnreadableInput
from replog.recovery.rocketmq.doctor import diagnose_store
from replog.recovery.rocketmq.impact import read_offsets
from replog.recovery.rocketmq.store_model import load_store
from tests.recovery.rocketmq.independent import Sent, Store, java_hash
from tests.recovery.rocketmq.stores import tree_digest
from tests.toolkit.test_cli import run_replog


def be(n: int, width: int) -> bytes:
    return n.to_bytes(width, "big", signed=True)


def topic_part(topic: str) -> bytes:
    raw = topic.encode()
    return be(len(raw), 4) + b"\x01" + raw + b"\x01"


def unit_key(topic: str, queue_id: int, queue_offset: int) -> bytes:
    return topic_part(topic) + be(queue_id, 4) + b"\x01" + be(queue_offset, 8)


def unit_value(s: Sent, size: int | None = None) -> bytes:
    return be(s.offset, 8) + be(size or s.size, 4) + be(java_hash(s.tags), 8) + be(s.store_ts, 8)


def offset_key(topic: str, kind: str, queue_id: int) -> bytes:
    return topic_part(topic) + kind.encode() + b"\x01" + be(queue_id, 4)


def write_db(d: Path, families: dict[str, dict[bytes, bytes]]) -> None:
    """A RocksDB database with these column families; rocksdict's own `rocksdict-config.json` is removed so the
    directory holds only RocksDB's files, as a broker's does."""
    opts = Options(raw_mode=True)
    opts.create_if_missing(True)
    opts.create_missing_column_families(True)
    db = Rdict(str(d), options=opts, column_families={n: Options(raw_mode=True) for n in families if n != "default"})
    for name, pairs in families.items():
        cf = db if name == "default" else db.get_column_family(name)
        for k, v in pairs.items():
            cf[k] = v
    db.close()
    (d / "rocksdict-config.json").unlink()


def rocks_store(root: Path, *, drop: tuple[int, ...] = (), size_of: dict[int, int] | None = None,
                max_shift: int = 0) -> tuple[Path, list[Sent]]:
    """8 messages over orders/0 and orders/1; their units in consumequeue/ (RocksDB), the offset table's max/min.
    `drop`: indexes of messages without a unit; `size_of`: a wrong size for a message's unit; `max_shift` moves the
    max entry of orders/0."""
    store = Store(file_size=4096)
    sent = [store.append("orders", i % 2, f"m{i}".encode() * 20) for i in range(8)]
    store.write(root, queues={})
    units = {unit_key(s.topic, s.queue_id, s.queue_offset): unit_value(s, (size_of or {}).get(i))
             for i, s in enumerate(sent) if i not in drop}
    offsets = {}
    for q in (0, 1):
        mine = [s for s in sent if s.queue_id == q]
        shift = max_shift if q == 0 else 0
        offsets[offset_key("orders", "max", q)] = be(mine[-1].offset, 8) + be(mine[-1].queue_offset + shift, 8)
        offsets[offset_key("orders", "min", q)] = be(mine[0].offset, 8) + be(0, 8)
    offsets[offset_key("CHECKPOINT_TOPIC", "max", 0)] = be(store.end, 8)
    write_db(root / "consumequeue", {"default": units, "offset": offsets})
    return root, sent


def consumer_offsets(root: Path, table: dict[str, dict[str, int]], counter: int | None = None) -> None:
    families: dict[str, dict[bytes, bytes]] = {
        "default": {k.encode(): json.dumps({"offsetTable": v}).encode() for k, v in table.items()},
        "kvDataVersion": {}, "forbidden": {}}
    if counter is not None:
        families["kvDataVersion"][b"kvDataVersionKey"] = json.dumps({"counter": counter, "timestamp": 1}).encode()
    (root / "config").mkdir(exist_ok=True)
    write_db(root / "config" / "consumerOffsets", families)


def codes(findings: list[object]) -> list[tuple[str, str]]:
    return [(f.code, f.message) for f in findings]  # type: ignore[attr-defined]


def test_units_verified_against_the_commit_log_and_the_input_unchanged(tmp_path: Path) -> None:
    root, sent = rocks_store(tmp_path / "store")
    before = tree_digest(root)
    model = load_store(root)
    assert model.layout.store_type == "defaultRocksDB", "consumequeue/ is a RocksDB: the store type says so"
    assert {k: (q.min_offset, q.max_offset, q.kv_max_offset) for k, q in model.queues.items()} == \
        {("orders", 0): (0, 4, 4), ("orders", 1): (0, 4, 4)}, "queue ranges from the units and the offset table"
    findings, files = diagnose_store(root)
    found = codes(findings)
    assert [c for c, _ in found if c != "ROCKETMQ_ROCKSDB_STORE"] == [], f"a clean RocksDB store: {found}"
    assert any(c == "ROCKETMQ_ROCKSDB_STORE" for c, _ in found), "doctor names the store type"
    assert root / "consumequeue" / "CURRENT" in files, "the database's files are in the evidence list"
    assert tree_digest(root) == before, "no byte or file of the input changed (no LOG, LOCK or rocksdict file)"


@pytest.mark.parametrize(("damage", "code", "words"), [
    ({"size_of": {3: 17}}, "ROCKETMQ_CQ_ENTRY_MISMATCH", "size 17 but the message"),
    ({"drop": (2,)}, "ROCKETMQ_CQ_INVALID", "unit 2 follows 0"),
    ({"max_shift": 2}, "ROCKETMQ_CQ_INVALID", "the offset table's max says the queue ends at 6"),
], ids=["wrong-size", "missing-unit", "offset-table-ahead"])
def test_damaged_units_and_offsets_found(tmp_path: Path, damage: dict[str, object], code: str, words: str) -> None:
    root, _ = rocks_store(tmp_path / "store", **damage)  # type: ignore[arg-type]
    before = tree_digest(root)
    found = codes(diagnose_store(root)[0])
    assert any(c == code and words in m for c, m in found), f"{code} '{words}' expected in {found}"
    assert tree_digest(root) == before, "the input did not change"


def test_unopenable_database_cannot_be_verified(tmp_path: Path) -> None:
    root, _ = rocks_store(tmp_path / "store")
    manifest = next((root / "consumequeue").glob("MANIFEST-*"))
    manifest.write_bytes(b"\xff" * manifest.stat().st_size)
    before = tree_digest(root)
    with pytest.raises(UnreadableInput, match="cannot be verified"):
        load_store(root)
    done = run_replog("doctor", str(root), "--format", "json")
    assert done.returncode == 2, f"an unverifiable store exits as an unreadable input, not {done.returncode}"
    assert "cannot be verified" in done.stderr, f"the reason is said: {done.stderr}"
    assert tree_digest(root) == before, "the input did not change"


def test_offsets_from_rocksdb_and_stale_json_ignored(tmp_path: Path) -> None:
    root, _ = rocks_store(tmp_path / "store")
    consumer_offsets(root, {"orders@billing": {"0": 3, "1": 2}}, counter=4)
    (root / "config" / "consumerOffset.json").write_text(
        '{"offsetTable":{"orders@billing":{0:1,1:1},"orders@old":{0:9}},"dataVersion":{"counter":3}}')
    skipped: list[str] = []
    offsets, sources = read_offsets(load_store(root), skipped)
    assert offsets == {("orders", "billing"): {0: 3, 1: 2}}, f"the RocksDB offsets, not the stale JSON: {offsets}"
    assert sources == [str(root / "config" / "consumerOffsets")], f"the source is the database: {sources}"
    assert any("stale" in s for s in skipped), f"the stale JSON is named: {skipped}"


def test_json_newer_than_the_database_is_what_the_broker_loads(tmp_path: Path) -> None:
    """`RocksDBConsumerOffsetManager#merge`: a JSON whose dataVersion counter is greater replaces the table."""
    root, _ = rocks_store(tmp_path / "store")
    consumer_offsets(root, {"orders@billing": {"0": 3}})          # no kvDataVersion: counter 0
    (root / "config" / "consumerOffset.json").write_text(
        '{"offsetTable":{"orders@audit":{0:4}},"dataVersion":{"counter":1}}')
    offsets, sources = read_offsets(load_store(root), [])
    assert offsets == {("orders", "audit"): {0: 4}}, f"the newer JSON replaces the database's table: {offsets}"
    assert len(sources) == 1 and "consumerOffset.json" in sources[0], f"the JSON is the source: {sources}"


def test_ls_names_the_store_type(tmp_path: Path) -> None:
    root, _ = rocks_store(tmp_path / "store")
    done = run_replog("ls", str(root), "--format", "json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["store"]["store_type"] == "defaultRocksDB", f"ls names the store type: {doc['store']}"
    assert [r["cq_max_offset"] for r in doc["queues"]] == [4, 4], f"queue ends from RocksDB: {doc['queues']}"


def tear(root: Path, s: Sent, file_size: int = 4096) -> None:
    """The second half of the message `s` zeroed (a write cut short): the broker's recovery ends the log at it."""
    path = root / "commitlog" / f"{s.offset - s.offset % file_size:020d}"
    data = bytearray(path.read_bytes())
    at = s.offset % file_size + s.size // 2
    data[at:s.offset % file_size + s.size] = bytes(s.size - s.size // 2)
    path.write_bytes(bytes(data))


def db_digest(d: Path) -> dict[str, str]:
    return {k: v for k, v in tree_digest(d).items() if k != "LOCK"}


def test_recover_leaves_the_rocksdb_queue_to_the_broker(tmp_path: Path) -> None:
    """recover on a torn defaultRocksDB store: the commit log cut at the torn message, no consume-queue database
    (the broker rebuilds it from the commit log: `abort` written so that its recovery dispatches every record,
    `rocksdb_repair`), the config databases and JSON copied byte for byte, the offsets the same."""
    root, sent = rocks_store(tmp_path / "store")
    consumer_offsets(root, {"orders@billing": {"0": 3, "1": 2}}, counter=4)
    (root / "config" / "consumerOffset.json").write_text('{"offsetTable":{"orders@billing":{0:1}}}')
    tear(root, sent[6])
    before = tree_digest(root)
    out = tmp_path / "out"
    done = run_replog("recover", str(root), "--out", str(out), "--format", "json")
    assert done.returncode in (0, 1), f"recover on a RocksDB store runs, not exit {done.returncode}: {done.stderr}"
    doc = json.loads(done.stdout)
    assert doc["truncated_to"] == sent[6].offset, f"the log ends at the torn message {sent[6].offset}: {doc}"
    rebuilt = doc["rebuilt"]
    assert rebuilt["queues"]["mode"] == "broker-redispatch", f"the JSON says who builds the queues: {rebuilt}"
    assert rebuilt["consume_queues"] == 0, f"no consume queue written: {rebuilt}"
    rocks = rebuilt["rocksdb"]
    assert rocks["abort_marker"] is True, f"the JSON says the abort marker is written: {rocks}"
    assert not (out / "consumequeue").exists(), "no consume-queue database nor file queues in the output"
    assert (out / "abort").is_file(), "the abort marker makes the broker dispatch every record at start"
    db = root / "config" / "consumerOffsets"
    assert db_digest(out / "config" / "consumerOffsets") == db_digest(db), "the offsets database copied as is"
    assert sorted(rocks["config_dbs"]) == sorted(f"config/consumerOffsets/{k}" for k in db_digest(db)), \
        f"the JSON lists the copied database files: {rocks['config_dbs']}"
    assert (out / "config" / "consumerOffset.json").read_bytes() == \
        (root / "config" / "consumerOffset.json").read_bytes(), "the JSON copied as is, stale or not"
    model = load_store(out)
    assert model.layout.store_type == "defaultRocksDB", "the output is still a RocksDB store to replog"
    assert model.queues == {}, f"no queue in the output: {model.queues}"
    assert [m.physical_offset for m in model.messages] == [s.offset for s in sent[:6]], "the kept messages"
    assert read_offsets(model, [])[0] == {("orders", "billing"): {0: 3, 1: 2}}, "the offsets as the input's DB"
    assert tree_digest(root) == before, "the input did not change"


def test_recover_writes_file_queues_for_a_default_store(tmp_path: Path) -> None:
    """The file-queue store is untouched by the RocksDB path: queues written, no abort, `rebuilt.rocksdb` null."""
    store = Store(file_size=4096)
    for i in range(6):
        store.append("orders", i % 2, f"m{i}".encode() * 20)
    store.write(tmp_path / "store")
    done = run_replog("recover", str(tmp_path / "store"), "--out", str(tmp_path / "out"), "--format", "json")
    assert done.returncode in (0, 1), done.stderr
    doc = json.loads(done.stdout)
    assert doc["rebuilt"]["rocksdb"] is None, f"no RocksDB part: {doc['rebuilt']}"
    assert doc["rebuilt"]["queues"]["mode"] == "broker", f"the file queues as the broker keeps them: {doc['rebuilt']}"
    assert (tmp_path / "out" / "consumequeue" / "orders" / "0").is_dir(), "file queues written"
    assert not (tmp_path / "out" / "abort").exists(), "no abort marker"


def test_manifest_names_the_store_type(tmp_path: Path) -> None:
    root, _ = rocks_store(tmp_path / "store")
    manifest = tmp_path / "manifest.json"
    done = run_replog("doctor", str(root), "--manifest", str(manifest), "--format", "json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(manifest.read_text())
    assert doc.get("stores") == [{"path": str(root), "system": "rocketmq", "store_type": "defaultRocksDB"}], \
        f"the manifest names the store and its type: {doc.get('stores')}"
    hashed = {Path(i["path"]).name for i in doc["inputs"] if Path(i["path"]).parent == root / "consumequeue"}
    assert {"CURRENT", "IDENTITY"} <= hashed, f"the database's files are hashed in the manifest: {hashed}"


def test_unopenable_offsets_database_cannot_be_verified(tmp_path: Path) -> None:
    root, _ = rocks_store(tmp_path / "store")
    consumer_offsets(root, {"orders@billing": {"0": 3}})
    (root / "config" / "consumerOffset.json").write_text('{"offsetTable":{"orders@billing":{0:1}}}')
    for sst in (root / "config" / "consumerOffsets").glob("MANIFEST-*"):
        sst.write_bytes(b"\0" * 64)
    with pytest.raises(UnreadableInput, match="cannot be verified"):
        read_offsets(load_store(root), [])


def test_the_binding_writes_into_a_directory_it_opens_read_only(tmp_path: Path) -> None:
    """Why replog opens a private copy: rocksdict 0.3.29's read-only open adds `rocksdict-config.json` to the
    directory it opens. When a version stops doing so this fails, and the copy could go."""
    from rocksdict import AccessType

    root, _ = rocks_store(tmp_path / "store")
    d = root / "consumequeue"
    before = tree_digest(d)
    db = Rdict(str(d), options=Options(raw_mode=True), access_type=AccessType.read_only(False),
               column_families={"offset": Options(raw_mode=True)})
    db.close()
    added = set(tree_digest(d)) - set(before)
    assert added == {"rocksdict-config.json"}, f"what the binding's read-only open wrote: {added}"


@pytest.mark.parametrize("protocol", ["classic", "autoswitch"])
def test_repair_writes_rocksdb_stores_for_their_brokers_to_rebuild(tmp_path: Path, protocol: str) -> None:
    """repair (classic or auto-switch HA) of two defaultRocksDB stores, the slave's log torn at message 4: each
    written store has the master's log, no consume-queue database, the abort marker and its own config databases as
    they were. (Auto-switch: both stores in epoch 1 from 0, the epoch file written by replog's writer as premise.)"""
    import shutil

    from replog.formats.rocketmq.epoch_file import EpochEntry, write_epoch_file
    from replog.recovery.rocketmq.ha import replay_paths
    from replog.recovery.rocketmq.repair import repair_stores

    master, sent = rocks_store(tmp_path / "master")
    consumer_offsets(master, {"orders@billing": {"0": 3, "1": 2}}, counter=4)
    slave = tmp_path / "slave"
    shutil.copytree(master, slave)
    consumer_offsets(slave, {"orders@billing": {"0": 1}}, counter=2)
    tear(slave, sent[4])
    if protocol == "autoswitch":
        for root in (master, slave):
            write_epoch_file(root / "epochFileCheckpoint", [EpochEntry(1, 0)])
    before = tree_digest(tmp_path)
    result = replay_paths([f"master={master}", f"slave={slave}"], protocol=protocol)
    repaired = {rep.name: rep for rep in repair_stores(result, tmp_path / "out")}
    for name, source in (("master", master), ("slave", slave)):
        rep, out = repaired[name], tmp_path / "out" / name
        assert rep.identical_to_master and not rep.problems, f"{name}: {rep}"
        assert rep.log_end_offset == sent[-1].offset + sent[-1].size, f"{name} ends at the master's end: {rep}"
        assert not (out / "consumequeue").exists(), f"{name}: no consume queue, the broker rebuilds it"
        assert (out / "abort").is_file(), f"{name}: the abort marker"
        assert db_digest(out / "config" / "consumerOffsets") == db_digest(source / "config" / "consumerOffsets"), \
            f"{name}: its own offsets database, copied as is"
    assert tree_digest(tmp_path / "master") == {k[len("master/"):]: v for k, v in before.items()
                                                if k.startswith("master/")}, "the master input did not change"


def test_doctor_warns_of_a_missing_queue_database_without_abort(tmp_path: Path) -> None:
    """A defaultRocksDB store with no consume-queue database: with `abort` the broker's abnormal recovery rebuilds
    every queue (info); without it the normal recovery never dispatches the record at offset 0 (a warning; the lab
    saw queue 0 of such a store served empty: tests/brokers/test_rocketmq_rocks_repair.py)."""
    root, _ = rocks_store(tmp_path / "store")
    consumer_offsets(root, {"orders@billing": {"0": 3}})
    out = tmp_path / "out"
    done = run_replog("recover", str(root), "--out", str(out), "--format", "json")
    assert done.returncode in (0, 1), done.stderr
    severities = {f.message: f.severity.value for f in diagnose_store(out)[0] if f.code == "ROCKETMQ_ROCKSDB_STORE"
                  and "no consume-queue database" in f.message}
    assert list(severities.values()) == ["info"], f"with abort: an info {severities}"
    (out / "abort").unlink()
    severities = {f.message: f.severity.value for f in diagnose_store(out)[0] if f.code == "ROCKETMQ_ROCKSDB_STORE"
                  and "no consume-queue database" in f.message}
    assert list(severities.values()) == ["warning"], f"without abort: a warning {severities}"
    assert "offset 0" in next(iter(severities)), f"the warning says what the broker skips: {severities}"
