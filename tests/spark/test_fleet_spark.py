"""`fleet scan` end to end in local[2]: one scan of two fleets, checked against the planted defects
and against single-process `ls` (summarize_partition) and `doctor` (diagnose) on the same dirs."""
from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from replog.recovery.doctor import diagnose
from replog.recovery.kafka.logdir import summarize_log_dir
from replog.spark.fleet import MARKER, claimed_output
from replog.spark.inputs import LogDir
from replog.spark.report import fleet_report, load_table
from replog.toolkit.views import ls_rows
from tests.spark.fleet_builder import BROKERS, CLUSTERS, build_clusters, build_fleet

pytestmark = pytest.mark.spark
LS_FIELDS = ("topic", "partition", "state", "segments", "bytes", "log_start_offset", "log_end_offset",
             "high_watermark", "recovery_point", "latest_epoch", "first_timestamp", "max_timestamp", "flags")


@pytest.fixture(scope="module")
def session():
    from replog.spark.java import java_problem
    if java_problem():
        pytest.skip(java_problem())
    from replog.spark.session import get_session
    spark = get_session("local[2]")
    yield spark
    spark.stop()


@pytest.fixture(scope="module")
def scan(session, tmp_path_factory: pytest.TempPathFactory):
    """Sample generator's fleet as g1..g3, the test builder's as b1..b3 and the KIP-279 histories as ka..kc,
    named by an inventory."""
    from replog.samples.kafka_fleet import generate_kafka_fleet
    from replog.spark.fleet import scan_fleet

    root = tmp_path_factory.mktemp("fleetscan")
    manifest = generate_kafka_fleet(root / "gen", seed=7)
    planted = build_fleet(root / "fx")
    kip279(root / "kip")
    inv = root / "inventory.txt"
    inv.write_text("# broker=path\n" + "".join(f"g{i}={root / 'gen' / f'broker-{i}'}\n" for i in (1, 2, 3))
                   + "".join(f"b{b}={root / 'fx' / f'broker-{b}'}\n" for b in BROKERS)
                   + "".join(f"k{b}={root / 'kip' / b}\n" for b in "abc"))
    steps: list[str] = []
    result = scan_fleet([], root / "out", inventory=inv, batches=True, session=session,
                        progress=lambda step, done, total: steps.append(step))
    log_dirs = {d.broker: Path(d.path) for d in result.log_dirs}
    return root / "out", result, manifest, planted, log_dirs


def _g(name: str) -> str:
    return "g" + name.removeprefix("broker-")


def test_scan_wrote_every_table(scan, session) -> None:
    out, result, *_ = scan
    assert (out / MARKER).is_file()
    assert session.conf.get("spark.sql.inMemoryColumnarStorage.batchSize", None) is None  # put back as it was
    assert set(result.rows) == {"partitions", "segments", "findings", "replicas", "batches", "stores", "log_dirs",
                                "impact"}
    assert result.rows["partitions"] == len(load_table(out, "partitions")) > 30
    assert result.errors > 0 and len(result.log_dirs) == 9


def test_partitions_equal_ls(scan) -> None:
    out, _, _, _, log_dirs = scan
    parts = load_table(out, "partitions").to_pylist()
    for broker, path in log_dirs.items():
        mine = sorted(({k: r[k] for k in LS_FIELDS} for r in parts if r["broker"] == broker),
                      key=lambda r: (r["topic"], r["partition"]))
        theirs = sorted(({k: r[k] for k in LS_FIELDS} for r in ls_rows(summarize_log_dir(path).partitions)),
                        key=lambda r: (r["topic"], r["partition"]))
        assert mine == theirs, broker


def test_findings_equal_doctor(scan) -> None:
    out, _, _, _, log_dirs = scan
    finds = load_table(out, "findings").to_pylist()
    for broker, path in log_dirs.items():
        mine = Counter((r["code"], r["path"], r["position"], r["offset"]) for r in finds if r["broker"] == broker)
        theirs = Counter((f.code, f.path, f.position, f.offset) for f in diagnose([path]).findings
                         if f.code != "INPUT_CHANGED")
        assert mine == theirs, broker


