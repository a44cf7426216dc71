"""`replay --what-if --html`: the recommended leader's replay page with the choices side by side, drawn by
headless Chromium; and the command line's exit codes and usage errors for `--what-if`."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.recovery.kafka.replicas import replica_dir
from tests.recovery.kafka.test_what_if import build, specs, state
from tests.toolkit.browser import assert_self_contained, probe
from tests.toolkit.test_cli import run_replog


@pytest.fixture(scope="module")
def what_if_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("what-if-page")
    page = root / "out" / "what-if.html"
    res = run_replog("replay", *specs(build(root)), "--partition-state", str(state(root)), "--what-if",
                     "--html", str(page), "--format", "json")
    assert res.returncode == 0, f"the best choice (waiting for broker 2) loses nothing: {res.stderr}"
    return page, json.loads(res.stdout)


def test_choices_side_by_side_in_a_browser(what_if_page: tuple[Path, dict]) -> None:
    page, doc = what_if_page
    assert [c["leader"] for c in doc["choices"]] == ["broker-2", "broker-3", "broker-4"], "ranking in the JSON"
    assert_self_contained(page.read_text())
    got = probe(page, ["section#what_if", "#what-if-choices [data-choice]", "#what-if-table tbody tr",
                       "#what-if-recommended code", "section#election", "section#impact"])
    s = got["selectors"]
    assert s["section#what_if"] and not s["section#what_if"][0]["hidden"], "the what-if section is drawn"
    cards = s["#what-if-choices [data-choice]"]
    assert [c["data"]["choice"] for c in cards] == ["broker-2", "broker-3", "broker-4"], "one card a choice, best first"
    assert len({round(c["y"]) for c in cards}) == 1, f"the cards sit side by side: {[c['y'] for c in cards]}"
    assert [c["x"] for c in cards] == sorted(c["x"] for c in cards), "left to right by rank"
    assert min(c["width"] for c in cards) > 150, "each card readable"
    assert len(s["#what-if-table tbody tr"]) == 3, "the table's rows"
    assert s["#what-if-recommended code"][0]["text"] == "start broker 2 (broker-2) first", "the command shown"
    assert s["section#election"] and s["section#impact"], "the recommended leader's replay and impact around it"


def test_exit_codes_and_usage_errors(tmp_path: Path) -> None:
    parts = build(tmp_path)
    clean = run_replog("replay", *specs(parts)[1:], "--partition-state", str(state(tmp_path)), "--what-if",
                       "--format", "json")
    assert clean.returncode == 0, f"broker 3 reaches the highest high watermark given: {clean.stderr}"
    forced = run_replog("replay", *specs(parts), "--what-if", "--leader", "broker-2")
    assert forced.returncode == 2, "--leader with --what-if is a usage error"
    assert "--what-if" in forced.stderr, forced.stderr
    one = run_replog("replay", specs(parts)[0], "--what-if", "--format", "json")
    assert one.returncode == 2, "one replica: replay's usage error"
    assert "at least two replicas" in one.stderr, one.stderr
    missing = run_replog("replay", *specs(parts), "--partition-state", str(tmp_path / "nope.json"), "--what-if")
    assert missing.returncode == 2, "an unreadable partition state: replay's error"


def test_exit_1_when_even_the_best_choice_loses(tmp_path: Path) -> None:
    """Two replicas whose tails differ: either leader costs the other its tail."""
    common = [(i, 0) for i in range(10)]
    x = replica_dir(tmp_path, "x", common + [(10, 1), (11, 1)], hw=10, epochs=[(0, 0), (1, 10)])
    y = replica_dir(tmp_path, "y", common + [(10, 2)], hw=10, epochs=[(0, 0), (2, 10)])
    res = run_replog("replay", f"x={x}", f"y={y}", "--what-if", "--format", "json")
    assert res.returncode == 1, f"every choice loses records: {res.stderr}"
    doc = json.loads(res.stdout)
    assert all(c["lost"]["records"] > 0 for c in doc["choices"]), doc["choices"]


def test_rocketmq_what_if_page_and_json(tmp_path: Path) -> None:
    from tests.recovery.rocketmq.test_what_if import stores
    page = tmp_path / "out" / "rmq.html"
    res = run_replog("replay", *stores(tmp_path / "s"), "--protocol", "autoswitch", "--what-if", "--html", str(page),
                     "--format", "json")
    assert res.returncode == 1, f"even the best master cuts b's own tail: {res.stderr}"
    doc = json.loads(res.stdout)
    assert (doc["system"], doc["mode"], doc["recommended"]["leader"]) == ("rocketmq", "controller", "a"), doc
    text = page.read_text()
    assert_self_contained(text)
    assert 'id="what_if"' in text and 'data-choice="c"' in text, "the page's what-if section, one card per store"


def test_terminal_table_says_the_recommendation(tmp_path: Path) -> None:
    res = run_replog("replay", *specs(build(tmp_path)), "--partition-state", str(state(tmp_path)), "--what-if",
                     "--format", "table")
    assert res.returncode == 0, res.stderr
    out = " ".join(res.stdout.split())
    assert "Which leader loses least: t-0 (zookeeper cluster)" in out, out
    assert "Recommended: broker-2 (wait)" in out, out
    assert "acknowledged records lost 0 against 5" in out, "why, against the runner-up"
