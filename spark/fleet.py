"""`fleet scan`: the per-directory scans of `ls`/`doctor`, distributed with Spark, written as Parquet.

Flow: discover log dirs and RocketMQ stores on the driver (cheap: names, meta.properties and store
configs for their identity, root checkpoints; remote dirs listed through pyarrow filesystems) ->
units (one per partition dir, split by segment when large, one per log dir root, one per store),
with a previous scan's record of the sealed segments that look unchanged (`--since`) -> one Spark
stage whose tasks scan their units and write the tables' Parquet files themselves
(`spark.job`) -> the driver finishes what needs every task's rows: finding counts of split
partitions, the `log_dirs` table, the replica sets of each cluster (`spark.replicas`, Spark joins
of batch metadata, never record bytes) -> the marker says `complete`. `--tail` compares replicas
from checkpoints and segment tails only (`spark.tail`).
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NotRequired, TypedDict, cast

import pyarrow as pa
import pyarrow.compute as pc

from replog.formats.errors import ReplogError, UnreadableInput
from replog.formats.fileio import ReadPolicy, atomic_write, read_policy
from replog.formats.shape import Field, Shape
from replog.recovery import outputs
from replog.spark import cache, schemas
from replog.spark.impact_tasks import write_impact
from replog.spark.inputs import LOG_DIR, LogDir, discover, log_dirs_table
from replog.spark.job import WORK, JobOptions, TaskReport, deal, task_function, total
from replog.spark.replicas import replicas_frame
from replog.spark.report import MARKER, fails, load_table, replicas_diverging
from replog.spark.schemas import LogDirRow
from replog.spark.session import DEFAULT_LOG_LEVEL, get_session, sigint_seen, stop_session
from replog.spark.sinks import ParquetSink
from replog.spark.tasks import apply_split_counts
from replog.spark.units import SPLIT_BYTES, Unit

Progress = Callable[[str, int, int], None]   # (step, tasks done, tasks total)
TASKS_PER_CORE = 4
SEGMENT_TABLES = ("partitions", "segments", "findings", "batches", "replicas")   # tables built from segments


@dataclass
class FleetScanResult:
    out_dir: str
    log_dirs: list[LogDir]
    skipped: list[str] = field(default_factory=list)   # inputs found but not scanned, with why
    units: int = 0
    rows: dict[str, int] = field(default_factory=dict)
    errors: int = 0
    divergent_replica_sets: int = 0
    seconds: float = 0.0
    mode: str = "full"                                   # full | tail
    since: str | None = None                             # the earlier scan reused from
    counts: dict[str, int] = field(default_factory=dict)  # segments and bytes read / reused, walks recorded
    task_seconds: float = 0.0                            # the scan tasks' wall seconds, added up

    @property
    def has_errors(self) -> bool:
        """Exit 1 or not: the same rule as `fleet report` on this scan's tables (`report.fails`)."""
        return fails(self.errors, self.divergent_replica_sets)

    @property
    def reuse(self) -> dict[str, dict[str, int]]:
        """Per table built from Kafka segments: how many of those segments were reused from the earlier
        scan's record and how many were read."""
        return {name: {"segments_reused": self.counts.get("segments_reused", 0),
                       "segments_read": self.counts.get("segments_read", 0)}
                for name in SEGMENT_TABLES if name in self.rows}

    def to_dict(self) -> FleetScanDoc:
        return cast(FleetScanDoc, FLEET_SCAN_RESULT.dump(self))


class FleetScanDoc(TypedDict):
    """`fleet scan --format json`: what was scanned and written (`FLEET_SCAN_RESULT`'s members)."""
    out_dir: str
    mode: str
    log_dirs: list[LogDirRow]
    skipped: list[str]
    units: int
    rows: dict[str, int]
    errors: int
    divergent_replica_sets: int
    since: str | None
    reuse: dict[str, dict[str, int]]
    bytes_read: int
    bytes_reused: int
    seconds: float


class ScanMarker(TypedDict):
    """What the marker file says of a scan besides its tool and state: its inputs, and once complete what it
    wrote and read (`--since` and `fleet report` read it back)."""
    inputs: list[LogDirRow]
    skipped: list[str]
    mode: str
    since: str | None
    rows: NotRequired[dict[str, int]]
    units: NotRequired[int]
    reuse: NotRequired[dict[str, dict[str, int]]]
    counts: NotRequired[dict[str, int]]


