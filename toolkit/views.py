"""Rich tables for overviews (`ls`) and their JSON rows."""
from __future__ import annotations

import datetime as dt
from typing import Any

from rich.console import Console
from rich.table import Table

from replog.recovery.kafka.logdir import PartitionSummary, flags


def iso(ms: int | None) -> str | None:
    """Milliseconds since the epoch as UTC ISO text (None stays None)."""
    if ms is None or ms < 0:
        return None
    try:
        return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")[:-4] + "Z"
    except (OverflowError, ValueError, OSError):
        return None


def ls_rows(parts: list[PartitionSummary]) -> list[dict[str, Any]]:
    return [{
        "path": p.path, "topic": p.topic, "partition": p.partition, "state": p.state,
        "segments": len(p.segments), "bytes": p.bytes, "log_start_offset": p.log_start_offset,
        "log_end_offset": p.log_end_offset, "high_watermark": p.high_watermark,
        "recovery_point": p.recovery_point, "latest_epoch": p.latest_epoch,
        "first_timestamp": p.first_timestamp, "max_timestamp": p.max_timestamp,
        "flags": flags(p),
    } for p in parts]


def print_ls(rows: list[dict[str, Any]], title: str) -> None:
    table = Table(title=title, title_justify="left", header_style="bold")
    for col, justify in (("partition", "left"), ("segs", "right"), ("bytes", "right"), ("start", "right"),
                         ("end", "right"), ("hw", "right"), ("epoch", "right"), ("time range (UTC)", "left"),
                         ("flags", "left")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for r in rows:
        hw = "-" if r["high_watermark"] is None else str(r["high_watermark"])
        if r["high_watermark"] is not None and r["high_watermark"] > r["log_end_offset"]:
            hw = f"[bold red]{hw}[/]"
        span = " .. ".join(t for t in (iso(r["first_timestamp"]), iso(r["max_timestamp"])) if t) or "-"
        flag_text = " ".join(r["flags"])
        table.add_row(f"{r['topic']}-{r['partition']}", str(r["segments"]), f"{r['bytes']:,}",
                      str(r["log_start_offset"]), str(r["log_end_offset"]), hw,
                      "-" if r["latest_epoch"] is None else str(r["latest_epoch"]), span,
                      f"[yellow]{flag_text}[/]" if flag_text else "")
    Console().print(table)