def test_every_planted_defect_found(scan) -> None:
    out, _, manifest, planted, _ = scan
    found = {(r["broker"], None if r["topic"] is None else f"{r['topic']}-{r['partition']}", r["code"])
             for r in load_table(out, "findings").to_pylist()}
    for d in manifest.damage:
        if d.partition is None:
            assert any(b == _g(d.broker) and c == d.code for b, _, c in found), d
        else:
            assert (_g(d.broker), d.partition, d.code) in found, d
    for broker, topic, partition, code in planted.damage:
        assert (f"b{broker}", f"{topic}-{partition}", code) in found


def test_every_planted_divergence_found(scan) -> None:
    out, _, manifest, planted, _ = scan
    reps = {(r["topic"], r["partition"]): r for r in load_table(out, "replicas").to_pylist()}
    for d in manifest.divergences:
        row = reps[(d.topic, d.partition)]
        if d.kind == "divergence":
            assert row["first_divergent_offset"] == d.first_divergent_offset
            assert row["diverged"] == sorted(map(_g, d.diverged_replicas))
            assert row["records_at_risk"] == d.records_at_risk
        else:
            assert row["first_divergent_offset"] is None and row["leo_spread"] > 0
            leos = dict(zip(row["replicas"], row["log_end_offsets"], strict=True))
            assert {_g(b) for b in d.lagging_replicas} <= {b for b, v in leos.items() if v == min(leos.values())}
    for tp, offset in planted.divergences.items():
        row = reps[tp]
        assert row["first_divergent_offset"] == offset
        assert row["diverged"] == [f"b{b}" for b in planted.diverged[tp]]
    lagging = reps[next(iter(planted.lag))]
    assert lagging["first_divergent_offset"] is None and lagging["leo_spread"] == 39
    planted_tps = ({(d.topic, d.partition) for d in manifest.divergences if d.kind == "divergence"}
                   | set(planted.divergences) | {("kip", 1)})
    assert {tp for tp, r in reps.items() if r["first_divergent_offset"] is not None} == planted_tps


def test_impact_of_every_divergent_set(scan) -> None:
    out, _, manifest, planted, _ = scan
    rows = {(r["topic"], r["partition"]): r for r in load_table(out, "impact").to_pylist()}
    divergent = {(r["topic"], r["partition"]) for r in load_table(out, "replicas").to_pylist()
                 if r["first_divergent_offset"] is not None}
    assert set(rows) == divergent and not any(r["error"] for r in rows.values())
    div = next(d for d in manifest.divergences if d.kind == "divergence")
    row = rows[(div.topic, div.partition)]
    assert {g["group"]: g["classification"] for g in row["affected_groups"]} == \
        {g: c for g, c in div.impact["groups"].items() if c != "unaffected"}
    assert [(h["producer_id"], h["first_offset"]) for h in row["hanging"]] == \
        [(h["producer_id"], h["first_offset"]) for h in div.impact["hanging_transactions"]]
    rep = fleet_report(out)
    assert rep.totals["hanging_transactions"] >= 1 and rep.impact[0]["groups_affected"] == 2


def test_report_reads_the_scan(scan) -> None:
    out, *_ = scan
    rep = fleet_report(out)
    assert rep.totals["divergent_replica_sets"] == len(rep.divergent) >= 3 and rep.has_errors


@pytest.fixture(scope="module")
def split_scan(session, scan):
    """The test builder's fleet again, as a file:// URI, every partition split (threshold 1 byte), with
    the RocketMQ sample stores beside it."""
    from replog.samples.rocketmq_fleet import generate_rocketmq_samples
    from replog.spark.fleet import scan_fleet

    out, *_ = scan
    root = out.parent
    generate_rocketmq_samples(root / "rmq")
    result = scan_fleet([f"file://{root / 'fx'}", f"file://{root / 'rmq'}"], root / "out-split", batches=True,
                        session=session, split_bytes=1)
    return root / "out-split", result


