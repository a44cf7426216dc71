"""RocketMQ stores on the command line: `ls` of a store, HA `replay` and `repair`."""
from __future__ import annotations

import html as html_lib
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from replog.formats.fileio import atomic_write
from replog.recovery.rocketmq.ha import HAReplayResult, replay_paths
from replog.recovery.rocketmq.store_model import StoreModel, load_store
from replog.toolkit.output import (
    EXIT_CLEAN,
    EXIT_FINDINGS,
    Format,
    print_repaired,
    resolve,
    write_document,
    write_json,
    write_jsonl,
)
from replog.toolkit.views import iso


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


def run_ls_store(path: Any, fmt: Format | None) -> int:
    model = load_store(path)
    totals, rows = store_rows(model)
    fmt = resolve(fmt)
    if fmt is Format.json:
        write_json({"store": totals, "queues": rows})
    elif fmt is Format.jsonl:
        write_jsonl([{"kind": "queue", **r} for r in rows] + [{"kind": "store", **totals}])
    else:
        _print_ls(totals, rows)
    return EXIT_CLEAN


def _print_ls(totals: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    console = Console(highlight=False)
    table = Table(title=f"{totals['path']} (RocketMQ store)", title_justify="left", header_style="bold")
    for col in ("topic/queue", "messages", "queue offsets", "CQ end", "commitlog range", "bytes", "time range (UTC)"):
        table.add_column(col, justify="left" if col in ("topic/queue", "time range (UTC)") else "right")
    for r in rows:
        qo = "-" if r["min_queue_offset"] is None else f"{r['min_queue_offset']}..{r['max_queue_offset']}"
        cq = "-" if r["cq_max_offset"] is None else str(r["cq_max_offset"])
        if r["max_queue_offset"] is not None and r["cq_max_offset"] is not None \
                and r["cq_max_offset"] != r["max_queue_offset"] + 1:
            cq = f"[yellow]{cq}[/]"
        rng = ("-" if r["first_physical_offset"] is None
               else f"{r['first_physical_offset']}..{r['last_physical_offset']}")
        span = " .. ".join(t for t in (iso(r["first_timestamp"]), iso(r["max_timestamp"])) if t) or "-"
        table.add_row(f"{r['topic']}/{r['queue_id']}", str(r["messages"]), qo, cq, rng, f"{r['bytes']:,}", span)
    console.print(table)
    flags = []
    if totals["abort_present"]:
        flags.append("[yellow]abort present (unclean shutdown)[/]")
    if totals["dirty_tail_bytes"]:
        flags.append(f"[yellow]dirty tail {totals['dirty_tail_bytes']} bytes[/]")
    console.print(f"commitlog {totals['min_offset']}..{totals['max_offset']} in {totals['files']} files of "
                  f"{totals['file_size']:,} bytes, {totals['messages']} messages, {totals['queues']} queues, "
                  f"confirm offset {totals['confirm_offset']}, epochs {totals['epochs'] or '-'}  " + " ".join(flags))


def print_replay(result: HAReplayResult, console: Console) -> None:
    d = result.to_dict()
    console.print(f"[bold]RocketMQ HA replay[/] ({result.protocol}), master [bold]{result.master}[/]")
    console.print(f"[dim]{result.explanation}[/]")
    table = Table(header_style="bold")
    for col in ("store", "role", "status", "range before", "confirm", "diverged at", "truncated to", "lost",
                "fetched", "range after", "epochs after"):
        table.add_column(col, justify="left" if col in ("store", "role", "status", "epochs after") else "right")
    for r in d["replicas"]:
        lost = r["lost"]
        status = r["status"] if not r["stall"] else f"[bold red]{r['status']}: {r['stall']['cause']}[/]"
        table.add_row(r["name"], r["role"], status, f"{r['log_start_offset_before']}..{r['log_end_offset_before']}",
                      "-" if r["high_watermark_before"] is None else str(r["high_watermark_before"]),
                      "-" if r["diverged_at"] is None else f"[yellow]{r['diverged_at']}[/]",
                      "-" if r["truncated_to"] is None else str(r["truncated_to"]),
                      f"[bold red]{lost['records']}[/]" if lost["records"] else "0",
                      f"{r['fetched']['bytes']} B / {r['fetched']['frames']} frames",
                      f"{r['log_start_offset_after']}..{r['log_end_offset_after']}",
                      " ".join(f"{e}@{s}" for e, s in r["epochs_after"]) or "-")
    console.print(table)
    for r in d["replicas"]:
        if r["stall"]:
            console.print(f"[bold red]{r['name']} stalls[/] ({r['stall']['cause']}): {r['stall']['explanation']}")
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
    rows = "".join(f"<tr><td>{html_lib.escape(r['name'])}</td><td>{r['status']}</td><td>{r['log_end_offset_before']}"
                   f"</td><td>{r['diverged_at']}</td><td>{r['truncated_to']}</td><td>{r['lost']['records']}</td>"
                   f"<td>{r['log_end_offset_after']}</td></tr>" for r in reps)
    events = "".join(f"<li>{html_lib.escape(str(e))}</li>" for e in d["events"])
    return ("<!doctype html><html><head><meta charset='utf-8'><title>replog RocketMQ replay</title>"
            "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:4px 8px}</style></head><body>"
            f"<h1>RocketMQ HA replay: master {html_lib.escape(result.master)} ({result.protocol})</h1>"
            f"<p>{html_lib.escape(result.explanation)}</p>{''.join(parts)}<table><tr><th>store</th><th>status</th>"
            "<th>max offset before</th><th>diverged at</th><th>truncated to</th><th>lost</th>"
            f"<th>max offset after</th></tr>{rows}</table><h2>Transcript</h2><ol>{events}</ol></body></html>")


def run_rocketmq_replay(specs: list[str], leader: str | None, protocol: str | None, html: Any, force: bool,
                        fmt: Format | None) -> int:
    """Replay HA between stores; exit 1 when a slave stalls or needs manual intervention."""
    result = replay_paths(specs, leader, protocol)
    if html is not None:
        atomic_write(Path(html), replay_html(result).encode())
    fmt = resolve(fmt)
    if fmt is Format.table:
        print_replay(result, Console(highlight=False))
    else:
        write_document(result.to_dict(), fmt)
    return EXIT_FINDINGS if result.stalled else EXIT_CLEAN


def run_rocketmq_repair(specs: list[str], out: Any, leader: str | None, protocol: str | None, force: bool,
                        fmt: Format | None) -> int:
    """Replay, write every store repaired under OUT/NAME/, verify; exit 1 if verification found a problem."""
    from replog.recovery.rocketmq.repair import repair_stores

    result = replay_paths(specs, leader, protocol)
    repaired = repair_stores(result, out, force=force)
    payload = result.to_dict() | {"output": str(out), "repaired": [r.to_dict() for r in repaired]}
    fmt = resolve(fmt)
    if fmt is Format.table:
        console = Console(highlight=False)
        print_replay(result, console)
        print_repaired(repaired, console, lambda r: (r.identical_to_master, (f"({r.role}) commitlog "
                                                      f"{r.log_start_offset}..{r.log_end_offset}")))
    else:
        write_document(payload, fmt)
    return EXIT_CLEAN if all(r.identical_to_master and not r.problems for r in repaired) else EXIT_FINDINGS
