"""`fleet scan` / `fleet report` glue and rendering: rich tables, JSON, and an HTML page with inline SVG."""
from __future__ import annotations

import contextlib
import html
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from replog.formats.fileio import atomic_write
from replog.toolkit.output import EXIT_CLEAN, EXIT_FINDINGS, Format, resolve, stderr, write_json, write_jsonl


@contextlib.contextmanager
def stage_progress() -> Iterator[Callable[[str, int, int], None] | None]:
    """A (step, done, total) callback drawing Spark task progress on stderr, only on a terminal."""
    if not sys.stderr.isatty():
        yield None
        return
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=stderr, transient=True) as bar:
        task = bar.add_task("starting Spark", total=None)

        def update(step: str, done: int, total: int) -> None:
            bar.update(task, description=step, completed=done, total=total or None)

        yield update


def run_fleet_scan(paths: Sequence[str], out: Path, master: str | None, inventory: Path | None,
                   batches: bool, force: bool, split_bytes: int, fmt: Format | None) -> int:
    from replog.spark.fleet import scan_fleet

    with stage_progress() as progress:
        result = scan_fleet(list(paths), out, master=master, inventory=inventory, batches=batches,
                            force=force, progress=progress, split_bytes=split_bytes)
    for note in result.skipped:
        stderr.print(f"[yellow]replog: skipped[/] {note}")
    fmt = resolve(fmt)
    if fmt is Format.table:
        console = Console(highlight=False)
        console.print(f"scanned {len(result.log_dirs)} log dirs ({result.units} units) in {result.seconds:.1f} s "
                      f"-> {result.out_dir}")
        console.print("  " + ", ".join(f"{k}: {v:,}" for k, v in result.rows.items()))
        console.print(f"next: replog fleet report {result.out_dir}")
    elif fmt is Format.jsonl:
        write_jsonl([result.to_dict()])
    else:
        write_json(result.to_dict())
    return EXIT_FINDINGS if result.errors else EXIT_CLEAN


def run_fleet_report(out_dir: Path, fmt: Format | None, html_file: Path | None) -> int:
    from replog.spark.report import fleet_report

    rep = fleet_report(out_dir)
    if html_file is not None:
        atomic_write(html_file, render_html(rep.to_dict()).encode("utf-8"))
    fmt = resolve(fmt)
    if fmt is Format.table:
        print_report(rep.to_dict(), Console(highlight=False))
    elif fmt is Format.jsonl:
        write_jsonl([rep.to_dict()])
    else:
        write_json(rep.to_dict())
    return EXIT_FINDINGS if rep.has_errors else EXIT_CLEAN


# -- terminal ---------------------------------------------------------------------------------


def _table(title: str, columns: Sequence[str], rows: list[list[Any]]) -> Table:
    t = Table(title=title, title_justify="left", header_style="bold")
    for c in columns:
        t.add_column(c)
    for r in rows:
        t.add_row(*["-" if v is None else str(v) for v in r])
    return t