def _rows(t, broker_of=lambda b: b) -> list:
    return sorted(tuple(repr(broker_of(v) if k == "broker" else v) for k, v in r.items()) for r in t.to_pylist())


def _discovered_name(inventory_name: str) -> str:
    """The name discovery gives the log dir an inventory line calls `b<node.id>`."""
    return "broker-" + inventory_name.removeprefix("b")


def test_split_scan_equals_unsplit(scan, split_scan) -> None:
    out, *_ = scan
    split_out, result = split_scan
    assert result.units > 4 * 36
    for name in ("partitions", "segments", "findings", "batches"):
        whole = load_table(out, name)
        whole = whole.filter(pa_compute().starts_with(whole.column("broker"), "b"))
        split = load_table(split_out, name)
        split = split.filter(pa_compute().is_valid(split.column("topic")))
        assert _rows(whole, _discovered_name) == _rows(split), name
    whole_reps = [r for r in load_table(out, "replicas").to_pylist() if r["topic"].startswith("fx.")]
    split_reps = load_table(split_out, "replicas").to_pylist()
    for r in whole_reps:
        r["replicas"] = [_discovered_name(b) for b in r["replicas"]]
        for k in ("kept", "diverged", "behind"):
            r[k] = [_discovered_name(b) for b in r[k]]
    assert sorted(map(repr, whole_reps)) == sorted(map(repr, split_reps))


def test_stores_in_the_scan_and_report(split_scan) -> None:
    split_out, result = split_scan
    stores = {r["store"]: r for r in load_table(split_out, "stores").to_pylist()}
    assert set(stores) == {"master", "slave", "damaged"}
    assert stores["damaged"]["errors"] > 0 and stores["master"]["messages"] > 0
    finds = load_table(split_out, "findings").to_pylist()
    assert {r["broker"] for r in finds if r["topic"] is None} >= {"damaged"}
    rep = fleet_report(split_out)
    assert rep.totals["stores"] == 3 and rep.stores[0]["store"] == "damaged"
    assert {d["kind"] for d in result.to_dict()["log_dirs"]} == {"kafka", "rocketmq"}


def test_the_scan_document_and_marker_have_the_declared_members(scan) -> None:
    """`fleet scan --format json` (`FleetScanDoc`) and the marker file (`ScanMarker`, beside its tool and state)
    against their declarations, as JSON."""
    from replog.spark.fleet import FleetScanDoc, ScanMarker
    from tests.toolkit.test_documents import mismatches

    out, result, *_ = scan
    found = list(mismatches(FleetScanDoc, json.loads(json.dumps(result.to_dict()))))
    assert found == [], f"the scan's document differs from FleetScanDoc: {found[:10]}"
    marker = json.loads((out / MARKER).read_text())
    assert (marker.pop("tool"), marker.pop("state")) == ("replog fleet scan", "complete"), "the marker's head"
    assert "rows" in marker and "counts" in marker, f"a complete scan's marker says what it wrote: {sorted(marker)}"
    found = list(mismatches(ScanMarker, marker))
    assert found == [], f"the marker differs from ScanMarker: {found[:10]}"


def pa_compute():
    import pyarrow.compute as pc
    return pc


def test_force_replaces_only_a_previous_scan(scan, tmp_path: Path) -> None:
    shared, result, *_ = scan
    out = tmp_path / "previous-scan"
    shutil.copytree(shared, out)  # a copy: the module's scan output is shared by the other tests
    with claimed_output(out, result.log_dirs, force=True) as claimed:
        assert claimed == out.resolve() and not any(out.iterdir())
    assert (shared / MARKER).is_file()
    with pytest.raises(Exception, match="overlap"), \
            claimed_output(Path(result.log_dirs[0].path) / "x", [LogDir("1", result.log_dirs[0].path)], force=False):
        pass


