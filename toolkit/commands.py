"""Glue between one library call and its rendering, one function per command."""
from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import Any

from rich.console import Console

from toolkit.output import EXIT_CLEAN, EXIT_FINDINGS, Format, resolve, write_json, write_jsonl
from toolkit.progress import byte_progress

Entries = Callable[[Callable[[int, int], None] | None], Iterator[dict[str, Any]]]


def _track_errors(entries: Iterator[dict[str, Any]], seen: list[bool]) -> Iterator[dict[str, Any]]:
    for e in entries:
        if e["kind"] == "finding" and e["severity"] == "error":
            seen[0] = True
        yield e


def run_dump(make_entries: Entries, fmt: Format | None, print_data: bool) -> int:
    """Stream dump entries in the chosen format; exit 1 if any error finding was met."""
    from toolkit.dump_view import print_entries

    fmt = resolve(fmt)
    errors = [False]
    with byte_progress("dump") as progress:
        entries = _track_errors(make_entries(progress), errors)
        if fmt is Format.jsonl:
            write_jsonl(entries)
        elif fmt is Format.json:
            write_json(list(entries))
        else:
            print_entries(entries, Console(highlight=False, soft_wrap=True), print_data)
    return EXIT_FINDINGS if errors[0] else EXIT_CLEAN


def run_ls(path: Any, fmt: Format | None) -> int:
    """One row per partition of a log dir (or the one partition given)."""
    from formats.discovery import DirKind, classify_dir
    from formats.errors import UnreadableInput
    from recovery.kafka.logdir import read_broker_checkpoints, summarize_log_dir, summarize_partition
    from toolkit.views import ls_rows, print_ls

    kind = classify_dir(path)
    if kind is DirKind.KAFKA_LOG_DIR:
        parts = summarize_log_dir(path).partitions
    elif kind is DirKind.KAFKA_PARTITION_DIR:
        parts = [summarize_partition(path, read_broker_checkpoints(path.parent))]
    elif kind is DirKind.ROCKETMQ_STORE:
        from toolkit.rocketmq_views import run_ls_store
        return run_ls_store(path, fmt)
    else:
        raise UnreadableInput(f"{path}: not a Kafka log dir, partition dir or RocketMQ store")
    rows = ls_rows(parts)
    fmt = resolve(fmt)
    if fmt is Format.json:
        write_json(rows)
    elif fmt is Format.jsonl:
        write_jsonl(rows)
    else:
        print_ls(rows, str(path))
    return EXIT_CLEAN
