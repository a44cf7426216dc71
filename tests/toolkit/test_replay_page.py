"""The replay report page, Kafka and RocketMQ: drawn in headless Chromium and measured, plus its geometry on
logs far larger than a browser test could write (in-memory replicas), without a browser."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from replog.formats.kafka import batch as v2
from replog.recovery.kafka.replay import run_replay
from replog.recovery.kafka.replica import replica_from_batches
from replog.samples.rocketmq_fleet import generate_rocketmq_samples
from replog.toolkit.replay_page import ZOOM_CAP
from replog.toolkit.replay_view import replay_html
from tests.recovery.kafka.replicas import TS, batch, replica_dir
from tests.toolkit.browser import assert_self_contained, probe
from tests.toolkit.test_cli import run_replog

START, PER = 2_540_000, 1000          # a log that starts at 2.54 M, 1,000 records a batch
D = START + 40 * PER                  # where the old leader's 3,000 unreplicated records begin
EVIL = "<script>alert(1)</script>"


def _tail(offset: int, n: int, first_key: bytes) -> bytes:
    recs = [v2.Record(offset + i, TS + offset + i, first_key if i == 0 else f"k{offset + i}".encode(), b"old")
            for i in range(n)]
    return v2.build_batch(recs, base_offset=offset, partition_leader_epoch=1)


@pytest.fixture(scope="module")
def kafka_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """b1 leads in epoch 2; b2, the old leader, holds 3,000 records of epoch 1 nobody else has (one keyed
    `<script>`); b3 lags 3,000 records behind the shared history. Replayed through a real `replog`."""
    root = tmp_path_factory.mktemp("replay-page")
    common = [batch(START + i * PER, 1, n=PER) for i in range(40)]
    paths = [
        replica_dir(root, "b1", common + [batch(D, 2, n=PER), batch(D + PER, 2, n=500)], hw=D, log_start=START),
        replica_dir(root, "b2", common + [_tail(D + i * 500, 500, EVIL.encode() if i == 0 else b"x")
                                          for i in range(6)], hw=D, log_start=START),
        replica_dir(root, "b3", common[:-3], hw=D - 3 * PER, log_start=START),
    ]
    page = root / "out" / "replay.html"
    res = run_replog("replay", *(f"b{i + 1}={p}" for i, p in enumerate(paths)), "--html", str(page),
                     "--format", "json")
    assert res.returncode == 1, res.stderr          # b2 loses records
    return page, json.loads(res.stdout)


def test_kafka_page_in_a_browser(kafka_page: tuple[Path, dict]) -> None:
    page, doc = kafka_page
    b2 = next(r for r in doc["replicas"] if r["name"] == "b2")
    assert (doc["leader"], b2["truncated_to"], b2["lost"]["records"]) == ("b1", D, 3000)
    text = page.read_text()
    assert_self_contained(text)
    assert "None" not in re.sub(r"<[^>]+>", " ", text)          # values, never Python's None
    b2_lost, b3_fetched = "g.row[data-replica=b2][data-when=before] .strip.lost", \
        "g.row[data-replica=b3][data-when=after] .strip.fetched"
    got = probe(page, ["svg[data-plot=zoom] .plot-area", "svg[data-plot=zoom] .region.divergent",
                       "svg[data-plot=zoom] g.row", "svg[data-plot=overview] g.row",
                       "svg[data-plot=overview] .region.zoom", ".legend.epochs li[data-epoch]",
                       "svg[data-plot=overview] .band", ".lane-head", "dl.facts code",
                       f"svg[data-plot=zoom] {b2_lost}", f"svg[data-plot=overview] {b2_lost}",
                       f"svg[data-plot=zoom] {b3_fetched}",
                       "svg[data-plot=zoom] g.row[data-replica=b1][data-when=before] .box",
                       "svg[data-plot=zoom] .mark.hw"])
    s = got["selectors"]
    plot = s["svg[data-plot=zoom] .plot-area"][0]
    # the zoom gives where the replicas part most of the picture, and b2's 3,000 lost records a third of it,
    # where a straight axis over the log would give them 0.15 % (a 3,000-record stretch of 2.58 M offsets)
    assert s["svg[data-plot=zoom] .region.divergent"][0]["width"] > 0.8 * plot["width"]
    assert s[f"svg[data-plot=zoom] {b2_lost}"][0]["width"] > 0.3 * plot["width"]
    assert s[f"svg[data-plot=zoom] {b3_fetched}"][0]["width"] > 0.3 * plot["width"]
    # on the whole log the divergence is still there to see: a marked stretch and the zoomed region
    assert s[f"svg[data-plot=overview] {b2_lost}"][0]["width"] >= 3
    assert s["svg[data-plot=overview] .region.zoom"][0]["width"] >= 8
    # every batch of the region is drawn, and visible: the leader's last 4 shared ones and its 2 new ones
    boxes = s["svg[data-plot=zoom] g.row[data-replica=b1][data-when=before] .box"]
    assert len(boxes) == 6 and min(b["width"] for b in boxes) >= 2
    rows = {(r["data"]["replica"], r["data"]["when"]) for r in s["svg[data-plot=zoom] g.row"]}
    assert rows == {(f"b{i}", w) for i in (1, 2, 3) for w in ("before", "after")}
    assert {lane["data"]["lane"] for lane in s[".lane-head"]} == {"b1", "b2", "b3"}
    legend = {int(li["data"]["epoch"]) for li in s[".legend.epochs li[data-epoch]"]}
    assert legend == {int(b["data"]["epoch"]) for b in s["svg[data-plot=overview] .band"]} == {1, 2}
    assert s["svg[data-plot=zoom] .mark.hw"]                    # high watermarks marked where they fall
    # the malicious key is shown as text, not run: the page's own script and the probe are the only ones
    assert EVIL in [c["text"] for c in s["dl.facts code"]] and got["scripts"] == 2


def test_zoom_on_a_large_log_draws_every_batch_of_the_region_and_says_what_it_elides() -> None:
    """2.58 M offsets of 100-record batches in memory, then 1,000 small batches of the old leader's: the zoom
    draws at most ZOOM_CAP of them per row, naming the rest; the page stays small."""
    n, per = 25_800, 100
    common = [(i * per, i * per + per - 1, 3) for i in range(n)]
    end = n * per
    lead = replica_from_batches("a", common + [(end + i * 10, end + i * 10 + 9, 4) for i in range(5)],
                                high_watermark=end)
    old = replica_from_batches("b", common + [(end + i * 3, end + i * 3 + 2, 3) for i in range(1000)],
                               high_watermark=end)
    page = replay_html(run_replay([lead, old]))
    assert len(page) < 400_000
    zoom = page[page.index('data-plot="zoom"'):]
    b_before = zoom[zoom.index('data-replica="b" data-when="before"'):]
    b_before = b_before[:b_before.index("</g>")]
    assert b_before.count('class="box') == ZOOM_CAP
    assert f"{1001 - ZOOM_CAP:,} more batches" in b_before


@pytest.fixture(scope="module")
def rocketmq_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`repair --html` of the sample master and its diverged slave: the replay's page and what was written."""
    root = tmp_path_factory.mktemp("rocketmq-page")
    generate_rocketmq_samples(root / "stores")
    page = root / "out" / "r.html"
    res = run_replog("repair", f"master={root / 'stores' / 'master'}", f"slave={root / 'stores' / 'slave'}",
                     "--protocol", "autoswitch", "--out", str(root / "repaired"), "--html", str(page),
                     "--format", "json")
    assert res.returncode == 1, res.stderr
    return page


