"""`fleet scan`: the per-directory scans of `ls`/`doctor`, distributed with Spark, written as Parquet.

Flow: discover log dirs and RocketMQ stores on the driver (cheap: names,
meta.properties, root checkpoints; remote dirs listed through pyarrow
filesystems) -> units (one per partition dir, split by segment when large,
one per log dir root, one per store) ->
`parallelize` + `mapInArrow` runs `spark.tasks.run_unit` on the executors,
which return Arrow record batches, carried through Spark as Arrow IPC blobs
tagged by table (one scan feeds every table; the result is persisted on the
executors' disks, as lz4-compressed blobs of bounded size, a few per cache
batch, so a segment of millions of batches never has to fit in a JVM heap) ->
each table decoded back with its schema from `spark.schemas` (split
partitions' counts joined in) and written to OUT/<table>/ -> `replicas` computed by Spark joins of batch metadata across
brokers (offsets and CRCs, never record bytes).
"""
from __future__ import annotations

import glob
import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from replog.formats.discovery import DirKind, find_roots
from replog.formats.errors import FormatError, UnreadableInput
from replog.formats.fileio import ReadPolicy, atomic_write, confine_reads, read_policy, read_small
from replog.formats.kafka import names
from replog.formats.kafka.meta_properties import parse_meta_properties
from replog.formats.shape import Field, Shape
from replog.recovery import outputs
from replog.recovery.kafka.logdir import node_id
from replog.recovery.naming import broker_name
from replog.spark import remote, schemas
from replog.spark.impact_tasks import write_impact
from replog.spark.report import MARKER, fails, load_table, replicas_diverging
from replog.spark.session import DEFAULT_LOG_LEVEL, get_session, sigint_seen, stop_session
from replog.spark.tasks import SPLIT_BYTES, Unit, log_dir_units, remote_log_dir_units, run_unit, store_unit

Progress = Callable[[str, int, int], None]   # (step, tasks done, tasks total)


@dataclass(frozen=True)
class LogDir:
    """A Kafka log dir or a RocketMQ store (`kind` "rocketmq"); `fs` a pyarrow filesystem when remote."""

    broker: str
    path: str
    kind: str = "kafka"
    fs: Any = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return LOG_DIR.dump(self)

    def units(self, split_bytes: int | None) -> list[Unit]:
        if self.kind == "rocketmq":
            return [store_unit(self.broker, self.path, self.fs)]
        if self.fs is not None:
            return remote_log_dir_units(self.broker, self.fs, self.path, split_bytes)
        return log_dir_units(self.broker, self.path, split_bytes)


LOG_DIR = Shape("broker", "path", "kind", Field("remote", lambda d: d.fs is not None))


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

    @property
    def has_errors(self) -> bool:
        """Exit 1 or not: the same rule as `fleet report` on this scan's tables (`report.fails`)."""
        return fails(self.errors, self.divergent_replica_sets)

    def to_dict(self) -> dict[str, Any]:
        return FLEET_SCAN_RESULT.dump(self)


FLEET_SCAN_RESULT = Shape("out_dir", Field("log_dirs", shape=LOG_DIR), "skipped", "units", "rows", "errors",
                          "divergent_replica_sets",
                          Field("seconds", lambda r: round(r.seconds, 3)))


# -- discovery ------------------------------------------------------------------------


