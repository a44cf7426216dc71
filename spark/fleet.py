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

from replog.formats.fileio import atomic_write
from replog.formats.shape import Field, Shape
from replog.recovery import outputs
from replog.spark import schemas
from replog.spark.inputs import LOG_DIR, LogDir, discover
from replog.spark.replicas import REPLICA_BATCH_COLUMNS, replicas_frame
from replog.spark.report import MARKER, fails, load_table, replicas_diverging
from replog.spark.session import DEFAULT_LOG_LEVEL, get_session, sigint_seen, stop_session
from replog.spark.tasks import run_unit
from replog.spark.units import SPLIT_BYTES, Unit

Progress = Callable[[str, int, int], None]   # (step, tasks done, tasks total)


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


# -- output dir ---------------------------------------------------------------------------


def prepare_output(out_dir: str | os.PathLike[str], inputs: Sequence[LogDir], force: bool) -> Path:
    """Create OUT; refuse an overlap with an input, or a non-empty OUT unless --force and a previous scan."""
    return outputs.prepare_output(out_dir, [d.path for d in inputs
                                            if d.fs is None or type(d.fs).__name__ == "LocalFileSystem"],
                                  force, marker=MARKER)


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


def scan_units(batches: Iterator[pa.RecordBatch], with_batches: bool = True) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: units in, (table, Arrow IPC blob) rows out."""
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
    out = prepare_output(out_dir, log_dirs, force)
    info = {"inputs": [d.to_dict() for d in log_dirs], "skipped": skipped}
    _write_marker(out, "running", info)
    units = sorted((u for d in log_dirs for u in d.units(split_bytes)), key=lambda u: -u.size)
    try:
        with _spark(session, master, out, log_level) as spark:
            _scan(spark, units, out, batches, progress)
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
    # Disk only: one unit's output is one cache partition, and the memory store, unrolling a 2 GiB segment's
    # batch rows, ran a 1 GiB heap out of memory. The batch size is read when the cache is declared.
    with _sql_conf(spark, "spark.sql.inMemoryColumnarStorage.batchSize", ENV_CACHE_ROWS):
        env = (spark.createDataFrame(rdd, "unit string")
               .mapInArrow(lambda it: scan_units(it, True), ENVELOPE)
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