def test_rocketmq_page_in_a_browser(rocketmq_page: Path) -> None:
    got = probe(rocketmq_page, ["h1", ".legend.epochs li[data-epoch]", "svg[data-plot=overview] .band",
                                "svg[data-plot=zoom] .box", ".lane-head", "svg[data-plot=zoom] .strip.truncated",
                                ".sequence .step.msg", "#repaired li"])
    s = got["selectors"]
    assert "master master" not in s["h1"][0]["text"] and "auto-switch" in s["h1"][0]["text"]
    fills = {b["data"]["epoch"] for b in s["svg[data-plot=overview] .band"]}
    assert fills == {"1", "2"}                                   # bands coloured by epoch, not all one colour
    assert {li["data"]["epoch"] for li in s[".legend.epochs li[data-epoch]"]} == fills
    assert len(s["svg[data-plot=zoom] .box"]) > 10 and s["svg[data-plot=zoom] .strip.truncated"]
    assert {lane["data"]["lane"] for lane in s[".lane-head"]} == {"master", "slave"}
    assert len(s[".sequence .step.msg"]) >= 3                   # handshake, transfers, report as arrows
    assert [li["text"].split()[0] for li in s["#repaired li"]] == ["master", "slave"]    # what repair wrote


def test_a_member_added_to_the_replay_json_gets_its_section() -> None:
    """The controller's election record (`elections`), when the document has it, is a section of the page;
    without it, none."""
    from replog.toolkit.replay_logs import kafka_views
    from replog.toolkit.replay_page import render_replay
    from replog.toolkit.replay_view import REPLICA_COLUMNS

    result = run_replay([replica_from_batches("a", [(0, 9, 1), (10, 19, 2)], high_watermark=20),
                         replica_from_batches("b", [(0, 9, 1)], high_watermark=10)])
    doc = result.to_dict()
    plain = render_replay(doc, kafka_views(result), REPLICA_COLUMNS, title="t", unit_name="batches",
                          offset_name="offset")
    assert 'id="elections"' not in plain and "No controller record" in plain
    doc["elections"] = [{"leader": "a", "leader_epoch": 2, "offset": 7, "note": EVIL}]
    page = render_replay(doc, kafka_views(result), REPLICA_COLUMNS, title="t", unit_name="batches",
                         offset_name="offset")
    section = page[page.index('<section id="elections">'):]
    section = section[:section.index("</section>")]
    assert "<th>leader epoch</th>" in section and "<td>2</td>" in section and EVIL not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in section and "1 entry" in page
