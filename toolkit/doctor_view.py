"""Rendering of `doctor` and `recover` results, and the evidence manifest."""
from __future__ import annotations

import datetime as dt
import json
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from replog.formats.fileio import atomic_write
from replog.formats.kafka import names
from replog.recovery.outputs import prepare_file_output
from replog.toolkit.documents import DoctorReport, Dropped, Finding, Manifest, RecoverDoc, typed
from replog.toolkit.render import Column, Columns

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
_RANK = {"error": 0, "warning": 1, "info": 2}


def _group(path: str) -> str:
    """The partition dir a finding belongs to, else its log dir (or the file's dir)."""
    p = Path(path)
    for q in (p, *p.parents):
        if names.parse_partition_dir(q.name) is not None and q != p:
            return str(q)
    return str(p.parent)


def _where(f: Finding) -> str:
    parts = [Path(f["path"]).name]
    if f["position"] is not None:
        parts.append(f"@{f['position']}")
    if f["offset"] is not None:
        parts.append(f"offset {f['offset']}")
    return " ".join(parts)


FINDING_COLUMNS = Columns(
    # on a narrow console the severity column goes; the code keeps its colour
    Column("severity", "severity", style=lambda f: _STYLE[f["severity"]], no_wrap=True, drop=1),
    Column("code", "code", no_wrap=True, style=lambda f: _STYLE[f["severity"]]),
    Column("where", _where, overflow="fold", key=True),
    Column("message", "message", overflow="fold", ratio=1, min_width=20),
)


def _title(group: str, roots: Sequence[Path]) -> str:
    """A group as `log-dir/partition` below the input it was found in (the rest of the path is what the
    user typed), so a narrow console does not split it; the whole path when it is under no input."""
    g = Path(group)
    for root in roots:
        base = Path(root).parent
        if g == Path(root) or Path(root) in g.parents:
            return str(g.relative_to(base)) if base != g else str(g)
    return group


def print_doctor(doc: DoctorReport, console: Console, roots: Sequence[Path] = ()) -> None:
    """Findings grouped by partition (one table each, titled below its input in `roots`), errors first;
    a summary line last."""
    groups: dict[str, list[Finding]] = defaultdict(list)
    for f in doc["findings"]:
        groups[_group(f["path"])].append(f)
    for group in sorted(groups):
        console.print(FINDING_COLUMNS.table(sorted(groups[group], key=lambda f: _RANK[f["severity"]]),
                                            _title(group, roots)))
    s = doc["summary"]
    colour = "bold red" if s["errors"] else ("yellow" if s["warnings"] else "green")
    console.print(f"[{colour}]{s['errors']} errors, {s['warnings']} warnings, {s['infos']} infos[/] "
                  f"in {len(doc['inputs'])} files read")


def _dropped(d: Dropped) -> str:
    """The `dropped` totals as recovery computed them (holes included); an open range reads "from N"."""
    offsets = ("" if d["first_offset"] is None else f", offsets {d['first_offset']}.." if d["last_offset"] is None
               else f", offsets {d['first_offset']}..{d['last_offset']}")
    return f"{len(d['segments'])} segments, {d['bytes']} bytes, {d['batches']} batches{offsets}"


def _truncation(r: RecoverDoc) -> str:
    if r["truncated_to"] is None:
        return "not truncated"
    return f"truncated to offset {r['truncated_to']} at byte {r['valid_bytes']} of {r['truncated_segment']}"


RECOVER_COLUMNS = Columns(
    Column("log", lambda r: f"{r['log_start_offset']} .. {r['log_end_offset']} (HW {r['high_watermark']}, "
                            f"recovery point {r['recovery_point']})"),
    Column("truncation", _truncation),
    Column("dropped", "dropped", _dropped),
    Column("epochs", "epochs", lambda es: " ".join(f"{e}@{o}" for e, o in es) or "-"),
    Column("salvaged", "salvaged", lambda s: f"offsets {s['first_offset']}..{s['last_offset']} from position "
                                             f"{s['position']}", many=True),
    Column("hole", "dropped.holes", lambda h: f"{Path(h['segment']).name} bytes {h['position']}..{h['end_position']} "
                                              f"after offset {h['after_offset']}", many=True),
    Column("verified", "verification", lambda v: f"doctor: {v.get('errors')} errors, {v.get('warnings')} warnings",
           style=lambda r: "green" if r["verification"].get("errors", 1) == 0 else "bold red"),
)


def print_recover(doc: RecoverDoc, console: Console) -> None:
    """What recovery did as a two-column table, then the findings it met, one line each."""
    console.print(RECOVER_COLUMNS.record(doc, f"recovered {doc['partition']} -> {doc['output']}"))
    for f in doc["findings"]:
        console.print(f"[{_STYLE[f['severity']]}]{f['severity']}[/] {f['code']} {escape(_where(f))}: "
                      f"{escape(f['message'])}")