def print_report(r: dict[str, Any], console: Console) -> None:
    t = r["totals"]
    console.print(f"[bold]fleet scan[/] {r['out_dir']}: {t['brokers']} brokers, {t['partitions']:,} partition "
                  f"replicas, {t['segments']:,} segments, {t['bytes']:,} bytes; "
                  f"[red]{t['errors']} errors[/], [yellow]{t['warnings']} warnings[/], "
                  f"{t['divergent_replica_sets']} divergent replica sets of {t['replica_sets']}")
    console.print(_table("brokers", ["broker", "log dirs", "partitions", "bytes", "errors", "warnings"],
                         [[b["broker"], b["log_dirs"], b["partitions"], f"{b['bytes']:,}", b["errors"],
                           b["warnings"]] for b in r["brokers"]]))
    if r["divergent"]:
        console.print(_table("divergent replica sets", ["partition", "diverges at", "kept", "diverged", "behind",
                                                        "log ends", "records at risk", "committed at risk"],
                             [[f"{d['topic']}-{d['partition']}", d["first_divergent_offset"], _names(d["kept"]),
                               _names(d["diverged"]), _names(d["behind"]), _leos(d), d["records_at_risk"],
                               d["committed_at_risk"]] for d in r["divergent"]]))
    if r["lagging"]:
        console.print(_table("lagging replica sets", ["partition", "log ends", "high watermarks", "leo spread"],
                             [[f"{d['topic']}-{d['partition']}", _leos(d), _hws(d), d["leo_spread"]]
                              for d in r["lagging"]]))
    if r["worst_partitions"]:
        console.print(_table("worst partitions", ["broker", "partition", "log end", "hw", "errors", "warnings",
                                                  "flags"],
                             [[p["broker"], f"{p['topic']}-{p['partition']}", p["log_end_offset"],
                               p["high_watermark"], p["errors"], p["warnings"], " ".join(p["flags"] or [])]
                              for p in r["worst_partitions"]]))
    if r["damaged_segments"]:
        console.print(_table("damaged segments", ["broker", "segment", "size", "valid bytes", "errors"],
                             [[s["broker"], s["path"], f"{s['size']:,}", f"{s['valid_bytes']:,}", s["errors"]]
                              for s in r["damaged_segments"]]))
    if r.get("stores"):
        console.print(_table("RocketMQ stores", *_store_rows(r["stores"])))
    if r["checkpoint_disagreements"]:
        console.print(_table("checkpoints disagreeing with logs", ["broker", "code", "partition", "message"],
                             [[c["broker"], c["code"], "-" if c["topic"] is None else f"{c['topic']}-{c['partition']}",
                               c["message"]] for c in r["checkpoint_disagreements"]]))