def test_replica_sets_never_span_clusters(session, tmp_path: Path) -> None:
    """Three clusters holding one topic-partition on brokers of the same ids, with other data: three sets of
    two, none divergent (one set of six would diverge at offset 0); the group without a cluster id flagged."""
    from replog.spark.fleet import scan_fleet

    groups = build_clusters(tmp_path / "fleet")
    result = scan_fleet([tmp_path / "fleet"], tmp_path / "out", session=session)
    reps = load_table(tmp_path / "out", "replicas").to_pylist()
    assert sorted(r["cluster"] for r in reps) == sorted(c or f"folder {(tmp_path / 'fleet' / 'old').resolve()}"
                                                        for c in CLUSTERS.values())
    for r in reps:
        group = Path(r["log_dirs"][0]).parent.name
        assert r["log_dirs"] == [str(d) for d in groups[group]] and r["replicas"] == ["broker-1", "broker-2"]
        assert r["first_divergent_offset"] is None and r["leo_spread"] == 0
    assert result.divergent_replica_sets == 0
    flagged = [r["path"] for r in load_table(tmp_path / "out", "log_dirs").to_pylist() if r["flags"]]
    assert flagged == [str(d) for d in groups["old"]]
    report = fleet_report(tmp_path / "out")
    assert [d["path"] for d in report.flagged_log_dirs] == flagged and report.totals["clusters"] == 3


def test_rescan_of_an_unchanged_fleet_reads_only_active_segments(scan, session, tmp_path: Path) -> None:
    from replog.spark.fleet import scan_fleet

    out, first, *_ = scan
    again = scan_fleet([], tmp_path / "again", inventory=out.parent / "inventory.txt", batches=True,
                       session=session, since=out)
    segs = load_table(out, "segments").to_pylist()
    last = {}
    for s in segs:
        key = str(Path(s["path"]).parent)
        last[key] = max(last.get(key, -1), s["base_offset"])
    sealed = [s for s in segs if s["base_offset"] != last[str(Path(s["path"]).parent)] and s["batch_count"]]
    assert again.counts["segments_reused"] == len(sealed) > 50
    assert again.counts["segments_read"] == len(segs) - len(sealed)
    assert again.reuse["findings"] == {"segments_reused": len(sealed), "segments_read": len(segs) - len(sealed)}
    for name in ("partitions", "segments", "findings", "batches", "replicas", "log_dirs"):
        assert _rows(load_table(out, name)) == _rows(load_table(tmp_path / "again", name)), name
    assert json.loads((tmp_path / "again" / MARKER).read_text())["since"] == str(out)


def test_tail_scan_compares_replicas_by_epochs(scan, session, tmp_path: Path) -> None:
    from replog.spark.fleet import scan_fleet

    out, _, _, planted, _ = scan
    tail = scan_fleet([out.parent / "fx"], tmp_path / "tail", session=session, tail=True)
    reps = {(r["topic"], r["partition"]): r for r in load_table(tmp_path / "tail", "replicas").to_pylist()}
    assert tail.mode == "tail" and len(reps) == 12 and "batches" not in tail.rows
    orders = reps[("fx.orders", 1)]
    assert (orders["first_divergent_offset"], orders["diverged"]) == (30, ["broker-3"])
    assert reps[next(iter(planted.lag))]["leo_spread"] == 39
    # one verdict for both modes: a set the full scan finds clean, and the epoch divergence a tail can see,
    # get the same row from both (payments-0's other batch boundaries, same epochs, only the full scan sees)
    verdict = ("first_divergent_offset", "kept", "diverged", "behind", "records_at_risk", "committed_at_risk")
    compared = 0
    for r in load_table(out, "replicas").to_pylist():
        tp = (r["topic"], r["partition"])
        if tp in reps and (r["first_divergent_offset"] is None or tp == ("fx.orders", 1)):
            full = {k: [_discovered_name(b) for b in r[k]] if isinstance(r[k], list) else r[k] for k in verdict}
            assert full == {k: reps[tp][k] for k in verdict}, tp
            compared += 1
    assert compared == 11, compared


