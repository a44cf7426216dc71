"""Glue between one library call and its rendering, one function per command."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from rich.console import Console

from replog.toolkit.output import (
    EXIT_CLEAN,
    EXIT_FINDINGS,
    Format,
    print_repaired,
    resolve,
    write_json,
    write_json_array,
    write_jsonl,
)
from replog.toolkit.progress import byte_progress, work_progress
from replog.toolkit.render import Column, Columns, render, thousands

Entries = Callable[[Callable[[int, int], None] | None], Iterator[dict[str, Any]]]


def _track_errors(entries: Iterator[dict[str, Any]], seen: list[bool]) -> Iterator[dict[str, Any]]:
    for e in entries:
        if e["kind"] == "finding" and e["severity"] == "error":
            seen[0] = True
        yield e


def run_dump(make_entries: Entries, fmt: Format | None, print_data: bool) -> int:
    """Stream dump entries in the chosen format; exit 1 if any error finding was met.

    Not through `render`: a dump can be millions of entries, so JSON lines and
    the kafka-dump-log style text are written as they are decoded, never held.
    """
    from replog.toolkit.dump_view import print_entries

    fmt = resolve(fmt)
    errors = [False]
    with byte_progress("dump") as progress:
        entries = _track_errors(make_entries(progress), errors)
        if fmt is Format.jsonl:
            write_jsonl(entries)
        elif fmt is Format.json:
            write_json_array(entries)
        else:
            print_entries(entries, Console(highlight=False, soft_wrap=True), print_data)
    return EXIT_FINDINGS if errors[0] else EXIT_CLEAN


def run_ls(path: Any, fmt: Format | None) -> int:
    """One row per partition of a log dir (or the one partition given)."""
    from replog.formats.discovery import DirKind, classify_dir
    from replog.formats.errors import UnreadableInput
    from replog.recovery.kafka.logdir import read_broker_checkpoints, summarize_log_dir, summarize_partition
    from replog.recovery.progress import Tally
    from replog.toolkit.views import LS_COLUMNS, ls_rows

    kind = classify_dir(path)
    if kind is DirKind.KAFKA_LOG_DIR:
        with work_progress("ls") as progress:
            parts = summarize_log_dir(path, Tally.of(progress, [path], ".log")).partitions
    elif kind is DirKind.KAFKA_PARTITION_DIR:
        with work_progress("ls") as progress:
            parts = [summarize_partition(path, read_broker_checkpoints(path.parent),
                                         tally=Tally.of(progress, [path], ".log"))]
    elif kind is DirKind.ROCKETMQ_STORE:
        from replog.toolkit.rocketmq_views import run_ls_store
        return run_ls_store(path, fmt)
    else:
        raise UnreadableInput(f"{path}: not a Kafka log dir, partition dir or RocketMQ store")
    rows = ls_rows(parts)
    render(resolve(fmt), rows, lambda console: console.print(LS_COLUMNS.table(rows, str(path))))
    return EXIT_CLEAN


def _is_rocketmq(specs: list[str]) -> bool:
    from replog.formats.discovery import is_rocketmq_store
    from replog.recovery.naming import parse_named
    return is_rocketmq_store(parse_named(specs[0])[1])


def run_replay(specs: list[str], leader: str | None, protocol: str | None, html: Any, export_lost: Any,
               force: bool, fmt: Format | None) -> int:
    """Replay and render; `--export-lost` saves what would be lost before anything else happens."""
    if _is_rocketmq(specs):
        from replog.toolkit.rocketmq_views import run_rocketmq_replay
        return run_rocketmq_replay(specs, leader, protocol, html, force, fmt)
    from replog.formats.fileio import atomic_write
    from replog.recovery.kafka.replay import replay_paths
    from replog.toolkit.replay_view import print_replay, replay_html

    with work_progress("loading replicas") as progress:
        result = replay_paths(specs, leader, protocol or "epoch", progress)
    if export_lost is not None:
        from replog.recovery.kafka.export import export_lost as export
        files = export(result, export_lost, force=force)
        stderr_note(f"saved {len(files)} files of records that would be lost under {export_lost}")
    if html is not None:
        from replog.recovery.outputs import evidence_roots, prepare_file_output
        atomic_write(prepare_file_output(html, evidence_roots(r.replica.path for r in result.replicas)),
                     replay_html(result).encode())
    render(resolve(fmt), result.to_dict(), lambda console: print_replay(result, console))
    return EXIT_CLEAN


def run_repair(specs: list[str], out: Any, leader: str | None, protocol: str | None, force: bool,
               fmt: Format | None) -> int:
    """Replay, write the repaired replicas, verify them; exit 1 if verification found a problem."""
    if _is_rocketmq(specs):
        from replog.toolkit.rocketmq_views import run_rocketmq_repair
        return run_rocketmq_repair(specs, out, leader, protocol, force, fmt)
    from replog.recovery.kafka.repair import repair
    from replog.recovery.kafka.replay import replay_paths
    from replog.toolkit.replay_view import print_replay

    with work_progress("loading replicas") as progress:
        result = replay_paths(specs, leader, protocol or "epoch", progress)
    repaired = repair(result, out, force=force)
    payload = result.to_dict() | {"output": str(out), "repaired": [r.to_dict() for r in repaired]}

    def show(console: Console) -> None:
        print_replay(result, console)
        print_repaired(repaired, console, lambda r: (r.identical_to_leader,
                                                     f"LEO {r.log_end_offset} HW {r.high_watermark}"))

    render(resolve(fmt), payload, show)
    return EXIT_CLEAN if all(r.identical_to_leader and not r.problems for r in repaired) else EXIT_FINDINGS


def run_repair_in_place(specs: list[str], backup: Any, leader: str | None, protocol: str | None,
                        fmt: Format | None) -> int:
    from replog.recovery.kafka.inplace import repair_in_place
    from replog.recovery.kafka.replay import replay_paths

    with work_progress("loading replicas") as progress:
        result = replay_paths(specs, leader, protocol or "epoch", progress)
    repaired = repair_in_place(result, backup)
    payload = result.to_dict() | {"backup": str(backup), "repaired": [r.to_dict() for r in repaired]}
    # one line per replica for a person; --format jsonl has always written the indented document here
    if resolve(fmt) is Format.table:
        console = Console(highlight=False)
        for r in repaired:
            console.print(f"repaired in place [bold]{r.name}[/] {r.path}  LEO {r.log_end_offset}  "
                          + ("[green]identical to the leader[/]" if r.identical_to_leader else "[red]differs[/]"))
    else:
        write_json(payload)
    return EXIT_CLEAN if all(r.identical_to_leader for r in repaired) else EXIT_FINDINGS


def stderr_note(message: str) -> None:
    from replog.toolkit.output import stderr
    stderr.print(f"[dim]{message}[/]")


def run_samples(out: Any, seed: int, force: bool) -> int:
    """Generate the sample Kafka fleet under OUT/kafka and RocketMQ stores under OUT/rocketmq;
    `--force` replaces only a previous generation."""
    from pathlib import Path

    from replog.samples.kafka_fleet import generate_kafka_fleet
    from replog.samples.manifest import MANIFEST_NAME
    from replog.samples.rocketmq_fleet import generate_rocketmq_samples

    out = Path(out)
    _clear_previous_samples(out, force)
    manifest = generate_kafka_fleet(out / "kafka", seed=seed)
    console = Console(highlight=False)
    console.print(SAMPLE_BROKER_COLUMNS.table(_sample_brokers(manifest),
                                              f"sample Kafka fleet in {out / 'kafka'} (seed {seed})"))
    console.print(f"{len(manifest.damage)} damage items and {len(manifest.divergences)} replica divergences "
                  f"planted; {manifest.file_count} files, {manifest.total_bytes:,} bytes. "
                  f"See {out / 'kafka' / MANIFEST_NAME} and README.txt.")
    planted = generate_rocketmq_samples(out / "rocketmq")
    console.print(f"RocketMQ: a diverged master/slave pair and a store with {len(planted['damage'])} planted "
                  f"defects in {out / 'rocketmq'}.")
    return EXIT_CLEAN


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
    Column("broker", "broker"),
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
