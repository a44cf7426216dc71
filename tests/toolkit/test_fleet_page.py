"""The fleet report page on a scan of thousands of replica sets (Parquet written with pyarrow, no Spark),
drawn in headless Chromium: heat maps, one-unit charts, sortable filterable tables, a hostile topic name."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from replog.spark import schemas
from replog.spark.report import MARKER
from tests.toolkit.browser import assert_self_contained, probe
from tests.toolkit.test_cli import run_replog

EVIL = "<script>alert(1)</script>"
BROKERS = ("b1", "b2", "b3")
TOPICS = [f"t{i:04d}" for i in range(1000)] + [EVIL]


def _table(name: str, rows: list[dict[str, Any]], out: Path) -> None:
    schema = schemas.TABLES[name]
    full = [{f.name: r.get(f.name) for f in schema} for r in rows]
    (out / name).mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(full, schema=schema), out / name / "part-00000.parquet")


@pytest.fixture(scope="module")
def scan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3,003 replica sets: every one lagging by a spread that grows with its topic, except the hostile
    topic's, where b3 diverges with an error on its partition and a damaged segment."""
    out = tmp_path_factory.mktemp("fleet-page") / "scan"
    parts, sets = [], []
    for topic in TOPICS:
        for p in range(3):
            evil = topic == EVIL
            leos = [1000, 1000, 990] if evil else [1000, 1000 - (TOPICS.index(topic) % 97) - 1, 1000]
            for b, leo in zip(BROKERS, leos, strict=True):
                parts.append({"cluster": "c1", "broker": b, "log_dir": f"/d/{b}", "topic": topic, "partition": p,
                              "state": "live",
                              "path": f"/d/{b}/{topic}-{p}", "segments": 1, "bytes": 1000, "log_start_offset": 0,
                              "log_end_offset": leo, "high_watermark": 990, "errors": int(evil and b == "b3"),
                              "warnings": 0, "infos": 0, "flags": []})
            sets.append({"cluster": "c1", "topic": topic, "partition": p, "replicas": list(BROKERS),
                         "log_end_offsets": leos,
                         "high_watermarks": [990] * 3, "latest_epochs": [1] * 3, "leo_spread": max(leos) - min(leos),
                         "hw_spread": 0, "first_divergent_offset": 980 if evil else None,
                         "kept": ["b1", "b2"] if evil else [], "diverged": ["b3"] if evil else [], "behind": [],
                         "records_at_risk": 0, "committed_at_risk": 0})
    _table("partitions", parts, out)
    _table("replicas", sets, out)
    _table("segments", [{"broker": "b3", "log_dir": "/d/b3", "topic": EVIL, "partition": 0, "size": 500,
                         "path": f"/d/b3/{EVIL}-0/00000000000000000000.log", "valid_bytes": 200, "errors": 1,
                         "warnings": 0, "infos": 0, "damaged": True}], out)
    _table("findings", [{"broker": "b3", "log_dir": "/d/b3", "topic": EVIL, "partition": 0, "severity": "error",
                         "code": "KAFKA_BATCH_CRC_MISMATCH", "path": f"/d/b3/{EVIL}-0/00000000000000000000.log",
                         "position": 200, "offset": 980, "message": "stored crc differs"}], out)
    (out / MARKER).write_text(json.dumps({"state": "complete"}))
    return out


def test_fleet_page_in_a_browser(scan: Path) -> None:
    page = scan.parent / "fleet.html"
    res = run_replog("fleet", "report", str(scan), "--html", str(page), "--format", "json")
    assert res.returncode == 1, res.stderr
    doc = json.loads(res.stdout)
    assert len(doc["lagging"]) == 20 and doc["totals"]["lagging_replica_sets"] == 3000   # the JSON stays short
    assert_self_contained(page.read_text())
    actions = """
      function shown(id, col) {
        return Array.prototype.map.call(document.querySelectorAll("#" + id + " tbody tr"), function (r) {
          return r.hidden ? null : r.cells[col].textContent; }).filter(function (t) { return t !== null; });
      }
      var out = {first: shown("lagging-table", 1).length};
      var f = document.getElementById("lagging-table-filter");
      f.value = "t0042"; f.dispatchEvent(new Event("input"));
      out.filtered = shown("lagging-table", 1);
      f.value = ""; f.dispatchEvent(new Event("input"));
      var th = Array.prototype.filter.call(document.querySelectorAll("#lagging-table th"), function (h) {
        return h.textContent.trim() === "LEO spread"; })[0];
      th.click(); th.click();
      out.top = shown("lagging-table", 4).slice(0, 4);
      var cell = document.querySelector('svg[data-map=divergence] rect.cell[data-filter="b3 ' + EVIL + '"]');
      cell.dispatchEvent(new MouseEvent("click", {bubbles: true}));
      out.divergent = shown("divergent-table", 1);
      out.segments = shown("damaged_segments-table", 1);
      return out;""".replace("EVIL", json.dumps(EVIL))
    got = probe(page, ["svg.heatmap", "svg.chart", "svg.chart .bar", "#charts h3", "#charts p.muted",
                       "svg[data-map=divergence] rect.cell", "svg[data-map=findings] rect.cell"], actions)
    s, a = got["selectors"], got["actions"]
    assert [m["data"]["map"] for m in s["svg.heatmap"]] == ["findings", "divergence"]
    bad = [c for c in s["svg[data-map=divergence] rect.cell"] if c["data"]["value"] != "0"]
    assert {c["data"]["filter"] for c in bad if c["data"]["filter"].startswith("b3 <")} == {f"b3 {EVIL}"}
    finds = s["svg[data-map=findings] rect.cell"]
    worst = next(c for c in finds if c["data"]["filter"] == f"b3 {EVIL}")
    assert worst["data"]["value"] == "3" and worst["fill"].startswith("#c6")   # red: its three partitions' errors
    assert worst["x"] == min(c["x"] for c in finds)              # the worst topic's column comes first
    assert len({c["x"] for c in finds}) == 60                     # the 60 worst topics of 1,001
    # one unit per chart; a series that is all zero (records at risk) is not drawn, it is said
    titles = [h["text"] for h in s["#charts h3"]]
    assert all(t.count("(") == 1 for t in titles) and not any("Records at risk" in t for t in titles)
    assert any("No records are at risk" in p["text"] for p in s["#charts p.muted"])
    assert all(b["width"] > 0 for b in s["svg.chart .bar"])
    # 3,000 rows: 100 at first, a filter finds the three of one topic, a sort is by number
    assert a["first"] == 100 and sorted(a["filtered"]) == ["t0042-0", "t0042-1", "t0042-2"]
    assert [int(x) for x in a["top"]] == [97, 97, 97, 97]
    # a heat-map cell filters the tables to its broker and topic; the hostile name stays text
    assert a["divergent"] == [f"{EVIL}-0", f"{EVIL}-1", f"{EVIL}-2"] and len(a["segments"]) == 1
    assert got["scripts"] == 2
