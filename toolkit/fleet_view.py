"""`fleet scan` / `fleet report` glue and rendering: rich tables, JSON, and an HTML page with inline SVG."""
from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from replog.toolkit.output import EXIT_CLEAN, EXIT_FINDINGS, Format, resolve, stderr
from replog.toolkit.render import Column, Columns, Row, render, span, thousands, words

if TYPE_CHECKING:
    from replog.spark.report import FleetReportDoc, Section


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
                   batches: bool, force: bool, split_bytes: int, fmt: Format | None,
                   spark_log_level: str = "ERROR", *, since: Path | None = None, tail: bool = False,
                   conf: dict[str, str] | None = None) -> int:
    """Scan, print what was written; exit 1 on the rule `fleet report` applies to the same tables."""
    from replog.spark.fleet import scan_fleet
    from replog.spark.session import check_log_level

    spark_log_level = check_log_level(spark_log_level)   # a misspelt level is a usage error before any work

    with stage_progress() as progress:
        result = scan_fleet(list(paths), out, master=master, inventory=inventory, batches=batches,
                            force=force, progress=progress, split_bytes=split_bytes, log_level=spark_log_level,
                            since=since, tail=tail, conf=conf)
    for note in result.skipped:
        stderr.print(f"[yellow]replog: skipped[/] {note}")

    def show(console: Console) -> None:
        """A few lines, not a table: what was scanned, the rows written, what was read and what
        reused from the earlier scan, and the next command."""
        mode = " (tail: checkpoints, epoch files and segment tails)" if result.mode == "tail" else ""
        console.print(f"scanned {len(result.log_dirs)} log dirs ({result.units} units) in {result.seconds:.1f} s"
                      f"{mode} -> {result.out_dir}")
        console.print("  " + ", ".join(f"{k}: {v:,}" for k, v in result.rows.items()))
        if result.mode == "full":
            console.print(f"  segments read: {result.counts.get('segments_read', 0):,} "
                          f"({result.counts.get('bytes_read', 0):,} bytes)"
                          + (f"; reused from {result.since}: {result.counts.get('segments_reused', 0):,} "
                             f"({result.counts.get('bytes_reused', 0):,} bytes)" if result.since else ""))
            if result.since:
                console.print("  " + "; ".join(f"{name}: {r['segments_reused']:,} reused, {r['segments_read']:,} read"
                                               for name, r in result.reuse.items()))
        console.print(f"next: replog fleet report {result.out_dir}")

    render(resolve(fmt), result.to_dict(), show)
    return EXIT_FINDINGS if result.has_errors else EXIT_CLEAN


LISTED_ROWS = 20  # rows of each list on the terminal and in the JSON; the page lists up to `fleet_page.PAGE_ROWS`


def run_fleet_report(out_dir: Path, fmt: Format | None, html_file: Path | None) -> int:
    from replog.recovery.outputs import prepare_file_output
    from replog.spark.report import fleet_report
    from replog.toolkit.fleet_page import PAGE_ROWS

    page = None if html_file is None else prepare_file_output(html_file, [out_dir])   # the scan is its input
    full = fleet_report(out_dir, limit=PAGE_ROWS if page is not None else LISTED_ROWS)
    rep = full.head(LISTED_ROWS)
    doc = rep.to_dict()
    if page is not None:
        from replog.toolkit.pages import write_page
        write_page(page, render_html(full.to_dict()), [out_dir])
    render(resolve(fmt), doc, lambda console: print_report(doc, console))
    return EXIT_FINDINGS if rep.has_errors else EXIT_CLEAN


# -- the report's tables ---------------------------------------------------------------------------


def _names(xs: list[str] | None) -> str:
    return ", ".join(xs or []) or "-"


def _leos(d: Row) -> str:
    return " ".join(f"{b}:{v}" for b, v in zip(d["replicas"], d["log_end_offsets"], strict=False))


def _hws(d: Row) -> str:
    return " ".join(f"{b}:{'-' if v is None else v}" for b, v in zip(d["replicas"], d["high_watermarks"], strict=False))


def _partition(d: Row) -> str:
    return "-" if d["topic"] is None else f"{d['topic']}-{d['partition']}"