def test_scan_on_a_standalone_cluster_equals_local(scan, tmp_path: Path) -> None:
    """`replog fleet scan --master spark://...` against a master and a worker started from pyspark's
    spark-class: the test builder's fleet gives the tables the module's local[2] scan gave it."""
    import subprocess
    import sys

    from tests.spark.standalone import QUICK_JVM, cluster_env, standalone_cluster

    out, *_ = scan
    inventory = tmp_path / "inventory.txt"
    inventory.write_text("".join(line + "\n" for line in (out.parent / "inventory.txt").read_text().splitlines()
                                 if line.startswith("b")))
    with standalone_cluster(tmp_path / "cluster") as url:
        run = subprocess.run([str(Path(sys.executable).with_name("replog")), "fleet", "scan", "--inventory",
                              str(inventory), "--batches", "--out", str(tmp_path / "scan"), "--master", url,
                              "--conf", f"spark.executor.extraJavaOptions={QUICK_JVM}",
                              "--conf", f"spark.driver.extraJavaOptions={QUICK_JVM}",
                              "--format", "json"], capture_output=True, text=True, timeout=240,
                             env=cluster_env(tmp_path / "cluster"))
    assert run.returncode == 1, run.stderr[-3000:]
    assert json.loads(run.stdout)["divergent_replica_sets"] == 2
    for name in ("partitions", "segments", "findings", "batches", "replicas", "log_dirs"):
        local = load_table(out, name)
        if "broker" in local.column_names:
            local = local.filter(pa_compute().starts_with(local.column("broker"), "b"))
        else:
            local = local.filter(pa_compute().starts_with(local.column("topic"), "fx."))
        assert _rows(local) == _rows(load_table(tmp_path / "scan", name)), name


def test_replica_sets_split_by_topic_id(session) -> None:
    """Replicas of one partition in one cluster with two topic ids (the topic deleted and made again)
    are two sets; a replica without one joins the set of the only id its cluster has, else its own."""
    from replog.spark.replicas import replica_sets

    def row(cluster: str, log_dir: str, topic_id: str | None) -> dict:
        return {"cluster": cluster, "log_dir": log_dir, "topic": "t", "partition": 0, "state": "live",
                "topic_id": topic_id}

    frame = session.createDataFrame(
        [row("a", "1", "X"), row("a", "2", "X"), row("a", "3", None),
         row("b", "1", "X"), row("b", "2", "Y"), row("b", "3", None), row("b", "4", None)],
        "cluster string, log_dir string, topic string, partition int, state string, topic_id string")
    sets = sorted((r["cluster"], r["set_topic_id"], r["log_dir"]) for r in replica_sets(frame).collect())
    assert sets == [("a", "X", "1"), ("a", "X", "2"), ("a", "X", "3"), ("b", "", "3"), ("b", "", "4")]


def _log(root: Path, broker: str, partition: int, batches: list[tuple[int, int, int, bytes]],
         epochs: list[tuple[int, int]], hw: int) -> Path:
    """`root/broker/kip-partition`, batches by kafka-python (each with its own content tag), text checkpoints
    and meta.properties."""
    from tests.recovery.kafka.independent import kp_batch

    pdir = root / broker / f"kip-{partition}"
    pdir.mkdir(parents=True)
    (pdir / "00000000000000000000.log").write_bytes(b"".join(kp_batch(b, last, e, tag) for b, last, e, tag in batches))
    (pdir / "leader-epoch-checkpoint").write_text(f"0\n{len(epochs)}\n" + "".join(f"{e} {o}\n" for e, o in epochs))
    cp = root / broker / "replication-offset-checkpoint"
    lines = cp.read_text().splitlines()[2:] if cp.exists() else []
    lines.append(f"kip {partition} {hw}")
    cp.write_text(f"0\n{len(lines)}\n" + "".join(line + "\n" for line in lines))
    # one cluster: log dirs named by separate inventory lines and no cluster id would be three groups
    (root / broker / "meta.properties").write_text(f"version=0\nbroker.id={ord(broker)}\ncluster.id=kip-cluster\n")
    return pdir


