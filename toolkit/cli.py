"""`replog` command line: thin commands that parse options, call one library
function and render its result. Heavy imports happen inside commands so that
`replog --help` starts fast."""
from __future__ import annotations

import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from replog.toolkit.cli_help import ReplogCommand, ReplogGroup, plain_usage_errors
from replog.toolkit.cli_replica import BrokerVersionOpt, RemoteStorageOpt, ReplicaArgs, replica_options, replica_reads
from replog.toolkit.decoders import UNDECODABLE_HELP
from replog.toolkit.output import Format, guarded

if TYPE_CHECKING:
    from replog.recovery.replicas import ReplicaOptions

app = typer.Typer(
    name="replog",
    help="Forensic and recovery toolkit for Kafka and RocketMQ on-disk logs. Inputs are never modified.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
    cls=ReplogGroup,
)
samples_app = typer.Typer(help="Generate realistic sample broker directories.", no_args_is_help=True, cls=ReplogGroup)
app.add_typer(samples_app, name="samples")
fleet_app = typer.Typer(help="Scan many broker log dirs at once with Spark, and report on a scan.",
                        no_args_is_help=True, cls=ReplogGroup)
app.add_typer(fleet_app, name="fleet")

FormatOpt = Annotated[Format | None, typer.Option(
    "--format", "-f", help="table (default on a terminal), json, or jsonl (default in a pipe)")]
Decoder = Annotated[str, typer.Option(metavar="DECODER", help="utf8 | hex | base64 | json | none; " + UNDECODABLE_HELP)]


class EvidenceHash(StrEnum):
    sha256 = "sha256"
    blake3 = "blake3"


class DumpFormat(StrEnum):
    table = "table"
    json = "json"
    jsonl = "jsonl"
    dump_log = "dump-log"


FollowOpt = Annotated[bool, typer.Option(
    "--follow-symlinks", help="read what symlinks under the inputs lead to outside them (by default such a "
    "file is reported, SYMLINK_OUTSIDE_INPUTS, and not read)")]


def _confine(inputs: list[str] | list[Path], follow: bool, *outputs: Path | None) -> None:
    """Reads go no further than the inputs' trees (and this command's outputs), unless `follow`."""
    from replog.formats.discovery import input_roots
    from replog.formats.fileio import ReadPolicy
    from replog.recovery.naming import parse_named
    paths = [parse_named(str(p))[1] for p in inputs]
    ReadPolicy.confined([*input_roots(paths), *(o for o in outputs if o is not None)], follow_symlinks=follow).adopt()


DumpFormatOpt = Annotated[DumpFormat | None, typer.Option(
    "--format", "-f", help="table (default on a terminal), json, jsonl (default in a pipe), or dump-log "
    "(kafka-dump-log.sh's text, line for line)")]


def _version(show: bool) -> None:
    """`replog --version`: the installed distribution's version, for bug reports and evidence notes."""
    if show:
        from replog.toolkit.doctor_view import tool_version
        typer.echo(f"replog {tool_version()}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[bool, typer.Option(
        "--version", "-V", is_eager=True, callback=_version, help="print replog's version and exit")] = False,
) -> None:
    """Forensic and recovery toolkit for Kafka and RocketMQ on-disk logs. Inputs are never modified."""


