"""RocketMQ stores on the command line: `ls` of a store, and how an HA replay is drawn (its table, transcript
and page) for the replica commands' runner (`replica_commands`)."""
from __future__ import annotations

from typing import Any

from rich.console import Console

from replog.recovery.rocketmq.ha_result import HAReplayResult
from replog.recovery.rocketmq.offset_reuse import unreached_per_queue
from replog.recovery.rocketmq.store_model import MessageRef, StoreModel, load_store
from replog.recovery.rocketmq.timers import timer_summary
from replog.toolkit.documents import (
    DLedgerSummary,
    QueueRow,
    Recovery,
    ReplayDoc,
    StoreReplay,
    StoreReplica,
    StoreTotals,
    TimerSummary,
    typed,
)
from replog.toolkit.output import EXIT_CLEAN, Format, resolve
from replog.toolkit.render import Column, Columns, render, span, thousands, time_range


def store_rows(model: StoreModel) -> tuple[StoreTotals, list[QueueRow]]:
    """(store totals, one row per topic/queue) from the recovered log and the consume queues on disk. `messages`
    counts what the queues can serve: a message below its queue's end that no unit names (another message holds
    its slot) is in the log but in no queue (`offset_reuse`), counted apart as `unreached_messages`."""
    per: dict[tuple[str, int], list[MessageRef]] = {}
    for m in model.messages:
        per.setdefault((m.topic, m.queue_id), []).append(m)
    unreached = unreached_per_queue(model)
    rows: list[QueueRow] = []
    for key in sorted(set(per) | set(model.queues)):
        msgs = [m for m in per.get(key, []) if m.dispatched]
        q = model.queues.get(key)
        rows.append({
            "topic": key[0], "queue_id": key[1], "messages": len(per.get(key, [])) - unreached.get(key, 0),
            "min_queue_offset": msgs[0].queue_offset if msgs else None,
            "max_queue_offset": msgs[-1].queue_offset if msgs else None,
            "cq_max_offset": q.max_offset if q else None, "cq_min_offset": q.served_min_offset if q else None,
            "first_physical_offset": per[key][0].physical_offset if key in per else None,
            "last_physical_offset": per[key][-1].physical_offset if key in per else None,
            "bytes": sum(m.size for m in per.get(key, [])),
            "first_timestamp": min((m.store_timestamp for m in per.get(key, [])), default=None),
            "max_timestamp": max((m.store_timestamp for m in per.get(key, [])), default=None),
        })
    cp = model.checkpoint
    timers = timer_summary(model)
    totals: StoreTotals = {
        "path": model.path, "system": "rocketmq", "store_type": model.layout.store_type,
        "file_size": model.file_size, "files": len(model.files),
        "min_offset": model.min_offset, "max_offset": model.max_offset,
        "dirty_tail_bytes": max(0, model.walk_end - model.max_offset),
        "messages": len(model.messages) - sum(unreached.values()),
        "queues": len(rows), "topics": len({r["topic"] for r in rows}),
        "abort_present": model.abort.present, "confirm_offset": model.confirm_offset,
        "epochs": [[e.epoch, e.start_offset] for e in model.epochs],
        "checkpoint": None if cp is None else {
            "physic_msg_timestamp": cp.physic_msg_timestamp, "logics_msg_timestamp": cp.logics_msg_timestamp,
            "index_msg_timestamp": cp.index_msg_timestamp, "master_flushed_offset": cp.master_flushed_offset,
            "confirm_phy_offset": cp.confirm_phy_offset},
        "index_files": len(model.layout.index_files),
        "recovery": typed(Recovery, model.recovery()),
        "timers": None if timers is None else typed(TimerSummary, timers),
    }
    if unreached:
        totals["unreached_messages"] = sum(unreached.values())
    if model.dledger is not None:
        totals["dledger"] = typed(DLedgerSummary, model.dledger.to_dict())
    return totals, rows


def _cq_style(r: QueueRow) -> str | None:
    """The consume queue should end one past the last message the commitlog dispatched to it."""
    top, cq = r["max_queue_offset"], r["cq_max_offset"]
    return "yellow" if top is not None and cq is not None and cq != top + 1 else None


