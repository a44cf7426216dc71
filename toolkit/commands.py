"""Glue between one library call and its rendering, one function per command."""
from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

import typer
from rich.console import Console
from rich.markup import escape

from replog.toolkit.impact_view import print_with_impact
from replog.toolkit.output import (
    EXIT_CLEAN,
    EXIT_FINDINGS,
    Format,
    exit_for_replay,
    print_repaired,
    resolve,
    write_json,
    write_json_array,
)
from replog.toolkit.progress import byte_progress, work_progress
from replog.toolkit.render import Column, Columns, render, thousands

Entries = Callable[[Callable[[int, int], None] | None], Iterator[Any]]  # dump entries, or `EntryRun`s too


def _track_errors(entries: Iterator[Any], seen: list[bool]) -> Iterator[Any]:
    for e in entries:
        if isinstance(e, dict) and e["kind"] == "finding" and e["severity"] == "error":
            seen[0] = True
        yield e


if TYPE_CHECKING:
    from replog.toolkit.dump_log import Style

DUMP_LOG = "dump-log"  # `dump --format dump-log`: kafka-dump-log's text


@contextlib.contextmanager
def _dump_stream(make_entries: Entries, errors: list[bool]) -> Iterator[Iterable[dict[str, Any]]]:
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
            print_entries(cast(Iterable[dict[str, Any]], formatted(items, None)),
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


@dataclass(frozen=True)
class ReplayOptions:
    """What replay and repair may be told beyond the replicas: the Kafka controller's record of elections
    (`--metadata`, `--partition-state`) and the replicas whose broker keeps running (`--running`), or the
    RocketMQ broker's version (`--broker-version`)."""

    metadata: Any = None
    partition_state: Any = None
    broker_version: str | None = None
    running: Sequence[str] = ()
    min_insync_replicas: int | None = None
    elr: bool | None = None
    cleanup_policy: str | None = None
    remote_storage: bool | None = None

    def for_kafka(self) -> dict[str, Any]:
        from replog.recovery.kafka.profile import stated

        if self.broker_version is not None:
            raise typer.BadParameter("--broker-version is for RocketMQ stores; these are Kafka replicas")
        return {"metadata": None if self.metadata is None else str(self.metadata),
                "partition_state": None if self.partition_state is None else str(self.partition_state),
                "running": list(self.running),
                "assumed": stated(self.min_insync_replicas, self.elr, self.cleanup_policy, self.remote_storage)}

    def for_rocketmq(self) -> str | None:
        if (self.metadata is not None or self.partition_state is not None or self.running
                or self.min_insync_replicas is not None or self.elr is not None or self.cleanup_policy is not None
                or self.remote_storage is not None):
            raise typer.BadParameter("--metadata, --partition-state, --running, --min-insync-replicas, --elr and "
                                     "--cleanup-policy are for Kafka replicas; these are RocketMQ stores")
        return self.broker_version


def _is_rocketmq(specs: list[str]) -> bool:
    from replog.formats.discovery import is_rocketmq_store
    from replog.recovery.naming import parse_named
    return bool(specs) and is_rocketmq_store(parse_named(specs[0])[1])


def run_replay(specs: list[str], leader: str | None, protocol: str | None, html: Any, export_lost: Any,
               force: bool, fmt: Format | None, given: ReplayOptions = ReplayOptions(),
               offsets: list[Any] | None = None, what_if: bool = False) -> int:
    """Replay and render; `--export-lost` saves what would be lost before anything else happens.
    With `__consumer_offsets` beside the replicas (or under `offsets`), the impact is added.
    Exit 1 when a replica loses records or would fail (`exit_for_replay`). `what_if`: every leader
    (`run_what_if`)."""
    if what_if:
        return run_what_if(specs, protocol, html, fmt, given, offsets or [])
    if _is_rocketmq(specs):
        from replog.toolkit.rocketmq_views import run_rocketmq_replay
        return run_rocketmq_replay(specs, leader, protocol, html, force, fmt, given.for_rocketmq())
    from replog.recovery.kafka.replay import replay_paths
    from replog.recovery.outputs import evidence_roots
    from replog.toolkit.replay_view import print_replay, replay_html

    report = kafka_report_target(html, specs)
    with work_progress("loading replicas") as progress:
        result = replay_paths(specs, leader, protocol or "epoch", progress, **given.for_kafka())
    if export_lost is not None:
        from replog.toolkit.export_lost import export_lost as export
        files = export(result, export_lost, force=force)
        stderr_note(f"saved {len(files)} files of records that would be lost under {export_lost}")
    impact = _impact_doc(result, offsets or [])
    doc = result.to_dict() | ({"impact": impact} if impact is not None else {})
    if report is not None:
        from replog.toolkit.pages import write_page
        write_page(report, replay_html(result, doc), evidence_roots(r.replica.path for r in result.replicas))
    render(resolve(fmt), doc,
           lambda console: print_with_impact(lambda: print_replay(result, console), impact, console))
    return exit_for_replay(result)


def run_what_if(specs: list[str], protocol: str | None, html: Any, fmt: Format | None, given: ReplayOptions,
                offsets: list[Any]) -> int:
    """`replay --what-if`: the choices ranked, the recommended one's command; the page is the recommended
    choice's replay with the choices side by side. Exit 1 when even the best choice loses records or fails."""
    if _is_rocketmq(specs):
        from replog.toolkit.rocketmq_views import run_rocketmq_what_if
        if offsets:
            raise typer.BadParameter("--offsets is for Kafka replicas; RocketMQ stores hold their own offsets")
        return run_rocketmq_what_if(specs, protocol, html, fmt, given.for_rocketmq())
    from replog.recovery.kafka.what_if import what_if_paths
    from replog.recovery.outputs import evidence_roots
    from replog.toolkit.replay_view import replay_html
    from replog.toolkit.what_if_view import print_what_if

    report = kafka_report_target(html, specs)
    with work_progress("loading replicas") as progress:
        got = what_if_paths(specs, protocol or "epoch", progress, offsets=offsets, **given.for_kafka())
    doc = got.to_dict()
    if report is not None:
        from replog.toolkit.pages import write_page
        best = got.recommended
        page = best.result.to_dict() | {"impact": best.impact.to_dict(), "what_if": doc}
        write_page(report, replay_html(best.result, page), evidence_roots(r.replica.path for r in best.result.replicas))
    render(resolve(fmt), doc, lambda console: print_what_if(doc, console))
    return exit_for_replay(got)


def _impact_doc(result: Any, offsets: list[Any]) -> dict[str, Any] | None:
    """The impact of a Kafka replay as JSON, when consumer offsets are on the disks."""
    from replog.recovery.kafka.impact import impact_of_replay

    impact = impact_of_replay(result, offsets)
    return None if impact is None else impact.to_dict()


def run_impact(specs: list[str], offsets: list[Any], leader: str | None, protocol: str | None, html: Any,
               fmt: Format | None, given: ReplayOptions = ReplayOptions()) -> int:
    """Replay, then what its truncation means for consumers, producers and transactions; exit as replay."""
    if _is_rocketmq(specs):
        from replog.toolkit.rocketmq_views import run_rocketmq_impact
        return run_rocketmq_impact(specs, leader, protocol, html, fmt, given.for_rocketmq())
    from replog.recovery.kafka.impact import read_impact
    from replog.recovery.kafka.replay import replay_paths
    from replog.recovery.outputs import evidence_roots
    from replog.toolkit.impact_view import print_impact
    from replog.toolkit.replay_view import replay_html

    report = kafka_report_target(html, specs)
    with work_progress("loading replicas") as progress:
        result = replay_paths(specs, leader, protocol or "epoch", progress, **given.for_kafka())
    impact = read_impact(result, offsets).to_dict()
    impact["premise"] = None if result.premise is None else result.premise.to_dict()  # the replay it rests on
    if report is not None:
        from replog.toolkit.pages import write_page
        write_page(report, replay_html(result, result.to_dict() | {"impact": impact}),
                   evidence_roots(r.replica.path for r in result.replicas))
    render(resolve(fmt), impact, lambda console: print_impact(impact, console))
    return exit_for_replay(result)


def kafka_report_target(html: Any, specs: list[str]) -> Path | None:
    """Where an --html page of replicas goes, refused before any work: a report inside the evidence (any
    replica's log dir) is a usage error, not a late surprise."""
    from replog.recovery.naming import parse_named
    from replog.recovery.outputs import evidence_roots, prepare_file_output

    return None if html is None else prepare_file_output(html, evidence_roots(parse_named(s)[1] for s in specs))


def run_repair(specs: list[str], out: Any, leader: str | None, protocol: str | None, force: bool,
               fmt: Format | None, given: ReplayOptions = ReplayOptions(), html: Any = None,
               offsets: list[Any] | None = None) -> int:
    """Replay, write the repaired replicas, verify them; exit 1 if a replica loses records or would fail,
    or verification found a problem. `html`: the replay's page, with what was written."""
    if _is_rocketmq(specs):
        from replog.toolkit.rocketmq_views import run_rocketmq_repair
        return run_rocketmq_repair(specs, out, leader, protocol, force, fmt, given.for_rocketmq(), html)
    from replog.recovery.kafka.repair import repair
    from replog.recovery.kafka.replay import replay_paths
    from replog.toolkit.replay_view import print_replay, replay_html

    report = kafka_report_target(html, specs)
    with work_progress("loading replicas") as progress:
        result = replay_paths(specs, leader, protocol or "epoch", progress, **given.for_kafka())
    impact = _impact_doc(result, offsets or [])
    repaired = repair(result, out, force=force)
    payload = result.to_dict() | {"output": str(out), "repaired": [r.to_dict() for r in repaired]}
    if impact is not None:
        payload["impact"] = impact
    if report is not None:
        from replog.recovery.outputs import evidence_roots
        from replog.toolkit.pages import write_page
        write_page(report, replay_html(result, payload), evidence_roots(r.replica.path for r in result.replicas))

    def show(console: Console) -> None:
        print_with_impact(lambda: print_replay(result, console), impact, console)
        print_repaired(repaired, console, lambda r: (r.identical_to_leader,
                                                     f"LEO {r.log_end_offset} HW {r.high_watermark}"))

    render(resolve(fmt), payload, show)
    return exit_for_replay(result, all(r.identical_to_leader and not r.problems for r in repaired))


def run_repair_in_place(specs: list[str], backup: Any, leader: str | None, protocol: str | None,
                        fmt: Format | None, given: ReplayOptions = ReplayOptions()) -> int:
    from replog.recovery.kafka.inplace import holding, repair_in_place
    from replog.recovery.kafka.replay import replay_paths
    from replog.recovery.naming import parse_named

    with holding([parse_named(spec)[1] for spec in specs], backup):   # read and written under the same locks
        with work_progress("loading replicas") as progress:
            result = replay_paths(specs, leader, protocol or "epoch", progress, **given.for_kafka())
        repaired = repair_in_place(result, backup)
    payload = result.to_dict() | {"backup": str(backup), "repaired": [r.to_dict() for r in repaired]}
    # one line per replica for a person; --format jsonl has always written the indented document here
    if resolve(fmt) is Format.table:
        from replog.toolkit.premise_view import print_premise

        console = Console(highlight=False)
        print_premise(payload["premise"], console)
        for r in repaired:
            console.print(f"repaired in place [bold]{r.name}[/] {r.path}  LEO {r.log_end_offset}  "
                          + ("[green]identical to the leader[/]" if r.identical_to_leader else "[red]differs[/]"))
    else:
        write_json(payload)
    return exit_for_replay(result, all(r.identical_to_leader for r in repaired))


def stderr_note(message: str) -> None:
    from replog.toolkit.output import stderr
    stderr.print(f"[dim]{message}[/]")


def run_samples(out: Any, seed: int, force: bool, fmt: Format | None = None) -> int:
    """Generate the sample Kafka fleet under OUT/kafka and RocketMQ stores under OUT/rocketmq;
    `--force` replaces only a previous generation. The summary is a table on a terminal and JSON in a
    pipe, like every other command's result, so a script can find what was planted where."""
    from pathlib import Path

    from replog.samples.kafka_fleet import generate_kafka_fleet
    from replog.samples.manifest import MANIFEST_NAME
    from replog.samples.rocketmq_fleet import generate_rocketmq_samples

    out = Path(out)
    _clear_previous_samples(out, force)
    manifest = generate_kafka_fleet(out / "kafka", seed=seed)
    planted = generate_rocketmq_samples(out / "rocketmq")
    kafka = {"path": str(out / "kafka"), "seed": seed, "brokers": _sample_brokers(manifest),
             "damage": len(manifest.damage), "divergences": len(manifest.divergences),
             "files": manifest.file_count, "bytes": manifest.total_bytes,
             "manifest": str(out / "kafka" / MANIFEST_NAME)}
    doc = {"output": str(out), "kafka": kafka,
           "rocketmq": {"path": str(out / "rocketmq"), "damage": len(planted["damage"])}}
    render(resolve(fmt), doc, lambda console: _print_samples(doc, console))
    return EXIT_CLEAN


def _print_samples(doc: dict[str, Any], console: Console) -> None:
    kafka = doc["kafka"]
    console.print(SAMPLE_BROKER_COLUMNS.table(kafka["brokers"], f"sample Kafka fleet in {kafka['path']} "
                                                                f"(seed {kafka['seed']})"))
    console.print(f"{kafka['damage']} damage items and {kafka['divergences']} replica divergences "
                  f"planted; {kafka['files']} files, {kafka['bytes']:,} bytes. "
                  f"See {kafka['manifest']} and README.txt.")
    console.print(f"RocketMQ: a diverged master/slave pair and a store with {doc['rocketmq']['damage']} planted "
                  f"defects in {doc['rocketmq']['path']}.")


def _sample_brokers(manifest: Any) -> list[dict[str, Any]]:
    """One row per generated broker: its partitions, log bytes, shutdown and planted damage."""
    rows = []
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