def read_inventory(path: str | os.PathLike[str]) -> list[tuple[str, str]]:
    """Lines `broker=path` (blank lines and `#` comments ignored)."""
    out = []
    for n, line in enumerate(read_small(path).decode("utf-8", "replace").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        broker, sep, target = line.partition("=")
        if not sep or not broker.strip() or not target.strip():
            raise UnreadableInput(f"{path}:{n}: expected `broker=path`, got {line[:80]!r}")
        out.append((broker.strip(), target.strip()))
    return out


def discover(paths: Sequence[str | os.PathLike[str]], inventory: str | os.PathLike[str] | None = None,
             filesystem: Any = None) -> tuple[list[LogDir], list[str]]:
    """Log dirs and stores to scan from paths (log dir, store, folder of them, glob, URI) and an inventory.

    A URI (`file://`, `hdfs://`, `s3://`) is listed through its pyarrow filesystem;
    `filesystem` reads every path through that filesystem instead (tests, custom stores).
    """
    found: dict[tuple[str, str], LogDir] = {}
    skipped: list[str] = []
    named = [(None, str(p)) for p in paths] + (read_inventory(inventory) if inventory else [])
    for broker, raw in named:
        if filesystem is not None or remote.is_uri(raw):
            fs, base = (filesystem, raw) if filesystem is not None else remote.from_uri(raw)
            for kind, path in _remote_roots(fs, base, skipped):
                found.setdefault(("remote", f"{id(fs)}:{path}"),
                                 LogDir(broker or _remote_broker_name(fs, path, kind), path, kind, fs))
            continue
        matches = sorted(glob.glob(raw)) if glob.has_magic(raw) else [raw]
        if not matches:
            raise UnreadableInput(f"{raw}: no such path")
        for m in matches:
            for kind, d in _roots_at(Path(m), skipped):
                found.setdefault(("local", str(d.resolve())),
                                 LogDir(broker or (broker_name(node_id(d), d.name) if kind == "kafka" else d.name),
                                        str(d), kind))
    if not found:
        raise UnreadableInput("no Kafka log dir or RocketMQ store found under " + ", ".join(r for _, r in named))
    return sorted(found.values(), key=lambda d: (d.broker, d.path)), skipped


_KINDS = {DirKind.KAFKA_LOG_DIR: "kafka", DirKind.ROCKETMQ_STORE: "rocketmq",
          DirKind.KAFKA_PARTITION_DIR: "partition"}


def _roots_at(p: Path, skipped: list[str]) -> list[tuple[str, Path]]:
    if not p.is_dir():
        raise UnreadableInput(f"{p}: not a directory")
    return _keep_roots([(_KINDS[k], r) for k, r in find_roots(p) if k in _KINDS], str(p), skipped)


def _remote_roots(fs: Any, base: str, skipped: list[str]) -> list[tuple[str, str]]:
    if not remote.is_dir(fs, base):
        raise UnreadableInput(f"{base}: not a directory")
    return _keep_roots(remote.find_roots(fs, base), base, skipped)


def _keep_roots(roots: list[tuple[str, Any]], given: str, skipped: list[str]) -> list[tuple[str, Any]]:
    """Log dirs and stores; a partition dir given alone is refused, one found loose is skipped."""
    out = []
    for kind, root in roots:
        if kind != "partition":
            out.append((kind, root))
        elif str(root).rstrip("/") == given.rstrip("/"):
            parent = root.parent if isinstance(root, Path) else root.rstrip("/").rsplit("/", 1)[0]
            raise UnreadableInput(f"{root}: a partition dir; give its broker log dir {parent}")
        else:
            skipped.append(f"{root}: a partition dir outside a broker log dir")
    if not out and not skipped:
        raise UnreadableInput(f"{given}: neither a Kafka log dir, a RocketMQ store, nor a folder of them")
    return out


def _remote_broker_name(fs: Any, path: str, kind: str) -> str:
    if kind != "kafka":
        return remote.base_name(path)
    try:
        node = parse_meta_properties(remote.read_small(fs, remote.join(path, names.META_PROPERTIES), 1 << 20)).node_id
    except (FormatError, UnreadableInput):
        node = None
    return broker_name(node, remote.base_name(path))


# -- output dir ---------------------------------------------------------------------------


@contextmanager
def claimed_output(out_dir: str | os.PathLike[str], inputs: Sequence[LogDir], force: bool) -> Iterator[Path]:
    """OUT, held for the scan (`outputs.claimed_output`): created; an overlap with a local input, or a non-empty
    OUT unless --force and a previous scan, refused. A failed scan's OUT stays: its marker says how it ended."""
    local = [d.path for d in inputs if d.fs is None or type(d.fs).__name__ == "LocalFileSystem"]
    with outputs.claimed_output(out_dir, local, force, marker=MARKER, keep_partial=True) as out:
        yield out


def _write_marker(out: Path, state: str, info: dict[str, Any]) -> None:
    atomic_write(out / MARKER, json.dumps({"tool": "replog fleet scan", "state": state, **info},
                                          indent=2).encode())


# -- executor side ------------------------------------------------------------------------

ENVELOPE = "table string, data binary"
BLOB_BYTES = 4 << 20    # uncompressed Arrow bytes per blob at most: a block of batch rows goes as several
ENV_CACHE_ROWS = 16     # blobs per batch of Spark's columnar cache of the scan (its default, 10000, is for small rows)
_IPC_OPTIONS = pa.ipc.IpcWriteOptions(compression="lz4")   # batch rows repeat their path, broker, log dir


def _ipc(batch: pa.RecordBatch) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema, options=_IPC_OPTIONS) as w:
        w.write_batch(batch)
    return sink.getvalue().to_pybytes()


