"""The scan job: one Spark stage whose tasks scan their units and write their own table files.

Units are dealt into as many bins as there are tasks, largest first, each to the lightest bin, so
that tasks take about as long as each other (`deal`). A task runs its units (`tasks.run_unit`),
writes each table's rows to OUT/<table>/part-<task>.parquet itself (`spark.sinks`: one pass over
the data, no shuffle, no cache of the scan in Spark), records the walks of sealed segments for the
next scan (`spark.cache`) and returns a small report: rows per table, error findings, segments
read and reused. Rows the driver still has to finish go under OUT/_work/: the light units' rows of
split partitions, before their segments units' finding counts are added (`split_partitions`,
`split_segments`, `split_counts`), and, without the batch table, what the replica comparison reads
(`replica_batches`), and in a tail scan the segments' tail batches (`tail_batches`).
"""
from __future__ import annotations

import heapq
import json
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypedDict

import pyarrow as pa
import pyarrow.compute as pc

from replog.formats.fileio import ReadPolicy
from replog.spark import cache, schemas
from replog.spark.sinks import COMPRESSION, FAST, ParquetSink
from replog.spark.tasks import Context, run_unit
from replog.spark.units import Unit

WORK = "_work"
PENDING = {"partitions": "split_partitions", "segments": "split_segments"}   # a light unit's rows, unfinished
INTERNAL = {"split_partitions": schemas.PARTITIONS, "split_segments": schemas.SEGMENTS,
            "split_counts": schemas.SPLIT_COUNTS, "replica_batches": schemas.REPLICA_BATCHES_WRITTEN,
            "replica_digests": schemas.REPLICA_DIGESTS,
            "tail_batches": schemas.TAIL_BATCHES}


@dataclass(frozen=True)
class JobOptions:
    """What every task of a scan is told: where OUT is, whether the batch table is written, whether
    sealed segments' walks are recorded (under which scan token), and the compiled-walk threshold."""

    out: str
    with_batches: bool = False
    record: bool = True
    scan: str = "scan"
    fast_threshold: int | None = 0
    read_roots: list[str] | None = None    # the driver's `fileio.ReadPolicy`, which tasks read under too
    follow_symlinks: bool = True


def deal(units: list[Unit], bins: int) -> list[list[Unit]]:
    """Units into `bins` groups of about equal bytes: largest first, each to the lightest group."""
    groups: list[list[Unit]] = [[] for _ in range(max(1, min(bins, len(units))))]
    heap = [(0, k) for k in range(len(groups))]
    for unit in sorted(units, key=lambda u: -u.size):
        load, k = heapq.heappop(heap)
        groups[k].append(unit)
        heapq.heappush(heap, (load + max(unit.size, 1), k))
    return groups


class TaskFiles:
    """One task's table files, opened as rows come, committed together (or all discarded)."""

    def __init__(self, out: Path, task: int) -> None:
        self.out, self.task = out, task
        self.sinks: dict[str, ParquetSink] = {}
        self.errors = 0

    def write(self, table: str, batch: pa.RecordBatch) -> None:
        if not batch.num_rows:
            return
        if table == "findings":
            self.errors += int(pc.sum(pc.equal(batch.column("severity"), "error")).as_py() or 0)
        sink = self.sinks.get(table)
        if sink is None:
            folder = self.out / (f"{WORK}/{table}" if table in INTERNAL else table)
            folder.mkdir(parents=True, exist_ok=True)
            schema = INTERNAL[table] if table in INTERNAL else schemas.TABLES[table]
            sink = self.sinks[table] = ParquetSink(folder / f"part-{self.task:05d}.parquet", schema,
                                                   FAST if table in INTERNAL else COMPRESSION)
        sink.write(batch)

    def close(self) -> dict[str, int]:
        for sink in self.sinks.values():
            sink.close()
        return {table: sink.rows for table, sink in self.sinks.items()}

    def discard(self) -> None:
        for sink in self.sinks.values():
            sink.discard()


class TaskReport(TypedDict):
    """What a task did (JSON back to the driver): rows written per table, error findings, the pass's
    counts (bytes read and reused ...), segments recorded for the next scan, and its time."""
    task: int
    units: int
    rows: dict[str, int]
    errors: int
    counts: dict[str, int]
    recorded: int
    seconds: float
    cpu_seconds: float


class Totals(TypedDict):
    """The tasks' reports added up (`total`)."""
    rows: dict[str, int]
    counts: dict[str, int]
    errors: int
    recorded: int
    units: int
    task_seconds: float
    task_cpu_seconds: float