FLEET_SCAN_RESULT = Shape("out_dir", "mode", Field("log_dirs", shape=LOG_DIR), "skipped", "units", "rows", "errors",
                          "divergent_replica_sets", "since", "reuse",
                          Field("bytes_read", lambda r: r.counts.get("bytes_read", 0)),
                          Field("bytes_reused", lambda r: r.counts.get("bytes_reused", 0)),
                          Field("seconds", lambda r: round(r.seconds, 3)))


# -- output dir ---------------------------------------------------------------------------


@contextmanager
def claimed_output(out_dir: str | os.PathLike[str], inputs: Sequence[LogDir], force: bool) -> Iterator[Path]:
    """OUT, held for the scan (`outputs.claimed_output`): created; an overlap with a local input, or a non-empty
    OUT unless --force and a previous scan, refused. A failed scan's OUT stays: its marker says how it ended."""
    local = [d.path for d in inputs if d.fs is None or type(d.fs).__name__ == "LocalFileSystem"]
    with outputs.claimed_output(out_dir, local, force, marker=MARKER, keep_partial=True) as out:
        yield out


def _write_marker(out: Path, state: str, info: ScanMarker) -> None:
    atomic_write(out / MARKER, json.dumps({"tool": "replog fleet scan", "state": state, **info},
                                          indent=2).encode())


def check_since(since: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> Path:
    """The earlier scan a rescan reuses: a finished scan's OUT, not the new OUT (which is cleared)."""
    path = Path(since)
    if not (path / MARKER).is_file():
        raise UnreadableInput(f"--since {since}: not the output of `replog fleet scan` ({MARKER} missing)")
    if path.resolve() == Path(out_dir).resolve():
        raise ReplogError(f"--since {since} is also --out: a rescan writes a new output next to the earlier one")
    return path


# -- driver ----------------------------------------------------------------------------------


class _StageWatcher(threading.Thread):
    """Polls Spark's status tracker and reports (step, done, total) tasks of the active stages."""

    def __init__(self, sc: Any, callback: Progress, interval: float = 0.25) -> None:
        super().__init__(daemon=True)
        self.sc, self.callback, self.interval = sc, callback, interval
        self.step = "scan"
        self._stop_event = threading.Event()

    def run(self) -> None:
        tracker = self.sc.statusTracker()
        while not self._stop_event.wait(self.interval):
            try:
                infos = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
            except Exception:  # noqa: BLE001 - the JVM may be shutting down
                return
            infos = [i for i in infos if i is not None]
            if infos:
                self.callback(self.step, sum(i.numCompletedTasks for i in infos), sum(i.numTasks for i in infos))

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=2)


