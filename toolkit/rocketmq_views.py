"""RocketMQ stores on the command line: `ls` of a store, HA `replay` and `repair`."""
from __future__ import annotations

import html as html_lib
from pathlib import Path
from typing import Any

from rich.console import Console

from replog.formats.fileio import atomic_write
from replog.recovery.rocketmq.ha import replay_paths
from replog.recovery.rocketmq.ha_result import HAReplayResult
from replog.recovery.rocketmq.store_model import StoreModel, load_store
from replog.toolkit.output import EXIT_CLEAN, Format, exit_for_replay, print_repaired, resolve
from replog.toolkit.progress import work_progress
from replog.toolkit.render import Column, Columns, render, span, thousands, time_range


def store_rows(model: StoreModel) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(store totals, one row per topic/queue) from the recovered log and the consume queues on disk."""
    per: dict[tuple[str, int], list[Any]] = {}
    for m in model.messages:
        per.setdefault((m.topic, m.queue_id), []).append(m)
    rows = []
    for key in sorted(set(per) | set(model.queues)):
        msgs = [m for m in per.get(key, []) if m.dispatched]
        q = model.queues.get(key)
        rows.append({
            "topic": key[0], "queue_id": key[1], "messages": len(per.get(key, [])),
            "min_queue_offset": msgs[0].queue_offset if msgs else None,
            "max_queue_offset": msgs[-1].queue_offset if msgs else None,
            "cq_max_offset": q.max_offset if q else None, "cq_min_offset": q.min_offset if q else None,
            "first_physical_offset": per[key][0].physical_offset if key in per else None,
            "last_physical_offset": per[key][-1].physical_offset if key in per else None,
            "bytes": sum(m.size for m in per.get(key, [])),
            "first_timestamp": min((m.store_timestamp for m in per.get(key, [])), default=None),
            "max_timestamp": max((m.store_timestamp for m in per.get(key, [])), default=None),
        })
    cp = model.checkpoint
    totals = {
        "path": model.path, "system": "rocketmq", "file_size": model.file_size, "files": len(model.files),
        "min_offset": model.min_offset, "max_offset": model.max_offset,
        "dirty_tail_bytes": max(0, model.walk_end - model.max_offset), "messages": len(model.messages),
        "queues": len(rows), "topics": len({r["topic"] for r in rows}),
        "abort_present": model.abort.present, "confirm_offset": model.confirm_offset,
        "epochs": [[e.epoch, e.start_offset] for e in model.epochs],
        "checkpoint": None if cp is None else {
            "physic_msg_timestamp": cp.physic_msg_timestamp, "logics_msg_timestamp": cp.logics_msg_timestamp,
            "index_msg_timestamp": cp.index_msg_timestamp, "master_flushed_offset": cp.master_flushed_offset,
            "confirm_phy_offset": cp.confirm_phy_offset},
        "index_files": len(model.layout.index_files),
    }
    return totals, rows


def _cq_style(r: dict[str, Any]) -> str | None:
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


def run_ls_store(path: Any, fmt: Format | None) -> int:
    model = load_store(path)
    totals, rows = store_rows(model)
    render(resolve(fmt), {"store": totals, "queues": rows}, lambda console: _print_ls(totals, rows, console),
           lines=[{"kind": "queue", **r} for r in rows] + [{"kind": "store", **totals}])
    return EXIT_CLEAN


def _print_ls(totals: dict[str, Any], rows: list[dict[str, Any]], console: Console) -> None:
    console.print(QUEUE_COLUMNS.table(rows, f"{totals['path']} (RocketMQ store)"))
    flags = []
    if totals["abort_present"]:
        flags.append("[yellow]abort present (unclean shutdown)[/]")
    if totals["dirty_tail_bytes"]:
        flags.append(f"[yellow]dirty tail {totals['dirty_tail_bytes']} bytes[/]")
    console.print(f"commitlog {totals['min_offset']}..{totals['max_offset']} in {totals['files']} files of "
                  f"{totals['file_size']:,} bytes, {totals['messages']} messages, {totals['queues']} queues, "
                  f"confirm offset {_or_none(totals['confirm_offset'])}, epochs {totals['epochs'] or '-'}  "
                  + " ".join(flags))


def _or_none(value: Any) -> Any:
    """A person reads "none" where the JSON has null (no confirm offset recorded, say), not Python's None."""
    return "none" if value is None else value


