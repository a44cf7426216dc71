"""Human rendering of `dump` entries: kafka-dump-log style lines, coloured, streamed.

A dump can be millions of lines, so nothing is collected into a table. The kinds printed member by member
are read through their declarations (`documents`); any other kind is printed as it is.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from rich.console import Console
from rich.markup import escape

from replog.toolkit.decoders import is_undecodable
from replog.toolkit.documents import BatchEntry, FileEntry, FindingEntry, RecordEntry, typed
from replog.toolkit.dump_entries import Entry
from replog.toolkit.output import dumps

_SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def _kv(entry: Mapping[str, object], keys: Iterable[str]) -> str:
    """`key: value` of each of `keys` the entry has (whatever their types: each is shown as text)."""
    return " ".join(f"[dim]{k}:[/] {escape(_text(entry.get(k)))}" for k in keys if k in entry)


def _text(v: object) -> str:
    """A value as text; bytes a decoder could not decode as `<hex:...>` (see `toolkit.decoders`)."""
    if isinstance(v, str):
        return v
    return f"<hex:{v['hex']}>" if isinstance(v, dict) and is_undecodable(v) else dumps(v)


def _file(e: FileEntry) -> str:
    return f"[bold]Dumping {escape(e['path'])}[/] [dim]({e['file_kind']}, {e['size']} bytes)[/]"


def _batch(e: BatchEntry) -> str:
    valid = "[green]true[/]" if e["crc_valid"] else "[bold red]false[/]"
    head = _kv(e, ("base_offset", "last_offset", "count", "base_sequence", "last_sequence", "producer_id",
                   "producer_epoch", "partition_leader_epoch", "is_transactional", "is_control", "position"))
    tail = _kv(e, ("max_timestamp", "timestamp_type", "size", "magic", "codec", "crc"))
    return f"{head} {tail} [dim]isvalid:[/] {valid}"


def _record(e: RecordEntry, print_data: bool) -> str:
    """The record's metadata; its key and payload too with `print_data` (when not null)."""
    keys = ["offset", "timestamp", "key_size", "value_size", "sequence"]
    keys += [k for k in ("control_type", "coordinator_epoch") if k in e]
    line = "| " + _kv(e, keys)
    if e["headers"]:
        line += " " + _kv({"header_keys": [h["key"] for h in e["headers"]]}, ["header_keys"])
    if print_data:
        for name, value in (("key", e["key"]), ("payload", e["value"])):
            if value is not None:
                line += f" [dim]{name}:[/] {escape(_text(value))}"
    return line


def _finding(e: FindingEntry) -> str:
    style = _SEVERITY_STYLE.get(e["severity"], "")
    where = f"position {e['position']}" if e["position"] is not None else ""
    if e["offset"] is not None:
        where += f" offset {e['offset']}"
    return f"[{style}]{e['severity'].upper()} {e['code']}[/] {escape(where)}: {escape(e['message'])}"


def _generic(e: Entry) -> str:
    return f"[dim]{e['kind']}[/] " + _kv(e, [k for k in e if k not in ("kind", "path")])


def _line(e: Entry, print_data: bool) -> str:
    """One entry's line, by its kind."""
    kind = e["kind"]
    if kind == "file":
        return _file(typed(FileEntry, e))
    if kind == "batch":
        return _batch(typed(BatchEntry, e))
    if kind == "record":
        return _record(typed(RecordEntry, e), print_data)
    if kind == "finding":
        return _finding(typed(FindingEntry, e))
    return _generic(e)


def print_entries(entries: Iterable[Entry], console: Console, print_data: bool) -> None:
    for e in entries:
        console.print(_line(e, print_data), soft_wrap=True, highlight=False)
