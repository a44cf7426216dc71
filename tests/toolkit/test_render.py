"""One description of a result, rendered three ways: the JSON document, JSON lines and the table agree."""
from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from replog.formats.findings import FINDING
from replog.formats.shape import Field, Shape
from replog.recovery.kafka.impact_groups import GROUP_IMPACT
from replog.recovery.kafka.impact_producers import PRODUCER_IMPACT, TXN_IMPACT
from replog.recovery.kafka.recover import RECOVER_RESULT
from replog.recovery.kafka.replay import REPLICA_RESULT
from replog.recovery.rocketmq.ha_result import REPLICA_OUTCOME
from replog.recovery.rocketmq.impact import METADATA_DIFFERENCE, QUEUE_IMPACT
from replog.toolkit.cli import app
from replog.toolkit.doctor_view import FINDING_COLUMNS, RECOVER_COLUMNS
from replog.toolkit.impact_view import (
    GROUP_COLUMNS,
    METADATA_COLUMNS,
    PRODUCER_COLUMNS,
    ROCKETMQ_GROUP_COLUMNS,
    TXN_COLUMNS,
)
from replog.toolkit.output import Format
from replog.toolkit.render import Column, Columns, render, thousands, words
from replog.toolkit.replay_view import REPLICA_COLUMNS
from replog.toolkit.rocketmq_views import STORE_COLUMNS
from replog.toolkit.views import LS_COLUMNS, LS_ROW
from tests.recovery.kafka.replicas import replica_dir


@dataclass
class Fetch:
    records: int


@dataclass
class Part:
    name: str
    size: int
    hw: int | None
    fetch: Fetch | None
    flags: list[str] = field(default_factory=list)


PART = Shape("name", "size", "hw", Field("fetched", "fetch", shape=Shape("records")),
             Field("fetched_records", "fetch.records"), "flags")
PART_COLUMNS = Columns(
    Column("name", "name"),
    Column("size", "size", thousands, justify="right"),
    Column("hw", "hw", style="yellow"),
    Column("fetched", "fetched_records", justify="right"),
    Column("flags", "flags", words, style="yellow"),
)
PARTS = [Part("a-0", 1234567, 7, Fetch(3), ["torn"]), Part("[b]-1", 0, None, None)]


def table_cells(text: str) -> tuple[list[str], list[list[str]]]:
    """(headers, body rows) of the one table in a rendered text (rich's default box)."""
    head = next(line for line in text.splitlines() if line.startswith("┃"))
    body = [line for line in text.splitlines() if line.startswith("│")]
    split = lambda line: [c.strip() for c in line.strip("┃│").replace("┃", "│").split("│")]  # noqa: E731
    return split(head), [split(line) for line in body]


def rendered(fmt: Format, document: Any, columns: Columns, capsys: pytest.CaptureFixture[str],
             lines: list[Any] | None = None) -> str:
    console = Console(file=io.StringIO(), width=200, highlight=False)
    render(fmt, document, lambda c: c.print(columns.table(document)), lines=lines, console=console)
    return console.file.getvalue() if fmt is Format.table else capsys.readouterr().out  # type: ignore[attr-defined]


def test_one_result_three_ways_agrees_field_for_field(capsys: pytest.CaptureFixture[str]) -> None:
    rows = [PART.dump(p) for p in PARTS]
    doc = json.loads(rendered(Format.json, rows, PART_COLUMNS, capsys))
    lines = [json.loads(line) for line in rendered(Format.jsonl, rows, PART_COLUMNS, capsys).splitlines()]
    headers, cells = table_cells(rendered(Format.table, rows, PART_COLUMNS, capsys))
    assert doc == lines == rows
    assert doc[0] == {"name": "a-0", "size": 1234567, "hw": 7, "fetched": {"records": 3}, "fetched_records": 3,
                      "flags": ["torn"]}
    assert doc[1]["fetched"] is None and doc[1]["fetched_records"] is None
    assert headers == PART_COLUMNS.headers
    assert cells == [[c.text(r) for c in PART_COLUMNS.columns] for r in doc]
    assert cells == [["a-0", "1,234,567", "7", "3", "torn"], ["[b]-1", "0", "-", "-", ""]]


def test_a_document_is_one_json_line_unless_lines_are_given(capsys: pytest.CaptureFixture[str]) -> None:
    doc = {"replicas": [PART.dump(p) for p in PARTS], "summary": {"errors": 0}}
    assert rendered(Format.jsonl, doc, PART_COLUMNS, capsys) == json.dumps(doc, ensure_ascii=False) + "\n"
    tagged = [dict(r, kind="part") for r in doc["replicas"]]
    out = rendered(Format.jsonl, doc, PART_COLUMNS, capsys, lines=tagged)
    assert [json.loads(line) for line in out.splitlines()] == tagged


def test_cells_are_escaped_and_a_fixed_style_marks_only_present_values() -> None:
    hw, flags = PART_COLUMNS.columns[2], PART_COLUMNS.columns[4]
    rows = [PART.dump(p) for p in PARTS]
    assert hw.markup(rows[0], hw.text(rows[0])) == "[yellow]7[/]"
    assert hw.markup(rows[1], hw.text(rows[1])) == "-"
    assert flags.markup(rows[1], flags.text(rows[1])) == ""
    name = PART_COLUMNS.columns[0]
    assert name.markup(rows[1], "[b]-1") == "\\[b]-1"        # data is shown, never read as markup