def scan_fleet(paths: Sequence[str | os.PathLike[str]], out_dir: str | os.PathLike[str], *,
               master: str | None = None, inventory: str | os.PathLike[str] | None = None,
               batches: bool = False, force: bool = False, progress: Progress | None = None,
               session: Any = None, split_bytes: int | None = SPLIT_BYTES,
               filesystem: Any = None, log_level: str = DEFAULT_LOG_LEVEL,
               since: str | os.PathLike[str] | None = None, tail: bool = False,
               conf: dict[str, str] | None = None) -> FleetScanResult:
    """Scan every log dir and store found in `paths` with Spark; Parquet tables under `out_dir`.

    `session` reuses a SparkSession (tests), left running; otherwise one is started with `master`
    and Spark's logging at `log_level`, and stopped with its JVM however the scan ends. The marker
    file says `running`, then `complete`, `interrupted` (Ctrl-C) or `failed`.
    A partition dir above `split_bytes` bytes to read is scanned as several units (None: never split).
    `filesystem` (a pyarrow filesystem) reads every input path through it. `since`: an earlier scan's
    OUT whose record of unchanged sealed segments is reused instead of reading them. `tail`: compare
    replicas from checkpoints and segment tails only (`spark.tail`). `conf`: Spark settings for a
    session started here (`--conf`), over ours.
    """
    started = time.monotonic()
    if since is not None and tail:
        raise ReplogError("--since and --tail do not go together: a tail scan reads little to begin with")
    earlier = check_since(since, out_dir) if since is not None else None
    log_dirs, skipped = discover(paths, inventory, filesystem)
    policy = read_policy()
    if policy.roots:  # the log dirs found (through a glob or an inventory) are inputs too
        ReadPolicy.confined([*policy.roots, *(d.path for d in log_dirs if d.fs is None)],
                            follow_symlinks=policy.follow_symlinks).adopt()
    with claimed_output(out_dir, log_dirs, force) as out:
        info: ScanMarker = {"inputs": [d.to_dict() for d in log_dirs], "skipped": skipped,
                            "mode": "tail" if tail else "full", "since": str(earlier) if earlier else None}
        _write_marker(out, "running", info)
        result = FleetScanResult(str(out), log_dirs, skipped, mode="tail" if tail else "full",
                                 since=str(earlier) if earlier else None)
        try:
            index = cache.inherit(earlier, out) if earlier is not None else None
            if tail:
                skipped += [f"{d.path}: a RocketMQ store (a tail scan compares Kafka replicas)"
                            for d in log_dirs if d.kind != "kafka" or d.fs is not None]
                log_dirs = [d for d in log_dirs if d.kind == "kafka" and d.fs is None]
            units = [u for d in log_dirs for u in (d.tail_units() if tail else d.units(split_bytes, index))]
            result.units = len(units)
            with _spark(session, master, out, log_level, conf or {}) as spark:
                watcher = _StageWatcher(spark.sparkContext, progress) if progress else None
                if watcher:
                    watcher.start()
                try:
                    policy = read_policy()
                    reports = _run_job(spark, units, out, JobOptions(
                        str(out), batches and not tail, record=not tail, scan=secrets.token_hex(4),
                        read_roots=list(policy.roots), follow_symlinks=policy.follow_symlinks))
                    summed = total(reports)
                    result.errors = summed["errors"]
                    result.counts = {**summed["counts"], "recorded": summed["recorded"]}
                    result.task_seconds = summed["task_seconds"]
                    _finish(spark, out, log_dirs, batches, tail, watcher,
                            summed["rows"].get("batches", 0) + summed["rows"].get("replica_batches", 0))
                finally:
                    if watcher:
                        watcher.stop()
            result.rows = table_rows(out)
            result.divergent_replica_sets = replicas_diverging(load_table(out, "replicas"))
        except KeyboardInterrupt:
            _write_marker(out, "interrupted", info)
            raise
        except BaseException:
            _write_marker(out, "failed", info)
            raise
        result.seconds = time.monotonic() - started
        _write_marker(out, "complete", {**info, "rows": result.rows, "units": result.units, "reuse": result.reuse,
                                        "counts": result.counts})
        return result


@contextmanager
def _spark(session: Any, master: str | None, out: Path, log_level: str, conf: dict[str, str]) -> Iterator[Any]:
    """The caller's session as it is, or one of our own, stopped with its JVM on every way out.

    Our session's app name carries OUT, so the JVM's command line tells which scan it belongs to.
    """
    if session is not None:
        yield session
        return
    spark = get_session(master, f"replog-fleet {out}", log_level, conf=conf)
    try:
        yield spark
    except Exception as e:
        if sigint_seen():   # a cleanup's py4j call failed on the connection Ctrl-C cut: it was the Ctrl-C
            raise KeyboardInterrupt from e
        raise
    finally:
        stop_session(spark)


def _run_job(spark: Any, units: list[Unit], out: Path, options: JobOptions) -> list[TaskReport]:
    """The scan stage: units dealt into tasks (`job.deal`), each task's report collected."""
    sc = spark.sparkContext
    bins = deal(units, max(1, sc.defaultParallelism * TASKS_PER_CORE))
    texts = [json.dumps([u.to_dict() for u in b]) for b in bins]
    return [cast(TaskReport, json.loads(r)) for r in sc.parallelize(texts, len(texts)).mapPartitionsWithIndex(
        task_function(options)).collect()]


def _finish(spark: Any, out: Path, log_dirs: list[LogDir], with_batches: bool, tail: bool,
            watcher: _StageWatcher | None, batch_rows: int) -> None:
    """What needs every task's rows: split partitions' counts, the log_dirs table, the replica sets."""
    _finish_split(out)
    _write_table(out, "log_dirs", log_dirs_table(log_dirs))
    if watcher:
        watcher.step = "replicas"
    if tail:
        from replog.spark.tail import tail_replicas_frame
        if (out / WORK / "tail_batches").is_dir():
            tail_replicas_frame(spark, out / "partitions", out / WORK / "tail_batches") \
                .write.mode("overwrite").parquet(str(out / "replicas"))
    else:
        _replicas(spark, out, out / ("batches" if with_batches else f"{WORK}/replica_batches"), batch_rows,
                  [d.path for d in log_dirs if d.fs is not None])
        if watcher:
            watcher.step = "impact"
        write_impact(spark, out, [d for d in log_dirs if d.kind == "kafka" and d.fs is None],
                     [d.path for d in log_dirs if d.fs is not None])
    for name in schemas.TABLES:   # every table there, empty or not, for whoever reads OUT next
        if not (out / name).is_dir() and (name != "batches" or with_batches) and (name != "stores" or not tail):
            _write_table(out, name, schemas.TABLES[name].empty_table())
    shutil.rmtree(out / WORK, ignore_errors=True)
    cache.prune(out)


