"""Human rendering of `dump` entries: kafka-dump-log style lines, coloured, streamed.

A dump can be millions of lines, so nothing is collected into a table.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.console import Console
from rich.markup import escape

from replog.toolkit.decoders import is_undecodable
from replog.toolkit.output import dumps

_SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def _kv(entry: dict[str, Any], keys: Iterable[str]) -> str:
    return " ".join(f"[dim]{k}:[/] {escape(_text(entry.get(k)))}" for k in keys if k in entry)


def _text(v: Any) -> str:
    """A value as text; bytes a decoder could not decode as `<hex:...>` (see `toolkit.decoders`)."""
    if isinstance(v, str):
        return v
    return f"<hex:{v['hex']}>" if is_undecodable(v) else dumps(v)


def _file(e: dict[str, Any]) -> str:
    return f"[bold]Dumping {escape(e['path'])}[/] [dim]({e['file_kind']}, {e['size']} bytes)[/]"


def _batch(e: dict[str, Any]) -> str:
    valid = "[green]true[/]" if e["crc_valid"] else "[bold red]false[/]"
    head = _kv(e, ("base_offset", "last_offset", "count", "base_sequence", "last_sequence", "producer_id",
                   "producer_epoch", "partition_leader_epoch", "is_transactional", "is_control", "position"))
    tail = _kv(e, ("max_timestamp", "timestamp_type", "size", "magic", "codec", "crc"))
    return f"{head} {tail} [dim]isvalid:[/] {valid}"


def _record(e: dict[str, Any]) -> str:
    keys = ["offset", "timestamp", "key_size", "value_size", "sequence"]
    keys += [k for k in ("control_type", "coordinator_epoch") if k in e]
    line = "| " + _kv(e, keys)
    if e.get("headers"):
        line += " " + _kv({"header_keys": [h["key"] for h in e["headers"]]}, ["header_keys"])
    for k in ("key", "value", "decoded"):
        if e.get(k) is not None and (k != "decoded" or e[k]):
            line += f" [dim]{'payload' if k == 'value' else k}:[/] {escape(_text(e[k]))}"
    return line


def _finding(e: dict[str, Any]) -> str:
    style = _SEVERITY_STYLE.get(e["severity"], "")
    where = f"position {e['position']}" if e.get("position") is not None else ""
    if e.get("offset") is not None:
        where += f" offset {e['offset']}"
    return f"[{style}]{e['severity'].upper()} {e['code']}[/] {escape(where)}: {escape(e['message'])}"


def _generic(e: dict[str, Any]) -> str:
    return _kv(e, [k for k in e if k not in ("kind", "path")])


_RENDER = {"file": _file, "batch": _batch, "record": _record, "finding": _finding}


def print_entries(entries: Iterable[dict[str, Any]], console: Console, print_data: bool) -> None:
    for e in entries:
        if e["kind"] == "record" and not print_data:
            e = {k: v for k, v in e.items() if k not in ("key", "value", "decoded")}
        render = _RENDER.get(e["kind"], _generic)
        prefix = "" if e["kind"] in _RENDER else f"[dim]{e['kind']}[/] "
        console.print(prefix + render(e), soft_wrap=True, highlight=False)
