"""The self-contained HTML pages (replay, repair, fleet report, doctor): one template engine, one way to write.

Pages are jinja2 templates shipped as package data (`toolkit/templates/*.html.j2`) with autoescaping on, so
every value read from a broker's files (topic names, record keys, paths, messages) is escaped where it is
placed, in HTML text, attributes and inline SVG alike; `tojson` escapes `<`, `>` and `&` for data handed to
the page's script. Pictures are inline SVG computed here in Python (`toolkit.axes`) and drawn by the
templates; the only script is the page's own few lines for sorting and filtering tables. Nothing is loaded
at view time (no network, no CDN), so a page opens in an offline incident room, in any modern browser.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any, TypedDict

import jinja2

from replog.formats.fileio import atomic_write
from replog.recovery.outputs import prepare_file_output
from replog.toolkit.axes import short
from replog.toolkit.render import Columns, Row

TEMPLATES = Path(__file__).with_name("templates")
DASH = "—"


def value(v: Any) -> str:
    """How a person reads a JSON value on a page: numbers with thousands separators, a dash for an
    absent value (never Python's None), lists as words, objects as `key: value` pairs."""
    if v is None:
        return DASH
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:,.3g}"
    if isinstance(v, Mapping):
        return ", ".join(f"{label(k)}: {value(x)}" for k, x in v.items()) or DASH
    if isinstance(v, (list, tuple)):
        return ", ".join(f"({value(x)})" if isinstance(x, (list, tuple)) else value(x) for x in v) or DASH
    return str(v)


def label(key: Any) -> str:
    """A JSON member's name as words: `log_end_offset` -> `log end offset`."""
    return str(key).replace("_", " ")


def tail(text: str, width: int) -> str:
    """The end of a long path, where its file name is: `…roker-3/orders-1/000…0976.log`."""
    return text if len(text) <= width else "…" + text[-(width - 1):]


def sort_key(v: Any) -> str:
    """What a table cell sorts by (`data-s`) when not its text: a number as such (its text has separators),
    a member such as `lost` or `fetched` by its first count; "" to sort by the text."""
    if isinstance(v, Mapping):
        return sort_key(next(iter(v.values()), None))
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return str(v)
    return ""


class PageTable(TypedDict):
    """A table as a page draws it: headers, rows of (text, sort key) cells, the numeric (right-aligned)
    columns' indexes."""

    headers: list[str]
    numeric: list[int]
    rows: list[list[tuple[str, str]]]


def table(columns: Columns, rows: Sequence[Row]) -> PageTable:
    """A `Columns` table (the terminal's, one declaration) for a page."""
    numeric = [i for i, c in enumerate(columns.columns)
               if rows and all(isinstance(c.value(r), (int, float)) or c.value(r) is None for r in rows)
               and any(c.value(r) is not None for r in rows)]
    return PageTable(headers=columns.headers, numeric=numeric,
                     rows=[[(c.text(r), sort_key(c.value(r))) for c in columns.columns] for r in rows])


@cache
def environment() -> jinja2.Environment:
    from replog.toolkit.doctor_view import tool_version

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             extensions=["jinja2.ext.do"])
    env.filters.update(value=value, label=label, short=short, sort_key=sort_key, tail=tail, px=lambda x: f"{x:.1f}")
    env.globals["version"] = tool_version()
    return env


def render(template: str, **context: Any) -> str:
    """The page `template` filled with `context`; the page's CSS and script come from `base.html.j2`."""
    return environment().get_template(template).render(**context)


def write_page(target: str | os.PathLike[str], page: str, inputs: Iterable[str | os.PathLike[str]]) -> Path:
    """Write a page atomically, refusing a place inside any input (inputs are evidence)."""
    path = prepare_file_output(target, inputs)
    atomic_write(path, page.encode("utf-8"))
    return path