def _status(r: dict[str, Any]) -> str:
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
    d = result.to_dict()
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


def replay_html(result: HAReplayResult) -> str:
    """One self-contained page: each store's commitlog range as a bar, the table and the transcript."""
    d = result.to_dict()
    reps = d["replicas"]
    hi = max([r["log_end_offset_before"] for r in reps] + [r["log_end_offset_after"] for r in reps] + [1])
    width, left, row_h = 900, 170, 26
    scale = (width - left - 20) / hi
    parts = [(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{row_h * 2 * len(reps) + 20}" '
             'font-family="sans-serif" font-size="12">')]
    for i, (r, when) in enumerate((r, w) for r in reps for w in ("before", "after")):
        y = 10 + i * row_h
        lo, end = r[f"log_start_offset_{when}"], r[f"log_end_offset_{when}"]
        parts.append(f'<text x="5" y="{y + 15}">{html_lib.escape(r["name"])} {when}</text>'
                     f'<rect x="{left + lo * scale:.1f}" y="{y}" width="{max((end - lo) * scale, 1):.1f}" '
                     f'height="{row_h - 6}" fill="#4e79a7"><title>{lo}..{end}</title></rect>')
        if when == "before" and r["diverged_at"] is not None:
            x = left + r["diverged_at"] * scale
            parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y - 2}" y2="{y + row_h - 4}" stroke="red" '
                         f'stroke-width="2"><title>diverges at {r["diverged_at"]}</title></line>')
    parts.append("</svg>")
    events = "".join(f"<li>{html_lib.escape(str(e))}</li>" for e in d["events"])
    return ("<!doctype html><html><head><meta charset='utf-8'><title>replog RocketMQ replay</title>"
            "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:4px 8px}</style></head><body>"
            f"<h1>RocketMQ HA replay: master {html_lib.escape(result.master)} ({result.protocol})</h1>"
            f"<p>{html_lib.escape(result.explanation)}</p>{''.join(parts)}{STORE_COLUMNS.html(reps)}"
            f"<h2>Transcript</h2><ol>{events}</ol></body></html>")


def run_rocketmq_replay(specs: list[str], leader: str | None, protocol: str | None, html: Any, force: bool,
                        fmt: Format | None) -> int:
    """Replay HA between stores; exit 1 when a store loses messages, stalls or needs manual intervention."""
    with work_progress("loading stores") as progress:
        result = replay_paths(specs, leader, protocol, progress)
    if html is not None:
        atomic_write(Path(html), replay_html(result).encode())
    render(resolve(fmt), result.to_dict(), lambda console: print_replay(result, console))
    return exit_for_replay(result)


def run_rocketmq_repair(specs: list[str], out: Any, leader: str | None, protocol: str | None, force: bool,
                        fmt: Format | None) -> int:
    """Replay, write every store repaired under OUT/NAME/, verify; exit 1 if a store loses messages or
    stalls, or verification found a problem."""
    from replog.recovery.rocketmq.repair import repair_stores

    with work_progress("loading stores") as progress:
        result = replay_paths(specs, leader, protocol, progress)
    repaired = repair_stores(result, out, force=force)
    payload = result.to_dict() | {"output": str(out), "repaired": [r.to_dict() for r in repaired]}

    def show(console: Console) -> None:
        print_replay(result, console)
        print_repaired(repaired, console, lambda r: (r.identical_to_master, (f"({r.role}) commitlog "
                                                     f"{r.log_start_offset}..{r.log_end_offset}")))

    render(resolve(fmt), payload, show)
    return exit_for_replay(result, all(r.identical_to_master and not r.problems for r in repaired))


def run_rocketmq_impact(specs: list[str], leader: str | None, protocol: str | None, html: Any,
                        fmt: Format | None) -> int:
    """Replay HA, then the consumer offsets against the queues after it and the masters' and slaves'
    metadata compared; exit as replay."""
    from replog.recovery.rocketmq.impact import analyze_rocketmq_impact
    from replog.toolkit.impact_view import impact_html, print_impact, with_section

    with work_progress("loading stores") as progress:
        result = replay_paths(specs, leader, protocol, progress)
    impact = analyze_rocketmq_impact(result).to_dict()
    if html is not None:
        atomic_write(Path(html), with_section(replay_html(result), impact_html(impact)).encode())
    render(resolve(fmt), impact, lambda console: print_impact(impact, console))
    return exit_for_replay(result)