def _write_table(out: Path, name: str, table: pa.Table, part: str = "part-driver") -> None:
    """Rows the driver writes itself (few: one per log dir, or per split partition)."""
    folder = out / name
    folder.mkdir(exist_ok=True)
    sink = ParquetSink(folder / f"{part}.parquet", schemas.TABLES[name])
    try:
        for batch in table.to_batches():
            sink.write(batch)
        sink.close()
    except BaseException:
        sink.discard()
        raise


def _finish_split(out: Path) -> None:
    """The light units' rows of split partitions, with their segments units' finding counts added."""
    work = out / WORK
    if not (work / "split_partitions").is_dir():
        return
    parts, segs = _read(work / "split_partitions"), _read(work / "split_segments")
    counts = _read(work / "split_counts") if (work / "split_counts").is_dir() else schemas.SPLIT_COUNTS.empty_table()
    parts, segs = apply_split_counts(parts, segs, counts)
    _write_table(out, "partitions", parts, "part-split")
    _write_table(out, "segments", segs, "part-split")


def _read(folder: Path) -> pa.Table:
    import pyarrow.dataset as ds

    return ds.dataset(str(folder), format="parquet").to_table()


SMALL_JOIN_ROWS = 2_000_000   # batch rows under which the replica joins run without adaptive planning


def _replicas(spark: Any, out: Path, batches: Path, batch_rows: int, remote: list[str]) -> None:
    """The `replicas` table: Spark joins over the partitions and the digests of the replicas' batches
    (`spark.digests`), then batch rows where digests differ: from the batch table when the scan wrote
    it, else read again from the segments (`spark.detail`; a remote replica's from the rows its scan
    wrote). An empty table, without a Spark job, when no partition has two or more live replicas in
    one cluster.

    The tables are read with their declared schemas (no job to infer them). Under `SMALL_JOIN_ROWS`
    batch rows, the query's joins run without adaptive re-planning and whole-stage code generation,
    whose fixed costs (a plan per stage, a compiled class per operator) were most of the time of a
    small fleet's scan; larger inputs keep Spark's defaults."""
    parts = load_table(out, "partitions")
    live = parts.filter(pc.equal(parts.column("state"), "live"))
    sets = live.group_by(["cluster", "topic", "partition"]).aggregate([([], "count_all")]) if live.num_rows else None
    digests = out / WORK / "replica_digests"
    if sets is None or not sets.num_rows or pc.max(sets.column("count_all")).as_py() < 2 or not digests.is_dir():
        _write_table(out, "replicas", schemas.REPLICAS.empty_table())
        return
    table = batches.name == "batches"
    schema = schemas.BATCHES if table else schemas.REPLICA_BATCHES
    rows = spark.read.schema(schemas.spark_schema(schema)).parquet(str(batches)) if batches.is_dir() else None
    small = {"spark.sql.adaptive.enabled": "false", "spark.sql.codegen.wholeStage": "false",
             "spark.sql.shuffle.partitions": str(max(2, spark.sparkContext.defaultParallelism))}
    partitions = spark.read.schema(schemas.spark_schema(schemas.PARTITIONS)).parquet(str(out / "partitions"))
    summed = spark.read.schema(schemas.spark_schema(schemas.REPLICA_DIGESTS_READ)).parquet(str(digests))
    with _sql_conf(spark, small if batch_rows < SMALL_JOIN_ROWS else {}):
        replicas_frame(partitions, rows, summed, fetch=not table, remote=remote) \
            .write.mode("overwrite").parquet(str(out / "replicas"))


@contextmanager
def _sql_conf(spark: Any, settings: dict[str, str]) -> Iterator[None]:
    """Session SQL settings changed for a block, then put back as they were (the session may be a caller's)."""
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


# -- counts --------------------------------------------------------------------------------


def table_rows(out: Path) -> dict[str, int]:
    import pyarrow.dataset as ds

    return {name: ds.dataset(str(out / name), format="parquet").count_rows()
            for name in schemas.TABLES if (out / name).is_dir()}