def _store_rows(stores: list[dict[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    cols = ["broker", "store", "commitlog min..max", "messages", "queues", "confirm", "epoch", "abort", "errors",
            "warnings"]
    return cols, [[s["broker"], s["store"], f"{s['commitlog_min_offset']}..{s['commitlog_max_offset']}",
                   s["messages"], s["queues"], s["confirm_offset"], s["latest_epoch"],
                   "present" if s["abort_present"] else "-", s["errors"], s["warnings"]] for s in stores]


def _names(xs: list[str] | None) -> str:
    return ", ".join(xs or []) or "-"


def _leos(d: dict[str, Any]) -> str:
    return " ".join(f"{b}:{v}" for b, v in zip(d["replicas"], d["log_end_offsets"], strict=True))


def _hws(d: dict[str, Any]) -> str:
    return " ".join(f"{b}:{'-' if v is None else v}" for b, v in zip(d["replicas"], d["high_watermarks"], strict=True))


# -- HTML ----------------------------------------------------------------------------------------


def bar_chart(title: str, labels: list[str], series: list[tuple[str, str, list[float]]]) -> str:
    """A horizontal grouped bar chart as inline SVG; series = (name, colour, values)."""
    bar_h, gap, left, width = 12, 10, 160, 420
    group_h = bar_h * len(series) + gap
    top = 28
    height = top + group_h * max(1, len(labels)) + 24
    peak = max([v for _, _, vals in series for v in vals] + [1])
    parts = [(f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 80}" height="{height}" '
              f'role="img" aria-label="{html.escape(title)}">'),
             f'<text x="0" y="16" font-weight="bold">{html.escape(title)}</text>']
    for i, label in enumerate(labels):
        y0 = top + i * group_h
        parts.append(f'<text x="{left - 6}" y="{y0 + bar_h}" text-anchor="end" font-size="12">'
                     f'{html.escape(label)}</text>')
        for j, (name, colour, vals) in enumerate(series):
            v = vals[i]
            w = 0 if not v else max(1.0, width * v / peak)
            y = y0 + j * bar_h
            parts.append(f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{bar_h - 2}" fill="{colour}">'
                         f'<title>{html.escape(name)}: {v:g}</title></rect>')
            parts.append(f'<text x="{left + w + 4:.1f}" y="{y + bar_h - 3}" font-size="10">{v:g}</text>')
    legend_y = height - 8
    for j, (name, colour, _) in enumerate(series):
        parts.append(f'<rect x="{left + j * 130}" y="{legend_y - 9}" width="10" height="10" fill="{colour}"/>'
                     f'<text x="{left + j * 130 + 14}" y="{legend_y}" font-size="11">{html.escape(name)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _html_table(columns: Sequence[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape('-' if v is None else str(v))}</td>" for v in r) + "</tr>"
                   for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_html(r: dict[str, Any]) -> str:
    """A self-contained page: totals, charts, and the report's tables."""
    t = r["totals"]
    brokers, topics = r["brokers"], r["topics"]
    charts = [
        bar_chart("Findings per broker", [b["broker"] for b in brokers],
                  [("errors", "#c0392b", [b["errors"] for b in brokers]),
                   ("warnings", "#e67e22", [b["warnings"] for b in brokers])]),
        bar_chart("Log end / high watermark spread per topic (offsets)", [x["topic"] for x in topics],
                  [("max LEO spread", "#2e86c1", [x["max_leo_spread"] for x in topics]),
                   ("max HW spread", "#7d3c98", [x["max_hw_spread"] for x in topics])]),
        bar_chart("Divergence per topic", [x["topic"] for x in topics],
                  [("divergent partitions", "#c0392b", [x["divergent"] for x in topics]),
                   ("records at risk", "#f1c40f", [x["records_at_risk"] for x in topics])]),
    ]
    sections = [
        ("Divergent replica sets", ["partition", "diverges at", "kept", "diverged", "behind", "log ends",
                                    "records at risk", "committed at risk"],
         [[f"{d['topic']}-{d['partition']}", d["first_divergent_offset"], _names(d["kept"]), _names(d["diverged"]),
           _names(d["behind"]), _leos(d), d["records_at_risk"], d["committed_at_risk"]] for d in r["divergent"]]),
        ("Lagging replica sets", ["partition", "log ends", "high watermarks", "LEO spread"],
         [[f"{d['topic']}-{d['partition']}", _leos(d), _hws(d), d["leo_spread"]] for d in r["lagging"]]),
        ("Worst partitions", ["broker", "partition", "log end", "hw", "errors", "warnings", "flags"],
         [[p["broker"], f"{p['topic']}-{p['partition']}", p["log_end_offset"], p["high_watermark"], p["errors"],
           p["warnings"], " ".join(p["flags"] or [])] for p in r["worst_partitions"]]),
        ("Damaged segments", ["broker", "segment", "size", "valid bytes", "errors"],
         [[s["broker"], s["path"], s["size"], s["valid_bytes"], s["errors"]] for s in r["damaged_segments"]]),
        ("Checkpoints disagreeing with logs", ["broker", "code", "partition", "message"],
         [[c["broker"], c["code"], "-" if c["topic"] is None else f"{c['topic']}-{c['partition']}", c["message"]]
          for c in r["checkpoint_disagreements"]]),
        ("RocketMQ stores", *_store_rows(r.get("stores") or [])),
        ("Findings by code", ["code", "count"], [[k, v] for k, v in r["finding_codes"].items()]),
    ]
    body = "".join(f"<h2>{html.escape(title)}</h2>" + (_html_table(cols, rows) if rows else "<p>none</p>")
                   for title, cols, rows in sections)
    summary = (f"{t['brokers']} brokers, {t['partitions']:,} partition replicas, {t['segments']:,} segments, "
               f"{t['bytes']:,} bytes; {t['errors']} errors, {t['warnings']} warnings; "
               f"{t['divergent_replica_sets']} divergent replica sets of {t['replica_sets']}")
    return ("<!doctype html><html><head><meta charset='utf-8'><title>replog fleet report</title><style>"
            "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:1em}"
            "td,th{border:1px solid #ccc;padding:2px 8px;font-size:13px}th{background:#eee}"
            "svg{display:block;margin:1em 0}</style></head><body>"
            f"<h1>replog fleet report</h1><p>{html.escape(r['out_dir'])}</p><p>{html.escape(summary)}</p>"
            + "".join(charts) + body + "</body></html>")