def kip279(root: Path) -> None:
    """KIP-279 histories on brokers a, b, c (the `scan` fixture's ka, kb, kc): see the test below."""
    common = [(0, 1, 0, b"p"), (2, 3, 1, b"q")]
    _log(root, "a", 0, [(0, 1, 0, b"p"), (2, 3, 3, b"q")], [(0, 0), (3, 2)], 4)
    _log(root, "b", 0, common + [(4, 5, 2, b"b")], [(0, 0), (1, 2), (2, 4)], 4)
    _log(root, "c", 0, common + [(4, 5, 2, b"c")], [(0, 0), (1, 2), (2, 4)], 4)
    head = [(0, 0, 0, b"p"), (1, 1, 0, b"q")]
    _log(root, "a", 1, head + [(2, 2, 3, b"a")], [(0, 0), (3, 2)], 2)
    for b in ("b", "c"):
        _log(root, b, 1, head + [(2, 3, 1, b"x"), (4, 5, 2, b"y")], [(0, 0), (1, 2), (2, 4)], 2)


def test_fleet_and_replay_agree_on_kip279_divergence(scan) -> None:
    """KIP-279 histories on three brokers. kip-0: a leads in epoch 3 and holds 2..3 with the same bytes b and
    c hold in epoch 1 (the epoch is outside the CRC); b and c went on in epoch 2 with different records at
    4..5, beyond a's log. Replay pairs each with the leader: nothing differs before a's log ends (b and c
    truncate to 2 and fetch 2..3 again, losing 4..5, but do not diverge from a); the old fleet join
    compared b with c and reported 4. kip-1: a's epoch 3 starts at 2, b and c hold epochs 1 and 2 from
    there: both part from a at 2. The fleet's replica sets now say what replay says."""
    from replog.recovery.kafka.replay import replay_paths

    out, *_ = scan
    root = out.parent / "kip"
    rows = {r["partition"]: r for r in load_table(out, "replicas").to_pylist() if r["topic"] == "kip"}
    for partition, want in ((0, None), (1, 2)):
        result = replay_paths([f"k{b}={root / b / f'kip-{partition}'}" for b in "abc"])
        diverged = {r.replica.name: r.diverged_at for r in result.replicas}
        assert result.leader.name == "ka" and min((d for d in diverged.values() if d is not None), default=None) == want
        assert rows[partition]["first_divergent_offset"] == want
        assert rows[partition]["diverged"] == sorted(n for n, d in diverged.items() if d is not None)


def test_scan_without_the_batch_table_reads_rows_again_where_digests_differ(scan, session, tmp_path: Path) -> None:
    """Without --batches no batch row is written: the replica sets are compared by digests, and the rows of
    suspect buckets (then of the divergent sets' tails) are read again from the segments. The replicas
    table equals the one the batch table gave; a file:// copy of a log dir takes the rows its scan wrote."""
    from replog.spark.fleet import scan_fleet

    out, *_ = scan
    lines = (out.parent / "inventory.txt").read_text().splitlines()
    inventory = tmp_path / "inventory.txt"
    inventory.write_text("".join(f"{line}\n" for line in lines if line[:1] in "bk"))
    scan_fleet([], tmp_path / "lean", inventory=inventory, session=session)
    whole = [r for r in load_table(out, "replicas").to_pylist() if r["topic"].startswith(("fx.", "kip"))]
    lean = load_table(tmp_path / "lean", "replicas").to_pylist()
    assert sorted(map(repr, whole)) == sorted(map(repr, lean))
    assert sum(r["first_divergent_offset"] is not None for r in lean) >= 3
    assert not (tmp_path / "lean" / "batches").exists()
    remote = tmp_path / "remote.txt"
    remote.write_text("".join(f"{line.split('=')[0]}=file://{line.split('=', 1)[1]}\n" if line.startswith("b1=")
                              else f"{line}\n" for line in lines if line[:1] == "b"))
    scan_fleet([], tmp_path / "mixed", inventory=remote, session=session)
    fx = [r for r in whole if r["topic"].startswith("fx.")]
    assert sorted(map(repr, fx)) == sorted(map(repr, load_table(tmp_path / "mixed", "replicas").to_pylist()))