def test_record_view_has_a_row_per_column_and_per_item_of_a_many_column() -> None:
    columns = Columns(Column("log", "log"), Column("hole", "holes", lambda h: f"at {h}", many=True),
                      Column("note", "note"))
    console = Console(file=io.StringIO(), width=100)
    console.print(columns.record({"log": "0..9", "holes": [3, 5], "note": None}, "recovered"))
    body = [[c.strip() for c in line.strip("│").split("│")] for line in console.file.getvalue().splitlines()
            if line.startswith("│")]
    assert body == [["log", "0..9"], ["hole", "at 3"], ["hole", "at 5"], ["note", "-"]]
    console = Console(file=io.StringIO(), width=100)
    console.print(columns.record({"log": "0..9", "holes": [], "note": "n"}))
    assert "hole" not in console.file.getvalue()


def test_a_page_table_is_the_same_cells_escaped_with_numbers_to_sort_by() -> None:
    from replog.toolkit import pages
    table = pages.environment().get_template("macros.html.j2").module.data_table
    page = str(table("parts", pages.table(PART_COLUMNS, [PART.dump(p) for p in PARTS])))
    assert [h.split(">")[-1] for h in page.split("</th>")[:2]] == ["name", "size"]
    assert '<td>[b]-1</td><td class="num" data-s="0">0</td><td class="num">-</td>' in page
    assert '<td class="num" data-s="1234567">1,234,567</td>' in page
    page = str(table("x", pages.table(Columns(Column("x", "x")), [{"x": "<script>"}])))
    assert "<td>&lt;script&gt;</td>" in page and "<script>" not in page


@dataclass
class Thing:
    a: int
    details: dict[str, int]
    inner: Fetch | None = None


def test_shape_members_in_order_nested_and_omitted() -> None:
    shape = Shape("a", Field("double", lambda t: t.a * 2), Field("records", "inner.records"),
                  Field("details", omit_empty=True))
    assert shape.dump(Thing(1, {})) == {"a": 1, "double": 2, "records": None}
    assert list(shape.dump(Thing(1, {"x": 1}, Fetch(4)))) == ["a", "double", "records", "details"]
    assert shape.dump(Thing(1, {}, Fetch(4)))["records"] == 4
    assert shape.without("double", "records").names == ("a", "details")
    assert shape.dump_each(None) is None and shape.dump_each([]) == []


@pytest.mark.parametrize(("columns", "shape"), [
    (LS_COLUMNS, LS_ROW), (FINDING_COLUMNS, FINDING), (RECOVER_COLUMNS, RECOVER_RESULT),
    (REPLICA_COLUMNS, REPLICA_RESULT), (STORE_COLUMNS, REPLICA_OUTCOME),
    (GROUP_COLUMNS, GROUP_IMPACT), (PRODUCER_COLUMNS, PRODUCER_IMPACT), (TXN_COLUMNS, TXN_IMPACT),
    (ROCKETMQ_GROUP_COLUMNS, QUEUE_IMPACT), (METADATA_COLUMNS, METADATA_DIFFERENCE),
], ids=["ls", "doctor", "recover", "kafka-replay", "rocketmq-replay", "impact-groups", "impact-producers",
        "impact-transactions", "rocketmq-impact", "rocketmq-metadata"])
def test_columns_show_only_fields_their_result_declares(columns: Columns, shape: Shape) -> None:
    assert columns.fields and columns.fields <= set(shape.names)


@pytest.mark.parametrize("command", ["ls", "replay"])
def test_a_command_in_three_formats_agrees(tmp_path: Path, command: str) -> None:
    a = replica_dir(tmp_path, "A", [(0, 0), (1, 0), (2, 0)], hw=3)
    b = replica_dir(tmp_path, "B", [(0, 0), (1, 1)], hw=1)
    args, columns = ((["ls", str(a.parent)], LS_COLUMNS) if command == "ls"
                     else (["replay", f"A={a}", f"B={b}", "--leader", "B"], REPLICA_COLUMNS))
    runner = CliRunner()
    out = {fmt: runner.invoke(app, [*args, "--format", fmt], env={"COLUMNS": "200"}) for fmt in Format}
    expected = 0 if command == "ls" else 1  # the replay loses A's offsets 1..2: exit 1 by the contract
    assert all(res.exit_code == expected for res in out.values()), {f: r.output for f, r in out.items()}
    doc = json.loads(out[Format.json].stdout)
    lines = [json.loads(line) for line in out[Format.jsonl].stdout.splitlines()]
    rows = doc if command == "ls" else doc["replicas"]
    assert lines == (doc if command == "ls" else [doc])
    headers, cells = table_cells(out[Format.table].stdout)
    assert headers == columns.headers and cells == columns.cells(rows)


def test_fit_widths_keeps_keys_whole_and_drops_before_folding() -> None:
    from replog.toolkit.render import fit_widths

    cols = Columns(Column("name", "n", key=True), Column("count", "c"), Column("extra", "x", drop=1),
                   Column("note", "m", min_width=8))
    texts = [["__consumer_offsets-0", "12345", "some extra words", "a long explanation of what was found"]]
    assert fit_widths(cols.columns, texts, 200) is None                 # it fits: rich lays it out
    widths = fit_widths(cols.columns, texts, 50)
    assert widths is not None and widths[0] == len("__consumer_offsets-0") and widths[1] == 5
    assert widths[2] == 0 and sum(widths) + 3 * 3 + 1 <= 50            # `extra` left out, the rest fits
    tight = fit_widths(cols.columns, texts, 40)
    assert tight is not None and tight[0] == 20 and sum(tight) + 3 * 3 + 1 <= 40
