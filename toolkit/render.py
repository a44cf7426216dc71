"""One way out for every result: a table for a person, a JSON document or JSON lines for a program.

A result's JSON is declared beside the result (`formats.shape`); its table is
declared here, once, as `Columns` over those JSON rows: for each column a
header, which field of the row it shows (or what function of the row), how a
person reads the value, its alignment and highlight. Cells are computed from
the JSON rows, never from the result objects, so a table can only show what
the JSON says, and a column naming a field can be checked against the shape.
`render` then writes a result in the format asked for.
"""
from __future__ import annotations

import datetime as dt
import html
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from replog.toolkit.output import Format, write_json, write_jsonl

Row = dict[str, Any]


# --- how a person reads a value --------------------------------------------------------


def text(value: Any) -> str:
    """The default: "-" for an absent value, else the value as it prints."""
    return "-" if value is None else str(value)


def thousands(value: Any) -> str:
    """Byte counts and sizes with a thousands separator."""
    return "-" if value is None else f"{value:,}"


def words(values: Iterable[Any] | None) -> str:
    """A list (flags, replica names) as space-separated words; empty stays empty."""
    return " ".join(str(v) for v in values or [])


def iso(ms: int | None) -> str | None:
    """Milliseconds since the epoch as UTC ISO text (None, negative or out of range: None)."""
    if ms is None or ms < 0:
        return None
    try:
        return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")[:-4] + "Z"
    except (OverflowError, ValueError, OSError):
        return None


def time_range(first: str, last: str) -> Callable[[Row], str]:
    """A column value: the row's two millisecond timestamps as "first .. last" in UTC ("-" when neither)."""
    return lambda r: " .. ".join(t for t in (iso(r[first]), iso(r[last])) if t) or "-"


def span(lo: str, hi: str) -> Callable[[Row], str]:
    """A column value: two fields of the row as "lo..hi" ("-" when the range is absent)."""
    return lambda r: "-" if r[lo] is None else f"{r[lo]}..{r[hi]}"


# --- the description -----------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    """One column of a result's table.

    `get` names a field of the JSON row (dots reach into a member:
    "fetched.records") or is a function of the row; `show` turns the value
    into text; `style` highlights the whole cell (a rich style for any
    present value, or a function of the row giving one or None). `many`, in
    a record view, means the value is a list shown one row per item (none
    when empty). `no_wrap`, `overflow` and `ratio` are passed to rich as
    they are.
    """

    header: str
    get: str | Callable[[Row], Any]
    show: Callable[[Any], str] = text
    justify: Literal["left", "right"] = "left"
    style: str | Callable[[Row], str | None] | None = None
    many: bool = False
    no_wrap: bool = False
    overflow: Literal["fold", "crop", "ellipsis"] | None = None
    ratio: int | None = None

    @property
    def field(self) -> str | None:
        """The top-level JSON field this column shows (None for a function of the whole row)."""
        return self.get.split(".")[0] if isinstance(self.get, str) else None

    def value(self, row: Row) -> Any:
        if not isinstance(self.get, str):
            return self.get(row)
        value: Any = row
        for key in self.get.split("."):
            value = None if value is None else value[key]
        return value

    def text(self, row: Row) -> str:
        return self.show(self.value(row))

    def texts(self, row: Row) -> list[str]:
        """The cell texts of a record-view row: one, or one per item of a `many` value."""
        return [self.show(v) for v in self.value(row) or []] if self.many else [self.text(row)]

    def markup(self, row: Row, content: str) -> str:
        """`content` as rich markup: escaped (data is never markup), in the cell's style if it has one.

        A fixed style highlights present values only: an absent one ("-") stays plain.
        """
        if callable(self.style):
            style = self.style(row)
        else:
            style = self.style if self.value(row) is not None else None
        return f"[{style}]{escape(content)}[/]" if style and content else escape(content)


class Columns:
    """The table of one kind of result: ordered columns over its JSON rows."""

    def __init__(self, *columns: Column) -> None:
        self.columns = columns

    @property
    def headers(self) -> list[str]:
        return [c.header for c in self.columns]

    @property
    def fields(self) -> set[str]:
        """The JSON fields the columns name (checked against the result's shape in tests)."""
        return {c.field for c in self.columns if c.field is not None}

    def cells(self, rows: Iterable[Row]) -> list[list[str]]:
        """Plain cell texts, row by row: what a person reads, without highlight."""
        return [[c.text(r) for c in self.columns] for r in rows]

    def table(self, rows: Iterable[Row], title: str | None = None) -> Table:
        """One table row per JSON row."""
        table = Table(title=None if title is None else escape(title), title_justify="left", header_style="bold")
        for c in self.columns:
            table.add_column(c.header, justify=c.justify, no_wrap=c.no_wrap, overflow=c.overflow or "ellipsis",
                             ratio=c.ratio)
        for r in rows:
            table.add_row(*(c.markup(r, c.text(r)) for c in self.columns))
        return table

    def record(self, row: Row, title: str | None = None) -> Table:
        """One JSON object as a two-column table: a row per column (per item of a `many` column)."""
        table = Table(title=None if title is None else escape(title), title_justify="left", show_header=False)
        table.add_column("", style="bold")
        table.add_column("")
        for c in self.columns:
            for t in c.texts(row):
                table.add_row(c.header, c.markup(row, t))
        return table

    def html(self, rows: Iterable[Row]) -> str:
        """The same table as HTML, for the self-contained report pages."""
        head = "".join(f"<th>{html.escape(h)}</th>" for h in self.headers)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(t)}</td>" for t in r) + "</tr>" for r in self.cells(rows))
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


# --- the renderer --------------------------------------------------------------------------


def render(fmt: Format, document: Any, show: Callable[[Console], None], lines: Sequence[Any] | None = None,
           console: Console | None = None) -> None:
    """Write one result in the format asked for.

    json: `document`, indented. jsonl: `lines`, one JSON value a line; by
    default the items of a list document, else the document on one line.
    table: `show` draws the person's view (tables from `Columns`, plus any
    lines or pictures the command adds); it is called only for a table, so
    machine output never pays for it.
    """
    if fmt is Format.json:
        write_json(document)
    elif fmt is Format.jsonl:
        write_jsonl(lines if lines is not None else document if isinstance(document, list) else [document])
    else:
        show(console or Console(highlight=False))