@app.command(cls=ReplogCommand)
@guarded
def dump(
    paths: Annotated[list[Path] | None, typer.Argument(
        metavar="PATH...", help="files or directories to decode (a,b comma lists too)", show_default=False)] = None,
    files: Annotated[list[str] | None, typer.Option(
        "--files", metavar="FILES", help="comma separated files, as kafka-dump-log's --files",
        show_default=False)] = None,
    deep: Annotated[bool, typer.Option(
        "--deep", "--deep-iteration", help="one entry per record, not per batch")] = False,
    print_data: Annotated[bool, typer.Option(
        "--print-data", "--print-data-log", help="show keys and values (implies --deep)")] = False,
    key_decoder: Decoder = "utf8",
    value_decoder: Decoder = "utf8",
    offsets_decoder: Annotated[bool, typer.Option(
        "--offsets-decoder", help="decode __consumer_offsets records")] = False,
    txn_decoder: Annotated[bool, typer.Option(
        "--txn-decoder", "--transaction-log-decoder", help="decode __transaction_state records")] = False,
    metadata_decoder: Annotated[bool, typer.Option(
        "--metadata-decoder", "--cluster-metadata-decoder", help="decode KRaft metadata records")] = False,
    share_state_decoder: Annotated[bool, typer.Option(
        "--share-group-state-decoder", help="decode __share_group_state records (KIP-932; value schemas of "
        "--kafka-version: 4.0 or 4.4)")] = False,
    remote_log_metadata_decoder: Annotated[bool, typer.Option(
        "--remote-log-metadata-decoder", help="decode __remote_log_metadata records (KIP-405 tiered storage)")] = False,
    from_offset: Annotated[int | None, typer.Option(metavar="N", help="skip batches ending before this offset")] = None,
    to_offset: Annotated[int | None, typer.Option(metavar="N", help="stop after this offset")] = None,
    max_bytes: Annotated[int | None, typer.Option(
        min=0, metavar="N", help="read at most this many bytes of each log")] = None,
    skip_record_metadata: Annotated[bool, typer.Option(
        "--skip-record-metadata", help="dump-log format: print records' keys and values only")] = False,
    max_message_size: Annotated[int | None, typer.Option(
        min=1, metavar="BYTES", help="accepted for kafka-dump-log scripts; replog reads whole batches of any size, "
        "so it changes nothing")] = None,
    verify_index_only: Annotated[bool, typer.Option(
        "--verify-index-only", help="check index entries against the log, print only problems")] = False,
    index_sanity_check: Annotated[bool, typer.Option(
        "--index-sanity-check", help="run the broker's index sanity check")] = False,
    kafka_version: Annotated[str, typer.Option(
        "--kafka-version", metavar="VERSION", help="dump-log format: the Kafka version whose kafka-dump-log text "
        "to print; emulated: 3.9, 4.0, 4.4 (their texts differ)")] = "4.4",
    follow_symlinks: FollowOpt = False,
    fmt: DumpFormatOpt = None,
) -> None:
    """Decode broker files: segments, indexes, snapshots, checkpoints, RocketMQ files.

    The options of kafka-dump-log.sh are accepted too (--files a,b --deep-iteration --print-data-log
    --transaction-log-decoder --cluster-metadata-decoder --share-group-state-decoder
    --remote-log-metadata-decoder --skip-record-metadata --max-message-size), and
    --format dump-log prints its text, line for line, as the Kafka version --kafka-version names prints it
    (3.9, 4.0 or 4.4, the default); what replog finds beyond it goes to stderr.

    Examples:

      replog dump /var/kafka/orders-0/00000000000000000000.log --deep --print-data

      replog dump orders-0/00000000000000000000.index --verify-index-only

      replog dump __consumer_offsets-7/ --offsets-decoder --format jsonl | jq .

      replog dump --files 00000000000000000000.log --print-data-log --format dump-log | grep baseOffset
    """
    from replog.toolkit.commands import run_dump
    from replog.toolkit.decoders import DECODERS
    from replog.toolkit.dump import DumpOptions, dump_items
    from replog.toolkit.dump_log import Style, emulation

    try:
        emulated = emulation(kafka_version)
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None
    if share_state_decoder and emulated.share_state is None:
        raise typer.BadParameter(f"--share-group-state-decoder: the kafka-dump-log of Kafka {emulated.version} "
                                 "has no such option (it came with 4.0)")

    for name, dec in (("--key-decoder", key_decoder), ("--value-decoder", value_decoder)):
        if dec not in DECODERS:
            raise typer.BadParameter(f"{name} must be one of {', '.join(DECODERS)}")
    if from_offset is not None and to_offset is not None and from_offset > to_offset:
        raise typer.BadParameter(f"--from-offset {from_offset} is after --to-offset {to_offset}: nothing to dump")
    inputs = _dump_inputs(paths or [], files or [])
    _confine([str(p) for p in inputs], follow_symlinks)
    opts = DumpOptions(deep=deep, print_data=print_data, key_decoder=key_decoder, value_decoder=value_decoder,
                       offsets_decoder=offsets_decoder, txn_decoder=txn_decoder,
                       metadata_decoder=metadata_decoder, share_state_decoder=share_state_decoder,
                       share_state_release=emulated.share_state or "4.4",
                       remote_log_metadata_decoder=remote_log_metadata_decoder, from_offset=from_offset,
                       to_offset=to_offset,
                       max_bytes=max_bytes, verify_index_only=verify_index_only,
                       index_sanity_check=index_sanity_check)
    shown = print_data or opts.internal
    decoder = ("metadata" if metadata_decoder else "offsets" if offsets_decoder else "txn" if txn_decoder
               else "share" if share_state_decoder else "remote" if remote_log_metadata_decoder else None)
    raise typer.Exit(run_dump(lambda progress: dump_items(inputs, opts, progress), fmt, shown,
                              Style(shown, skip_record_metadata, decoder, emulated,
                                    whole_files=max_bytes is None and from_offset is None and to_offset is None)))


