"""Glue between one library call and its rendering, one function per command (the replica commands, replay,
impact, repair and what-if, share one runner: `replica_commands`)."""
from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

import typer
from rich.console import Console
from rich.markup import escape

from replog.toolkit.documents import SampleBroker, SamplesDoc
from replog.toolkit.output import (
    EXIT_CLEAN,
    EXIT_FINDINGS,
    Format,
    resolve,
    write_json_array,
)
from replog.toolkit.progress import byte_progress, work_progress
from replog.toolkit.render import Column, Columns, render, thousands

if TYPE_CHECKING:
    from replog.samples.manifest import FleetManifest
    from replog.toolkit.dump_entries import Entry
    from replog.toolkit.dump_log import Style
    from replog.toolkit.dump_segment import Item

Entries = Callable[[Callable[[int, int], None] | None], Iterator["Item"]]  # dump entries, or `EntryRun`s too


def _track_errors(entries: Iterator[Item], seen: list[bool]) -> Iterator[Item]:
    for e in entries:
        if isinstance(e, dict) and e["kind"] == "finding" and e["severity"] == "error":
            seen[0] = True
        yield e

DUMP_LOG = "dump-log"  # `dump --format dump-log`: kafka-dump-log's text


@contextlib.contextmanager
def _dump_stream(make_entries: Entries, errors: list[bool]) -> Iterator[Iterable[Item]]:
    """The entries to write, under a progress bar on stderr that steps aside for data on its terminal."""
    with byte_progress("dump") as progress:
        entries = _track_errors(make_entries(progress), errors)
        yield entries if progress is None else progress.gate(entries)


def run_dump(make_entries: Entries, fmt: Format | str | None, print_data: bool,
             style: Style | None = None) -> int:
    """Stream dump entries in the chosen format (or `dump-log`, shaped by `style`, its findings on stderr);
    exit 1 if any error finding was met.

    Not through `render`: a dump can be millions of entries, so JSON lines and
    the kafka-dump-log style text are written as they are decoded, never held.
    """
    from replog.toolkit.dump_blocks import RunText, formatted, write_jsonl_items
    from replog.toolkit.dump_log import Gaps, Style, dump_log_lines
    from replog.toolkit.dump_view import print_entries

    errors = [False]
    with _dump_stream(make_entries, errors) as items:
        if fmt == DUMP_LOG:
            gaps = Gaps()
            shape = style or Style(print_data=print_data)
            write_lines(dump_log_lines(formatted(items, RunText(DUMP_LOG, shape)), shape, gaps, _note))
            write_lines(gaps.lines(), sys.stderr)
        elif (chosen := resolve(None if fmt is None else Format(fmt))) is Format.jsonl:
            write_jsonl_items(items)
        elif chosen is Format.json:
            write_json_array(formatted(items, None))
        else:
            print_entries(cast("Iterable[Entry]", formatted(items, None)),
                          Console(file=sys.stdout, highlight=False, soft_wrap=True), print_data)
    return EXIT_FINDINGS if errors[0] else EXIT_CLEAN


def _note(line: str) -> None:
    """A finding of a dump-log dump: on stderr, beside kafka-dump-log's text, never in it."""
    sys.stderr.write(line + "\n")


def write_lines(lines: Iterable[str | tuple[memoryview, ...]], out: TextIO | None = None) -> None:
    """Each line and a newline; bytes (a block of lines already ending in newlines, `dump_blocks.RunText`'s)
    written as they are, from a thread while the next block is made."""
    from replog.toolkit.dump_blocks import BlockWriter
    writer = BlockWriter(out or sys.stdout)
    try:
        for line in lines:
            if isinstance(line, str):
                writer.text(line + "\n")
            else:
                writer.block(line)
    finally:
        writer.close()


def run_ls(path: Any, fmt: Format | None, broker_version: str | None = None,
           remote_storage: bool | None = None) -> int:
    """One row per partition of every Kafka log dir or partition dir under PATH (found as doctor finds
    them), or the overview of the RocketMQ store there. A partition that cannot be read is a row
    marked with its problem; exit 1 when any row (or a log dir's checkpoint) has an error finding."""
    from replog.formats.discovery import DirKind, roots_under
    from replog.formats.errors import UnreadableInput
    from replog.recovery.kafka.logdir import summarize_roots
    from replog.recovery.progress import Tally
    from replog.toolkit.output import exit_for
    from replog.toolkit.views import ls_rows, print_ls

    roots = roots_under(path)
    stores = [root for kind, root in roots if kind is DirKind.ROCKETMQ_STORE]
    if stores and len(roots) > 1:
        raise UnreadableInput(f"{path} holds {len(roots)} log dirs and stores; ls one of them: "
                              + ", ".join(str(root) for _, root in roots))
    if stores:
        from replog.toolkit.rocketmq_views import run_ls_store
        return run_ls_store(stores[0], fmt, broker_version)
    if broker_version is not None:
        raise typer.BadParameter(f"--broker-version is for RocketMQ stores; {path} holds none")
    from replog.recovery.kafka.profile import stated
    from replog.recovery.kafka.tiered import tier_summaries
    with work_progress("ls") as progress:
        parts, dir_findings = summarize_roots(roots, Tally.of(progress, [root for _, root in roots], ".log"))
    tier_summaries(parts, stated(remote_storage=remote_storage))
    for f in dir_findings:
        stderr_note(escape(f"{f.severity.value} {f.code} {f.path}: {f.message}"))
    rows = ls_rows(parts)
    render(resolve(fmt), rows, lambda console: print_ls(rows, [root for _, root in roots], path, console))
    return exit_for([f.severity.value for p in parts for f in p.all_findings()]
                    + [f.severity.value for f in dir_findings])