QUEUE_COLUMNS = Columns(
    Column("topic/queue", lambda r: f"{r['topic']}/{r['queue_id']}", key=True),
    Column("messages", "messages", justify="right"),
    Column("queue offsets", span("min_queue_offset", "max_queue_offset"), justify="right"),
    Column("CQ end", "cq_max_offset", justify="right", style=_cq_style),
    Column("commitlog range", span("first_physical_offset", "last_physical_offset"), justify="right"),
    Column("bytes", "bytes", thousands, justify="right", drop=1),
    Column("time range (UTC)", time_range("first_timestamp", "max_timestamp"), drop=2),
)


def run_ls_store(path: Any, fmt: Format | None, broker_version: str | None = None) -> int:
    from replog.recovery.rocketmq.recovery_rule import rule_for

    model = load_store(path, rule=rule_for(broker_version))
    totals, rows = store_rows(model)
    render(resolve(fmt), {"store": totals, "queues": rows}, lambda console: _print_ls(totals, rows, console),
           lines=[{"kind": "queue", **r} for r in rows] + [{"kind": "store", **totals}])
    return EXIT_CLEAN


def _print_ls(totals: StoreTotals, rows: list[QueueRow], console: Console) -> None:
    kind = "RocketMQ DLedger store" if "dledger" in totals else "RocketMQ store"
    if totals["store_type"] != "default":
        kind += f", storeType={totals['store_type']}: queues from RocksDB"
    console.print(QUEUE_COLUMNS.table(rows, f"{totals['path']} ({kind})"))
    flags = []
    if totals["abort_present"]:
        flags.append("[yellow]abort present (unclean shutdown)[/]")
    if totals["dirty_tail_bytes"]:
        flags.append(f"[yellow]dirty tail {totals['dirty_tail_bytes']} bytes[/]")
    console.print(f"commitlog {totals['min_offset']}..{totals['max_offset']} in {totals['files']} files of "
                  f"{totals['file_size']:,} bytes, {totals['messages']} messages{_unreached(totals)}, "
                  f"{totals['queues']} queues, "
                  f"confirm offset {_or_none(totals['confirm_offset'])}, epochs {totals['epochs'] or '-'}  "
                  + " ".join(flags))
    if "dledger" in totals:
        console.print(dledger_line(totals["dledger"]))
    console.print(recovery_line(totals["recovery"]))
    t = totals["timers"]
    if t is not None:
        console.print(timers_line(t))


def _unreached(totals: StoreTotals) -> str:
    n = totals.get("unreached_messages", 0)
    return f" (+{n} in the log that no queue reaches: their slots serve other messages)" if n else ""


def timers_line(t: TimerSummary) -> str:
    """The timer files in one line (5.x timer messages, docs/reference/rocketmq.md §16)."""
    cp = t["checkpoint"]
    where = "no timercheck" if cp is None else (f"timer queue offset {cp['last_timer_queue_offset']}, "
                                                f"read time {cp['last_read_time_ms']}")
    return (f"timers: {t['units']} timer-log units in {t['timer_log_files']} files (end {t['timer_log_end']}), "
            f"{_or_none(t['wheel_pending'])} pending in the wheel, metrics {_or_none(t['metrics_pending'])}; {where}")


def dledger_line(d: DLedgerSummary) -> str:
    """The Raft side of a DLedger store: its entries, the last one's term, the committed index and term files."""
    return (f"DLedger peer {d['peer']}: entries {d['first_index']}..{d['last_index']} (last term {d['last_term']}), "
            f"committed index {_or_none(d['committed_index'])} (serves to {_or_none(d['committed_offset'])}), "
            f"current term {_or_none(d['current_term'])}, voted {_or_none(d['vote_leader'])}"
            + (f", [yellow]{d['dropped_entries']} entries past the recovery's end[/]" if d["dropped_entries"] else ""))


