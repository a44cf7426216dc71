"""spark.report and `replog fleet report` on Parquet tables written with pyarrow (no Spark)."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from replog.spark import schemas
from replog.spark.replica_sets import assemble_replica_set
from replog.spark.report import MARKER, fleet_report
from replog.spark.tasks import run_unit
from replog.spark.units import log_dir_units
from replog.toolkit.cli import app
from replog.toolkit.fleet_view import render_html
from tests.spark.fleet_builder import BROKERS, build_fleet


@pytest.fixture(scope="module")
def scan_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scan's output as Spark would write it, built from the tasks' record batches."""
    root = tmp_path_factory.mktemp("report")
    build_fleet(root / "fleet")
    out = root / "out"
    tables: dict[str, list[pa.RecordBatch]] = {name: [] for name in schemas.TABLES}
    for broker in BROKERS:
        for unit in log_dir_units(broker, str(root / "fleet" / f"broker-{broker}")):
            for table, batch in run_unit(unit):
                tables[table].append(batch)
    div = {"broker": "3", "log_end_offset": 36, "high_watermark": 33, "latest_epoch": 0, "divergent_offset": 30,
           "records_from_d": 6, "committed_from_d": 3}
    ok = [{"broker": b, "log_end_offset": 60, "high_watermark": 21, "latest_epoch": 1} for b in ("1", "2")]
    lag = [{"broker": b, "log_end_offset": leo, "high_watermark": 21, "latest_epoch": 1} for b, leo in
           (("1", 21), ("2", 60), ("3", 60))]
    tables["replicas"] = [pa.RecordBatch.from_pylist([assemble_replica_set("fx.orders", 1, ok + [div]),
                                                      assemble_replica_set("fx.events", 2, lag)],
                                                     schema=schemas.REPLICAS)]
    for name, batches in tables.items():
        (out / name).mkdir(parents=True)
        pq.write_table(pa.Table.from_batches(batches, schemas.TABLES[name]), out / name / "part-00000.parquet")
    (out / MARKER).write_text(json.dumps({"state": "complete"}))
    return out


def test_report_totals_and_sections(scan_dir: Path) -> None:
    rep = fleet_report(scan_dir)
    t = rep.totals
    assert (t["brokers"], t["partitions"], t["replica_sets"], t["divergent_replica_sets"]) == (3, 36, 2, 1)
    assert t["errors"] == 4 and rep.has_errors   # torn tail + its time index entry, CRC, HW
    assert [(d["topic"], d["first_divergent_offset"], d["diverged"]) for d in rep.divergent] == [
        ("fx.orders", 30, ["3"])]
    assert [(d["topic"], d["leo_spread"]) for d in rep.lagging] == [("fx.events", 39)]
    assert {(s["broker"], s["topic"], s["partition"]) for s in rep.damaged_segments} == {
        ("2", "fx.orders", 0), ("1", "fx.audit", 1)}
    assert {(c["broker"], c["code"]) for c in rep.checkpoint_disagreements} >= {
        ("3", "KAFKA_HW_ABOVE_LEO"), ("1", "KAFKA_RECOVERY_POINT_ABOVE_LEO")}
    assert {b["broker"]: b["errors"] for b in rep.brokers} == {"1": 2, "2": 1, "3": 1}
    assert next(x for x in rep.topics if x["topic"] == "fx.orders")["records_at_risk"] == 6


def test_report_of_an_empty_scan(tmp_path: Path) -> None:
    (tmp_path / "partitions").mkdir()
    (tmp_path / MARKER).write_text("{}")
    rep = fleet_report(tmp_path)
    assert rep.totals["partitions"] == 0 and not rep.has_errors and rep.divergent == []


def test_html_has_heat_maps_charts_and_tables(scan_dir: Path) -> None:
    page = render_html(fleet_report(scan_dir).to_dict())
    assert page.count('class="heatmap"') == 2 and page.count('class="chart"') >= 3 and "fx.orders-1" in page
    assert page.count("<script") == 1 and "src=" not in page        # its own few lines, nothing loaded


def test_cli_report_json_and_html(scan_dir: Path, tmp_path: Path) -> None:
    html_file = tmp_path / "fleet.html"
    res = CliRunner().invoke(app, ["fleet", "report", str(scan_dir), "--format", "json", "--html", str(html_file)])
    assert res.exit_code == 1, res.output
    data = json.loads(res.stdout)
    assert data["totals"]["divergent_replica_sets"] == 1
    assert data["divergent"][0]["kept"] == ["1", "2"]
    assert html_file.read_text().startswith("<!doctype html>")


def test_the_printed_report_has_the_declared_members(scan_dir: Path) -> None:
    """`FleetReportDoc` (what the terminal and the page read) against the JSON `fleet report` prints, and against
    the dataclass whose fields that JSON is."""
    from dataclasses import fields

    from replog.spark.report import FleetReport, FleetReportDoc
    from tests.toolkit.test_documents import mismatches

    declared, written = set(FleetReportDoc.__annotations__), {f.name for f in fields(FleetReport)}
    assert declared == written, f"declared, no field: {declared - written}; a field not declared: {written - declared}"
    res = CliRunner().invoke(app, ["fleet", "report", str(scan_dir), "--format", "json"])
    doc = json.loads(res.stdout)
    assert doc["divergent"] and doc["lagging"] and doc["broker_topics"], "the scan has rows to check"
    found = list(mismatches(FleetReportDoc, doc))
    assert found == [], f"the report differs from its declaration: {found[:10]}"


def test_cli_report_table(scan_dir: Path) -> None:
    res = CliRunner().invoke(app, ["fleet", "report", str(scan_dir), "--format", "table"])
    assert res.exit_code == 1 and "divergent replica sets" in res.stdout


def test_cli_report_refuses_a_dir_that_is_not_a_scan(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["fleet", "report", str(tmp_path)])
    assert res.exit_code == 2 and "not the output" in " ".join(res.output.split())


def test_cli_scan_refuses_non_empty_out_without_marker(scan_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("evidence")
    fleet = scan_dir.parent / "fleet"
    res = CliRunner().invoke(app, ["fleet", "scan", str(fleet), "--out", str(tmp_path)])
    assert res.exit_code == 2 and "not empty" in " ".join(res.output.split())
    res = CliRunner().invoke(app, ["fleet", "scan", str(fleet), "--out", str(tmp_path), "--force"])
    assert res.exit_code == 2 and "not a complete replog output" in " ".join(res.output.split())
    assert (tmp_path / "keep.txt").read_text() == "evidence"


def test_store_groups_pair_a_master_with_its_slaves() -> None:
    from replog.spark.report import store_groups

    def store(broker: str, name: str | None, role: str | None, end: int, cluster: str = "east") -> dict:
        return {"cluster": cluster, "broker": broker, "broker_name": name, "broker_id": int(broker[-1]),
                "role": role, "path": f"/s/{broker}", "commitlog_max_offset": end, "errors": 0}

    groups = store_groups([store("a:1", "a", "slave", 900), store("a:0", "a", "master", 1000),
                           store("a:0", "a", "master", 5, cluster="west"), store("x9", None, None, 7)])
    assert [(g["cluster"], g["broker_name"], g["stores"], g["roles"], g["max_offset_spread"]) for g in groups] == [
        ("east", "a", ["a:0", "a:1"], ["master", "slave"], 100), ("east", "/s/x9", ["x9"], [None], 0),
        ("west", "a", ["a:0"], ["master"], 0)]
