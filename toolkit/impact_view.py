"""Rendering `impact`: consumer groups, producers and transactions (Kafka), consumer offsets (RocketMQ).

Everything here reads the impact's JSON document (`ImpactResult.to_dict`, or the
RocketMQ impact's), so `impact`, and the `impact` section of `replay` and `repair`,
show the same thing in a table, in JSON and in the HTML report.
"""
from __future__ import annotations

import html
from typing import Any

from rich.console import Console
from rich.markup import escape

from replog.toolkit.render import Column, Columns, span, time_range

_CLASS_STYLE = {"unaffected": "green", "consumed_lost": "bold red", "will_detect_truncation": "yellow",
                "will_reset": "bold yellow"}


def _lost(r: dict[str, Any]) -> str:
    n = r["records_consumed_lost"]
    return f"{n} ({r['first_lost_offset']}..{r['last_lost_offset']})" if n else "0"


GROUP_COLUMNS = Columns(
    Column("group", "group", key=True),
    Column("committed", "committed_offset", justify="right"),
    Column("epoch", "committed_leader_epoch", justify="right", drop=2),
    Column("classification", "classification", style=lambda r: _CLASS_STYLE.get(r["classification"])),
    Column("read, now lost", _lost, justify="right"),
    Column("lost records' time", time_range("first_lost_timestamp", "last_lost_timestamp"), drop=3),
    Column("never read", "records_skipped", justify="right", drop=1),
    Column("resumes at", "resumes_at", justify="right", drop=1),
)

PRODUCER_COLUMNS = Columns(
    Column("producer", "producer_id", key=True, justify="right"),
    Column("epoch", "producer_epoch", justify="right"),
    Column("replica", "replica"),
    Column("records lost", "records_lost", justify="right", style="bold red"),
    Column("sequences", span("first_sequence", "last_sequence"), justify="right"),
    Column("acked (HW)", "acknowledged", lambda v: "yes" if v else "no", drop=2),
    Column("leader's last seq", "leader_last_sequence", justify="right", drop=1),
    Column("next batch", "next_append"),
    Column("retry", "retry", drop=1),
)

TXN_COLUMNS = Columns(
    Column("producer", "producer_id", key=True, justify="right"),
    Column("epoch", "producer_epoch", justify="right"),
    Column("first offset", "first_offset", justify="right"),
    Column("state", "state", style=lambda r: "bold red" if r["state"] == "hanging" else "yellow"),
    Column("cause", "cause", min_width=20),
)

ROCKETMQ_GROUP_COLUMNS = Columns(
    Column("store", "store", key=True),
    Column("group", "group", key=True),
    Column("topic", "topic", drop=1),
    Column("queue", "queue_id", justify="right"),
    Column("committed", "committed_offset", justify="right"),
    Column("max after", "max_offset_after", justify="right"),
    Column("classification", "classification", style=lambda r: _CLASS_STYLE.get(r["classification"])),
    Column("consumed, gone", "messages_consumed_lost", justify="right"),
    Column("never consumed", "messages_skipped", justify="right", drop=2),
)

METADATA_COLUMNS = Columns(
    Column("file", "file", key=True),
    Column("entry", "key", key=True),
    Column("difference", "difference", min_width=20),
)


def print_impact(doc: dict[str, Any], console: Console) -> None:
    """The impact as tables, each followed by what a table cannot say (the explanations)."""
    if doc.get("system") == "rocketmq":
        _print_rocketmq(doc, console)
        return
    s = doc["summary"]
    console.print(f"[bold]Impact on {escape(doc['topic'])}-{doc['partition']}[/] after the replay: leader "
                  f"{escape(doc['leader'])}, log {doc['log_start_offset_after']}..{doc['log_end_offset_after']}, "
                  f"last stable offset {doc['last_stable_offset_after']}")
    console.print(f"{s['groups_affected']} of {s['groups']} consumer groups affected, {s['records_consumed_lost']} "
                  f"records consumed then lost, {s['producers_with_lost_writes']} producers with lost writes, "
                  f"{s['hanging_transactions']} hanging transactions")
    if not doc["offsets_sources"]:
        console.print("[dim]no __consumer_offsets found: give the log dirs holding it with --offsets[/]")
    if doc["consumer_groups"]:
        console.print(GROUP_COLUMNS.table(doc["consumer_groups"], "consumer groups"))
        for g in doc["consumer_groups"]:
            if g["classification"] != "unaffected":
                console.print(f"[bold]{escape(g['group'])}[/]: {escape(g['explanation'])}")
    if doc["producers"]:
        console.print(PRODUCER_COLUMNS.table(doc["producers"], "producers whose writes are lost"))
        for p in doc["producers"]:
            console.print(f"[dim]producer {p['producer_id']}: {escape(p['explanation'])}[/]")
    if doc["transactions"]:
        console.print(TXN_COLUMNS.table(doc["transactions"], "open transactions after the replay"))


def _print_rocketmq(doc: dict[str, Any], console: Console) -> None:
    s = doc["summary"]
    console.print(f"[bold]Impact on consumers[/] after the replay: {s['groups_affected']} of {s['groups']} "
                  f"group queues affected, {s['messages_consumed_lost']} messages consumed then gone")
    if doc["consumer_groups"]:
        console.print(ROCKETMQ_GROUP_COLUMNS.table(doc["consumer_groups"], "consumer offsets (config/consumerOffset"
                                                                          ".json) against each queue after the replay"))
    if doc["metadata_differences"]:
        console.print(METADATA_COLUMNS.table(doc["metadata_differences"],
                                             "master and slave metadata (what the slave's sync copies)"))


def impact_html(doc: dict[str, Any]) -> str:
    """The impact as a self-contained section of a report page."""
    if doc.get("system") == "rocketmq":
        parts = ["<h2>Impact on consumers</h2>", ROCKETMQ_GROUP_COLUMNS.html(doc["consumer_groups"])]
        if doc["metadata_differences"]:
            parts += ["<h3>Master and slave metadata</h3>", METADATA_COLUMNS.html(doc["metadata_differences"])]
        return "<section class='impact'>" + "".join(parts) + "</section>"
    s = doc["summary"]
    parts = [(f"<h2>Impact on consumers, producers and transactions</h2><p>{s['groups_affected']} of {s['groups']} "
              f"consumer groups affected, {s['records_consumed_lost']} records consumed then lost, "
              f"{s['producers_with_lost_writes']} producers with lost writes, {s['hanging_transactions']} hanging "
              "transactions.</p>")]
    for title, columns, rows in (("Consumer groups", GROUP_COLUMNS, doc["consumer_groups"]),
                                 ("Producers whose writes are lost", PRODUCER_COLUMNS, doc["producers"]),
                                 ("Open transactions after the replay", TXN_COLUMNS, doc["transactions"])):
        if rows:
            parts.append(f"<h3>{title}</h3>{columns.html(rows)}")
    notes = [g for g in doc["consumer_groups"] if g["classification"] != "unaffected"]
    if notes:
        parts.append("<ul>" + "".join(f"<li><b>{html.escape(g['group'])}</b>: {html.escape(g['explanation'])}</li>"
                                      for g in notes) + "</ul>")
    return "<section class='impact'>" + "".join(parts) + "</section>"


def with_section(page: str, section: str) -> str:
    """`page` with `section` added at the end of its body."""
    at = page.rfind("</body>")
    return page + section if at < 0 else page[:at] + section + page[at:]
