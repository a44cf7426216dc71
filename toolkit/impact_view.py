"""Rendering `impact`: consumer groups, producers and transactions (Kafka), consumer offsets (RocketMQ).

Everything here reads the impact's JSON document (`ImpactResult.to_dict`, or the
RocketMQ impact's), so `impact`, and the `impact` section of `replay` and `repair`,
show the same thing in a table, in JSON and in the HTML report.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict

from rich.console import Console
from rich.markup import escape

from replog.toolkit.documents import GroupImpact, ImpactSummary, KafkaImpact, RocketImpact, typed
from replog.toolkit.premise_view import print_premise
from replog.toolkit.render import Column, Columns, Row, span, time_range

if TYPE_CHECKING:
    from replog.toolkit.pages import PageTable

_CLASS_STYLE = {"unaffected": "green", "consumed_lost": "bold red", "will_detect_truncation": "yellow",
                "will_reset": "bold yellow"}


def _lost(r: GroupImpact) -> str:
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

ROCKETMQ_TXN_COLUMNS = Columns(
    Column("store", "store", key=True),
    Column("transaction", "transaction_id", key=True, drop=2),
    Column("topic", "real_topic", drop=1),
    Column("queue", "real_queue_id", justify="right", drop=1),
    Column("half offsets", lambda r: ",".join(map(str, r["half_queue_offsets"])), justify="right"),
    Column("before", "state_before"),
    Column("after", "state_after", style="bold yellow"),
)

ROCKETMQ_POP_COLUMNS = Columns(
    Column("store", "store", key=True),
    Column("group", "group", key=True),
    Column("topic", "topic", drop=1),
    Column("queue", "queue_id", justify="right"),
    Column("start", "start_offset", justify="right", drop=2),
    Column("classification", "classification", style="bold red"),
    Column("offsets", lambda r: ",".join(map(str, r["offsets"]))),
)

METADATA_COLUMNS = Columns(
    Column("file", "file", key=True),
    Column("entry", "key", key=True),
    Column("difference", "difference", min_width=20),
)


def print_impact(document: Mapping[str, Any], console: Console) -> None:
    """The impact as tables, each followed by what a table cannot say (the explanations)."""
    if document.get("system") == "rocketmq":
        _print_rocketmq(typed(RocketImpact, document), console)
    else:
        _print_kafka(typed(KafkaImpact, document), console)


def _print_kafka(doc: KafkaImpact, console: Console) -> None:
    s = doc["summary"]
    console.print(f"[bold]Impact on {escape(doc['topic'])}-{doc['partition']}[/] after the replay: leader "
                  f"{escape(doc['leader'])}, log {doc['log_start_offset_after']}..{doc['log_end_offset_after']}, "
                  f"last stable offset {doc['last_stable_offset_after']}")
    print_premise(doc.get("premise"), console)
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


def _print_rocketmq(doc: RocketImpact, console: Console) -> None:
    s = doc["summary"]
    console.print(f"[bold]Impact on consumers[/] after the replay: {s['groups_affected']} of {s['groups']} "
                  f"group queues affected, {s['messages_consumed_lost']} messages consumed then gone")
    if doc["consumer_groups"]:
        console.print(ROCKETMQ_GROUP_COLUMNS.table(doc["consumer_groups"], "consumer offsets (config/consumerOffset"
                                                                          ".json, lmqConsumerOffset.json) against each "
                                                                          "queue after the replay"))
    if doc["metadata_differences"]:
        console.print(METADATA_COLUMNS.table(doc["metadata_differences"],
                                             "master and slave metadata (what the slave's sync copies)"))
    if txns := doc.get("transactions"):
        console.print(ROCKETMQ_TXN_COLUMNS.table(txns, "transactions left open or changed"))
        for state in sorted({t["state_after"] for t in txns}):
            why = next(t["explanation"] for t in txns if t["state_after"] == state)
            console.print(f"[dim]{state}: {escape(why)}[/]")
    if pop := doc.get("pop"):
        console.print(ROCKETMQ_POP_COLUMNS.table(pop, "POP checkpoints whose acks or selves are lost"))
    for lost in doc.get("lost_scheduled_deliveries") or []:
        console.print(f"[yellow]{lost['store']}: {lost['count']} scheduled (timer) deliveries lost[/] to "
                      f"{', '.join(escape(t) for t in lost['topics']) or 'unknown topics'}: the store loses the "
                      "timer messages before the timer wheel delivered them")


class ImpactSection(TypedDict):
    """The impact as its report-page section draws it (`templates/sections/impact.html.j2`)."""

    summary: ImpactSummary | None
    tables: list[tuple[str, PageTable]]
    notes: list[GroupImpact]


def page_data(document: Mapping[str, Any]) -> ImpactSection:
    """The impact for its report-page section: the same tables as the terminal's, each as a page table, and
    the words on each affected group (Kafka's)."""
    if document.get("system") == "rocketmq":
        rmq = typed(RocketImpact, document)
        return ImpactSection(summary=None, notes=[], tables=_page_tables([
            ("Consumer offsets against each queue", ROCKETMQ_GROUP_COLUMNS, rmq["consumer_groups"]),
            ("Master and slave metadata", METADATA_COLUMNS, rmq["metadata_differences"]),
            ("Transactions left open or changed", ROCKETMQ_TXN_COLUMNS, rmq.get("transactions", [])),
            ("POP checkpoints affected", ROCKETMQ_POP_COLUMNS, rmq.get("pop", []))]))
    doc = typed(KafkaImpact, document)
    return ImpactSection(summary=doc["summary"], tables=_page_tables([
        ("Consumer groups", GROUP_COLUMNS, doc["consumer_groups"]),
        ("Producers whose writes are lost", PRODUCER_COLUMNS, doc["producers"]),
        ("Open transactions after the replay", TXN_COLUMNS, doc["transactions"])]),
        notes=[g for g in doc["consumer_groups"] if g["classification"] != "unaffected"])


def _page_tables(tables: list[tuple[str, Columns, Sequence[Row]]]) -> list[tuple[str, PageTable]]:
    """The non-empty tables, each as a page table under its title."""
    from replog.toolkit.pages import table

    return [(title, table(columns, rows)) for title, columns, rows in tables if rows]


def print_with_impact(show: Callable[[], None], impact: Mapping[str, Any] | None, console: Console) -> None:
    """A replay's (or repair's) table, then its impact when the disks held consumer offsets."""
    show()
    if impact is not None:
        print_impact(impact, console)