BROKERS = Columns(
    Column("cluster", "cluster"), Column("broker", "broker"), Column("log dirs", "log_dirs"),
    Column("partitions", "partitions"),
    Column("bytes", "bytes", thousands), Column("errors", "errors"), Column("warnings", "warnings"),
)
DIVERGENT = Columns(
    Column("cluster", "cluster"), Column("partition", _partition), Column("diverges at", "first_divergent_offset"),
    Column("kept", "kept", _names), Column("diverged", "diverged", _names), Column("behind", "behind", _names),
    Column("log ends", _leos), Column("records at risk", "records_at_risk"),
    Column("committed at risk", "committed_at_risk"),
)
IMPACT = Columns(
    Column("cluster", "cluster"), Column("partition", _partition), Column("leader", "leader"),
    Column("groups affected", "groups_affected"),
    Column("groups", "affected_groups", lambda gs: " ".join(f"{g['group']}:{g['classification']}" for g in gs or [])),
    Column("consumed then lost", "records_consumed_lost"), Column("hanging txns", "hanging_transactions"),
    Column("producers lost writes", "producers_with_lost_writes"), Column("error", "error"),
)
LAGGING = Columns(
    Column("cluster", "cluster"), Column("partition", _partition), Column("log ends", _leos),
    Column("high watermarks", _hws),
    Column("LEO spread", "leo_spread"),
)
WORST_PARTITIONS = Columns(
    Column("broker", "broker"), Column("partition", _partition), Column("log end", "log_end_offset"),
    Column("hw", "high_watermark"), Column("errors", "errors"), Column("warnings", "warnings"),
    Column("flags", "flags", words),
)
DAMAGED_SEGMENTS = Columns(
    Column("broker", "broker"), Column("segment", "path"), Column("size", "size", thousands),
    Column("valid bytes", "valid_bytes", thousands), Column("errors", "errors"),
)
STORES = Columns(
    Column("cluster", "cluster"), Column("broker", "broker"), Column("role", "role"), Column("store", "store"),
    Column("commitlog min..max", span("commitlog_min_offset", "commitlog_max_offset")),
    Column("messages", "messages"), Column("queues", "queues"), Column("confirm", "confirm_offset"),
    Column("epoch", "latest_epoch"), Column("abort", "abort_present", lambda present: "present" if present else "-"),
    Column("errors", "errors"), Column("warnings", "warnings"),
)
CHECKPOINTS = Columns(
    Column("broker", "broker"), Column("code", "code"), Column("partition", _partition), Column("message", "message"),
)
FINDING_CODES = Columns(Column("code", "code"), Column("count", "count"))
STORE_GROUPS = Columns(
    Column("cluster", "cluster"), Column("broker name", "broker_name"),
    Column("stores (role: commitlog end)", lambda g: " ".join(
        f"{b}({r or '?'}):{e}" for b, r, e in zip(g["stores"], g["roles"], g["commitlog_max_offsets"], strict=False))),
    Column("spread", "max_offset_spread"), Column("errors", "errors"),
)
FLAGGED_LOG_DIRS = Columns(
    Column("log dir", "path"), Column("grouped as cluster", "cluster"), Column("flags", "flags", words),
)

# (title, report member, columns): the sections a person reads, in this order, on the terminal and in the page
SECTIONS: tuple[tuple[str, Section, Columns], ...] = (
    ("divergent replica sets", "divergent", DIVERGENT),
    ("impact of the divergent replica sets on consumers and transactions", "impact", IMPACT),
    ("lagging replica sets", "lagging", LAGGING),
    ("worst partitions", "worst_partitions", WORST_PARTITIONS),
    ("damaged segments", "damaged_segments", DAMAGED_SEGMENTS),
    ("RocketMQ stores", "stores", STORES),
    ("RocketMQ brokers: master and slaves", "store_groups", STORE_GROUPS),
    ("checkpoints disagreeing with logs", "checkpoint_disagreements", CHECKPOINTS),
    ("log dirs without a cluster id (replica sets formed within their group)", "flagged_log_dirs", FLAGGED_LOG_DIRS),
)


def print_report(r: FleetReportDoc, console: Console) -> None:
    """The totals line, the brokers, then every section that has rows."""
    t = r["totals"]
    tail = " (tail scan: checkpoints, epoch files and segment tails)" if r.get("mode") == "tail" else ""
    console.print(f"[bold]fleet scan[/]{tail} {r['out_dir']}: {words_of(t.get('clusters', 1), 'cluster')}, "
                  f"{t['brokers']} brokers, {t['partitions']:,} partition replicas, {t['segments']:,} segments, "
                  f"{t['bytes']:,} bytes; "
                  f"[red]{t['errors']} errors[/], [yellow]{t['warnings']} warnings[/], "
                  f"{t['divergent_replica_sets']} divergent replica sets of {t['replica_sets']}")
    one = t.get("clusters", 1) <= 1
    console.print((_one_cluster(BROKERS) if one else BROKERS).table(r["brokers"], "brokers"))
    for title, member, columns in SECTIONS:
        if r.get(member):
            console.print((_one_cluster(columns) if one else columns).table(r[member], title))


def words_of(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _one_cluster(columns: Columns) -> Columns:
    """The columns without `cluster`, for a scan of one cluster (every row would say the same)."""
    return Columns(*(c for c in columns.columns if c.field != "cluster"))


# -- HTML ----------------------------------------------------------------------------------------


def render_html(r: FleetReportDoc) -> str:
    """The self-contained page (`fleet_page`) of a report's JSON document."""
    from replog.toolkit.fleet_page import render_fleet

    return render_fleet(r, SECTIONS, FINDING_CODES)
