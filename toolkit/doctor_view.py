"""Rendering of `doctor` and `recover` results, and the evidence manifest."""
from __future__ import annotations

import datetime as dt
import json
import sys
from collections import defaultdict
from importlib import metadata
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from replog.formats.fileio import atomic_write
from replog.formats.findings import Finding, Severity
from replog.formats.kafka import names
from replog.recovery.outputs import prepare_file_output

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
_ORDER = (Severity.ERROR, Severity.WARNING, Severity.INFO)


def _group(path: str) -> str:
    """The partition dir a finding belongs to, else its log dir (or the file's dir)."""
    p = Path(path)
    for q in (p, *p.parents):
        if names.parse_partition_dir(q.name) is not None and q != p:
            return str(q)
    return str(p.parent)


def _where(f: Finding) -> str:
    parts = [Path(f.path).name]
    if f.position is not None:
        parts.append(f"@{f.position}")
    if f.offset is not None:
        parts.append(f"offset {f.offset}")
    return " ".join(parts)


def print_doctor(report: Any, console: Console | None = None) -> None:
    """Findings grouped by partition, then by severity; a summary line last."""
    console = console or Console(highlight=False)
    groups: dict[str, list[Finding]] = defaultdict(list)
    for f in report.findings:
        groups[_group(f.path)].append(f)
    for group in sorted(groups):
        table = Table(title=escape(group), title_justify="left", header_style="bold", expand=False)
        table.add_column("severity", no_wrap=True)
        table.add_column("code", no_wrap=True)
        table.add_column("where", overflow="fold")
        table.add_column("message", overflow="fold", ratio=1)
        for sev in _ORDER:
            for f in (x for x in groups[group] if x.severity is sev):
                table.add_row(f"[{_STYLE[sev]}]{sev.value}[/]", f.code, escape(_where(f)), escape(f.message))
        console.print(table)
    s = report.summary
    colour = "bold red" if s["errors"] else ("yellow" if s["warnings"] else "green")
    console.print(f"[{colour}]{s['errors']} errors, {s['warnings']} warnings, {s['infos']} infos[/] "
                  f"in {len(report.inputs)} files read")


def print_recover(result: Any, console: Console | None = None) -> None:
    console = console or Console(highlight=False)
    r = result.to_dict()
    table = Table(show_header=False, title=f"recovered {escape(r['partition'])} -> {escape(r['output'])}",
                  title_justify="left")
    table.add_column("", style="bold")
    table.add_column("")
    trunc = "not truncated" if r["truncated_to"] is None else (
        f"truncated to offset {r['truncated_to']} at byte {r['valid_bytes']} of {r['truncated_segment']}")
    d = r["dropped"]
    rows = [("log", (f"{r['log_start_offset']} .. {r['log_end_offset']} (HW {r['high_watermark']}, "
                     f"recovery point {r['recovery_point']})")),
            ("truncation", trunc),
            ("dropped", f"{len(d['segments'])} segments, {d['bytes']} bytes, {d['batches']} batches"
                        + (f", offsets {d['first_offset']}..{d['last_offset']}"
                           if d["first_offset"] is not None else "")),
            ("epochs", " ".join(f"{e}@{o}" for e, o in r["epochs"]) or "-")]
    for s in r["salvaged"]:
        rows.append(("salvaged", f"offsets {s['first_offset']}..{s['last_offset']} from position {s['position']}"))
    for h in d["holes"]:
        rows.append(("hole", (f"{Path(h['segment']).name} bytes {h['position']}..{h['end_position']} "
                              f"after offset {h['after_offset']}")))
    v = r["verification"]
    ok = v.get("errors", 1) == 0
    rows.append(("verified", (f"[{'green' if ok else 'bold red'}]doctor: {v.get('errors')} errors, "
                              f"{v.get('warnings')} warnings[/]")))
    for k, val in rows:
        table.add_row(k, escape(val) if k != "verified" else val)
    console.print(table)
    for f in result.findings:
        console.print(f"[{_STYLE[f.severity]}]{f.severity.value}[/] {f.code} {escape(_where(f))}: {escape(f.message)}")


# --- evidence manifest -------------------------------------------------------------


def tool_version() -> str:
    try:
        return metadata.version("replog")
    except metadata.PackageNotFoundError:
        return "unknown"


def write_manifest(target: Path, inputs: list[dict[str, Any]], roots: list[Path]) -> None:
    """SHA-256 of every input, tool version, UTC time and command line; written atomically."""
    target = prepare_file_output(target, roots)
    doc = {"tool": "replog", "version": tool_version(),
           "created_utc": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
           "command_line": list(sys.argv), "inputs": inputs}
    atomic_write(target, (json.dumps(doc, indent=2) + "\n").encode("utf-8"))


# --- command glue ------------------------------------------------------------------


def run_doctor(paths: list[Path], manifest: Path | None, fmt: Any) -> int:
    """diagnose -> optional manifest -> render; exit 1 on error findings."""
    from replog.recovery.doctor import diagnose
    from replog.toolkit.output import EXIT_CLEAN, EXIT_FINDINGS, Format, resolve, write_json, write_jsonl

    if manifest is not None:
        write_manifest_check(manifest, paths)
    report = diagnose(list(paths))
    if manifest is not None:
        write_manifest(manifest, report.inputs, list(paths))
    fmt = resolve(fmt)
    doc = report.to_dict()
    if fmt is Format.json:
        write_json(doc)
    elif fmt is Format.jsonl:
        write_jsonl([dict(f, kind="finding") for f in doc["findings"]] + [dict(doc["summary"], kind="summary")])
    else:
        print_doctor(report)
    return EXIT_FINDINGS if report.has_errors else EXIT_CLEAN


def write_manifest_check(target: Path, roots: list[Path]) -> None:
    """Refuse a manifest inside an input tree before any work is done."""
    prepare_file_output(target, roots)


def run_recover(partition_dir: Path, out: Path, salvage: bool, force: bool, fmt: Any) -> int:
    from replog.formats.discovery import is_rocketmq_store
    from replog.recovery.kafka.recover import recover_partition
    from replog.toolkit.output import EXIT_CLEAN, EXIT_FINDINGS, Format, resolve, write_json, write_jsonl

    if is_rocketmq_store(partition_dir):
        return _recover_store(partition_dir, out, force, fmt)
    result = recover_partition(partition_dir, out, salvage=salvage, force=force)
    fmt = resolve(fmt)
    if fmt is Format.json:
        write_json(result.to_dict())
    elif fmt is Format.jsonl:
        write_jsonl([result.to_dict()])
    else:
        print_recover(result)
    return EXIT_CLEAN if result.verified else EXIT_FINDINGS


def _recover_store(store: Path, out: Path, force: bool, fmt: Any) -> int:
    """RocketMQ: the broker's abnormal recovery, consume queues and index rebuilt, into OUT."""
    from replog.recovery.rocketmq.recover import recover_store
    from replog.toolkit.output import EXIT_CLEAN, EXIT_FINDINGS, Format, resolve, write_json

    result = recover_store(store, out, force=force)
    if resolve(fmt) is Format.table:
        Console().print(f"recovered RocketMQ store [bold]{store}[/] → {result['output']}: commitlog truncated "
                        f"to {result['truncated_to']}, {len(result.get('findings', []))} findings")
    else:
        write_json(result)
    errors = [f for f in result.get("verification", {}).get("findings", []) if f.get("severity") == "error"]
    return EXIT_FINDINGS if errors else EXIT_CLEAN
