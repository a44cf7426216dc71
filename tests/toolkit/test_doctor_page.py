"""`doctor --html`: the findings laid over each file's bytes, grouped by code, drawn in headless Chromium."""
from __future__ import annotations

from pathlib import Path

from replog.recovery.kafka.writer import write_partition
from tests.formats.kafka.segments import data_batch
from tests.toolkit.browser import assert_self_contained, probe
from tests.toolkit.test_cli import run_replog

HOSTILE_DIR = "<img src=x onerror=alert(1)>"     # a log dir's name is the operator's, and shows on the page


def test_doctor_page_in_a_browser(tmp_path: Path) -> None:
    """A flipped CRC a third of the way into a segment and a torn tail: each is drawn where it is."""
    batches = [data_batch(i * 3) for i in range(30)]
    part = tmp_path / HOSTILE_DIR / "orders-0"
    write_partition(part, batches)
    seg = next(part.glob("*.log"))
    data = bytearray(seg.read_bytes())
    crc_at = sum(map(len, batches[:10]))                          # the 11th batch
    data[crc_at + len(batches[10]) - 2] ^= 0xFF
    seg.write_bytes(bytes(data) + batches[0][:40])               # and half a batch at the end
    size = len(data) + 40
    page = tmp_path / "out" / "doctor.html"
    res = run_replog("doctor", str(part.parent), "--html", str(page), "--format", "json")
    assert res.returncode == 1, res.stderr
    assert_self_contained(page.read_text())
    got = probe(page, ["section.code-group", "section[data-code=KAFKA_BATCH_CRC_MISMATCH] rect.filebar",
                       "section[data-code=KAFKA_BATCH_CRC_MISMATCH] rect.finding",
                       "section[data-code=KAFKA_TORN_TAIL] rect.filebar",
                       "section[data-code=KAFKA_TORN_TAIL] rect.finding",
                       "img", "svg.bytes text"])
    s = got["selectors"]
    codes = [g["data"]["code"] for g in s["section.code-group"]]
    assert codes[:2] == ["KAFKA_BATCH_CRC_MISMATCH", "KAFKA_TORN_TAIL"]         # errors first
    bar, mark = (s[f"section[data-code=KAFKA_BATCH_CRC_MISMATCH] rect.{c}"][0] for c in ("filebar", "finding"))
    assert abs(mark["x"] - (bar["x"] + bar["width"] * crc_at / size)) < 2     # where in the file: the 11th batch
    bar, mark = (s[f"section[data-code=KAFKA_TORN_TAIL] rect.{c}"][0] for c in ("filebar", "finding"))
    assert abs(mark["x"] + mark["width"] - (bar["x"] + bar["width"])) < 1     # a torn tail runs to the end
    assert abs(mark["x"] - (bar["x"] + bar["width"] * len(data) / size)) < 2
    assert s["img"] == [] and got["scripts"] == 2                             # the hostile name is text
    assert any(HOSTILE_DIR in t["text"] for t in s["svg.bytes text"])