def recovery_line(recovery: Recovery) -> str:
    """Which of the broker's recovery rules the numbers follow (they differ by version:
    docs/reference/rocketmq.md §7.2)."""
    version = recovery["broker_version"] or "newest (default)"
    if recovery["rule"] == "dledger":
        return (f"[dim]DLedger recovery (DLedgerMmapFileStore#recover, whatever the abort file says): scan from "
                f"{recovery['scan_start']}[/]")
    return (f"[dim]{recovery['mode']} recovery by the {recovery['rule']} rule (broker version {version}): "
            f"scan from {recovery['scan_start']}[/]")


def _or_none(value: Any) -> Any:
    """A person reads "none" where the JSON has null (no confirm offset recorded, say), not Python's None."""
    return "none" if value is None else value


def _status(r: StoreReplica) -> str:
    return r["status"] if not r["stall"] else f"{r['status']}: {r['stall']['cause']}"


STORE_COLUMNS = Columns(
    Column("store", "name", key=True),
    Column("role", "role", drop=4),       # the status says it too: master, or what the slave does
    Column("status", _status, style=lambda r: "bold red" if r["stall"] else None),
    Column("range before", span("log_start_offset_before", "log_end_offset_before"), justify="right"),
    Column("confirm", "high_watermark_before", justify="right", drop=1),
    Column("diverged at", "diverged_at", justify="right", style="yellow"),
    Column("truncated to", "truncated_to", justify="right"),
    Column("lost", "lost.records", justify="right", style=lambda r: "bold red" if r["lost"]["records"] else None),
    Column("fetched", lambda r: f"{r['fetched']['bytes']} B / {r['fetched']['frames']} frames", justify="right",
           drop=2),
    Column("range after", span("log_start_offset_after", "log_end_offset_after"), justify="right"),
    Column("epochs after", "epochs_after", lambda es: " ".join(f"{e}@{s}" for e, s in es) or "-", drop=3),
)


def print_replay(result: HAReplayResult, console: Console) -> None:
    d = typed(StoreReplay, result.to_dict())
    for r in d["replicas"]:
        console.print(f"{r['name']}: " + recovery_line(r["recovery"]))
    console.print(f"[bold]RocketMQ HA replay[/] ({result.protocol}), master [bold]{result.master}[/]")
    console.print(f"[dim]{result.explanation}[/]")
    console.print(STORE_COLUMNS.table(d["replicas"]))
    for r in d["replicas"]:
        if r["stall"]:
            console.print(f"[bold red]{r['name']} stalls[/] ({r['stall']['cause']}): {r['stall']['explanation']}")
        for f in r["findings"]:
            console.print(f"[bold red]{r['name']}: {f['code']}[/] at {f['offset']}: {f['message']}")
        for q in r["lost"]["queues"]:
            console.print(f"  {r['name']} loses {q['count']} messages of {q['topic']}/{q['queue_id']} "
                          f"(queue offsets {q['first_queue_offset']}..{q['last_queue_offset']})")
    console.print("[bold]Transcript[/]")
    for e in d["events"]:
        rest = " ".join(f"{k}={v}" for k, v in e.items() if k not in ("step", "kind", "replica"))
        console.print(f"[dim]{e['step']:>3}[/] [cyan]{e['kind']:<16}[/] {e['replica']:<12} {rest}", highlight=False)


def replay_html(result: HAReplayResult, doc: ReplayDoc | None = None) -> str:
    """The self-contained report page (`replay_page`), drawn from the JSON document the command prints
    (`doc`: repair's, which adds what was written; by default the replay's)."""
    from replog.toolkit.replay_logs import rocketmq_views
    from replog.toolkit.replay_page import render_replay

    protocol = "auto-switch HA (epochs)" if result.protocol == "autoswitch" else "classic HA"
    return render_replay(typed(ReplayDoc, result.to_dict()) if doc is None else doc, rocketmq_views(result),
                         STORE_COLUMNS,
                         title=f"RocketMQ {protocol} replay: {len(result.replicas)} stores, master “{result.master}”",
                         unit_name="messages", offset_name="physical offset")