def _dump_inputs(paths: list[Path], files: list[str]) -> list[str | os.PathLike[str]]:
    """PATHs and --files values in order, comma lists split as kafka-dump-log splits --files (a path that
    exists as written is taken whole, commas and all)."""
    out: list[str | os.PathLike[str]] = []
    for raw in [*map(str, paths), *files]:
        out.extend([raw] if _exists(raw) else [part for part in raw.split(",") if part])
    if not out:
        raise typer.BadParameter("give the files to dump: PATH... or --files a,b")
    return out


def _exists(raw: str) -> bool:
    """Whether `raw` names a file as written; a comma list longer than a path may be (ENAMETOOLONG) is not one."""
    try:
        return Path(raw).exists()
    except OSError:
        return False


@app.command(cls=ReplogCommand)
@guarded
def ls(
    path: Annotated[Path, typer.Argument(metavar="PATH", help="broker log dir, partition dir, or RocketMQ store")],
    broker_version: BrokerVersionOpt = None,
    follow_symlinks: FollowOpt = False,
    fmt: FormatOpt = None,
    remote_storage: RemoteStorageOpt = None,
) -> None:
    """Overview: one row per partition with segments, offsets, high watermark, epochs and flags.

    Kafka: remote.storage.enable comes from the KRaft metadata log in the log dir, else --remote-storage.

    Example: replog ls /var/kafka-logs
    """
    from replog.toolkit.commands import run_ls

    _confine([path], follow_symlinks)
    raise typer.Exit(run_ls(path, fmt, broker_version, remote_storage))


@app.command(cls=ReplogCommand)
@guarded
def doctor(
    paths: Annotated[list[Path], typer.Argument(
        metavar="PATH...", help="broker log dirs, partition dirs or single files")],
    manifest: Annotated[Path | None, typer.Option(
        "--manifest", metavar="FILE",
        help="write a SHA-256 evidence manifest of every regular file under the inputs")] = None,
    html: Annotated[Path | None, typer.Option(
        "--html", metavar="FILE", help="write a self-contained HTML report: the findings over each file's bytes")
    ] = None,
    follow_symlinks: FollowOpt = False,
    fmt: FormatOpt = None,
    hash_name: Annotated[EvidenceHash, typer.Option(
        "--hash", metavar="sha256|blake3",
        help="the evidence hash of every input read: sha256 (default) or blake3 (several times faster on "
             "large inputs, on every core)")] = EvidenceHash.sha256,
) -> None:
    """Verify everything under PATH: batches, segments, indexes, epochs, snapshots, checkpoints.

    Every defect is reported with its code, severity, file, byte position and offset.
    Exit 1 when an error is found. Inputs are opened read-only and hashed.

    Examples:

      replog doctor /var/kafka-logs

      replog doctor /var/kafka-logs/orders-3 --manifest evidence.json --format json

      replog doctor /var/kafka-logs --html doctor.html
    """
    from replog.toolkit.doctor_view import run_doctor

    _confine(paths, follow_symlinks, manifest, html)
    raise typer.Exit(run_doctor(paths, manifest, fmt, html, hash_name.value))


