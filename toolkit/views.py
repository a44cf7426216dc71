"""`ls` of a Kafka log dir or partition dir: one JSON row per partition, and its table."""
from __future__ import annotations

from pathlib import Path

from rich.console import Console

from replog.formats.shape import Field, Shape
from replog.recovery.kafka.logdir import PartitionSummary, flags
from replog.toolkit.documents import LsRow, Problem, typed
from replog.toolkit.render import Column, Columns, thousands, time_range, words


def _problems(part: PartitionSummary) -> list[Problem]:
    """The partition's error findings (an unreadable segment, a FIFO named like one), where and why."""
    return [Problem(code=f.code, path=f.path, position=f.position, message=f.message)
            for f in part.all_findings() if f.severity.value == "error"]


LS_ROW = Shape("path", "topic", "partition", "state", Field("segments", lambda p: len(p.segments)), "bytes",
               "log_start_offset", "log_end_offset", "high_watermark", "recovery_point", "latest_epoch",
               "first_timestamp", "max_timestamp", Field("flags", flags), Field("problems", _problems),
               Field("local_log_start_offset", "local_start"),
               Field("remote_storage", lambda p: p.remote_storage.to_dict() if p.remote_storage is not None else None))


def _hw_style(r: LsRow) -> str | None:
    """A high watermark above the log end is impossible on a healthy replica."""
    hw = r["high_watermark"]
    return "bold red" if hw is not None and hw > r["log_end_offset"] else None


LS_COLUMNS = Columns(
    Column("partition", lambda r: f"{r['topic']}-{r['partition']}", key=True),
    Column("segs", "segments", justify="right", drop=1),
    Column("bytes", "bytes", thousands, justify="right"),
    Column("start", "log_start_offset", justify="right"),
    Column("local start", lambda r: r["local_log_start_offset"] if r["local_log_start_offset"] != r["log_start_offset"]
           else "", justify="right", drop=1),
    Column("end", "log_end_offset", justify="right"),
    Column("hw", "high_watermark", justify="right", style=_hw_style),
    Column("epoch", "latest_epoch", justify="right"),
    Column("time range (UTC)", time_range("first_timestamp", "max_timestamp"), drop=2),
    Column("flags", "flags", words, style="yellow"),
)


def ls_rows(parts: list[PartitionSummary]) -> list[LsRow]:
    return [typed(LsRow, LS_ROW.dump(p)) for p in parts]


def print_ls(rows: list[LsRow], roots: list[Path], path: Path, console: Console) -> None:
    """One table for one root (titled with the path asked for); one per log dir when PATH holds several."""
    if len(roots) == 1:
        console.print(LS_COLUMNS.table(rows, str(path)))
        return
    for root in roots:
        mine = [r for r in rows if r["path"] == str(root) or Path(r["path"]).parent == root]
        console.print(LS_COLUMNS.table(mine, str(root)))