def blobs(batch: pa.RecordBatch) -> Iterator[bytes]:
    """`batch` as Arrow IPC blobs of at most about `BLOB_BYTES` of rows each (at least one row; none for none)."""
    rows = max(1, batch.num_rows * BLOB_BYTES // max(batch.nbytes, 1))
    for start in range(0, batch.num_rows, rows):
        yield _ipc(batch.slice(start, rows))


def scan_units(batches: Iterator[pa.RecordBatch], with_batches: bool = True,
               policy: ReadPolicy | None = None) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: units in, (table, Arrow IPC blob) rows out; reads confined as the driver's are."""
    if policy is not None:
        confine_reads(policy.roots, follow_symlinks=policy.follow_symlinks)
    for rb in batches:
        for text in rb.column("unit").to_pylist():
            for table, out in run_unit(Unit.from_dict(json.loads(text)), with_batches=with_batches):
                for blob in blobs(out):
                    yield pa.RecordBatch.from_arrays([pa.array([table]), pa.array([blob], pa.binary())],
                                                     names=["table", "data"])


def decode_blobs(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: IPC blobs of one table back into its record batches."""
    for rb in batches:
        for blob in rb.column("data"):
            yield from pa.ipc.open_stream(blob.as_buffer())


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
               filesystem: Any = None, log_level: str = DEFAULT_LOG_LEVEL) -> FleetScanResult:
    """Scan every log dir and store found in `paths` with Spark; Parquet tables under `out_dir`.

    `session` reuses a SparkSession (tests), left running; otherwise one is started with `master`
    and Spark's logging at `log_level`, and stopped with its JVM however the scan ends. The marker
    file says `running`, then `complete`, `interrupted` (Ctrl-C) or `failed`.
    A partition dir above `split_bytes` is scanned as several units (None: never split).
    `filesystem` (a pyarrow filesystem) reads every input path through it.
    """
    started = time.monotonic()
    log_dirs, skipped = discover(paths, inventory, filesystem)
    policy = read_policy()
    if policy.roots:  # the log dirs found (through a glob or an inventory) are inputs too
        confine_reads([*policy.roots, *(d.path for d in log_dirs if d.fs is None)],
                      follow_symlinks=policy.follow_symlinks)
    with claimed_output(out_dir, log_dirs, force) as out:
        info = {"inputs": [d.to_dict() for d in log_dirs], "skipped": skipped}
        _write_marker(out, "running", info)
        units = sorted((u for d in log_dirs for u in d.units(split_bytes)), key=lambda u: -u.size)
        try:
            with _spark(session, master, out, log_level) as spark:
                _scan(spark, units, out, batches, progress)
                write_impact(spark, out, [d.path for d in log_dirs if d.kind == "kafka" and d.fs is None],
                             [d.broker for d in log_dirs if d.fs is not None])
            result = FleetScanResult(str(out), log_dirs, skipped, len(units), table_rows(out))
            result.errors = _error_count(out)
            result.divergent_replica_sets = _divergent_count(out)
        except KeyboardInterrupt:
            _write_marker(out, "interrupted", info)
            raise
        except BaseException:
            _write_marker(out, "failed", info)
            raise
        result.seconds = time.monotonic() - started
        _write_marker(out, "complete", {**info, "rows": result.rows, "units": result.units})
        return result


@contextmanager
def _spark(session: Any, master: str | None, out: Path, log_level: str) -> Iterator[Any]:
    """The caller's session as it is, or one of our own, stopped with its JVM on every way out.

    Our session's app name carries OUT, so the JVM's command line tells which scan it belongs to.
    """
    if session is not None:
        yield session
        return
    spark = get_session(master, f"replog-fleet {out}", log_level)
    try:
        yield spark
    except Exception as e:
        if sigint_seen():   # a cleanup's py4j call failed on the connection Ctrl-C cut: it was the Ctrl-C
            raise KeyboardInterrupt from e
        raise
    finally:
        stop_session(spark)


def _scan(spark: Any, units: list[Unit], out: Path, with_batches: bool, progress: Progress | None) -> None:
    watcher = _StageWatcher(spark.sparkContext, progress) if progress else None
    if watcher:
        watcher.start()
    try:
        _run_job(spark, units, out, with_batches, watcher)
    finally:
        if watcher:
            watcher.stop()


def _run_job(spark: Any, units: list[Unit], out: Path, with_batches: bool, watcher: _StageWatcher | None) -> None:
    from pyspark import StorageLevel

    sc = spark.sparkContext
    n = max(1, min(len(units), sc.defaultParallelism * 4))
    rdd = sc.parallelize([(json.dumps(u.to_dict()),) for u in units], n)
    policy = read_policy()
    # Disk only: one unit's output is one cache partition, and the memory store, unrolling a 2 GiB segment's
    # batch rows, ran a 1 GiB heap out of memory. The batch size is read when the cache is declared.
    with _sql_conf(spark, "spark.sql.inMemoryColumnarStorage.batchSize", ENV_CACHE_ROWS):
        env = (spark.createDataFrame(rdd, "unit string")
               .mapInArrow(lambda it: scan_units(it, True, policy), ENVELOPE)
               .persist(StorageLevel.DISK_ONLY))
    try:
        tables = {name: _decode(env, name) for name in ("partitions", "segments", "findings", "batches", "stores")}
        if any(u.split for u in units):
            counts = _decode(env, "split_counts")
            tables["partitions"] = with_split_counts(tables["partitions"], counts, "partition_path")
            tables["segments"] = with_split_counts(tables["segments"], counts, "path")
        for name in ("partitions", "segments", "findings", "stores") + (("batches",) if with_batches else ()):
            if watcher:
                watcher.step = f"scan -> {name}"
            tables[name].write.mode("overwrite").parquet(str(out / name))
        if watcher:
            watcher.step = "replicas"
        slim = tables["batches"].select(*REPLICA_BATCH_COLUMNS).persist(StorageLevel.MEMORY_AND_DISK)
        replicas_frame(spark.read.parquet(str(out / "partitions")), slim) \
            .write.mode("overwrite").parquet(str(out / "replicas"))
        slim.unpersist()
    finally:
        env.unpersist()


@contextmanager
def _sql_conf(spark: Any, key: str, value: Any) -> Iterator[None]:
    """A session SQL setting changed for a block, then put back as it was (the session may be a caller's)."""
    before = spark.conf.get(key, None)
    spark.conf.set(key, str(value))
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)


REPLICA_BATCH_COLUMNS = ("broker", "topic", "partition", "base_offset", "last_offset", "crc", "count")


def _decode(env: Any, name: str) -> Any:
    from pyspark.sql import functions as F

    schema = schemas.SPLIT_COUNTS if name == "split_counts" else schemas.TABLES[name]
    return env.where(F.col("table") == name).select("data").mapInArrow(decode_blobs, schemas.spark_schema(schema))


def with_split_counts(frame: Any, counts: Any, key: str) -> Any:
    """`partitions` or `segments` with the segments units' finding counts added (`tasks.apply_split_counts`)."""
    from pyspark.sql import functions as F

    extra = counts.groupBy(F.col(key).alias("_key")).agg(
        *(F.sum(c).alias(f"_{c}") for c in ("errors", "warnings", "infos")))
    joined = frame.join(F.broadcast(extra), frame["path"] == extra["_key"], "left")
    new = {c: (F.col(c) + F.coalesce(F.col(f"_{c}"), F.lit(0))).cast("int") for c in ("errors", "warnings", "infos")}
    if "damaged" in frame.columns:
        new["damaged"] = (new["errors"] > 0) | (F.col("valid_bytes") < F.col("size"))
    return joined.select(*(new[c].alias(c) if c in new else F.col(c) for c in frame.columns))


def replicas_frame(partitions: Any, batches: Any) -> Any:
    """The `replicas` table: live partitions held by two or more brokers, compared by batch metadata.

    The join finds a lower bound L per partition: the smallest base_offset of a kept
    batch of one replica that another replica's log range [log_start_offset,
    log_end_offset) covers but which that replica does not hold identically (same
    base_offset, last_offset and CRC). Offsets only one replica holds (one log is
    ahead, or the other's start was deleted by retention) are not divergence. Each
    replica's kept batches ending at or after L then go, one partition per row, to
    `replica_sets.replica_set_row`, which pairs them as replay does.
    """
    from pyspark.sql import functions as F

    live = partitions.where(F.col("state") == "live")
    tp = ["topic", "partition"]
    multi = live.groupBy(*tp).count().where(F.col("count") >= 2).select(*tp)
    reps = live.join(multi, tp).select("broker", *tp, "log_start_offset", "log_end_offset",
                                       "high_watermark", "latest_epoch")
    kept = batches.join(multi, tp).select(
        "broker", *tp, "base_offset", "last_offset", "crc", "count")
    b, o = kept.alias("b"), reps.alias("o")
    covered = b.join(o, (F.col("b.topic") == F.col("o.topic")) & (F.col("b.partition") == F.col("o.partition"))
                     & (F.col("b.broker") != F.col("o.broker"))
                     & (F.col("b.base_offset") >= F.col("o.log_start_offset"))
                     & (F.col("b.base_offset") < F.col("o.log_end_offset"))).select(
        F.col("o.broker").alias("other"), "b.topic", "b.partition", "b.base_offset", "b.last_offset", "b.crc")
    held = kept.select(F.col("broker").alias("other"), *tp, "base_offset", "last_offset", "crc")
    mismatch = covered.join(held, ["other", *tp, "base_offset", "last_offset", "crc"], "left_anti")
    div = mismatch.groupBy(*tp).agg(F.min("base_offset").alias("lower_bound"))
    k, d = kept.alias("k"), div.alias("d")
    tails = (k.join(d, (F.col("k.topic") == F.col("d.topic")) & (F.col("k.partition") == F.col("d.partition"))
                    & (F.col("k.last_offset") >= F.col("d.lower_bound")))
             .groupBy("k.broker", "k.topic", "k.partition")
             .agg(F.collect_list(F.struct("k.base_offset", "k.last_offset", "k.crc", "k.count")).alias("tail")))
    per_replica = reps.join(div, tp, "left").join(tails, ["broker", *tp], "left")
    grouped = per_replica.groupBy(*tp).agg(F.collect_list(F.struct(
        "broker", "log_start_offset", "log_end_offset", "high_watermark", "latest_epoch", "lower_bound",
        "tail")).alias("replicas"))
    return grouped.mapInArrow(assemble_batches, schemas.spark_schema(schemas.REPLICAS))


def assemble_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: grouped per-replica facts and tails -> `replicas` rows."""
    from replog.spark.replica_sets import replica_set_row

    for rb in batches:
        rows = [replica_set_row(r["topic"], r["partition"], r["replicas"]) for r in rb.to_pylist()]
        if rows:
            yield pa.RecordBatch.from_pylist(rows, schema=schemas.REPLICAS)


# -- counts --------------------------------------------------------------------------------


def table_rows(out: Path) -> dict[str, int]:
    import pyarrow.dataset as ds

    return {name: ds.dataset(str(out / name), format="parquet").count_rows()
            for name in schemas.TABLES if (out / name).is_dir()}


def _error_count(out: Path) -> int:
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    if not (out / "findings").is_dir():
        return 0
    sev = ds.dataset(str(out / "findings"), format="parquet").to_table(columns=["severity"]).column("severity")
    return int(pc.sum(pc.equal(sev, "error")).as_py() or 0)


def _divergent_count(out: Path) -> int:
    return replicas_diverging(load_table(out, "replicas"))