@app.command(cls=ReplogCommand)
@guarded
def recover(
    partition_dir: Annotated[Path, typer.Argument(
        metavar="PARTITION_DIR", help="the partition dir to recover (read only)")],
    out: Annotated[Path, typer.Option(
        "--out", metavar="DIR", help="new log dir to write the recovered partition into")],
    salvage: Annotated[bool, typer.Option(
        "--salvage", help="also keep valid batches found after damaged bytes")] = False,
    broker_version: BrokerVersionOpt = None,
    rebuild_queues: Annotated[bool, typer.Option(
        "--rebuild-queues",
        help="RocketMQ: rebuild every consume queue entry (default: keep the broker's, as its recovery does)")] = False,
    force: Annotated[bool, typer.Option("--force", help="replace a non-empty output dir")] = False,
    follow_symlinks: FollowOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """What the broker's unclean-shutdown recovery would make of a partition, written to DIR.

    DIR becomes a log dir holding the recovered <topic>-<partition>/ and its broker
    checkpoints; it is verified with doctor before success is reported.

    Examples:

      replog recover /var/kafka-logs/orders-3 --out /tmp/recovered

      replog recover /var/kafka-logs/orders-3 --out /tmp/salvaged --salvage --format json
    """
    from replog.toolkit.doctor_view import run_recover

    _confine([partition_dir], follow_symlinks, out)
    raise typer.Exit(run_recover(partition_dir, out, salvage, force, fmt, broker_version, rebuild_queues))


HtmlOpt = Annotated[Path | None, typer.Option(
    "--html", metavar="FILE", help="write a self-contained HTML report here")]
ForceOutputOpt = Annotated[bool, typer.Option("--force", help="replace a previous replog output")]


@app.command(cls=ReplogCommand)
@guarded
@replica_options("replicas leader protocol html export_lost metadata partition_state broker_version force offsets "
                 "running min_insync_replicas elr cleanup_policy what_if follow_symlinks fmt remote_storage")
def replay(
    replicas: ReplicaArgs,
    options: ReplicaOptions,
    html: HtmlOpt = None,
    export_lost: Annotated[Path | None, typer.Option(
        metavar="DIR", help="save the records replicas would lose here first")] = None,
    force: ForceOutputOpt = False,
    what_if: Annotated[bool, typer.Option(
        "--what-if", help="which leader loses least: replay behind every replica that could lead, rank the "
        "choices by acknowledged then total records lost, consumers and producers hit, and print the command "
        "that makes the best one happen in the cluster's mode. Exit 1 when even the best choice loses records")
    ] = False,
    follow_symlinks: FollowOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """Replay the replication protocol offline between replicas of one partition.

    Shows how the replicas diverged, what each would truncate, lose and fetch.
    Exit 1 when a replica loses records or would fail; 2 for a NAME or PATH given twice.

    Examples:

      replog replay b1=/data/b1/orders-2 b2=/data/b2/orders-2 b3=/data/b3/orders-2

      replog replay b1=... b2=... --leader b2 --protocol hw --html replay.html

      replog replay b1=... b2=... b3=... --protocol hw --running b3   (b3's broker kept running)

      replog replay /data/b1/orders-2 /data/b2/orders-2 --metadata /data/b1/__cluster_metadata-0

      replog replay b2=... b3=... b4=... --metadata /data/c1/__cluster_metadata-0 --what-if

      replog replay c1=/data/c1/__cluster_metadata-0 c2=... c3=...   (the KRaft controller quorum's voters)
    """
    from replog.toolkit.replica_commands import Command, ReplicaRequest, run_replicas

    _confine(replica_reads(replicas, options), follow_symlinks, html, export_lost)
    raise typer.Exit(run_replicas(ReplicaRequest(Command.WHAT_IF if what_if else Command.REPLAY, replicas, options,
                                                 fmt, html, force=force, export_lost=export_lost)))


@app.command(cls=ReplogCommand)
@guarded
@replica_options("replicas out leader protocol force in_place backup metadata partition_state broker_version html "
                 "offsets running min_insync_replicas elr cleanup_policy follow_symlinks fmt remote_storage")
def repair(
    replicas: ReplicaArgs,
    options: ReplicaOptions,
    out: Annotated[Path | None, typer.Option(
        "--out", metavar="DIR", help="directory to write the repaired replicas into (DIR/NAME/)")] = None,
    force: ForceOutputOpt = False,
    in_place: Annotated[bool, typer.Option(
        "--in-place", help="repair the input replicas themselves (needs --backup)")] = False,
    backup: Annotated[Path | None, typer.Option(
        metavar="DIR", help="with --in-place: empty dir to back the replicas up into first")] = None,
    html: Annotated[Path | None, typer.Option(
        "--html", metavar="FILE", help="write the replay's self-contained HTML report, with what was written")
    ] = None,
    follow_symlinks: FollowOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """Replay, then write every replica repaired (truncated, re-fetched, indexes and checkpoints rebuilt).

    Inputs are never modified; the result is verified after writing. Exit 1 when a replica loses
    records or would fail, or the result does not verify.

    Example: replog repair b1=/data/b1/orders-2 b2=/data/b2/orders-2 --out /tmp/repaired

    With --in-place --backup DIR (brokers stopped!) the replicas are backed up to DIR, then each is swapped
    atomically for its repaired self; a running broker or a second run is refused (the log dirs' .lock). If
    that is interrupted, running it again starts over (nothing swapped yet) or restores everything from DIR.
    """
    from replog.formats.errors import ReplogError
    from replog.toolkit.replica_commands import Command, ReplicaRequest, run_repair_in_place, run_replicas

    _confine(replica_reads(replicas, options), follow_symlinks, out, backup, html)
    if in_place:
        if backup is None or out is not None or html is not None:
            raise ReplogError("--in-place needs --backup DIR, and takes no --out or --html")
        if options.running:
            raise ReplogError("--in-place repairs replicas whose brokers are stopped; --running names one "
                              "whose broker keeps running")
        raise typer.Exit(run_repair_in_place(replicas, backup, options, fmt))
    raise typer.Exit(run_replicas(ReplicaRequest(Command.REPAIR, replicas, options, fmt, html, out, force)))


@app.command(cls=ReplogCommand)
@guarded
@replica_options("replicas offsets leader protocol html metadata partition_state broker_version running "
                 "min_insync_replicas elr cleanup_policy follow_symlinks fmt remote_storage")
def impact(
    replicas: ReplicaArgs,
    options: ReplicaOptions,
    html: HtmlOpt = None,
    follow_symlinks: FollowOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """What a replay's truncation means for consumer groups, producers and transactions.

    Kafka: each group committed on the partition (__consumer_offsets) is unaffected,
    consumed lost records, will detect the truncation or will reset by auto.offset.reset;
    producers whose writes are lost, and what the new leader does with their next batch;
    transactions left open or hanging (__transaction_state, markers lost);
    share groups (__share_group_state) that lose acknowledged records or will skip new ones.
    RocketMQ: consumer offsets against each queue after the replay, master and slave metadata.
    Exit 1 when a replica loses records or would fail.

    Examples:

      replog impact b1=/data/b1/orders-2 b2=/data/b2/orders-2 b3=/data/b3/orders-2

      replog impact b1=... b3=... --offsets /data/b2 --format json
    """
    from replog.toolkit.replica_commands import Command, ReplicaRequest, run_replicas

    _confine(replica_reads(replicas, options), follow_symlinks, html)
    raise typer.Exit(run_replicas(ReplicaRequest(Command.IMPACT, replicas, options, fmt, html)))


@samples_app.command("generate", cls=ReplogCommand)
@guarded
def samples_generate(
    out: Annotated[Path, typer.Argument(metavar="DIR", help="directory to create")],
    seed: Annotated[int, typer.Option(metavar="N", help="random seed; the same seed gives the same bytes")] = 7,
    force: Annotated[bool, typer.Option("--force", help="replace an existing sample directory")] = False,
    fmt: FormatOpt = None,
) -> None:
    """Write a realistic sample fleet (Kafka log dirs of three brokers) with replog's writers.

    Example: replog samples generate /tmp/fleet
    """
    from replog.toolkit.commands import run_samples

    raise typer.Exit(run_samples(out, seed, force, fmt))


@fleet_app.command("scan", cls=ReplogCommand)
@guarded
def fleet_scan(
    out: Annotated[Path, typer.Option("--out", metavar="DIR", help="directory for the Parquet tables")],
    paths: Annotated[list[str] | None, typer.Argument(
        metavar="PATH...", help="broker log dirs, folders of them, globs, or file:// hdfs:// s3:// URIs "
                                  "(none when --inventory names them)")] = None,
    master: Annotated[str | None, typer.Option(
        metavar="URL", help="Spark master URL (default: embedded local[*])")] = None,
    inventory: Annotated[Path | None, typer.Option(metavar="FILE", help="file of `broker=path` lines")] = None,
    batches: Annotated[bool, typer.Option("--batches", help="also write the per-batch table")] = False,
    force: Annotated[bool, typer.Option("--force", help="replace the output of a previous fleet scan")] = False,
    split_bytes: Annotated[int, typer.Option(
        metavar="BYTES", help="split partition dirs larger than this into segment groups")] = 256 << 20,
    spark_log_level: Annotated[str, typer.Option(
        "--spark-log-level", metavar="LEVEL",
        help="Spark's own logging on stderr: ERROR (default), WARN, INFO, DEBUG, OFF")] = "ERROR",
    since: Annotated[Path | None, typer.Option(
        "--since", metavar="DIR",
        help="an earlier scan's --out: sealed segments unchanged since are not read again")] = None,
    tail: Annotated[bool, typer.Option(
        "--tail", help="compare replicas from checkpoints, epoch files and segment tails only (fast)")] = False,
    conf: Annotated[list[str] | None, typer.Option(
        "--conf", metavar="KEY=VALUE", help="a Spark setting, as spark-submit takes it (repeatable)")] = None,
    follow_symlinks: FollowOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """Scan every partition of every log dir with Spark; Parquet tables partitions, segments,
    findings, replicas, log_dirs, stores (and batches) under --out.

    Examples:

      replog fleet scan /data/fleet --out /tmp/fleet-scan

      replog fleet scan /data/fleet --out /tmp/fleet-scan-2 --since /tmp/fleet-scan

      replog fleet scan '/mnt/kafka-*/logs' --out scan --master spark://head:7077 --batches

      replog fleet scan --inventory brokers.txt --out scan --master yarn --conf spark.executor.instances=50
    """
    from replog.toolkit.fleet_view import run_fleet_scan

    if not paths and inventory is None:
        raise typer.BadParameter("give at least one PATH, or --inventory FILE", param_hint="PATH...")
    settings = {}
    for item in conf or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"expected KEY=VALUE, got {item!r}", param_hint="--conf")
        settings[key.strip()] = value
    _confine([p for p in paths or [] if "://" not in p], follow_symlinks, out, inventory, since)
    raise typer.Exit(run_fleet_scan(paths or [], out, master, inventory, batches, force, split_bytes, fmt,
                                    spark_log_level, since=since, tail=tail, conf=settings))


@fleet_app.command("report", cls=ReplogCommand)
@guarded
def fleet_report(
    scan_dir: Annotated[Path, typer.Argument(metavar="SCAN_DIR", help="the --out directory of a fleet scan")],
    html_file: Annotated[Path | None, typer.Option(
        "--html", metavar="FILE", help="also write a self-contained HTML report")] = None,
    fmt: FormatOpt = None,
) -> None:
    """Fleet health from a scan's Parquet tables (no Spark): totals, divergent replica sets,
    damaged segments, checkpoints disagreeing with logs.

    Example: replog fleet report /tmp/fleet-scan --html fleet.html
    """
    from replog.toolkit.fleet_view import run_fleet_report

    raise typer.Exit(run_fleet_report(scan_dir, fmt, html_file))


def main() -> None:
    if not sys.stderr.isatty():
        plain_usage_errors()
    app()
