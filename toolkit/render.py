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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.markup import escape
from rich.table import Table

from replog.toolkit.output import Format, write_json, write_jsonl

Row = Mapping[str, Any]
"""A JSON row as the table reads it: any document row (a `toolkit.documents` TypedDict or a plain dict)."""
RowFunction = Callable[[Any], Any]
"""A column's function of its row: typed by the row it is written for (`LsRow`, ...); a table takes any."""


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

    On a console too narrow for the whole table (see `fit_widths`): a `key`
    column identifies its row (a partition, a file, a replica) and is never
    cut or split inside a word; columns with a higher `drop` are left out
    first (0: always shown); `min_width` lets a prose column fold narrower
    than its longest word.
    """

    header: str
    get: str | RowFunction
    show: Callable[[Any], str] = text
    justify: Literal["left", "right"] = "left"
    style: str | Callable[[Any], str | None] | None = None
    many: bool = False
    no_wrap: bool = False
    overflow: Literal["fold", "crop", "ellipsis"] | None = None
    ratio: int | None = None
    key: bool = False
    drop: int = 0
    min_width: int | None = None

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

    def table(self, rows: Iterable[Row], title: str | None = None) -> FittedTable:
        """One table row per JSON row, laid out for the console it is printed on."""
        return FittedTable(self, list(rows), title)

    def rich_table(self, rows: Sequence[Row], title: str | None = None, width: int | None = None) -> Table:
        """The rich table of `rows`; with `width`, fitted to it (`fit_widths`) when it does not fit as it is."""
        texts = [[c.text(r) for c in self.columns] for r in rows]
        fitted = fit_widths(self.columns, texts, width) if width is not None else None
        table = Table(title=None if title is None else escape(title), title_justify="left", header_style="bold",
                      min_width=None if title is None or width is None else min(width, cell_len(title)))
        shown = [(i, c) for i, c in enumerate(self.columns) if fitted is None or fitted[i] != 0]
        for i, c in shown:
            if fitted is None:
                table.add_column(c.header, justify=c.justify, no_wrap=c.no_wrap or c.key,
                                 overflow=c.overflow or "ellipsis", ratio=c.ratio)
            else:
                table.add_column(c.header, justify=c.justify, width=fitted[i], overflow="fold")
        for r, cells in zip(rows, texts, strict=True):
            table.add_row(*(c.markup(r, cells[i]) for i, c in shown))
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


PROSE_MIN = 10     # a message column narrower than this reads as a word list


class FittedTable:
    """A `Columns` table that takes its layout from the console width at the moment it is printed."""

    def __init__(self, columns: Columns, rows: Sequence[Row], title: str | None) -> None:
        self.columns, self.rows, self.title = columns, rows, title

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.columns.rich_table(self.rows, self.title, options.max_width)


def _longest_word(texts: Iterable[str]) -> int:
    return max((cell_len(w) for t in texts for w in t.split()), default=1)


def _widest_line(texts: Iterable[str]) -> int:
    return max((cell_len(line) for t in texts for line in t.splitlines()), default=1)


def fit_widths(columns: Sequence[Column], texts: list[list[str]], width: int) -> list[int] | None:
    """Column widths (0: left out) that fit a table of `texts` into `width` cells; None when it fits as is.

    Identifying (`key`) columns get at least their longest word, so a partition or
    file name is never cut; other columns get their longest word too if there is
    room, after leaving out blank columns and then those with the highest `drop`.
    What is left over goes to the columns that would still wrap.
    """
    n = len(columns)
    cells = [[c.header] + [row[i] for row in texts] for i, c in enumerate(columns)]
    natural = [_widest_line(cs) for cs in cells]
    if sum(natural) + 3 * n + 1 <= width:     # the default box: a bar between columns and at the edges, padding 1
        return None
    floor = [_longest_word(cs) if c.key or c.min_width is None else min(c.min_width, _longest_word(cs))
             for c, cs in zip(columns, cells, strict=True)]
    blank = [not any(t.strip(" -") for t in cs[1:]) for cs in cells]
    droppable = sorted((i for i, c in enumerate(columns) if not c.key and (c.drop or blank[i])),
                       key=lambda i: (not blank[i], -columns[i].drop))
    kept = list(range(n))
    while droppable and sum(floor[i] for i in kept) + 3 * len(kept) + 1 > width:
        kept.remove(droppable.pop(0))
    widths = _share(columns, kept, floor, natural, width - 3 * len(kept) - 1)
    return [widths.get(i, 0) for i in range(n)]


def _share(columns: Sequence[Column], kept: list[int], floor: list[int], natural: list[int],
           budget: int) -> dict[int, int]:
    """Widths of the kept columns within `budget`: keys their floor; values (codes, numbers, times) their
    floor while it fits, keeping `PROSE_MIN` cells for each prose column; prose what is left; then every
    spare cell to the column furthest from its natural width."""
    widths = {i: floor[i] for i in kept if columns[i].key}
    values = sorted((i for i in kept if not columns[i].key and columns[i].min_width is None), key=lambda i: floor[i])
    prose = sorted((i for i in kept if not columns[i].key and columns[i].min_width is not None), key=lambda i: floor[i])
    left = budget - sum(widths.values())
    for group, reserve in ((values, sum(min(floor[i], PROSE_MIN) for i in prose)), (prose, 0)):
        for k, i in enumerate(group):
            widths[i] = max(1, min(floor[i], (left - reserve) // (len(group) - k)))
            left -= widths[i]
    for _ in range(max(0, left)):
        i = max(kept, key=lambda j: natural[j] - widths[j])
        if natural[i] <= widths[i]:
            break
        widths[i] += 1
    return widths


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