def run_task(task: int, units: Iterable[Unit], options: JobOptions) -> TaskReport:
    """Scan `units`, write their rows and their record; the task's report."""
    started, cpu = time.monotonic(), time.process_time()
    # Reads confined as the driver's are, for this task only: a Python worker outlives one scan's tasks.
    with ReadPolicy.confined(options.read_roots or [], follow_symlinks=options.follow_symlinks).applied():
        return _scan_units(task, units, options, started, cpu)


def _scan_units(task: int, units: Iterable[Unit], options: JobOptions, started: float, cpu: float) -> TaskReport:
    """`run_task`'s work, under the driver's read policy."""
    out = Path(options.out)
    files = TaskFiles(out, task)
    recorder = cache.Recorder(out, task, options.scan) if options.record else None
    context = Context(options.with_batches, recorder, options.fast_threshold, digests=True, replica_rows=False)
    count = 0
    try:
        for unit in units:
            count += 1
            for table, batch in run_unit(unit, context=context):
                files.write(PENDING.get(table, table) if unit.split else table, batch)
        rows = files.close()
        if recorder is not None:
            recorder.close()
    except BaseException:
        files.discard()
        if recorder is not None:
            recorder.discard()
        raise
    return {"task": task, "units": count, "rows": rows, "errors": files.errors,
            "counts": dict(context.counts), "recorded": recorder.rows if recorder is not None else 0,
            "seconds": round(time.monotonic() - started, 3), "cpu_seconds": round(time.process_time() - cpu, 3)}


def task_function(options: JobOptions) -> Any:
    """What `mapPartitionsWithIndex` runs: the bin of units (as JSON) of one task -> its report.

    The function is shipped by value and imports replog only when it runs, after `stable_code`: on a
    cluster, replog reaches the executors as a zip (`session.project_zip`) that Spark puts in a folder
    of its own for every application, and numba keys its cache of compiled kernels by the folder of
    their source, so every executor compiled them again on every scan. Extracted once per host into
    a folder named by the zip's content hash (`REPLOG_CODE_CACHE`, else ~/.cache/replog/code, else the
    temp dir), the code has the same path on every scan and its kernels load from numba's cache.
    """
    opts = asdict(options)

    def stable_code() -> None:
        import os
        import shutil
        import sys
        import tempfile
        import zipfile

        shipped = [p for p in sys.path if os.path.basename(p).startswith("replog-") and p.endswith(".zip")]
        if "replog" in sys.modules or not shipped:
            return   # the installed package (local mode), or this worker imported it already
        name = os.path.basename(shipped[0])[:-len(".zip")]
        for root in (os.environ.get("REPLOG_CODE_CACHE"),
                     os.path.join(os.path.expanduser("~"), ".cache", "replog", "code"),
                     os.path.join(tempfile.gettempdir(), f"replog-code-{os.getuid()}")):
            if not root:
                continue
            target = os.path.join(root, name)
            try:
                if not os.path.isdir(target):
                    os.makedirs(root, exist_ok=True)
                    tmp = tempfile.mkdtemp(prefix=".extract-", dir=root)
                    with zipfile.ZipFile(shipped[0]) as zf:
                        zf.extractall(tmp)
                    try:
                        os.rename(tmp, target)
                    except OSError:   # another worker of this host was first
                        shutil.rmtree(tmp, ignore_errors=True)
            except OSError:
                continue
            sys.path.insert(0, target)
            return

    def run(index: int, bins: Iterator[str]) -> Iterator[str]:
        stable_code()
        from replog.spark.job import JobOptions, run_task
        from replog.spark.units import Unit

        for text in bins:
            units = [Unit.from_dict(d) for d in json.loads(text)]
            yield json.dumps(run_task(index, units, JobOptions(**opts)))

    return run


def total(reports: list[TaskReport]) -> Totals:
    """The tasks' reports added up."""
    rows: Counter[str] = Counter()
    counts: Counter[str] = Counter()
    for r in reports:
        rows.update(r["rows"])
        counts.update(r["counts"])
    return {"rows": dict(rows), "counts": dict(counts), "errors": sum(r["errors"] for r in reports),
            "recorded": sum(r["recorded"] for r in reports), "units": sum(r["units"] for r in reports),
            "task_seconds": round(sum(r.get("seconds", 0) for r in reports), 3),
            "task_cpu_seconds": round(sum(r.get("cpu_seconds", 0) for r in reports), 3)}
