"""Rendering `replay --what-if`: the choices side by side (terminal table, report-page section), the
recommended one with the commands that make it so, and why.

Everything reads the what-if JSON document (`WhatIf.to_dict` for Kafka, `RocketWhatIf.to_dict` for
RocketMQ), so the table, the JSON and the page say the same thing.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypedDict

from rich.console import Console
from rich.markup import escape

from replog.toolkit.documents import Choice, Recommended, WhatIfDoc, typed
from replog.toolkit.render import Column, Columns, words

if TYPE_CHECKING:
    from replog.toolkit.pages import PageTable


def _leader(r: Choice) -> str:
    return r["leader"] if r.get("broker") is None else f"{r['leader']} (broker {r['broker']})"


def _hit(key: str) -> Callable[[Mapping[str, object]], str | None]:
    return lambda r: "bold red" if r[key] else None


CHOICE_COLUMNS = Columns(
    Column("#", "rank", justify="right", key=True),
    Column("leader", _leader),
    Column("how", "how", style=lambda r: "bold red" if r["how"] == "unclean" else "green"),
    Column("acked lost", "lost.acknowledged", justify="right", style=lambda r: _hit("acknowledged")(r["lost"])),
    Column("lost", "lost.records", justify="right", style=lambda r: _hit("records")(r["lost"])),
    Column("read, now lost", "consumer_groups.records_consumed_lost", justify="right"),
    Column("groups hit", "consumer_groups.affected", justify="right"),
    Column("groups reset", lambda r: r["consumer_groups"].get("will_reset"), justify="right", drop=2),
    Column("producers", lambda r: r.get("producers_with_lost_writes"), justify="right", drop=1),
    Column("hanging txns", lambda r: r.get("hanging_transactions"), justify="right", drop=3),
    Column("fails", "failed", words, style="bold red", drop=2),
)


def title(doc: WhatIfDoc) -> str:
    if doc["system"] == "kafka":
        return f"Which leader loses least: {doc['topic']}-{doc['partition']} ({doc['mode']} cluster)"
    return f"Which master loses least: {doc['broker_name'] or 'the stores given'} ({doc['mode']})"


def print_what_if(document: Mapping[str, Any], console: Console) -> None:
    """The choices, best first, then the recommendation: its command, its steps, why."""
    doc = typed(WhatIfDoc, document)
    if premise := doc.get("premise"):
        console.print(f"[dim]{escape(premise)}[/]")
    console.print(CHOICE_COLUMNS.table(doc["choices"], title(doc)))
    for note in doc.get("notes", []):
        console.print(f"[yellow]{escape(note)}[/]")
    rec = doc["recommended"]
    console.print(f"[bold]Recommended:[/] [bold green]{escape(rec['leader'])}[/] ({rec['how']})")
    console.print(f"  [bold]{escape(rec['command'])}[/]")
    for i, step in enumerate(rec["steps"], 1):
        console.print(f"  {i}. {escape(step)}")
    console.print(f"[dim]why: {escape(rec['why'])}[/]")


class WhatIfSection(TypedDict):
    """The what-if as its report-page section draws it (`templates/sections/what_if.html.j2`)."""

    title: str
    table: PageTable
    choices: list[Choice]
    recommended: Recommended
    notes: list[str]
    premise: str | None


def page_data(document: Mapping[str, Any]) -> WhatIfSection:
    """The what-if for its report-page section."""
    from replog.toolkit.pages import table

    doc = typed(WhatIfDoc, document)
    return WhatIfSection(title=title(doc), table=table(CHOICE_COLUMNS, doc["choices"]), choices=doc["choices"],
                         recommended=doc["recommended"], notes=doc.get("notes", []), premise=doc.get("premise"))