def stderr_note(message: str) -> None:
    from replog.toolkit.output import stderr
    stderr.print(f"[dim]{message}[/]")


def run_samples(out: Any, seed: int, force: bool, fmt: Format | None = None) -> int:
    """Generate the sample Kafka fleet under OUT/kafka and RocketMQ stores under OUT/rocketmq;
    `--force` replaces only a previous generation. The summary is a table on a terminal and JSON in a
    pipe, like every other command's result, so a script can find what was planted where."""

    from replog.samples.kafka_fleet import generate_kafka_fleet
    from replog.samples.manifest import MANIFEST_NAME
    from replog.samples.rocketmq_fleet import generate_rocketmq_samples

    out = Path(out)
    _clear_previous_samples(out, force)
    manifest = generate_kafka_fleet(out / "kafka", seed=seed)
    planted = generate_rocketmq_samples(out / "rocketmq")
    doc: SamplesDoc = {
        "output": str(out),
        "kafka": {"path": str(out / "kafka"), "seed": seed, "brokers": _sample_brokers(manifest),
                  "damage": len(manifest.damage), "divergences": len(manifest.divergences),
                  "files": manifest.file_count, "bytes": manifest.total_bytes,
                  "manifest": str(out / "kafka" / MANIFEST_NAME)},
        "rocketmq": {"path": str(out / "rocketmq"), "damage": len(planted["damage"])}}
    render(resolve(fmt), doc, lambda console: _print_samples(doc, console))
    return EXIT_CLEAN


def _print_samples(doc: SamplesDoc, console: Console) -> None:
    kafka = doc["kafka"]
    console.print(SAMPLE_BROKER_COLUMNS.table(kafka["brokers"], f"sample Kafka fleet in {kafka['path']} "
                                                                f"(seed {kafka['seed']})"))
    console.print(f"{kafka['damage']} damage items and {kafka['divergences']} replica divergences "
                  f"planted; {kafka['files']} files, {kafka['bytes']:,} bytes. "
                  f"See {kafka['manifest']} and README.txt.")
    console.print(f"RocketMQ: a diverged master/slave pair and a store with {doc['rocketmq']['damage']} planted "
                  f"defects in {doc['rocketmq']['path']}.")


def _sample_brokers(manifest: FleetManifest) -> list[SampleBroker]:
    """One row per generated broker: its partitions, log bytes, shutdown and planted damage."""
    rows: list[SampleBroker] = []
    for broker in manifest.brokers:
        reps = [r for r in manifest.replicas if r.broker == broker]
        rows.append({"broker": broker, "partitions": len(reps), "bytes": sum(r.bytes for r in reps),
                     "clean_shutdown": manifest.clean_shutdown[broker],
                     "damage": sum(1 for d in manifest.damage if d.broker == broker)})
    return rows


SAMPLE_BROKER_COLUMNS = Columns(
    Column("broker", "broker", key=True),
    Column("partitions", "partitions", justify="right"),
    Column("log bytes", "bytes", thousands, justify="right"),
    Column("shutdown", "clean_shutdown", lambda clean: "clean" if clean else "crashed"),
    Column("planted damage", "damage", justify="right"),
)


def _clear_previous_samples(out: Any, force: bool) -> None:
    """Refuse a non-empty OUT unless --force and every part of it is a previous generation."""
    import shutil

    from replog.formats.errors import UnsafeOutput
    from replog.samples.manifest import MANIFEST_NAME, is_manifest

    if out.exists() and not out.is_dir():
        raise UnsafeOutput(f"{out} exists and is not a directory")
    if not (out.is_dir() and any(out.iterdir())):
        return
    if not force:
        raise UnsafeOutput(f"{out} is not empty; --force replaces a previous sample generation")
    ours = {"kafka": lambda data: is_manifest(data), "rocketmq": lambda data: b"replog samples (rocketmq)" in data}
    parts = {child.name: child for child in out.iterdir()}
    for name, child in parts.items():
        marker = child / MANIFEST_NAME
        if name not in ours or not marker.is_file() or not ours[name](marker.read_bytes()):
            raise UnsafeOutput(f"{child} is not part of a previous sample generation; refusing to touch {out}")
    for child in parts.values():
        shutil.rmtree(child)