# --- evidence manifest -------------------------------------------------------------


def tool_version() -> str:
    try:
        return metadata.version("replog")
    except metadata.PackageNotFoundError:
        return "unknown"


def write_manifest(target: Path, inputs: Sequence[Mapping[str, object]], roots: list[Path],
                   stores: Sequence[Mapping[str, str]] | None = None) -> None:
    """The digest of every input (SHA-256, or the `--hash` chosen), tool version, UTC time and command line, and
    the RocketMQ stores among the inputs with their store type; written atomically."""
    target = prepare_file_output(target, roots)
    doc = Manifest(tool="replog", version=tool_version(),
                   created_utc=dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                   command_line=list(sys.argv), inputs=inputs)
    if stores:
        doc["stores"] = stores
    atomic_write(target, (json.dumps(doc, indent=2) + "\n").encode("utf-8"))


# --- command glue ------------------------------------------------------------------


def run_doctor(paths: list[Path], manifest: Path | None, fmt: Any, html: Path | None = None,
               algorithm: str = "sha256") -> int:
    """diagnose -> optional manifest and page -> render; exit 1 on error findings."""
    from replog.recovery.doctor import diagnose
    from replog.toolkit.output import EXIT_CLEAN, EXIT_FINDINGS, resolve
    from replog.toolkit.progress import work_progress
    from replog.toolkit.render import render

    for target in (manifest, html):
        if target is not None:
            write_manifest_check(target, paths)
    with work_progress("doctor") as progress:
        report = diagnose(list(paths), progress, algorithm)
    if manifest is not None:
        write_manifest(manifest, report.inputs, list(paths), report.stores)
    doc = typed(DoctorReport, report.to_dict())
    if html is not None:
        from replog.toolkit.doctor_page import render_doctor
        from replog.toolkit.pages import write_page
        write_page(html, render_doctor(doc), paths)
    render(resolve(fmt), doc, lambda console: print_doctor(doc, console, paths),
           lines=[dict(f, kind="finding") for f in doc["findings"]] + [dict(doc["summary"], kind="summary")])
    return EXIT_FINDINGS if report.has_errors else EXIT_CLEAN


def write_manifest_check(target: Path, roots: list[Path]) -> None:
    """Refuse a manifest (or page) inside an input tree before any work is done."""
    prepare_file_output(target, roots)


def run_recover(partition_dir: Path, out: Path, salvage: bool, force: bool, fmt: Any,
                broker_version: str | None = None, rebuild_queues: bool = False) -> int:
    from replog.formats.discovery import is_rocketmq_store
    from replog.recovery.kafka.recover import recover_partition
    from replog.toolkit.output import EXIT_CLEAN, EXIT_FINDINGS, resolve
    from replog.toolkit.render import render

    if is_rocketmq_store(partition_dir):
        return _recover_store(partition_dir, out, force, fmt, broker_version, rebuild_queues)
    if broker_version is not None or rebuild_queues:
        from replog.formats.errors import UnreadableInput
        raise UnreadableInput("--broker-version and --rebuild-queues are for RocketMQ stores; "
                              f"{partition_dir} is not one")
    from replog.toolkit.progress import work_progress

    with work_progress("recover") as progress:
        result = recover_partition(partition_dir, out, salvage=salvage, force=force, progress=progress)
    doc = typed(RecoverDoc, result.to_dict())
    render(resolve(fmt), doc, lambda console: print_recover(doc, console))
    return EXIT_FINDINGS if result.has_errors else EXIT_CLEAN


def _recover_store(store: Path, out: Path, force: bool, fmt: Any, broker_version: str | None,
                   rebuild_queues: bool) -> int:
    """RocketMQ: the broker's abnormal recovery into OUT: its consume queues (or all rebuilt), index rebuilt."""
    from replog.recovery.rocketmq.recover import recover_store
    from replog.toolkit.output import EXIT_CLEAN, EXIT_FINDINGS, Format, resolve, write_json
    from replog.toolkit.rocketmq_views import recovery_line

    result = recover_store(store, out, force=force, broker_version=broker_version, rebuild_queues=rebuild_queues)
    # a short summary for a person; --format jsonl has always written the indented document here
    if resolve(fmt) is Format.table:
        queues = result["rebuilt"]["queues"]
        how = ("rebuilt from every message" if queues["mode"] == "rebuilt" else
               f"the broker's: {queues['kept']} entries kept, {queues['dispatched']} dispatched")
        console = Console()
        console.print(f"recovered RocketMQ store [bold]{store}[/] → {result['output']}: commitlog truncated "
                      f"to {result['truncated_to']}, {len(result.get('findings', []))} findings; consume queues "
                      f"{how}")
        console.print(recovery_line(result["recovery"]))
    else:
        write_json(result)
    met = result.get("findings", []) + result.get("verification", {}).get("findings", [])
    return EXIT_FINDINGS if any(f.get("severity") == "error" for f in met) else EXIT_CLEAN
